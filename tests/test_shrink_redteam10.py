"""Red-team batch 10 (docs/shrinking-redteam10.md; testdata/gen_redteam10.py,
testdata/redteam10/manifest.json: every twin run on XLA at its original sizes). Three holes,
each a bug twin `equivalent` at the shrunk sizes with the rules alone before this batch: an
int8 counter carried through a loop of T trips (overflow.LOOPS), an int8 iota along T
(overflow.IOTAS), and rsqrt of the tokens' count against the literal it takes at T' = 4
(overflow.FOLDS with constants' order). Each is held by its plan, comes back with its switch
off and with a loosened mechanism; every bug twin of the batch (the held ones too) is
`not-equivalent` with the rules alone, confirmed at the original sizes; every correct twin is
`equivalent`, and the holes' correct twins shrink."""
from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import TESTDATA, GeneratedPairs, assert_confirmed_at_original_sizes
from tv_mlir.shrink import overflow

D = TESTDATA / "redteam10"
PAIRS = GeneratedPairs(D)
MANIFEST = PAIRS.manifest
TOKENS = "x dim 0"
_size = PAIRS.size
HOLES = ("loop_int8_count", "iota_int8", "rsqrt_count")
# Held before this batch (a class pinned or kept past the bug's size by an older rule).
HELD = ("prod_count", "max_count", "or_last", "meet_count", "meet_call", "meet_while", "meet_convert",
        "while_dyn_trip", "dyn_slice_count", "prod_int_wrap", "reverse_pick", "concat_index", "argmax_rem",
        "reshape_last", "dus_offset", "cumsum_pick", "sort_pick", "gather_batched")
# The size at which each hole's bug hides (any size below 128 for the int8 wraps; T' = 4,
# where rsqrt(T') is the bug's 0.5).
HIDDEN = {"loop_int8_count": 2, "iota_int8": 4, "rsqrt_count": 4}


def test_manifest_lists_every_pair_ran_on_xla() -> None:
    assert set(HOLES + HELD) == set(MANIFEST)
    for e in MANIFEST.values():
        assert e["ran_on_xla"], e
        for f in e["files"].values():
            assert (D / f).exists(), f


def test_the_wraps_keep_the_tokens() -> None:
    # 200 tokens: the int8 count and the int8 iota wrap at 128, so the tokens stay whole.
    assert _size("loop_int8_count", TOKENS) == 200
    assert _size("iota_int8", TOKENS) == 200


def test_the_fold_keeps_the_tokens_past_the_literals_preimage() -> None:
    # rsqrt(T') = 0.5 at T' = 4: the tokens stay past 4 (the literal's preimage).
    assert _size("rsqrt_count", TOKENS) > 4


def test_without_loops_the_count_shrinks_to_the_bug(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(overflow, "LOOPS", False)
    assert _size("loop_int8_count", TOKENS) == HIDDEN["loop_int8_count"]


def test_without_iotas_the_positions_shrink_to_the_bug(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(overflow, "IOTAS", False)
    assert _size("iota_int8", TOKENS) == HIDDEN["iota_int8"]


def test_without_folds_the_count_shrinks_to_the_bug(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(overflow, "FOLDS", False)
    assert _size("rsqrt_count", TOKENS) == HIDDEN["rsqrt_count"]


@pytest.mark.parametrize("trips", [1, 64, 1024])
def test_the_loop_wrap_is_seen_walked_trip_by_trip_or_extrapolated(trips: int,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # The wrap is at trip 128 of 200: seen by walking every trip (1024, the default), by
    # the hull of an affine growth after 64 trips and, with one trip walked (no growth can be
    # read as affine), by the carried integer made a site.
    monkeypatch.setattr(overflow, "LOOP_TRIPS", trips)
    assert _size("loop_int8_count", TOKENS) == 200


def test_a_loosened_loop_walk_without_the_bound_misses_the_count(monkeypatch: pytest.MonkeyPatch) -> None:
    # The carried count's site without the trip bound's constant names no class: the wrap
    # is seen but nothing keeps the 200 trips.
    real = overflow._Walk._trip

    def loose(self: Any, body: Any, known: Any, carried: Any, bound: Any) -> Any:
        return real(self, body, known, carried, frozenset())
    monkeypatch.setattr(overflow._Walk, "_trip", loose)
    assert _size("loop_int8_count", TOKENS) == HIDDEN["loop_int8_count"]


def test_a_loosened_fold_without_preimages_misses_the_literal(monkeypatch: pytest.MonkeyPatch) -> None:
    from tv_mlir.shrink import constants
    monkeypatch.setattr(constants, "preimages", lambda fn, v: [])
    assert _size("rsqrt_count", TOKENS) == HIDDEN["rsqrt_count"]


def test_a_count_read_as_an_outer_bound_is_no_fold(monkeypatch: pytest.MonkeyPatch) -> None:
    # The count's interval [0, T] (a sum of up to T ones) is no point: no fold site, hidden.
    real = overflow._Walk.float_op

    def loose(self: Any, op: Any, known: dict[str, Any]) -> None:
        real(self, op, known)
        if op.name == "stablehlo.reduce" and op.results[0] in known:
            k = known[op.results[0]]
            known[op.results[0]] = overflow.Known(min(k.lo, 0.0), k.hi, k.constants, k.classes, k.free)
    monkeypatch.setattr(overflow._Walk, "float_op", loose)
    assert _size("rsqrt_count", TOKENS) == HIDDEN["rsqrt_count"]


def test_preimages() -> None:
    assert overflow.preimages("stablehlo.rsqrt", 0.5) == [4.0]
    assert overflow.preimages("stablehlo.sqrt", 3.0) == [9.0]
    assert overflow.preimages("stablehlo.log", 0.0) == [1.0, 1.0]
    assert overflow.preimages("stablehlo.exponential", 1.0) == []  # exp(x) = 1 at x = 0: no size
    assert overflow.preimages("stablehlo.exponential", 2.0) == [pytest.approx(0.6931471805599453)]
    assert overflow.preimages("stablehlo.tanh", 0.5) == []


@pytest.mark.parametrize("pair", HOLES + HELD)
def test_bug_twin_is_found_by_the_rules(pair: str) -> None:
    assert_confirmed_at_original_sizes(PAIRS.verify(pair, "bug", rules_only=True))


@pytest.mark.parametrize("pair", HOLES + HELD)
def test_correct_twin_is_proved(pair: str) -> None:
    assert PAIRS.verify(pair, "ok", rules_only=True).verdict == "equivalent"


@pytest.mark.parametrize("pair", HOLES)
def test_holes_correct_twin_shrinks(pair: str) -> None:
    assert _size(pair, TOKENS, "ok") < MANIFEST[pair]["sizes"]["tokens"]
