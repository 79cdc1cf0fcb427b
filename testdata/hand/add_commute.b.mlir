// Hand-written: b + a.
module @add_commute_b {
  func.func public @main(%arg0: tensor<4x4xf32>, %arg1: tensor<4x4xf32>) -> tensor<4x4xf32> {
    %0 = stablehlo.add %arg1, %arg0 : tensor<4x4xf32>
    return %0 : tensor<4x4xf32>
  }
}
