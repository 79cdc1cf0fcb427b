"""Program inputs get symbols no other input or internal constant shares, whatever the
user named them (`algebra.base.input_symbol`). Before, the symbol was the input's name:
an input named `cpos!x` read as a positive cut point (so `abs(x)` against `x` was
`equivalent`), and a scalar input named `x[1]` was the same symbol as element 1 of an
input named `x`. Both cores."""
from __future__ import annotations

from pathlib import Path

import pytest

from tv_mlir import verify
from tv_mlir.algebra.base import input_symbol


def _module(name: str, args: str, body: str, result: str = "tensor<f32>") -> str:
    return (f"module @{name} {{\n  func.func public @main({args}) -> {result} {{\n{body}\n  }}\n}}\n")


ONE = '%arg0: tensor<f32> loc("{n}")'
PAIRS = {
    # |x| against x: equal only for x >= 0, which a `cpos!` name claimed.
    "positive_name": (
        _module("a", ONE.format(n="cpos!x"), "    %0 = stablehlo.abs %arg0 : tensor<f32>\n    return %0 : tensor<f32>"),
        _module("b", ONE.format(n="cpos!x"), "    return %arg0 : tensor<f32>")),
    "nonnegative_name": (
        _module("a", ONE.format(n="cnn!x"), "    %0 = stablehlo.abs %arg0 : tensor<f32>\n    return %0 : tensor<f32>"),
        _module("b", ONE.format(n="cnn!x"), "    return %arg0 : tensor<f32>")),
    # x[1] - y against y - y, where the scalar y is named `x[1]`.
    "element_name": (
        _module("a", '%arg0: tensor<2xf32> loc("x"), %arg1: tensor<f32> loc("x[1]")',
                "    %0 = stablehlo.slice %arg0 [1:2] : (tensor<2xf32>) -> tensor<1xf32>\n"
                "    %1 = stablehlo.reshape %0 : (tensor<1xf32>) -> tensor<f32>\n"
                "    %2 = stablehlo.subtract %1, %arg1 : tensor<f32>\n    return %2 : tensor<f32>"),
        _module("b", '%arg0: tensor<2xf32> loc("x"), %arg1: tensor<f32> loc("x[1]")',
                "    %0 = stablehlo.subtract %arg1, %arg1 : tensor<f32>\n    return %0 : tensor<f32>")),
}


@pytest.mark.parametrize("core", ["own", "z3"])
@pytest.mark.parametrize("pair", sorted(PAIRS))
def test_a_name_that_looks_internal_is_not_read(tmp_path: Path, pair: str, core: str) -> None:
    a, b = tmp_path / "a.mlir", tmp_path / "b.mlir"
    a.write_text(PAIRS[pair][0])
    b.write_text(PAIRS[pair][1])
    v = verify(a, b, core=core, cache=False)
    assert v.verdict == "not-equivalent", v.reason
    assert v.counterexample is not None and v.counterexample.confirmed, v.counterexample


def test_input_symbols_are_distinct_and_plain() -> None:
    names = ["x", "x[1]", "cpos!x", "cnn!x", "c!3", "x!class", "in1.x", ""]
    symbols = [input_symbol(k, n) for k, n in enumerate(names)] + [input_symbol(1, "x")]
    assert len(set(symbols)) == len(symbols)
    assert not any("!" in s for s in symbols)
