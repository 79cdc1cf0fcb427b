"""Adam's bias correction m / (1 - b^t) with t = step + 1 computed in int32: the divisor is
nonzero exactly when t is, and t wraps to INT_MIN at step = INT_MAX. With step < INT_MAX
(`--assume step=0:2147483647`: the upper bound is exclusive) the divisor is known positive
and no float carries an IEEE class term; with step up to INT_MAX (`0:inf`) the range of t
holds 0 again (the interval of a wrapping add is the type's), so the classes stay symbolic.
A square root of the divisor tells the two apart: at step = INT_MAX, 1 - b^t < 0 and its
root is NaN, which an `equivalent` would have to have missed."""
from __future__ import annotations

from tv_mlir.api import verify

REF = """
func.func public @main(%m: tensor<4xf32>, %step: tensor<i32>) -> tensor<4xf32> {
  %one = stablehlo.constant dense<1> : tensor<i32>
  %t = stablehlo.add %step, %one : tensor<i32>
  %tf = stablehlo.convert %t : (tensor<i32>) -> tensor<f32>
  %b = stablehlo.constant dense<0.899999976> : tensor<f32>
  %p = stablehlo.power %b, %tf : tensor<f32>
  %c1 = stablehlo.constant dense<1.0> : tensor<f32>
  %d = stablehlo.subtract %c1, %p : tensor<f32>
  %db = stablehlo.broadcast_in_dim %d, dims = [] : (tensor<f32>) -> tensor<4xf32>
  %r = stablehlo.divide %m, %db : tensor<4xf32>
  return %r : tensor<4xf32>
}
"""
# The same value as m * (1 / d): another term for the sweep to merge.
OTHER = REF.replace("%r = stablehlo.divide %m, %db : tensor<4xf32>",
                    "%c1b = stablehlo.constant dense<1.0> : tensor<4xf32>\n"
                    "  %inv = stablehlo.divide %c1b, %db : tensor<4xf32>\n"
                    "  %r = stablehlo.multiply %m, %inv : tensor<4xf32>")


def test_step_short_of_int_max_keeps_the_divisor_positive() -> None:
    v = verify(REF, OTHER, assume={"%arg1": (0, 2**31 - 1)})
    assert v.verdict == "equivalent", v.reason
    assert v.stats["symbolic_classes"] == 0


def test_step_up_to_int_max_may_wrap_to_a_zero_divisor_range() -> None:
    v = verify(REF, OTHER, assume={"%arg1": (0, float("inf"))})
    assert v.verdict == "equivalent", v.reason
    assert v.stats["symbolic_classes"] > 0


ROOT = REF.replace("%r = stablehlo.divide %m, %db : tensor<4xf32>",
                   "%s = stablehlo.sqrt %db : tensor<4xf32>\n"
                   "  %z = stablehlo.constant dense<0.0> : tensor<4xf32>\n"
                   "  %zs = stablehlo.multiply %z, %s : tensor<4xf32>\n"
                   "  %r = stablehlo.add %m, %zs : tensor<4xf32>")
PLAIN = """
func.func public @main(%m: tensor<4xf32>, %step: tensor<i32>) -> tensor<4xf32> {
  return %m : tensor<4xf32>
}
"""


def test_root_of_the_wrapped_divisor_is_never_proved_finite() -> None:
    """m + 0 * sqrt(1 - b^(step + 1)) is m only while the root is finite: for step < INT_MAX
    it is, at step = INT_MAX (inside `0:inf`) it is NaN."""
    assert verify(ROOT, PLAIN, assume={"%arg1": (0, 2**31 - 1)}).verdict == "equivalent"
    assert verify(ROOT, PLAIN, assume={"%arg1": (0, float("inf"))}).verdict != "equivalent"
