"""Fingerprints run once more with the uninterpreted functions replaced
(`fingerprints.OTHER_FUNCS`): values that agree on every true run only because exp
underflows to 0 (a masked softmax row with one unmasked entry) are no match, so the sweep
does not spend a failed local proof on them; what the proofs know of exp (exp(0) = 1,
exp > 0, exp(x) * exp(y) = exp(x + y)) still holds for the function put in."""
from __future__ import annotations

import numpy as np
import pytest

from tv_mlir.algebra import Kind
from tv_mlir.api import prepare
from tv_mlir.options import Options
from tv_mlir.prove import fingerprints as F

# x / (1 + exp(y - 3e38)): x on every float run (the exp is 0), not x as a function of reals.
MASKED = """
func.func @main(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %c = stablehlo.constant dense<-3.0e+38> : tensor<4xf32>
  %one = stablehlo.constant dense<1.0> : tensor<4xf32>
  %s = stablehlo.add %y, %c : tensor<4xf32>
  %e = stablehlo.exponential %s : tensor<4xf32>
  %d = stablehlo.add %one, %e : tensor<4xf32>
  %r = stablehlo.divide %x, %d : tensor<4xf32>
  return %r : tensor<4xf32>
}
"""
# x * exp(0 * y) + 0: exp at 0 is 1 for the proofs too, so this one must still match x.
AT_ZERO = """
func.func @main(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %z = stablehlo.constant dense<0.0> : tensor<4xf32>
  %s = stablehlo.multiply %y, %z : tensor<4xf32>
  %e = stablehlo.exponential %s : tensor<4xf32>
  %r = stablehlo.multiply %x, %e : tensor<4xf32>
  return %r : tensor<4xf32>
}
"""


def _result_keys(text: str) -> list[bytes | None]:
    m = prepare(text, Options())
    sets = F.random_inputs(m.main.arg_types)
    trace = F.numeric_trace(m, sets, 1)
    last = next(reversed(trace.values))
    return F.fingerprints(trace.values[last], Kind.FLOAT)


def _input_keys(k: int) -> list[bytes | None]:
    m = prepare(MASKED, Options())
    sets = F.random_inputs(m.main.arg_types)
    return F.fingerprints(F.input_runs(F.numeric_trace(m, sets, 1), sets, k), Kind.FLOAT)


@pytest.mark.parametrize("other_funcs", [True, False])
def test_an_underflowed_exp_is_no_match(monkeypatch: pytest.MonkeyPatch, other_funcs: bool) -> None:
    monkeypatch.setattr(F, "OTHER_FUNCS_RUN", other_funcs)
    masked, x = _result_keys(MASKED), _input_keys(0)
    assert all(k is not None for k in masked + x)
    # On the true runs alone the two are one fingerprint: the sweep would try to prove them.
    assert (masked == x) is not other_funcs


def test_what_the_proofs_know_of_exp_still_matches() -> None:
    assert _result_keys(AT_ZERO) == _input_keys(0)
    xs = np.array([-3.0e38, -50.0, -1.0, 0.0, 1.0, 30.0, 2.0e38])
    other = F.OTHER_FUNCS["exponential"](xs)
    # exp(0) = 1, exp > 0 and exp(x) * exp(y) = exp(x + y) are what the proofs use.
    assert other[3] == 1.0 and (other > 0).all()
    exp = F.OTHER_FUNCS["exponential"]
    for a, b in [(-3.0e38, 2.0e38), (1.0, -1.0), (-1.0e38, -1.0e38)]:
        assert np.isclose(exp(np.float64(a)) * exp(np.float64(b)), exp(np.float64(a + b)), rtol=1e-12)
    assert other[0] > 1e-3  # far below 0 it is not the 0 exp underflows to


def test_both_traces_carry_the_other_run_or_neither() -> None:
    a = F.Trace(values={"%0": [np.zeros(2)] * (F.RUNS + 1)})
    b = F.Trace(values={"%0": [np.zeros(2)] * F.RUNS}, other_funcs=False)
    F.align(a, b)
    assert len(a.values["%0"]) == len(b.values["%0"]) == F.RUNS and not a.other_funcs
    sets = [[np.zeros(2)] for _ in range(F.RUNS)]
    assert len(F.input_runs(a, sets, 0)) == F.RUNS
