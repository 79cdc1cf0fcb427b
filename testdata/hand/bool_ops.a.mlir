// Hand-written: not(and(a, b)) on i1.
module @bool_ops_a {
  func.func public @main(%arg0: tensor<4xi1>, %arg1: tensor<4xi1>) -> tensor<4xi1> {
    %0 = stablehlo.and %arg0, %arg1 : tensor<4xi1>
    %1 = stablehlo.not %0 : tensor<4xi1>
    return %1 : tensor<4xi1>
  }
}
