"""Newton's identity as MLIR, for tests that need a pair equal at 2 elements and not from
3 on: N = 1.5 * p1 * p2 - 0.5 * p1^3 with p1 = sum u and p2 = sum u^2 equals sum u^3 for
two elements u, not for three."""


def newton_lines(p1: str, p2: str, out: str) -> str:
    """MLIR lines (f32 scalars) setting `out` to 1.5 * p1 * p2 - 0.5 * p1^3."""
    return f"""\
  %nw_a = stablehlo.constant dense<1.5> : tensor<f32>
  %nw_b = stablehlo.constant dense<0.5> : tensor<f32>
  %nw_m = stablehlo.multiply {p1}, {p2} : tensor<f32>
  %nw_t1 = stablehlo.multiply %nw_a, %nw_m : tensor<f32>
  %nw_sq = stablehlo.multiply {p1}, {p1} : tensor<f32>
  %nw_cube = stablehlo.multiply %nw_sq, {p1} : tensor<f32>
  %nw_t2 = stablehlo.multiply %nw_b, %nw_cube : tensor<f32>
  {out} = stablehlo.subtract %nw_t1, %nw_t2 : tensor<f32>
"""
