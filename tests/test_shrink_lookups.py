"""Rule (k), index predicates under assumed ranges and counts through uninterpreted ops
(docs/shrinking.md, rule k "lookups" and "atoms"). Pairs: testdata/shrink_rules/gen_lookups.py
(manifest_lookups.json: a reference, a correct twin and a bug twin, XLA-checked at the
original sizes). Verdicts are taken with the full-size check and the second witness off,
so that the rules are what is tested."""
from __future__ import annotations

import json

import numpy as np
import pytest

import tv_mlir
from tests.conftest import RULES_OFF, TESTDATA
from tv_mlir.api import prepare
from tv_mlir.assume import resolve
from tv_mlir.options import Options
from tv_mlir.shrink import counts
from tv_mlir.shrink.facts import ProgramFacts
from tv_mlir.shrink.lookups import index_predicates
from tv_mlir.shrink.pair import _raw
from tv_mlir.shrink.plan import ShrinkPlan, plan

D = TESTDATA / "shrink_rules"
LOOKUPS = json.loads((D / "manifest_lookups.json").read_text())


def _files(pair: str, variant: str, kind: str) -> tuple[str, str]:
    return str(D / f"{pair}.{variant}.ref.mlir"), str(D / f"{pair}.{variant}.{kind}.mlir")


def _ranges(ref: str, vocab: int | None) -> list | None:
    if vocab is None:
        return None
    r = prepare(ref, Options())
    return resolve([("ids", 0, vocab)], list(r.main.arg_names), r.global_arg_types())


def _plan(pair: str, variant: str, kind: str, vocab: int | None) -> ShrinkPlan:
    ref, other = _files(pair, variant, kind)
    return plan(_raw(ref, prepare(ref, Options())).module, _raw(other, prepare(other, Options())).module,
                ranges=_ranges(ref, vocab))


def _tokens(p: ShrinkPlan) -> int:
    return next(e.verified for e in p.entries if e.where == "ids dim 0")


def test_lookups_manifest_lists_every_pair_ran_on_xla() -> None:
    assert {(e["pair"], e["variant"]) for e in LOOKUPS} == \
        {("lookup_shards", "small"), ("lookup_shards", "big"), ("count_exp", "small")}
    assert all(e["ran_on_xla"] for e in LOOKUPS)
    for e in LOOKUPS:
        for f in e["files"].values():
            assert (D / f).exists(), f


def test_shard_tests_are_evaluated_on_the_assumed_range() -> None:
    # The correct twin: 4 blocks, each tested by `t < off` and `t > off + vs - 1`; jnp.take's
    # own `t < 0` (one function, its call sites) is decided on [0, v), as are block 0's `t < 0` and
    # block 3's `t > v - 1`. The 6 other block tests
    # give 4 types (which block), not 2^8; the bug's `off + vs - 2` splits every block's
    # last word off: 8 types.
    ref, ok = _files("lookup_shards", "big", "ok")
    ranges = _ranges(ref, 32000)
    fa = ProgramFacts.of("other", _raw(ok, prepare(ok, Options())).module)
    lk = index_predicates(fa, ranges)
    # Decided: block 0's t < 0, block 3's t > v - 1, and _take's three tests in each of the
    # 4 copies of _take (rule s: one copy per call site, dims.split_call_sites).
    assert len(lk.outcomes) == 6 and len(lk.decided) == 2 + 3 * 4
    assert lk.types(set(lk.outcomes)) == 4
    _, bug = _files("lookup_shards", "big", "bug")
    fb = ProgramFacts.of("other", _raw(bug, prepare(bug, Options())).module)
    lb = index_predicates(fb, ranges)
    assert lb.types(set(lb.outcomes)) == 8
    # Without a bound on the tokens nothing is evaluated (rule k as before).
    assert not index_predicates(fa, None).outcomes and not index_predicates(fa, [None, None, None]).decided


def test_the_token_class_shrinks_only_with_the_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    # 2048 tokens through exp and log (a log-sum-exp over them): pinned by rule (k) before;
    # with the tokens assumed in [0, 32000) the shard tests make T = 4 types and, with the
    # atoms rule, the log-sum-exp has degree D = 1 in their counts: T + 1 = 5, so 8. The
    # atoms rule is off by default (unsound, tests/test_shrink_atoms.py): the log of the
    # counts then pins the tokens, assumption or not.
    assert _tokens(_plan("lookup_shards", "big", "ok", 32000)) == 2048
    monkeypatch.setattr(counts, "ATOMS", True)
    assert _tokens(_plan("lookup_shards", "big", "ok", 32000)) == 8
    # The bug's 8 types ask for 9, so 16: the twin is verified where its types all occur.
    assert _tokens(_plan("lookup_shards", "big", "bug", 32000)) == 16
    assert _tokens(_plan("lookup_shards", "big", "ok", None)) == 2048  # no assumption: rule k pins
    monkeypatch.setattr(counts, "LOOKUPS", False)
    assert _tokens(_plan("lookup_shards", "big", "ok", 32000)) == 2048
    monkeypatch.setattr(counts, "LOOKUPS", True)
    monkeypatch.setattr(counts, "ATOMS", False)
    assert _tokens(_plan("lookup_shards", "big", "ok", 32000)) == 2048


def test_a_count_through_exp_has_its_arguments_degree(monkeypatch: pytest.MonkeyPatch) -> None:
    # C(k, 3) inside exp: D = 3, the class keeps D + T d = 3 + 2 x 2 = 7 (8 of 64); a rule
    # that gave exp's result no degree would leave only Newton's 2, where C(k, 3) and the
    # bug's k(k-1)(k-2)/3 agree. (The rule is off by default: the class is pinned.)
    assert _plan("count_exp", "small", "bug", None).entries[0].verified == 64
    monkeypatch.setattr(counts, "ATOMS", True)
    _, bug = _files("count_exp", "small", "bug")
    fa = ProgramFacts.of("other", _raw(bug, prepare(bug, Options())).module)
    seeds = {op.results[0] for op in fa.ops() if op.name == "stablehlo.reduce"}
    assert counts.outer_degree(fa, seeds)[0] == 3
    p = _plan("count_exp", "small", "bug", None)
    assert p.entries[0].verified == 8, p.entries
    monkeypatch.setattr(counts, "ATOMS", False)
    assert counts.outer_degree(fa, seeds)[0] >= counts.UNBOUNDED
    assert _plan("count_exp", "small", "bug", None).entries[0].verified == 64


@pytest.mark.parametrize(("pair", "vocab"), [("lookup_shards", 64), ("count_exp", None)])
def test_verdicts(pair: str, vocab: int | None) -> None:
    ref, ok = _files(pair, "small", "ok")
    _, bug = _files(pair, "small", "bug")
    assume = [("ids", 0, vocab)] if vocab else []
    assert tv_mlir.verify(ref, ok, assume=assume, **RULES_OFF).verdict == "equivalent"
    v = tv_mlir.verify(ref, bug, assume=assume, **RULES_OFF)
    assert v.verdict == "not-equivalent", v.reason
    assert v.counterexample is not None and v.counterexample.confirmed_at == "original sizes"


def test_index_arithmetic_is_evaluated_exactly() -> None:
    # A decided predicate must be decided on every value: `t <= v - 1` on [0, v - 1] is,
    # `t <= v - 2` is not (its one exception is the last value).
    ref, ok = _files("lookup_shards", "small", "ok")
    fa = ProgramFacts.of("other", _raw(ok, prepare(ok, Options())).module)
    lk = index_predicates(fa, _ranges(ref, 64))
    for k, arr in lk.outcomes.values():
        assert k == 2 and arr.shape[0] == 64 and arr.dtype == np.bool_
        assert 0 < arr.sum() < arr.size
