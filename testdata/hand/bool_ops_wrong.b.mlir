// Hand-written: and(not a, not b) on i1 (wrong De Morgan; differs at a=1, b=0).
module @bool_ops_wrong_b {
  func.func public @main(%arg0: tensor<4xi1>, %arg1: tensor<4xi1>) -> tensor<4xi1> {
    %0 = stablehlo.not %arg0 : tensor<4xi1>
    %1 = stablehlo.not %arg1 : tensor<4xi1>
    %2 = stablehlo.and %0, %1 : tensor<4xi1>
    return %2 : tensor<4xi1>
  }
}
