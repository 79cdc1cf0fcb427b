"""A solver model is a counterexample only where the program can be given it: a float
input's value must be one its type holds. Two programs that differ only past the type's
largest finite value (a compare with the maximum) get `unknown` naming the input, not an
exit 1 with a witness XLA cannot run; a model's real past float64's range is reported, not
a crash (the distillation client of testdata/gen_clients5.py hit both)."""
from __future__ import annotations

from fractions import Fraction

import pytest
import z3

from tv_mlir.algebra import terms as T
from tv_mlir.api import verify

GUARD = """func.func @main(%x: tensor<2x{t}>) -> tensor<2x{t}> {{
  %top = stablehlo.constant dense<{c}> : tensor<2x{t}>
  %one = stablehlo.constant dense<1.0> : tensor<2x{t}>
  %zero = stablehlo.constant dense<0.0> : tensor<2x{t}>
  %c = stablehlo.compare GT, %x, %top : (tensor<2x{t}>, tensor<2x{t}>) -> tensor<2xi1>
  %r = stablehlo.select %c, %one, %zero : tensor<2xi1>, tensor<2x{t}>
  return %r : tensor<2x{t}>
}}
"""
ZERO = """func.func @main(%x: tensor<2x{t}>) -> tensor<2x{t}> {{
  %zero = stablehlo.constant dense<0.0> : tensor<2x{t}>
  return %zero : tensor<2x{t}>
}}
"""


@pytest.mark.parametrize("t,c", [("f64", "1.7976931348623157e308"), ("f32", "3.40282347e38")])
def test_a_difference_only_past_the_largest_float_is_not_a_counterexample(tmp_path, t: str, c: str) -> None:
    a, b = tmp_path / "a.mlir", tmp_path / "b.mlir"
    a.write_text(GUARD.format(t=t, c=c))
    b.write_text(ZERO.format(t=t))
    v = verify(str(a), str(b))
    assert v.verdict == "unknown", (v.verdict, v.reason)
    assert f"past {t}'s largest finite value" in v.reason


def test_the_same_guard_inside_the_range_is_a_difference(tmp_path) -> None:
    a, b = tmp_path / "a.mlir", tmp_path / "b.mlir"
    a.write_text(GUARD.format(t="f32", c="1.0e30"))
    b.write_text(ZERO.format(t="f32"))
    v = verify(str(a), str(b))
    # Exact reals inside the range: the design's counterexample, whether or not f32's
    # rounding of the model's point shows it.
    assert v.verdict == "not-equivalent", v.reason
    assert v.counterexample is not None and not v.counterexample.uses_approximation


def test_a_model_value_past_float64_is_a_number_not_a_crash() -> None:
    huge = Fraction(10 ** 400 + 1, 3)
    assert T.number(z3.RealVal(f"{huge.numerator}/{huge.denominator}")) == round(huge)
    assert T.number(z3.RealVal("1/4")) == 0.25
