// Valid module; same result type as mismatch.a.mlir but the second input is tensor<4xf32>.
module @mismatch_b {
  func.func public @main(%arg0: tensor<4x4xf32>, %arg1: tensor<4xf32>) -> tensor<4x4xf32> {
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [1] : (tensor<4xf32>) -> tensor<4x4xf32>
    %1 = stablehlo.add %arg0, %0 : tensor<4x4xf32>
    return %1 : tensor<4x4xf32>
  }
}
