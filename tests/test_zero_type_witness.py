"""Rule k's zero types witnessed (docs/shrinking.md, "Zero types witnessed (helper-68)";
shrink/zero_witness.py): a family the normal form accepts keeps its acceptance only when a
numeric run of the shrunk programs, on inputs inside the verifier's domain, shows a position
at one of its zero types; else its classes are counted. The holes of red-team batches 6 and 9
are held by the witness alone, with the normal form's rules for them switched off or
loosened; the witness off, they hide again. Plans of realistic pairs do not change."""
from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

from tests.conftest import TESTDATA, GeneratedPairs, assert_confirmed_at_original_sizes
from tv_mlir.api import prepare
from tv_mlir.assume import resolve
from tv_mlir.ir import Op
from tv_mlir.options import Options
from tv_mlir.shrink import constant_terms, counts, zero_types, zero_witness
from tv_mlir.shrink.lookups import IndexPredicates
from tv_mlir.shrink.pair import shrink_pair
from tv_mlir.shrink.zero_witness import Accepted, _outcomes, witnessed

R6, R9 = GeneratedPairs(TESTDATA / "redteam6"), GeneratedPairs(TESTDATA / "redteam9")
# pair -> (its batch, the class the count runs over, the bug's literal: where it hides)
HOLES = {"taut_cover": (R6, "x dim 0", 16), "taut_poly": (R6, "x dim 0", 4),
         "wrap_narrow_eq": (R9, "x dim 0", 4), "wrap_sum_eq": (R9, "x dim 0", 4),
         "wrap_mul_zero": (R9, "x dim 0", 4), "wrap_unsigned": (R9, "x dim 0", 4),
         "bound_sign": (R9, "x dim 0", 4), "bound_sos": (R9, "x dim 0", 4), "bound_dot": (R9, "x dim 0", 4)}


def _shrunk(pairs: GeneratedPairs, pair: str, where: str, kind: str = "bug") -> int:
    """The verified size of `where` as api.verify plans it (through shrink_pair, which runs
    the witness), with the pair's --assume bounds."""
    ref, other = pairs.files(pair, kind)
    rm, om = prepare(ref, Options()), prepare(other, Options())
    assume = [(k, lo, hi) for k, (lo, hi) in pairs.assume(pair).items()]
    ranges = resolve(assume, rm.input_names(), rm.global_arg_types())
    res = shrink_pair(ref, other, rm, om, ranges=ranges, assume=assume)
    assert res is not None
    return next(e.verified for e in res.plan.entries if e.where.startswith(where))


@pytest.fixture
def loose_normal_form(monkeypatch: pytest.MonkeyPatch) -> None:
    """The normal form's rules of batches 6 and 9 off or loosened: predicates sharing atoms
    evaluated one by one, atoms related only by identity, integers read as unbounded, every
    atom free, sums of no sign."""
    monkeypatch.setattr(zero_types, "_component", lambda preds, inside: [
        dict(zip((p.value for p in preds), row)) for row in itertools.product((True, False), repeat=len(preds))])
    monkeypatch.setattr(zero_types.Normal, "inside", lambda self, a, b: a == b)
    for switch in ("RELATED", "WRAPS", "INTERPRETED", "SIGNS"):
        monkeypatch.setattr(zero_types, switch, False)


@pytest.mark.parametrize("pair", sorted(HOLES))
def test_the_witness_alone_holds_the_hole(pair: str, loose_normal_form: None,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    pairs, where, literal = HOLES[pair]
    assert _shrunk(pairs, pair, where) > literal
    monkeypatch.setattr(zero_witness, "WITNESS", False)
    assert _shrunk(pairs, pair, where) == literal


def test_the_witness_draws_inside_the_assumed_range(monkeypatch: pytest.MonkeyPatch) -> None:
    # `ids >= 0` with ids in [0, V): true at every input the verifier takes. Zero types read
    # without rule k's range evaluation (and no decided constants) take both outcomes; drawn
    # inside the bounds (as the verifier resolves them at the shrunk sizes), the runs never
    # show `false`: the ids are counted.
    real = counts.zero_type_counts
    monkeypatch.setattr(counts, "zero_type_counts", lambda fa, a, families, lookups, accepted=None: real(
        fa, a, families, IndexPredicates(gathers=lookups.gathers), accepted))
    monkeypatch.setattr(constant_terms, "DECIDED", False)
    assert _shrunk(R6, "taut_range", "ids dim 0") > 2
    assert _shrunk(R6, "taut_range", "ids dim 0", "ok") == 2  # the correct twin still shrinks
    # The witness's draws loosened to ignore the bounds (the plan keeps them): small negative
    # ids show `false`, a type the verifier rules out, and the witness accepts.
    import tv_mlir.assume

    with monkeypatch.context() as m:
        m.setattr(tv_mlir.assume, "resolve", lambda bounds, names, types, sizes=None: [None] * len(types))
        assert _shrunk(R6, "taut_range", "ids dim 0") == 2
    monkeypatch.setattr(zero_witness, "WITNESS", False)
    assert _shrunk(R6, "taut_range", "ids dim 0") == 2


@pytest.mark.parametrize("pair", ["dp_train_step.shardy", "fsdp.partitioned", "fsdp.gspmd"])
def test_a_training_steps_relu_masks_are_witnessed(pair: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Realistic families (a relu's mask in the forward pass and its jvp, in a manual
    # computation per device): witnessed, so the plan is the normal form's.
    from tv_mlir.frontend.classify import check_signatures

    stem = pair.split(".")[0]
    ref, other = TESTDATA / "sharded_big" / f"{stem}.ref.mlir", TESTDATA / "sharded_big" / f"{pair}.mlir"

    def plan_sizes() -> tuple[list[int], int]:
        r, o = prepare(str(ref), Options()), prepare(str(other), Options())
        check_signatures(r, o)
        res = shrink_pair(r, o, r, o)
        assert res is not None
        return list(res.plan.sizes), len(res.plan.zero_witness)

    on, families = plan_sizes()
    assert families == 2  # both programs' masks, accepted and witnessed (none counted)
    monkeypatch.setattr(zero_witness, "WITNESS", False)
    assert plan_sizes() == (on, 2)


def _compare(direction: str) -> Op:
    return Op("stablehlo.compare", ("%a", "%b"), ("%p",), (), attrs={"comparison_direction": direction})


def test_float_outcomes_are_taken_with_a_margin_only() -> None:
    a = np.array([1.0, 1.0, 1.0 + 1e-9, np.inf, 0.0])
    b = np.array([1.0, 2.0, 1.0, np.inf, 1e-3])
    # equal floats: never (the reals may differ); within the margin: never; infinities: never
    assert _outcomes(_compare("EQ"), a, b).tolist() == [-1, 0, -1, -1, 0]
    assert _outcomes(_compare("LT"), a, b).tolist() == [-1, 1, -1, -1, 1]
    # integers are exact
    assert _outcomes(_compare("EQ"), np.array([3, 4]), np.array([3, 5])).tolist() == [1, 0]


def test_a_zero_type_is_witnessed_at_one_position_of_every_predicate() -> None:
    fam = Accepted("ref", ("%p", "%q"), ((("%p", False), ("%q", False)),), frozenset({0}))
    # p false at element 0, q false at element 1: never both at one position
    assert not witnessed(fam, [{"%p": [np.array([0, 1], np.int8)], "%q": [np.array([1, 0], np.int8)]}])
    assert witnessed(fam, [{"%p": [np.array([0, 0], np.int8)], "%q": [np.array([1, 0], np.int8)]}])
    # an unknown outcome witnesses nothing; shapes that differ are not lined up; a missing
    # predicate is no witness
    assert not witnessed(fam, [{"%p": [np.array([-1, 1], np.int8)], "%q": [np.array([0, 1], np.int8)]}])
    assert not witnessed(fam, [{"%p": [np.array([0], np.int8)], "%q": [np.array([0, 0], np.int8)]}])
    assert not witnessed(fam, [{"%p": [np.array([0, 0], np.int8)]}])
    # a type naming part of the predicates is not a position's type
    part = Accepted("ref", ("%p", "%q"), ((("%p", False),),), frozenset({0}))
    assert not witnessed(part, [{"%p": [np.array([0], np.int8)], "%q": [np.array([0], np.int8)]}])


def test_uniform_outcomes_need_no_lining_up() -> None:
    """Arrays of one size whose every element is at the zero type witness it whatever their
    shapes (the 8B forward's take_along_axis bound checks, (4, 32, 1) beside (4, 32)); one
    element off the type, another size, or a uniform type that is no zero type does not."""
    fam = Accepted("ref", ("%p", "%q"), ((("%p", False), ("%q", True)),), frozenset({0}))
    p, q = np.zeros((4, 32), np.int8), np.ones((4, 32, 1), np.int8)
    assert witnessed(fam, [{"%p": [p], "%q": [q]}])
    q_off = q.copy()
    q_off[1, 2, 0] = 0
    assert not witnessed(fam, [{"%p": [p], "%q": [q_off]}])  # lining up would be needed
    assert not witnessed(fam, [{"%p": [p], "%q": [np.ones((4, 16, 1), np.int8)]}])
    assert not witnessed(fam, [{"%p": [p], "%q": [np.zeros((4, 32, 1), np.int8)]}])
    assert not witnessed(fam, [{"%p": [np.full((4, 32), -1, np.int8)], "%q": [q]}])  # unknown outcomes


def test_bounded_inputs_without_the_users_bounds_get_no_witness() -> None:
    from tv_mlir.shrink.pair import _unwitnessed

    class _Analysis:  # no values: not a plan the staged proof refuses unread (pair._refused)
        types: dict[Any, Any] = {}

    class _Plan:
        zero_witness = [Accepted("ref", ("%p",), ((("%p", True),),), frozenset({3, 4}))]
        analysis, sizes = _Analysis(), []

    fake: Any = _Plan()
    assert _unwitnessed(fake, b"", b"", None, None, [(0, 7)], None) == {3, 4}  # type: ignore[arg-type]


_CONES = """
func.func @main(%x: tensor<4xf32>, %i: tensor<4xi32>) -> (tensor<4xi1>, tensor<4xi1>, tensor<4xi1>) {
  %c = stablehlo.convert %x : (tensor<4xf32>) -> tensor<4xi32>
  %p = stablehlo.compare GT, %c, %i : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
  %j = stablehlo.add %i, %i : tensor<4xi32>
  %q = stablehlo.compare GT, %j, %i : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
  %f = stablehlo.compare GT, %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  %b = stablehlo.compare EQ, %f, %q : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  return %p, %q, %b : tensor<4xi1>, tensor<4xi1>, tensor<4xi1>
}
"""


def test_integers_and_booleans_computed_from_floats_are_not_exact() -> None:
    # int32(x) and a Boolean of a float compare may differ from the reals' in a float64 run:
    # their compares' outcomes are not taken; integers of integers are.
    from tv_mlir.frontend.read import load_module_mlir

    m = load_module_mlir(_CONES).module
    convert, _, add, _, fcmp, _ = m.main.body.ops
    floats = zero_witness.float_cones(m)
    assert convert.results[0] in floats and fcmp.results[0] in floats
    assert add.results[0] not in floats and m.main.body.args[1] not in floats


_TWICE = """
func.func private @f(%a: tensor<4xf32>) -> tensor<4xi1> {
  %z = stablehlo.constant dense<0.0> : tensor<4xf32>
  %p = stablehlo.compare GT, %a, %z : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  return %p : tensor<4xi1>
}
func.func @main(%x: tensor<4xf32>) -> (tensor<4xi1>, tensor<4xi1>) {
  %0 = func.call @f(%x) : (tensor<4xf32>) -> tensor<4xi1>
  %n = stablehlo.negate %x : tensor<4xf32>
  %1 = func.call @f(%n) : (tensor<4xf32>) -> tensor<4xi1>
  return %0, %1 : tensor<4xi1>, tensor<4xi1>
}
"""


def test_a_function_called_twice_is_not_inlined_under_its_names() -> None:
    # Its compare would be two values of one name (x > 0 and -x > 0): no witness from it.
    from tv_mlir.frontend.read import load_module_mlir

    with pytest.raises(zero_witness._Twice):
        zero_witness.inlined(load_module_mlir(_TWICE).module)


def test_a_hole_is_not_equivalent_with_the_rules_alone(loose_normal_form: None) -> None:
    # The normal form loosened as for the plans above: through api.verify (which hands the
    # witness the user's bounds) the bug twin is found, confirmed at the original sizes.
    assert_confirmed_at_original_sizes(R9.verify("bound_sign", "bug", rules_only=True))


_PAST_THE_RUN_BUDGET = b"""
func.func @main(%arg0: tensor<4xf32>) -> (tensor<4x1250000xf32>, tensor<4xi1>) {
  %0 = stablehlo.broadcast_in_dim %arg0, dims = [0] : (tensor<4xf32>) -> tensor<4x1250000xf32>
  %1 = stablehlo.compare GT, %arg0, %arg0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  return %0, %1 : tensor<4x1250000xf32>, tensor<4xi1>
}
"""


def test_a_witness_run_may_compute_past_a_verification_runs_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """5M elements before the compare: a verification run's 4M budget refuses the program
    (at the second witness's sizes the 8B forward's cross-entropy families went unwitnessed
    that way, and its vocabulary grew to 320); the witness run's own budget reaches the compare."""
    from tv_mlir.errors import Unsupported
    from tv_mlir.frontend.read import load_module_mlir
    from tv_mlir.options import MAX_EXECUTED_ELEMENTS

    m = load_module_mlir(_PAST_THE_RUN_BUDGET).module
    op = next(o for o in m.funcs[m.entry].body.ops if o.name == "stablehlo.compare")
    compares = {op.results[0]: (tuple(op.operands), "GT")}
    seen = zero_witness.observe(m, compares, [np.zeros(4, np.float32)])
    assert list(seen) == [op.results[0]] and seen[op.results[0]][0].shape == (4,)
    monkeypatch.setattr(zero_witness, "WITNESS_ELEMENTS", MAX_EXECUTED_ELEMENTS)
    with pytest.raises(Unsupported):
        zero_witness.observe(m, compares, [np.zeros(4, np.float32)])
