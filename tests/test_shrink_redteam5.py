"""Red-team batch 5 (docs/shrinking.md, "Red-team batch 5"; testdata/gen_redteam5.py,
testdata/redteam5/manifest.json: every twin run on XLA at its original sizes): pairs aimed
at the last stop's rules (rule t's trip predicates, rule b's assumed ranges, rule a's
implicit clamps) and at Newton's argument. Each hole is held by its plan (the class kept
where the bug shows), by the plan with its mechanism switched off (the class shrinks to
where the bug hides) and by a loosened form of the mechanism (the same); every bug twin's
verdict with the full-size check and the second witness off is `not-equivalent`, confirmed
at the original sizes, and every correct twin's by default `equivalent`."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.conftest import TESTDATA, GeneratedPairs, assert_confirmed_at_original_sizes
from tv_mlir.shrink import constant_terms, id_splits, ranged, trips, zero_types

D = TESTDATA / "redteam5"
PAIRS = GeneratedPairs(D)
MANIFEST = PAIRS.manifest


_assume, _files, _plan, _size = PAIRS.assume, PAIRS.files, PAIRS.plan, PAIRS.size


def test_manifest_lists_every_pair_ran_on_xla() -> None:
    assert set(MANIFEST) == {"trip_count_sub", "trip_choose", "range_offset", "range_negated", "range_rem",
                             "range_iota", "range_count", "clamp_scaled", "const_term", "count_tautology"}
    for e in MANIFEST.values():
        assert e["ran_on_xla"], e
        for f in e["files"].values():
            assert (D / f).exists(), f


# --- rule t: a group's members are made of members (trips.MEMBER_DEFS)

@pytest.mark.parametrize("pair", ["trip_count_sub", "trip_choose"])
def test_a_count_of_h_in_a_counters_group_drops_it(pair: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # k = sum(ones(H)) meets the counter (k - i == 11; select(i + 11 < k, ...)): the group
    # escapes, 11 reads as H - 1 and H keeps its 12. Off, H shrinks below 12, where
    # k - i < 11 and i + 11 >= k on every layer: the bug is the reference there.
    assert _size(pair, "x dim 0") == 12
    monkeypatch.setattr(trips, "MEMBER_DEFS", False)
    assert _size(pair, "x dim 0") < 12


def test_a_loosened_member_rule_lets_the_count_in(monkeypatch: pytest.MonkeyPatch) -> None:
    # Checking a member's definition by its scalar operands only (a reduce has none) is
    # the hole again.
    closed = trips._closed
    monkeypatch.setattr(trips, "_closed", lambda op, ints, m: op.name == "stablehlo.reduce" or closed(op, ints, m))
    assert _size("trip_count_sub", "x dim 0") < 12


# --- rule b: splits after offsets, lost splits (id_splits.py)

@pytest.mark.parametrize("pair", ["range_offset", "range_negated", "range_rem", "range_iota"])
def test_a_mask_written_through_offsets_keeps_the_vocabulary(pair: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # ids < 100 as ids + 1000 < 1100, 1000 - ids > 900, (ids + 1000) % 2000 < 1100, or ids <
    # max(iota(16)) + 1: the vocabulary stays where ids past the split exist (202 and 18 at
    # least; 256 is the next size). Off, it shrinks below the split and the bug hides.
    assert _size(pair, "emb dim 0") >= (18 if pair == "range_iota" else 202)
    monkeypatch.setattr(id_splits, "OFFSETS", False)
    assert _size(pair, "emb dim 0") <= (16 if pair == "range_iota" else 100)


def test_a_loosened_split_without_offsets_hides_the_mask(monkeypatch: pytest.MonkeyPatch) -> None:
    # The walk with every offset read as 0 (the split at the compared constant, as
    # named_positions has it) names 1100, past the vocabulary: the hole again.
    real = id_splits._map

    def no_offsets(op: Any, fs: Any, consts: Any) -> Any:
        made = real(op, fs, consts)
        return made if made is None else frozenset(id_splits.Form(f.scale, 0.0, f.constants) for f in made)
    monkeypatch.setattr(id_splits, "_map", no_offsets)
    assert _size("range_offset", "emb dim 0") <= 100


def test_a_lost_split_keeps_the_class(monkeypatch: pytest.MonkeyPatch) -> None:
    # Lost splits ignored (only the affine ones read): the remainder's mask hides again.
    real: Callable[..., Any] = id_splits.id_splits

    def found(fa: Any, seeds: Any) -> id_splits.Walk:
        w = real(fa, seeds)
        return id_splits.Walk([s for s in w.splits if not s.lost], w.clamps)
    monkeypatch.setattr(ranged, "id_splits", found)
    assert _size("range_rem", "emb dim 0") <= 100


def test_a_scaled_index_orders_its_clamp_in_the_ids_units(monkeypatch: pytest.MonkeyPatch) -> None:
    # take(emb, 4 * minimum(ids, 40)): the clamp at |C| - 1 reads ids up to 63 at 256 words;
    # the cap 40 must stay below (|C'| - 1) / 4: C' >= 4 (40 + 2) + 1. Rule a orders the
    # clamp with 40 itself (C' >= 42, 128 here, where the cap never decides a row).
    assert _size("clamp_scaled", "emb dim 0") >= 169
    monkeypatch.setattr(ranged, "_clamped", lambda fa, a, walk: [])
    assert _size("clamp_scaled", "emb dim 0") <= 160


# --- Newton: summands with a constant term count their class (constant_terms.py)

def test_a_summands_constant_term_counts_the_class(monkeypatch: pytest.MonkeyPatch) -> None:
    # sum(x + 1) is sum(x) + T: T is a size value ordered with the bug's 2 (T' > 2); off,
    # T shrinks to 2 where sum(x) + 2 is the reference.
    assert _size("const_term", "x dim 0") > 2
    assert _size("range_count", "emb dim 0") - 1 > _size("range_count", "ids dim 0")
    monkeypatch.setattr(constant_terms, "CONSTANT_TERMS", False)
    assert _size("const_term", "x dim 0") == 2
    # the count of ids * 0 + 1 made integer is an atom zero_types does not trust, and one that
    # reads the ids (related to them) either (batch 9)
    monkeypatch.setattr(zero_types, "INTERPRETED", False)
    monkeypatch.setattr(zero_types, "RELATED", False)
    assert _size("range_count", "emb dim 0") <= _size("range_count", "ids dim 0")


def test_a_loosened_constant_term_rule_hides_the_bias(monkeypatch: pytest.MonkeyPatch) -> None:
    # A sum read as a product (none when one operand has none): x + 1 has "none", the hole.
    real = constant_terms.ConstantTerms._compute

    def loose(self: Any, v: str) -> bool:
        d = self.degrees.facts.defs.get(v)
        if d is not None and d[0].name == "stablehlo.add":
            return all(self._get(o) for o in d[0].operands)
        return bool(real(self, v))
    monkeypatch.setattr(constant_terms.ConstantTerms, "_compute", loose)
    assert _size("const_term", "x dim 0") == 2


# --- verdicts

# count_tautology, open in batch 5, is closed by rule k's zero types (red-team batch 6,
# tests/test_shrink_redteam6.py): `ids == ids` is decided, its count is the size.
@pytest.mark.parametrize("pair", sorted(MANIFEST))
def test_bug_twin_is_found_by_the_rules(pair: str) -> None:
    v = PAIRS.verify(pair, "bug", rules_only=True)
    assert_confirmed_at_original_sizes(v)


@pytest.mark.parametrize("pair", sorted(MANIFEST))
def test_correct_twin_is_equivalent(pair: str) -> None:
    v = PAIRS.verify(pair, "ok")
    assert v.verdict == "equivalent", v.reason
