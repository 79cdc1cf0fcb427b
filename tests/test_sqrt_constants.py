"""sqrt of a constant is its correctly rounded value at the type (semantics/elementwise.py
`_sqrt`), as XLA computes and folds it: a lowering's `x / sqrt(8.0)` and XLA's
`x / 2.82842708` are one function. Checked bit for bit against XLA in both symbolic
algebras, and at the verdict level with the rule taken out."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from conftest import numeric_values, prepared, symbolic_values
from tv_mlir.algebra import SymbolicAlgebra
from tv_mlir.algebra.fast import FastAlgebra
from tv_mlir.api import verify
from tv_mlir.semantics import TABLE
from tv_mlir.semantics.common import OpContext
from tv_mlir.semantics.elementwise import _uf

VALUES = "[2.0, 3.0, 8.0, 0.5, 1.0e-03, 0.0, 1.0e+04, 7.123]"
NP = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16, "f64": np.float64}


def _module(dtype: str) -> str:
    t = f"tensor<8x{dtype}>"
    return f"""func.func @main(%x: {t}) -> {t} {{
  %c = stablehlo.constant dense<{VALUES}> : {t}
  %s = stablehlo.sqrt %c : {t}
  %r = stablehlo.add %s, %x : {t}
  return %r : {t}
}}"""


@pytest.mark.parametrize("dtype", list(NP))
@pytest.mark.parametrize("algebra", [SymbolicAlgebra, FastAlgebra])
def test_sqrt_of_a_constant_is_xlas_value_bit_for_bit(xla, dtype: str, algebra: type) -> None:
    text = _module(dtype)
    zeros = np.zeros(8, NP[dtype])
    (want,) = xla.run(text, [zeros])
    (got,) = symbolic_values(prepared(text), [zeros], algebra())
    assert np.array_equal(np.asarray(got, np.float64).astype(NP[dtype]), np.asarray(want)), (got, want)


SCALED = """func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = stablehlo.constant dense<8.0> : tensor<4xf32>
  %s = stablehlo.sqrt %c : tensor<4xf32>
  %r = stablehlo.divide %x, %s : tensor<4xf32>
  return %r : tensor<4xf32>
}"""
FOLDED = """func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = stablehlo.constant dense<2.82842708> : tensor<4xf32>
  %r = stablehlo.divide %x, %c : tensor<4xf32>
  return %r : tensor<4xf32>
}"""


def test_a_folded_sqrt_is_the_lowered_one(monkeypatch: pytest.MonkeyPatch) -> None:
    assert verify(SCALED, FOLDED, cache=False).verdict == "equivalent"
    # The next f32 above is another function: a wrong fold is still found.
    assert verify(SCALED, FOLDED.replace("2.82842708", "2.82842731"), cache=False).verdict == "not-equivalent"
    monkeypatch.setitem(TABLE, "stablehlo.sqrt", _uf("sqrt"))
    assert verify(SCALED, FOLDED, cache=False).verdict != "equivalent"


def test_the_numeric_runs_round_a_sqrt_of_literals_as_the_terms_do(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fingerprints come from numeric runs in float64: there the two programs above must
    compute one value too, or every value after the sqrt meets its counterpart only where
    rounding to float32 hides the 1e-8 (a GPT-2 block: one element in ~12 had none)."""
    x = np.array([1.234, -5.678, 0.001, 3.0], np.float64)
    (scaled,) = numeric_values(prepared(SCALED), [x])
    (folded,) = numeric_values(prepared(FOLDED), [x])
    assert np.array_equal(scaled, folded)
    assert scaled.dtype == np.float64 and not np.array_equal(scaled, (x.astype(np.float32) / np.float32(2.82842708)))
    # A sqrt of an input is not rounded: the runs stay real-valued there.
    on_input = SCALED.replace("%s = stablehlo.sqrt %c", "%s = stablehlo.sqrt %x")
    positive = np.abs(x) + 1
    (root,) = numeric_values(prepared(on_input), [positive])
    assert np.array_equal(root, positive / np.sqrt(positive))
    # Without the rounding the runs differ: the test sees the rule.
    monkeypatch.setattr("tv_mlir.execute.interp.OpContext", _unfixed)
    (scaled,) = numeric_values(prepared(SCALED), [x])
    assert not np.array_equal(scaled, folded)


def _unfixed(*args: object) -> OpContext:
    return OpContext(*args[:4])  # type: ignore[arg-type]
