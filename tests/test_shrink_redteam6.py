"""Red-team batch 6 (docs/shrinking.md, "Red-team batch 6"; testdata/gen_redteam6.py,
testdata/redteam6/manifest.json: every twin run on XLA at its original sizes): counts of
predicates the verifier decides (rule k's zero types, shrink/zero_types.py), a counter
group's member made inside a manual computation (rule t, `trips.REGION_ARGS`) and a
summand whose atom's argument cancels (`constant_terms.ATOM_CANCELS`). Each hole is held
by its plan (the class kept where the bug shows), by the plan with its mechanism switched
off (the class shrinks to where the bug hides) and by a loosened form of the mechanism;
every bug twin's verdict with the full-size check and the second witness off is
`not-equivalent`, confirmed at the original sizes, and every correct twin's by default
`equivalent`."""
from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import TESTDATA, GeneratedPairs, assert_confirmed_at_original_sizes
from tv_mlir.shrink import constant_terms, trips, zero_types

D = TESTDATA / "redteam6"
PAIRS = GeneratedPairs(D)
MANIFEST = PAIRS.manifest
# pair -> (the class the count runs over, the bug twin's literal: the count's value at
# the size that class shrank to when rule k read the count as a free data predicate's)
DECIDED = {"taut_le": ("x dim 0", 4), "taut_shift": ("ids dim 0", 2), "taut_range": ("ids dim 0", 2),
           "taut_square": ("x dim 0", 4), "taut_squares": ("x dim 0", 4), "taut_same": ("x dim 0", 4),
           "taut_pair": ("x dim 0", 8), "taut_select": ("x dim 0", 8), "taut_cover": ("x dim 0", 16),
           "taut_max": ("x dim 0", 4), "taut_transpose": ("x dim 0", 8), "taut_poly": ("x dim 0", 4)}
# Pairs whose bug twin the rules already found (before this batch): variants checked.
FOUND = {"taut_not_ne", "taut_iota", "const_lookup", "iota_sum"}


_assume, _files, _plan, _size = PAIRS.assume, PAIRS.files, PAIRS.plan, PAIRS.size


def test_manifest_lists_every_pair_ran_on_xla() -> None:
    assert set(DECIDED) | FOUND | {"exp_cancel", "exp_select", "trip_manual", "taut_positions"} == set(MANIFEST)
    for e in MANIFEST.values():
        assert e["ran_on_xla"], e
        for f in e["files"].values():
            assert (D / f).exists(), f


# --- rule k: zero types (zero_types.py)

@pytest.mark.parametrize("pair", sorted(DECIDED))
def test_a_count_without_a_zero_type_is_counted(pair: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # The count is the size itself (every reachable type has a constant term): rule a
    # orders it with the bug's literal, so the class stays past it. Off, the class
    # shrinks to the literal, where the count is the bug's number.
    where, literal = DECIDED[pair]
    assert _size(pair, where) > literal
    # Zero types alone (a decided compare is a type restriction there too) ...
    monkeypatch.setattr(constant_terms, "DECIDED", False)
    assert _size(pair, where) > literal
    # ... and with them off, the decided compares read as constants by Newton's constant
    # terms (constant_terms.DECIDED) hold the single tautologies only.
    monkeypatch.setattr(zero_types, "ZERO_TYPES", False)
    assert _size(pair, where) == literal


def test_count_tautology_of_batch_5_is_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests import test_shrink_redteam5 as rt5
    assert rt5._size("count_tautology", "ids dim 0") > 4
    monkeypatch.setattr(zero_types, "ZERO_TYPES", False)
    assert rt5._size("count_tautology", "ids dim 0") > 4  # ids == ids: decided, a constant
    monkeypatch.setattr(constant_terms, "DECIDED", False)
    assert rt5._size("count_tautology", "ids dim 0") == 4


def test_a_loosened_reading_of_decided_predicates_hides_the_tautology(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every predicate read as free (both outcomes, independent): only the select's
    # branches are seen; x <= x and the complementary pair hide again.
    real = zero_types.reachable
    monkeypatch.setattr(constant_terms, "DECIDED", False)
    monkeypatch.setattr(zero_types, "reachable", lambda preds, ranged, inside: real(
        [zero_types.Predicate(p.value, p.direction, (), 0.0, free=True) for p in preds], {}))
    assert _size("taut_le", "x dim 0") == 4
    assert _size("taut_pair", "x dim 0") == 8
    assert _size("taut_same", "x dim 0") > 4  # where(p, 1, 1): a constant term at both outcomes


def test_a_loosened_numbering_hides_the_complementary_pair(monkeypatch: pytest.MonkeyPatch) -> None:
    # Red-team batch 9 relates atoms that read one input (zero_types.RELATED), which counts these
    # families too: off, the reading this test is about is tested alone.
    monkeypatch.setattr(zero_types, "RELATED", False)
    # Atoms numbered by SSA name only: jax slices x[:, 0] anew for each compare, so the
    # two predicates read as independent and the false-false type as reachable.
    monkeypatch.setattr(zero_types.Normal, "key", lambda self, v, depth=0: ("value", v))
    assert _size("taut_pair", "x dim 0") == 8
    assert _size("exp_cancel", "x dim 0") == 2  # the same numbering reads exp(x - x)


def test_a_loosened_layout_numbering_hides_the_transpose(monkeypatch: pytest.MonkeyPatch) -> None:
    # Red-team batch 9 relates atoms that read one input (zero_types.RELATED), which counts these
    # families too: off, the reading this test is about is tested alone.
    monkeypatch.setattr(zero_types, "RELATED", False)
    # Layout chains numbered by their ops, not by the elements they read: x[:, 0] and
    # x.T[0] are two atoms.
    monkeypatch.setattr(zero_types.Normal, "_layout", lambda self, root, chain: None)
    assert _size("taut_transpose", "x dim 0") == 8
    assert _size("taut_pair", "x dim 0") > 8  # two slices alike are still one value


def test_a_loosened_range_hides_the_clipped_tautology(monkeypatch: pytest.MonkeyPatch) -> None:
    # Ranges read for squares and exp only (max/min/clamp unbounded): max(x, 0) >= 0 is free.
    real = zero_types.Normal.range

    def loose(self: Any, v: str, depth: int = 0) -> tuple[float, float]:
        d = self.facts.defs.get(v)
        if d is not None and d[0].name in ("stablehlo.maximum", "stablehlo.minimum", "stablehlo.clamp"):
            return -float("inf"), float("inf")
        return real(self, v, depth)
    monkeypatch.setattr(zero_types.Normal, "range", loose)
    assert _size("taut_max", "x dim 0") == 4


def test_a_loosened_cover_reads_shared_atoms_as_independent(monkeypatch: pytest.MonkeyPatch) -> None:
    # Predicates that share atoms evaluated one by one: x >= 0, y >= 0, x + y < 0 all
    # false (never, together) reads as reachable.
    monkeypatch.setattr(zero_types, "_component", lambda preds, inside: [
        dict(zip((p.value for p in preds), row)) for row in __import__("itertools").product(
            (True, False), repeat=len(preds))])
    assert _size("taut_cover", "x dim 0") == 16


def test_a_loosened_independence_hides_the_expanded_square(monkeypatch: pytest.MonkeyPatch) -> None:
    # Red-team batch 9 relates atoms that read one input (zero_types.RELATED), which counts these
    # families too: off, the reading this test is about is tested alone.
    monkeypatch.setattr(zero_types, "RELATED", False)
    # Atoms read as independent though one is computed from the other (x * x and x):
    # x * x - 2 x + 1 >= 0 (the verifier folds it) reads as taking both outcomes.
    monkeypatch.setattr(zero_types.Normal, "inside", lambda self, a, b: a == b)
    assert _size("taut_poly", "x dim 0") == 4


def test_a_select_by_a_fixed_predicate_takes_its_branch(monkeypatch: pytest.MonkeyPatch) -> None:
    # The select's predicate not followed (into jnp.where's function): where(p, 1, 1)
    # reads as rule k's select, no constant term at either outcome.
    monkeypatch.setattr(constant_terms.ConstantTerms, "_truth", lambda self, v, depth=0: self.outcomes.get(v))
    # Batch 7's same-value reading follows the predicate into the function too (a select by
    # a value the same at every position of the type takes either branch): off as well.
    monkeypatch.setattr(constant_terms, "SAME_VALUES", False)
    assert _size("taut_same", "x dim 0") == 4


def test_a_free_predicate_keeps_its_zero_type() -> None:
    # Joint outcomes on one atom are exact: x > 0 and x <= 0 never agree; x > 1 implies
    # x > 0 (three of four outcomes); a square is never negative.
    p = zero_types.Predicate("%p", "GT", ((("value", "%x"), 1.0),), 0.0, (zero_types.Domain(),))
    q = zero_types.Predicate("%q", "LE", ((("value", "%x"), 1.0),), 0.0, (zero_types.Domain(),))
    r = zero_types.Predicate("%r", "GT", ((("value", "%x"), 1.0),), -1.0, (zero_types.Domain(),))
    assert sorted(map(sorted, (u.items() for u in zero_types.reachable([p, q], {})))) == \
        [[("%p", False), ("%q", True)], [("%p", True), ("%q", False)]]
    assert len(zero_types.reachable([p, r], {})) == 3  # x > 1 implies x > 0
    square = ("stablehlo.multiply", 0, (), (("value", "%x"), ("value", "%x")), ())
    s = zero_types.Predicate("%s", "GE", ((square, 1.0),), 0.0, (zero_types.Domain(lo=0.0),))
    assert s.decided() is True


def test_a_decided_compare_is_a_constant_wherever_it_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    # where(iota >= 0, 1, 0) summed over the tokens: no data predicate (rule k does not
    # see it), but decided: the constant 1, so the sum is the size. Off, T shrinks to 4.
    assert _size("taut_positions", "x dim 0") > 4
    monkeypatch.setattr(constant_terms, "DECIDED", False)
    assert _size("taut_positions", "x dim 0") == 4


def test_a_loosened_decision_of_identical_operands_only_hides_the_positions(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Decided only when both operands are one value (count_tautology's `ids == ids`).
    real = constant_terms.read_compare

    def alike_only(normal: Any, op: Any, dtype: str) -> zero_types.Predicate:
        p = real(normal, op, dtype)
        same = normal.key(op.operands[0]) == normal.key(op.operands[1])
        return p if same else zero_types.Predicate(p.value, p.direction, (), 0.0, free=True)
    monkeypatch.setattr(constant_terms, "read_compare", alike_only)
    assert _size("taut_positions", "x dim 0") == 4


# --- rule t: region arguments are member definitions (trips.REGION_ARGS)

def test_a_count_entering_a_manual_computation_drops_the_group(monkeypatch: pytest.MonkeyPatch) -> None:
    # k = sum(ones(H)) passed into a shard_map meets the counter there (k - i == 11): the
    # group escapes, 11 reads as H - 1 and H keeps 12. Off, H shrinks below 12.
    assert _size("trip_manual", "x dim 0") == 12
    monkeypatch.setattr(trips, "REGION_ARGS", False)
    assert _size("trip_manual", "x dim 0") < 12


def test_a_loosened_region_rule_lets_the_count_in(monkeypatch: pytest.MonkeyPatch) -> None:
    # Region arguments checked only for ops without operands of their own (a reduce's
    # body: the manual computation's arguments pass): the hole again.
    real = trips._blocks

    def blocks(module: Any) -> Any:
        for block, owner, k in real(module):
            yield block, (None if owner is not None and owner.name == "sdy.manual_computation" else owner), k
    monkeypatch.setattr(trips, "_blocks", blocks)
    assert _size("trip_manual", "x dim 0") < 12


# --- Newton: an atom whose argument cancels (constant_terms.ATOM_CANCELS)

def test_an_atom_of_a_cancelling_difference_counts_the_class(monkeypatch: pytest.MonkeyPatch) -> None:
    # sum(exp(x - x)) is T: T is a size value ordered with the bug's 2; off, T shrinks to 2.
    # exp(where(y > 0, 0, x - x)) is 1 at both outcomes of y > 0: the same at a fixed type.
    assert _size("exp_cancel", "x dim 0") > 2
    assert _size("exp_select", "x dim 0") > 4
    monkeypatch.setattr(constant_terms, "ATOM_CANCELS", False)
    assert _size("exp_cancel", "x dim 0") == 2
    assert _size("exp_select", "x dim 0") == 4


def test_a_loosened_fixed_argument_ignores_the_select(monkeypatch: pytest.MonkeyPatch) -> None:
    # An atom's argument read without the select's branch at a fixed type (only
    # cancellations and products with 0): exp_select hides again.
    monkeypatch.setattr(constant_terms.ConstantTerms, "_fixed",
                        lambda self, v, depth=0: self._constant_function(v) or self._cancels(v))
    # Batch 7's normal form folds a select of branches alike (0 and x - x) inside jnp.where's
    # function, so the cancellation alone sees it: off as well.
    monkeypatch.setattr(zero_types, "CHOICES_ALIKE", False)
    assert _size("exp_cancel", "x dim 0") > 2
    assert _size("exp_select", "x dim 0") == 4


# --- verdicts

@pytest.mark.parametrize("pair", sorted(MANIFEST))
def test_bug_twin_is_found_by_the_rules(pair: str) -> None:
    v = PAIRS.verify(pair, "bug", rules_only=True)
    assert_confirmed_at_original_sizes(v)


@pytest.mark.parametrize("pair", sorted(MANIFEST))
def test_correct_twin_is_equivalent(pair: str) -> None:
    v = PAIRS.verify(pair, "ok")
    assert v.verdict == "equivalent", v.reason
