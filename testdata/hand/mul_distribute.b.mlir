// Hand-written: a * b + a * c.
module @mul_distribute_b {
  func.func public @main(%arg0: tensor<4x4xf32>, %arg1: tensor<4x4xf32>, %arg2: tensor<4x4xf32>) -> tensor<4x4xf32> {
    %0 = stablehlo.multiply %arg0, %arg1 : tensor<4x4xf32>
    %1 = stablehlo.multiply %arg0, %arg2 : tensor<4x4xf32>
    %2 = stablehlo.add %0, %1 : tensor<4x4xf32>
    return %2 : tensor<4x4xf32>
  }
}
