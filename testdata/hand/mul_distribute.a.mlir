// Hand-written: a * (b + c).
module @mul_distribute_a {
  func.func public @main(%arg0: tensor<4x4xf32>, %arg1: tensor<4x4xf32>, %arg2: tensor<4x4xf32>) -> tensor<4x4xf32> {
    %0 = stablehlo.add %arg1, %arg2 : tensor<4x4xf32>
    %1 = stablehlo.multiply %arg0, %0 : tensor<4x4xf32>
    return %1 : tensor<4x4xf32>
  }
}
