"""Integer cut points keep their definition's range when it is wide but finite
(`algebra.terms.record_range`, switch `terms.WIDE_RANGES`).

An int8 x int8 -> int32 dot sharded over its contraction is a sum of per-device partial
dots, each cut into a variable by the sweep. Their linear range (65,280 wide for two
int8 products) was past the narrow ranges the cut kept, and the piecewise case split
takes one variable only, so the partials were cut without any range: the int32 add (or
all-reduce) of them became a Euclidean remainder, which no merge with the reference's
dot could see, and every float after it went to the solver (gen_clients3's `int8_mlp`,
partitioned by XLA: `unknown` after a solver timeout, 48 failed merges).

The pairs in testdata/cut_ranges: `ref_T` is an int32 dot of two 8-long vectors of type
T converted to int64; `narrow_T` adds two half dots in int32 and converts (the same
function: int32 addition is modular either way); `wide_T` converts each half to int64
before adding, which is the same function only where the int32 sum cannot overflow (int8:
yes; int16: no, 8 products of up to 2^30)."""
from __future__ import annotations

import pytest

from conftest import TESTDATA, client_generator
from tv_mlir import verify
from tv_mlir.algebra import terms

D = TESTDATA / "cut_ranges"


def _verify(ref: str, other: str, **kw: object):
    return verify(D / f"{ref}.mlir", D / f"{other}.mlir", cache=False, **kw)


def test_partial_int_sums_merge_by_their_ranges() -> None:
    v = _verify("ref_i8", "narrow_i8")
    assert v.verdict == "equivalent", v.reason
    assert v.stats["solver_queries"] == 0, v.reason


def test_without_the_wide_ranges_the_partial_sums_are_cut_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    """Until 13af54e the pair then needed the output's solver query. Local proofs now take
    the inputs' type ranges as hypotheses (prove/known.py), so the int32 sum of the
    unranged partials still merges with the reference's dot, but only after more cut
    points: the range is what lets the sum stay one unwrapped term."""
    v = _verify("ref_i8", "narrow_i8")
    monkeypatch.setattr(terms, "WIDE_RANGES", False)
    off = _verify("ref_i8", "narrow_i8")
    assert off.verdict == "equivalent", off.reason
    assert off.stats["cut_points"] > v.stats["cut_points"], (off.stats, v.stats)


def test_no_overflow_where_the_ranges_say_so() -> None:
    assert _verify("ref_i8", "wide_i8").verdict == "equivalent"
    assert _verify("ref_i16", "narrow_i16").verdict == "equivalent"


def test_an_overflow_the_ranges_allow_is_a_difference() -> None:
    """A range too narrow would fold the int32 wrap away and call this equal."""
    v = _verify("ref_i16", "wide_i16")
    assert v.verdict == "not-equivalent", v.reason
    assert v.counterexample is not None and v.counterexample.confirmed_at == "original sizes"


def test_a_range_too_narrow_would_hide_an_overflow(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two int16 products (each cut, each in [-2^30 + 2^15, 2^30]) added in int32 against
    the same sum in int64: they differ only at a = b = -32768 in both places (2^31 wraps).
    The ranges kept must be the definitions' own: a loosened rule (ranges a thousandth as
    wide) folds the wrap away and proves this pair equal."""
    v = _verify("ref_sum2", "wide_sum2")
    assert v.verdict == "not-equivalent", v.reason
    assert v.counterexample is not None and v.counterexample.confirmed_at == "original sizes"
    real = terms.record_range

    def narrow(var, definition_of, definition):  # the loosened rule
        real(var, definition_of, definition)
        rng = var.store.ranges.get(var.leaf.id) if getattr(var, "leaf", None) is not None else None
        if rng is not None and rng[1] - rng[0] > terms.NARROW_RANGE:
            var.store.ranges[var.leaf.id] = (rng[0] // 1000, rng[1] // 1000)
    monkeypatch.setattr(terms, "record_range", narrow)
    assert _verify("ref_sum2", "wide_sum2").verdict == "equivalent"


@pytest.fixture(scope="module")
def gen3():
    return client_generator("gen_clients3")  # skips without jax, flax and optax


def test_int8_mlp_partitioned_by_xla(gen3) -> None:
    p = gen3.PROGRAMS["int8_mlp"]()
    ref, part = gen3.g.tj._pair(p.fn, p.args, p.in_shardings, p.out_shardings, p.reference, "partitioned")
    v = verify(ref, part, cache=False)
    assert v.verdict == "equivalent", v.reason
    bad = verify(ref, gen3.MUTATIONS["all_reduce_kind"](part), cache=False)  # an add made a max
    assert bad.verdict == "not-equivalent", bad.reason
