"""Complex constants as the reader sees them: jaxlib's bindings cannot hand a complex
DenseElementsAttr to Python (touching one aborts the process), so `read.complex_constant`
parses the op's printed literal. Every form the printer writes: a splat, a list of (re, im)
pairs, a splat past the compact size (kept as its one element), and NaN parts written as hex."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tv_mlir.api import verify
from tv_mlir.frontend.read import load_module

SIG = "(%x: tensor<2xf32>) -> tensor<2xf32>"


def _prog(const: str, n: int = 2) -> str:
    t = f"tensor<{n}xcomplex<f32>>"
    slice_ = "" if n == 2 else \
        f"%e2 = stablehlo.slice %e [0:2] : ({t}) -> tensor<2xcomplex<f32>>\n"
    e = "%e" if n == 2 else "%e2"
    return f"""func.func public @main{SIG} {{
  %z = stablehlo.complex %x, %x : tensor<2xcomplex<f32>>
  %c = stablehlo.constant {const} : {t}
  %e = stablehlo.add %c, %c : {t}
  {slice_}%f = stablehlo.multiply {e}, %z : tensor<2xcomplex<f32>>
  %r = stablehlo.imag %f : (tensor<2xcomplex<f32>>) -> tensor<2xf32>
  return %r : tensor<2xf32>
}}
"""


def _const_value(path: Path) -> np.ndarray:
    m = load_module(str(path))
    (op,) = [o for o in m.main.body.ops if o.name == "stablehlo.constant"]
    return np.asarray(op.attrs["value"])


@pytest.mark.parametrize("literal,n,want", [
    ("dense<(2.0,-1.5)>", 2, np.array([2 - 1.5j, 2 - 1.5j])),
    ("dense<[(1.0,2.0),(3.0,-4.0)]>", 2, np.array([1 + 2j, 3 - 4j])),
    ("dense<(0.5,0.25)>", 1 << 17, np.array(0.5 + 0.25j)),
])
def test_complex_constant_literals_are_read_exactly(tmp_path: Path, literal: str, n: int, want: np.ndarray) -> None:
    p = tmp_path / "a.mlir"
    p.write_text(_prog(literal, n))
    got = _const_value(p)
    assert got.dtype == np.complex64
    np.testing.assert_array_equal(got, want)


def test_a_changed_imaginary_part_of_a_constant_is_a_confirmed_difference(tmp_path: Path) -> None:
    a, b, c = tmp_path / "a.mlir", tmp_path / "b.mlir", tmp_path / "c.mlir"
    a.write_text(_prog("dense<(2.0,-1.5)>"))
    b.write_text(_prog("dense<[(2.0,-1.5),(2.0,-1.5)]>"))
    c.write_text(_prog("dense<[(2.0,-1.5),(2.0,-1.25)]>"))
    assert verify(a, b).verdict == "equivalent"
    v = verify(a, c)
    assert v.verdict == "not-equivalent", v.reason
    assert v.counterexample is not None and v.counterexample.confirmed


def test_a_complex_entry_argument_is_unknown_naming_it(tmp_path: Path) -> None:
    t = "tensor<4xcomplex<f32>>"
    p = tmp_path / "t.mlir"
    p.write_text(f"func.func public @main(%x: {t}, %y: {t}) -> {t} {{\n"
                 f"  %z = stablehlo.add %x, %y : {t}\n  return %z : {t}\n}}\n")
    v = verify(p, p)
    assert v.verdict == "unknown"
    assert f"complex argument {t}" in v.reason, v.reason
