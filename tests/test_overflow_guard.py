"""The float64 replay ends at float64's own overflow, not at the f32 maximum
(`witness/overflow.py`): float64 is the arbiter of "the programs differ over the reals"
past 3.4e38 as below it, and XLA's confirmation is asked separately.

Twins: a pair equal over the reals where float64 overflows (exp(800) in softmax without
its shift; x * 1e200 * 1e200 / 1e200 / 1e200) stays not `not-equivalent`, and is shown to
become `not-equivalent` with the guard switched off; a pair that differs over the reals
and leaves the f32 range (exp(x) * 1e30 * 1e30 ... * 2 at f32, Muon's diverging iterations
with a dropped all-reduce) is `not-equivalent`, XLA-confirmed, where the f32-range guard
left it `unknown`."""
from __future__ import annotations

import numpy as np
import pytest
from test_witness import _witness_of  # the Witness the driver builds, settle stubbed

import tv_mlir
from conftest import TESTDATA
from tv_mlir.algebra import NumericAlgebra
from tv_mlir.execute.interp import Interpreter
from tv_mlir.frontend.read import load_module
from tv_mlir.verdict import Counterexample
from tv_mlir.witness import settle as witness
from tv_mlir.witness.overflow import OutOfRange, OverflowGuard


def mod(body: str, args: str, result: str) -> str:
    return f"module {{\n func.func public @main({args}) -> {result} {{\n{body}\n }}\n}}\n"


def guarded_run(text: str, *inputs: float | list[float]) -> list[np.ndarray]:
    m = load_module(text)
    arrays = [np.asarray(x, dtype=np.float64) for x in inputs]
    with np.errstate(all="ignore"):
        return Interpreter(m, NumericAlgebra(), observer=OverflowGuard.of(m, arrays)).run(arrays)


F64 = "%x: tensor<2xf64>"
MUL_1E200 = mod("""  %c = stablehlo.constant dense<1.0e200> : tensor<2xf64>
  %a = stablehlo.multiply %x, %c : tensor<2xf64>
  %b = stablehlo.multiply %a, %c : tensor<2xf64>
  return %b : tensor<2xf64>""", F64, "tensor<2xf64>")
MUL_1E30_F32 = mod("""  %c = stablehlo.constant dense<1.0e30> : tensor<2xf32>
  %a = stablehlo.multiply %x, %c : tensor<2xf32>
  %b = stablehlo.multiply %a, %c : tensor<2xf32>
  return %b : tensor<2xf32>""", "%x: tensor<2xf32>", "tensor<2xf32>")
# A dot of finite vectors whose products overflow with both signs: inf - inf inside the op.
DOT_NAN = mod("""  %d = stablehlo.dot_general %x, %y, contracting_dims = [0] x [0] : (tensor<2xf64>, tensor<2xf64>) -> tensor<f64>
  return %d : tensor<f64>""", "%x: tensor<2xf64>, %y: tensor<2xf64>", "tensor<f64>")
DIVIDE = mod("""  %d = stablehlo.divide %x, %y : tensor<2xf64>
  return %d : tensor<2xf64>""", "%x: tensor<2xf64>, %y: tensor<2xf64>", "tensor<2xf64>")
SQRT = mod("""  %s = stablehlo.sqrt %x : tensor<2xf64>
  return %s : tensor<2xf64>""", F64, "tensor<2xf64>")
LOG = mod("""  %s = stablehlo.log %x : tensor<2xf64>
  return %s : tensor<2xf64>""", F64, "tensor<2xf64>")
# An attention-style mask: a -inf constant selected and added, then exp of it (0).
MASK = mod("""  %z = stablehlo.constant dense<0.0> : tensor<2xf64>
  %n = stablehlo.constant dense<0xFFF0000000000000> : tensor<2xf64>
  %p = stablehlo.compare GT, %x, %z : (tensor<2xf64>, tensor<2xf64>) -> tensor<2xi1>
  %s = stablehlo.select %p, %z, %n : tensor<2xi1>, tensor<2xf64>
  %a = stablehlo.add %x, %s : tensor<2xf64>
  %e = stablehlo.exponential %a : tensor<2xf64>
  return %e : tensor<2xf64>""", F64, "tensor<2xf64>")


@pytest.mark.parametrize("text,inputs", [
    (MUL_1E200, ([1.0, 2.0],)),  # an overflow of a multiply: no transcendental op involved
    (DOT_NAN, ([1e200, 1e200], [1e200, -1e200])),  # a NaN out of finite operands, in a dot
    (DIVIDE, ([1e300, 1.0], [1e-300, 1.0])),  # an overflow of a divide (the divisor is not 0)
    (LOG, ([0.0, 1.0],)),  # an infinity out of a transcendental function: a pole
])
def test_float64_overflow_ends_the_replay(text: str, inputs: tuple) -> None:
    with pytest.raises(OutOfRange):
        guarded_run(text, *inputs)


C30 = float(np.float32(1e30))  # the f32 literal's value


@pytest.mark.parametrize("text,inputs,want", [
    # Past the f32 maximum, within float64's: the reals' value (the f32-range guard ended here).
    (MUL_1E30_F32, ([1.0, -2.0],), [C30 * C30, -2 * C30 * C30]),
    (DIVIDE, ([1.0, 0.0], [0.0, 0.0]), [np.inf, np.nan]),  # division by zero, not overflow
    (SQRT, ([-1.0, 4.0],), [np.nan, 2.0]),  # an element function's domain, not overflow
    (MASK, ([-1.0, 2.0],), [0.0, np.exp(2.0)]),  # -inf from a constant, through select, add, exp
])
def test_no_float64_overflow_runs_to_the_end(text: str, inputs: tuple, want: list[float]) -> None:
    got = guarded_run(text, *inputs)[0]
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=1e-12)


def _settle_at(w: witness.Witness, value: float, thorough: bool = True) -> str:
    arrays = [np.full(t.shape, value) for t in w.types]
    cex = Counterexample({n: x.tolist() for n, x in zip(w.names, arrays)}, w.obligation.output,
                         list(w.obligation.global_index(w.index)), 0.0, 0.0, uses_approximation=True)
    return witness.settle(cex, w, thorough)[0]


def _unguarded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(OverflowGuard, "__call__", lambda self, op, results: None)


def test_softmax_without_its_shift_where_float64_overflows_is_no_witness(monkeypatch: pytest.MonkeyPatch) -> None:
    # At x = 800, exp overflows float64 as well as f32: NaN against 1/8 on both backends.
    # Equal over the reals, so the witness is refused; without the guard it would stand.
    w = _witness_of(monkeypatch, TESTDATA / "pairs/softmax_shift.a.mlir", TESTDATA / "pairs/softmax_shift.b.mlir")
    assert _settle_at(w, 800.0, thorough=False) == "unknown"
    _unguarded(monkeypatch)
    assert _settle_at(w, 800.0, thorough=False) == "not-equivalent"


SOFTMAX_F64 = mod("""  %m0 = stablehlo.constant dense<0xFFF0000000000000> : tensor<f64>
  %m = stablehlo.reduce(%x init: %m0) applies stablehlo.maximum across dimensions = [0] : (tensor<4xf64>, tensor<f64>) -> tensor<f64>
  %mb = stablehlo.broadcast_in_dim %m, dims = [] : (tensor<f64>) -> tensor<4xf64>
  %d = stablehlo.subtract %x, %mb : tensor<4xf64>
  %e = stablehlo.exponential %d : tensor<4xf64>
  %z = stablehlo.constant dense<0.0> : tensor<f64>
  %s = stablehlo.reduce(%e init: %z) applies stablehlo.add across dimensions = [0] : (tensor<4xf64>, tensor<f64>) -> tensor<f64>
  %sb = stablehlo.broadcast_in_dim %s, dims = [] : (tensor<f64>) -> tensor<4xf64>
  %r = stablehlo.divide %e, %sb : tensor<4xf64>
  return %r : tensor<4xf64>""", "%x: tensor<4xf64>", "tensor<4xf64>")
# Without the shift, exp(x) passed through * 1e200 * 1e200 / 1e200 / 1e200: the same over
# the reals; in float64 the second multiply overflows at any x > -0.7.
SOFTMAX_F64_SCALED = mod("""  %e0 = stablehlo.exponential %x : tensor<4xf64>
  %c = stablehlo.constant dense<1.0e200> : tensor<4xf64>
  %e1 = stablehlo.multiply %e0, %c : tensor<4xf64>
  %e2 = stablehlo.multiply %e1, %c : tensor<4xf64>
  %e3 = stablehlo.divide %e2, %c : tensor<4xf64>
  %e = stablehlo.divide %e3, %c : tensor<4xf64>
  %z = stablehlo.constant dense<0.0> : tensor<f64>
  %s = stablehlo.reduce(%e init: %z) applies stablehlo.add across dimensions = [0] : (tensor<4xf64>, tensor<f64>) -> tensor<f64>
  %sb = stablehlo.broadcast_in_dim %s, dims = [] : (tensor<f64>) -> tensor<4xf64>
  %r = stablehlo.divide %e, %sb : tensor<4xf64>
  return %r : tensor<4xf64>""", "%x: tensor<4xf64>", "tensor<4xf64>")


def test_a_multiply_that_overflows_float64_is_no_witness(monkeypatch: pytest.MonkeyPatch) -> None:
    # No transcendental op overflows here (exp(1) is small): the multiply does. Float64 and
    # XLA's f64 both give NaN against 1/4; the guard refuses it, and without the guard the
    # pair would be `not-equivalent`.
    w = _witness_of(monkeypatch, SOFTMAX_F64, SOFTMAX_F64_SCALED)
    assert _settle_at(w, 1.0, thorough=False) == "unknown"
    _unguarded(monkeypatch)
    assert _settle_at(w, 1.0, thorough=False) == "not-equivalent"


def _exp_scaled(extra: str) -> str:
    return mod(f"""  %e = stablehlo.exponential %x : tensor<4xf32>
  %c = stablehlo.constant dense<1.0e30> : tensor<4xf32>
  %a = stablehlo.multiply %e, %c : tensor<4xf32>
  %b = stablehlo.multiply %a, %c : tensor<4xf32>
  %d = stablehlo.divide %b, %c : tensor<4xf32>
  %r = stablehlo.divide %d, %c : tensor<4xf32>
{extra}""", "%x: tensor<4xf32>", "tensor<4xf32>")


EXP = mod("""  %e = stablehlo.exponential %x : tensor<4xf32>
  return %e : tensor<4xf32>""", "%x: tensor<4xf32>", "tensor<4xf32>")
# exp(x) * 2 through values past the f32 maximum (1e60 exp(x)): XLA's f32 gives inf.
EXP_TWICE_PAST_F32 = _exp_scaled("""  %two = stablehlo.constant dense<2.0> : tensor<4xf32>
  %t = stablehlo.multiply %r, %two : tensor<4xf32>
  return %t : tensor<4xf32>""")
EXP_PAST_F32 = _exp_scaled("  return %r : tensor<4xf32>")


def test_a_real_difference_past_the_f32_range_is_not_equivalent() -> None:
    v = tv_mlir.verify(EXP, EXP_TWICE_PAST_F32)
    c = v.counterexample
    assert v.verdict == "not-equivalent" and c is not None and c.confirmed, v.reason
    numeric = next(r for r in c.replay if r.backend == "numeric")
    assert numeric.confirmed and np.isfinite(float(numeric.other_value))
    assert next(r for r in c.replay if r.backend == "xla").other_value == "inf"
    # Its twin, equal over the reals (the constants cancel), keeps its verdict.
    assert tv_mlir.verify(EXP, EXP_PAST_F32).verdict == "equivalent"


def test_muons_dropped_all_reduce_is_confirmed_at_a_sparse_point() -> None:
    # gen_witness.py: at the solver's point the mutant's Newton-Schulz iterations overflow
    # float64 as well as f32; `_complete`'s sparse points (a few non-zero inputs) find one
    # where float64 stays finite and XLA shows the difference.
    w = TESTDATA / "witness"
    v = tv_mlir.verify(w / "muon_ns5.ref.mlir", w / "muon_ns5.bad.mlir")
    c = v.counterexample
    assert v.verdict == "not-equivalent" and c is not None and c.confirmed and c.completed, v.reason
    nonzero = sum(int(np.count_nonzero(np.array(x, dtype=float))) for x in c.inputs.values())
    assert nonzero <= 3, c.inputs


def test_sparse_points_hold_the_differing_index_and_integers() -> None:
    arrays = [np.full((3, 4), 0.5), np.full((5,), 0.5), np.array([1, 2])]
    floats = [True, True, False]
    gen = witness._sparse(arrays, floats, np.random.default_rng(0), (2, 1))
    for cand in [next(gen) for _ in range(20)]:
        assert cand[2] is arrays[2]  # integer inputs stay the witness's
        nonzero = [(k, i) for k in (0, 1) for i in np.flatnonzero(cand[k])]
        assert 1 <= len(nonzero) <= 3
        assert all(float(cand[k].reshape(-1)[i]).is_integer() for k, i in nonzero)
        assert cand[0][2, 1] != 0  # the only input holding index (2, 1)


SQRT_SQUARED = mod("""  %s = stablehlo.sqrt %x : tensor<4xf32>
  %m = stablehlo.multiply %s, %s : tensor<4xf32>
  return %m : tensor<4xf32>""", "%x: tensor<4xf32>", "tensor<4xf32>")
IDENTITY = mod("  return %x : tensor<4xf32>", "%x: tensor<4xf32>", "tensor<4xf32>")


def test_the_nearby_search_keeps_to_an_assumed_sign() -> None:
    # sqrt(x)^2 against x differs only at x < 0 (NaN). With x assumed non-negative no
    # witness may be shown; `_complete`'s random points (negative values among them) are
    # held to --assume like the minimisation's. Without the assumption it is a bug.
    assert tv_mlir.verify(SQRT_SQUARED, IDENTITY, assume={"arg0": (0, float("inf"))}).verdict != "not-equivalent"
    v = tv_mlir.verify(SQRT_SQUARED, IDENTITY)
    assert v.verdict == "not-equivalent" and v.counterexample is not None and v.counterexample.confirmed
