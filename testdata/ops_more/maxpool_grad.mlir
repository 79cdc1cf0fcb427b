module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<1x5x4x2xf32>) -> (tensor<1x5x4x2xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.iota dim = 0 : tensor<12xf32>
    %1 = stablehlo.reshape %0 : (tensor<12xf32>) -> tensor<1x3x2x2xf32>
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<1x3x2x2xf32>
    %3 = stablehlo.multiply %2, %1 : tensor<1x3x2x2xf32>
    %cst_0 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %4 = stablehlo.pad %arg0, %cst_0, low = [0, 0, 0, 0], high = [0, 1, 0, 0], interior = [0, 0, 0, 0] : (tensor<1x5x4x2xf32>, tensor<f32>) -> tensor<1x6x4x2xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %5 = "stablehlo.select_and_scatter"(%4, %3, %cst_1) <{padding = dense<0> : tensor<4x2xi64>, window_dimensions = array<i64: 1, 2, 2, 1>, window_strides = array<i64: 1, 2, 2, 1>}> ({
    ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>):
      %7 = stablehlo.compare GE, %arg1, %arg2, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %7 : tensor<i1>
    }, {
    ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>):
      %7 = stablehlo.add %arg1, %arg2 : tensor<f32>
      stablehlo.return %7 : tensor<f32>
    }) : (tensor<1x6x4x2xf32>, tensor<1x3x2x2xf32>, tensor<f32>) -> tensor<1x6x4x2xf32>
    %6 = stablehlo.slice %5 [0:1, 0:5, 0:4, 0:2] : (tensor<1x6x4x2xf32>) -> tensor<1x5x4x2xf32>
    return %6 : tensor<1x5x4x2xf32>
  }
}
