// Hand-written: or(not a, not b) on i1 (De Morgan).
module @bool_ops_b {
  func.func public @main(%arg0: tensor<4xi1>, %arg1: tensor<4xi1>) -> tensor<4xi1> {
    %0 = stablehlo.not %arg0 : tensor<4xi1>
    %1 = stablehlo.not %arg1 : tensor<4xi1>
    %2 = stablehlo.or %0, %1 : tensor<4xi1>
    return %2 : tensor<4xi1>
  }
}
