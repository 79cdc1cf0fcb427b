// Hand-written. See cholesky_twice.a.mlir.
module @cholesky_twice_b {
  func.func public @main(%arg0: tensor<4x4xf32>) -> tensor<4x4xf32> {
    %0 = stablehlo.cholesky %arg0, lower = true : tensor<4x4xf32>
    %1 = stablehlo.add %0, %0 : tensor<4x4xf32>
    return %1 : tensor<4x4xf32>
  }
}
