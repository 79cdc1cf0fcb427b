"""Red-team batch 9 (docs/shrinking.md, "Red-team batch 9"; testdata/gen_redteam9.py,
testdata/redteam9/manifest.json: every twin run on XLA at its original sizes): rule k's zero
types read compares in a normal form of affine forms over unbounded integers and free atoms
with intervals, where the verifier computes integers modulo 2^bits and interprets selects,
sign, rem, bit operations and shifts. A count of a predicate true at every input then looked
like a sum with a zero type, the tokens were not counted, and a bug writing the count at the
shrunk size was `equivalent`. And rule a's sizes met by positions ordered a constant with the
positions' size only, not with their last positions (`meet_last`). Each hole is held by its plan, by the plan with its switch off
(the tokens shrink to the bug's 4) and by a loosened rule; every bug twin is `not-equivalent`
with the rules alone, confirmed at the original sizes; the correct twins shrink and are
`equivalent`."""
from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import TESTDATA, GeneratedPairs, assert_confirmed_at_original_sizes
from tv_mlir.shrink import constants, overflow, zero_types

D = TESTDATA / "redteam9"
PAIRS = GeneratedPairs(D)
MANIFEST = PAIRS.manifest
TOKENS = "x dim 0"
_size = PAIRS.size
# Integers that wrap: the forms over unbounded integers decide (or leave open) what the
# verifier's two's complement decides otherwise (zero_types.WRAPS).
WRAP_HOLES = ("wrap_narrow_eq", "wrap_sum_eq", "wrap_mul_zero", "wrap_unsigned")
# Atoms the verifier interprets, read as free values with intervals (zero_types.INTERPRETED).
BOUND_HOLES = ("bound_sign", "bound_rem", "bound_and", "bound_shift")
# Float sums of squares, whose sign the verifier folds (zero_types.SIGNS).
SIGN_HOLES = ("bound_sumsq", "bound_dot")
# A square written out: atoms of one input element, read as independent (zero_types.RELATED).
RELATED_HOLES = ("bound_sos",)
# Held before this batch (the select's, the Boolean's or the other compare's own data
# predicate keeps 8 tokens; a constant table read at the ids keeps all 16).
BOUND_HELD = ("bound_select", "bound_bool", "bound_pair", "bound_table")
# A constant of another class met by the tokens' positions (constants.LAST_POSITIONS); the
# same pick by a dynamic slice was held (the tokens pinned).
MEET_HOLES = ("meet_last",)
MEET_HELD = ("meet_slice",)
# A float count made int32 past its range at the original sizes only (overflow.FLOATS).
FLOAT_HOLES = ("wrap_count_convert",)
COUNTS = WRAP_HOLES + BOUND_HOLES + SIGN_HOLES + RELATED_HOLES + BOUND_HELD
HOLES = WRAP_HOLES + BOUND_HOLES + SIGN_HOLES + RELATED_HOLES + MEET_HOLES + FLOAT_HOLES
BUG_COUNT = 4  # the literal the bug twins write: the size the tokens shrank to before


def test_manifest_lists_every_pair_ran_on_xla() -> None:
    assert set(COUNTS + MEET_HOLES + MEET_HELD + FLOAT_HOLES) == set(MANIFEST)
    for e in MANIFEST.values():
        assert e["ran_on_xla"], e
        for f in e["files"].values():
            assert (D / f).exists(), f


@pytest.mark.parametrize("pair", COUNTS + MEET_HOLES + MEET_HELD)
def test_the_tokens_stay_past_the_bug(pair: str) -> None:
    assert _size(pair, TOKENS) > BUG_COUNT


@pytest.mark.parametrize("pair", WRAP_HOLES)
def test_without_wraps_the_tokens_shrink_to_the_bug(pair: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(zero_types, "WRAPS", False)
    assert _size(pair, TOKENS) == BUG_COUNT


@pytest.mark.parametrize("pair", BOUND_HOLES)
def test_without_interpreted_atoms_the_tokens_shrink_to_the_bug(pair: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(zero_types, "INTERPRETED", False)
    assert _size(pair, TOKENS) == BUG_COUNT


@pytest.mark.parametrize("pair", SIGN_HOLES)
def test_without_signs_the_tokens_shrink_to_the_bug(pair: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(zero_types, "SIGNS", False)
    assert _size(pair, TOKENS) == BUG_COUNT


def test_without_related_atoms_the_square_written_out_hides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(zero_types, "RELATED", False)
    assert _size("bound_sos", TOKENS) == BUG_COUNT


def test_a_loosened_relation_of_atoms_computed_from_each_other_misses_the_square(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Related only when one atom is computed from the other (batch 6's reading): x0 * x0,
    # x0 * x1 and x1 * x1 are none of them, though all read x0 or x1.
    monkeypatch.setattr(zero_types.Normal, "related",
                        lambda self, a, b: a == b or self.inside(a, b) or self.inside(b, a))
    assert _size("bound_sos", TOKENS) == BUG_COUNT


def test_without_last_positions_the_tokens_shrink_to_the_bug(monkeypatch: pytest.MonkeyPatch) -> None:
    # The bug's V - 1 = 11 kept below |T| = 16 only: at T' = V' = 4 it is the last position.
    monkeypatch.setattr(constants, "LAST_POSITIONS", False)
    assert _size("meet_last", TOKENS) == BUG_COUNT


def test_a_loosened_dot_sign_misses_the_dot(monkeypatch: pytest.MonkeyPatch) -> None:
    # A dot's sign from its operands' ranges only (no sum of squares): x . x is unbounded.
    real = zero_types.Normal._sum_sign

    def loose(self: Any, op: Any) -> tuple[float, float]:
        return (-float("inf"), float("inf")) if op.name == "stablehlo.dot_general" else real(self, op)
    monkeypatch.setattr(zero_types.Normal, "_sum_sign", loose)
    assert _size("bound_dot", TOKENS) == BUG_COUNT
    assert _size("bound_sumsq", TOKENS) > BUG_COUNT


def test_a_loosened_fit_that_ignores_narrow_types_misses_the_wraps(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every integer op read as fitting its type (the forms over unbounded integers, as before):
    # int8(ids + 256) and ids * 2^16 * 2^16 are exact again.
    monkeypatch.setattr(zero_types.Normal, "_fits", lambda self, v, op: True)
    for pair in WRAP_HOLES:
        assert _size(pair, TOKENS) == BUG_COUNT, pair


def test_a_loosened_trust_of_every_op_misses_the_bounded_atoms(monkeypatch: pytest.MonkeyPatch) -> None:
    # Any op of trusted operands trusted (no list of ops the normal form reads): sign(x),
    # rem(ids, 2), ids & 1, ids >> 31 are free values again.
    real = zero_types.Normal._trusted

    def loose(self: Any, v: str, depth: int = 0) -> bool:
        d = self.facts.defs.get(v)
        if d is not None and not d[0].regions:
            return all(loose(self, o, depth + 1) for o in d[0].operands)
        return bool(real(self, v, depth))
    monkeypatch.setattr(zero_types.Normal, "_trusted", loose)
    for pair in BOUND_HOLES:
        assert _size(pair, TOKENS) == BUG_COUNT, pair


def test_a_range_knows_its_type() -> None:
    # An unknown end of an integer is its type's end, and an exact result past the type wraps
    # anywhere in it: what `exact` and the atoms' domains rest on.
    assert zero_types._int_bounds("i8") == (-128, 127)
    assert zero_types._int_bounds("ui32") == (0, 2 ** 32 - 1)
    assert zero_types._int_bounds("i1") is None and zero_types._int_bounds("f32") is None


def test_a_float_count_made_integer_past_its_type_keeps_the_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    # int32(T * 2^27) leaves int32 at T = 16 only: the convert is a site, the tokens stay 16;
    # off, they shrink to 2, where the bug's int32(T * 2^27) >> 27 is T.
    assert _size("wrap_count_convert", TOKENS) == 16
    assert _size("wrap_count_convert", TOKENS, "ok") < 16
    monkeypatch.setattr(overflow, "FLOATS", False)
    assert _size("wrap_count_convert", TOKENS) == 2


def test_a_loosened_float_walk_without_zero_products_misses_the_count(monkeypatch: pytest.MonkeyPatch) -> None:
    # The count is a sum of x * 0 + 1: without `x * 0 is 0 whatever x is` it has no interval.
    real = overflow._Walk.float_op

    def loose(self: Any, op: Any, known: dict[str, Any]) -> None:
        if op.name != "stablehlo.multiply":
            real(self, op, known)
    monkeypatch.setattr(overflow._Walk, "float_op", loose)
    assert _size("wrap_count_convert", TOKENS) == 2


@pytest.mark.parametrize("pair", COUNTS + MEET_HOLES + MEET_HELD + FLOAT_HOLES)
def test_bug_twin_is_found_by_the_rules(pair: str) -> None:
    assert_confirmed_at_original_sizes(PAIRS.verify(pair, "bug", rules_only=True))


@pytest.mark.parametrize("pair", HOLES)
def test_correct_twin_shrinks_and_is_proved(pair: str) -> None:
    assert _size(pair, TOKENS, "ok") < 16
    assert PAIRS.verify(pair, "ok", rules_only=True).verdict == "equivalent"


def _decided(fn: Any, tmp_path: Any) -> list[bool | None]:
    """The normal form's decision of each compare of a jitted function of one (4, 3) input."""
    import jax
    import jax.numpy as jnp

    from tv_mlir.api import prepare
    from tv_mlir.options import Options
    from tv_mlir.shrink.facts import ProgramFacts
    from tv_mlir.shrink.pair import _raw

    path = tmp_path / "f.mlir"
    path.write_text(jax.jit(fn).lower(jax.ShapeDtypeStruct((4, 3), jnp.float32)).as_text())
    fa = ProgramFacts.of("ref", _raw(str(path), prepare(str(path), Options())).module)
    normal = zero_types.normal_form(fa)
    return [zero_types.read_compare(normal, op, normal.dtype(op.operands[0])).decided()
            for op in fa.ops() if op.name == "stablehlo.compare"]


def test_a_dot_of_a_value_with_itself_is_a_sum_of_squares_only_without_free_dims(tmp_path: Any) -> None:
    # x . x along its rows is >= 0; x x^T's off-diagonal x_t . x_s is not (a wrong decision
    # would drop an outcome the program has, and a select by it would read one branch).
    import jax.numpy as jnp

    assert _decided(lambda x: jnp.einsum("th,th->t", x, x) >= 0.0, tmp_path) == [True]
    assert _decided(lambda x: jnp.einsum("th,sh->ts", x, x) >= 0.0, tmp_path) == [None]
