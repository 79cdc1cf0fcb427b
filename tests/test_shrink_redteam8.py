"""Red-team batch 8 (docs/shrinking.md, "Red-team batch 8"; testdata/gen_redteam8.py,
testdata/redteam8/manifest.json: every twin run on XLA at its original sizes): counts scaled
by their summands' constant terms and counts met by literals that are no integers (rule a,
`constants.SCALED_COUNTS`, `constant_terms.Scales`), and ids split at a number computed from
constants (rule b, `id_splits.DEVICE_NUMBERS`); plus pairs aimed at scatters, pads and
lookup tables that the rules already held. Each hole is held by its plan, by the plan with
its switch off (the class shrinks to where the bug hides) and by a loosened form of the
rule; every bug twin's verdict with the rules alone is `not-equivalent`, confirmed at the
original sizes, and the correct twins are never `not-equivalent`."""
from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import TESTDATA, GeneratedPairs, assert_confirmed_at_original_sizes
from tv_mlir.shrink import constant_terms, constants, id_splits

D = TESTDATA / "redteam8"
PAIRS = GeneratedPairs(D)
MANIFEST = PAIRS.manifest
TOKENS, VOCAB = "x dim 0", "emb dim 0"
_size = PAIRS.size
# Holes before this batch (rules only, a worktree of f97e272: `equivalent`).
COUNT_HOLES = ("count_half_literal", "count_scaled_input")
RANGE_HOLES = ("range_barrier", "range_table_entry", "range_device_entry")
SAME_HOLES = ("fixed_pow0",)
TABLE_HOLES = ("lookup_table_both",)
# Held before (variants kept so they stay held): the tokens stay past 2 or the vocabulary whole.
COUNTS_HELD = ("count_scaled_sum", "count_scaled_dot", "count_scaled_typed", "count_scaled_exp")
RANGES_HELD = ("range_full_add", "range_offset_add")  # computed numbers the prepare passes fold
OTHERS_HELD = ("lookup_table_shift", "scatter_size_index", "pad_not_half")
# Predicates decided by zero_types' affine forms though the integers wrap: rule k's count
# bound still holds the tokens (past the bug's min(c, 2)).
WRAPS_HELD = ("taut_narrow", "taut_wrap", "taut_narrow_eq", "taut_unsigned")
# Values the same everywhere that Same reads as varying, but the verifier does not fold
# either: both twins `unknown` at 2 tokens, no wrong verdict.
NOT_FOLDED = ("fixed_clamp", "fixed_minmax", "fixed_abs_neg", "fixed_and_zero", "fixed_xor_self")
# Correct twins the verifier does not prove (exp is uninterpreted: `unknown`): never
# not-equivalent. (lookup_table_shift's correct twin is `unknown` too, after ~80 s of
# retries: not in the suite; docs/shrinking.md, batch 8.)
NOT_PROVED = ("count_scaled_exp",)


def test_manifest_lists_every_pair_ran_on_xla() -> None:
    assert set(COUNT_HOLES + RANGE_HOLES + SAME_HOLES + TABLE_HOLES + COUNTS_HELD + RANGES_HELD + OTHERS_HELD + WRAPS_HELD
               + NOT_FOLDED) == set(MANIFEST)
    for e in MANIFEST.values():
        assert e["ran_on_xla"], e
        for f in e["files"].values():
            assert (D / f).exists(), f


@pytest.mark.parametrize("pair", COUNT_HOLES + COUNTS_HELD + SAME_HOLES + WRAPS_HELD)
def test_a_scaled_count_keeps_the_tokens_past_the_bug(pair: str) -> None:
    # The bug writes the count at 2 tokens (1.5 = 0.75 x 2, or T + 1 past 15.5).
    assert _size(pair, TOKENS) > 2


@pytest.mark.parametrize("pair", COUNT_HOLES)
def test_without_scaled_counts_the_tokens_shrink_to_the_bug(pair: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(constants, "SCALED_COUNTS", False)
    assert _size(pair, TOKENS) == 2


def test_a_loosened_scale_reading_hides_the_input_scaled_count(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every count read at scale 1 (literals as they are): 1.5 w against 0.75 w T is missed.
    monkeypatch.setattr(constant_terms.Scales, "of", lambda self, v, depth=0: frozenset({1.0}))
    assert _size("count_scaled_input", TOKENS) == 2


def test_a_loosened_order_with_integer_literals_only_hides_the_half_literal(monkeypatch: pytest.MonkeyPatch) -> None:
    # The scaled order read with integer literals only (rule a's old literal set): 15.5 is missed.
    real = constants._scaled_counts

    def loose(a: Any, where: constants.Sites, *args: Any, **kwargs: Any) -> None:
        ints = constants.Sites(literals=[x for x in where.literals if float(x[2]).is_integer()],
                               scales=where.scales)
        return real(a, ints, *args, **kwargs)
    monkeypatch.setattr(constants, "_scaled_counts", loose)
    assert _size("count_half_literal", TOKENS) == 2


@pytest.mark.parametrize("pair", COUNT_HOLES + ("count_scaled_sum", "count_scaled_input"))
def test_the_correct_count_twins_still_shrink(pair: str) -> None:
    assert _size(pair, TOKENS, "ok") < 16


@pytest.mark.parametrize("pair", RANGE_HOLES + RANGES_HELD)
def test_a_split_at_a_computed_number_keeps_the_vocabulary(pair: str) -> None:
    assert _size(pair, VOCAB) == 512
    assert _size(pair, VOCAB, "ok") < 512


def test_without_computed_numbers_the_barrier_split_is_missed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(id_splits, "DEVICE_NUMBERS", False)
    assert _size("range_barrier", VOCAB) < 100


def test_a_loosened_number_with_device_ids_only_misses_the_barrier_split(monkeypatch: pytest.MonkeyPatch) -> None:
    # Batch 7's reading (a number made of device ids and constants, with a device id among
    # them): barrier(1100) has none, and the split is missed again.
    real = id_splits._number_constants

    def with_device(fa: Any, v: str) -> tuple[str, ...] | None:
        walk = id_splits._number_walk(fa, v)
        return real(fa, v) if walk is not None and walk[1] else None
    monkeypatch.setattr(id_splits, "_number_constants", with_device)
    assert _size("range_barrier", VOCAB) < 100


def test_a_power_by_zero_is_the_same_everywhere(monkeypatch: pytest.MonkeyPatch) -> None:
    # exp(x ** 0 - 1) is 1 at every token (the verifier multiplies x ** 0 out to 1): off, a
    # fresh variable per token with no constant term, and the tokens shrink to the bug's 2.
    assert _size("fixed_pow0", TOKENS, "ok") < 16
    monkeypatch.setattr(constant_terms, "POWER_ZERO", False)
    assert _size("fixed_pow0", TOKENS) == 2


def test_a_loosened_table_reading_misses_the_device_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    # The table passed whole into the manual computation read as an input there (not
    # followed to its constant): `local < table[tp]` records no split, 512 words shrink.
    assert _size("range_device_entry", VOCAB, "ok") < 512
    monkeypatch.setattr(id_splits, "passed_whole", lambda fa, v: v)
    assert _size("range_device_entry", VOCAB) < 100


def test_a_table_of_block_starts_keeps_the_vocabulary(monkeypatch: pytest.MonkeyPatch) -> None:
    # Both programs read a table of block starts written with jnp (not XLA's form, which
    # LOOKUP_TABLES rewrites): `ids - table[tp]` is ids moved by a device's number made of
    # the table's entries, and the table moves with no size, so the vocabulary stays whole
    # (at 8 words the bug's 383 and the reference's 384 both lie past every id).
    assert _size("lookup_table_both", VOCAB) == 512
    monkeypatch.setattr(id_splits, "DEVICE_OFFSETS", False)
    assert _size("lookup_table_both", VOCAB) < 512


def test_a_loosened_offset_reading_misses_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    # The table passed whole into the manual computation read as an input (batch 7's
    # reading): no device offset, and the vocabulary shrinks to where the bug hides.
    monkeypatch.setattr(id_splits, "passed_whole", lambda fa, v: v)
    assert _size("lookup_table_both", VOCAB) < 512


@pytest.mark.parametrize("pair", NOT_FOLDED)
def test_a_value_the_verifier_does_not_fold_is_not_proved(pair: str) -> None:
    # Same reads these as varying (the tokens shrink to 2); the verifier does not fold them
    # inside exp either: never `equivalent`. Should it fold one, this fails and Same needs it.
    assert PAIRS.verify(pair, "bug", rules_only=True).verdict != "equivalent"


# --- verdicts

@pytest.mark.parametrize("pair", sorted(set(MANIFEST) - set(NOT_FOLDED)))
def test_bug_twin_is_found_by_the_rules(pair: str) -> None:
    assert_confirmed_at_original_sizes(PAIRS.verify(pair, "bug", rules_only=True))


@pytest.mark.parametrize("pair", sorted(COUNT_HOLES + RANGE_HOLES + SAME_HOLES + TABLE_HOLES + NOT_PROVED))
def test_correct_twin_is_not_refuted(pair: str) -> None:
    v = PAIRS.verify(pair, "ok")
    assert v.verdict == ("equivalent" if pair not in NOT_PROVED else v.verdict) and v.verdict != "not-equivalent", \
        v.reason
