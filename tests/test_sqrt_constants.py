"""sqrt of a constant is its correctly rounded value at the type (semantics/elementwise.py
`_sqrt`), as XLA computes and folds it: a lowering's `x / sqrt(8.0)` and XLA's
`x / 2.82842708` are one function. Checked bit for bit against XLA in both symbolic
algebras, and at the verdict level with the rule taken out."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from conftest import prepared, symbolic_values
from tv_mlir.algebra import SymbolicAlgebra
from tv_mlir.algebra.fast import FastAlgebra
from tv_mlir.api import verify
from tv_mlir.semantics import TABLE
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
