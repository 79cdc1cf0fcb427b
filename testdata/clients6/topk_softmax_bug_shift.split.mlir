module @jit_split attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<1x4xf32>) -> (tensor<1x2xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.slice %arg0 [0:1, 0:2] : (tensor<1x4xf32>) -> tensor<1x2xf32>
    %values, %indices = chlo.top_k(%0, k = 2) : tensor<1x2xf32> -> (tensor<1x2xf32>, tensor<1x2xi32>)
    %1 = stablehlo.slice %arg0 [0:1, 2:4] : (tensor<1x4xf32>) -> tensor<1x2xf32>
    %values_0, %indices_1 = chlo.top_k(%1, k = 2) : tensor<1x2xf32> -> (tensor<1x2xf32>, tensor<1x2xi32>)
    %2 = stablehlo.concatenate %values, %values_0, dim = 1 : (tensor<1x2xf32>, tensor<1x2xf32>) -> tensor<1x4xf32>
    %values_2, %indices_3 = chlo.top_k(%2, k = 2) : tensor<1x4xf32> -> (tensor<1x2xf32>, tensor<1x2xi32>)
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %3 = stablehlo.reduce(%values_2 init: %cst) applies stablehlo.maximum across dimensions = [1] : (tensor<1x2xf32>, tensor<f32>) -> tensor<1xf32>
    %cst_4 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %4 = stablehlo.broadcast_in_dim %cst_4, dims = [] : (tensor<f32>) -> tensor<1xf32>
    %5 = stablehlo.maximum %4, %3 : tensor<1xf32>
    %6 = stablehlo.broadcast_in_dim %5, dims = [0] : (tensor<1xf32>) -> tensor<1x1xf32>
    %7 = stablehlo.broadcast_in_dim %6, dims = [0, 1] : (tensor<1x1xf32>) -> tensor<1x2xf32>
    %8 = stablehlo.subtract %values_2, %7 : tensor<1x2xf32>
    %9 = stablehlo.exponential %8 : tensor<1x2xf32>
    %cst_5 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %10 = stablehlo.reduce(%9 init: %cst_5) applies stablehlo.add across dimensions = [1] : (tensor<1x2xf32>, tensor<f32>) -> tensor<1xf32>
    %11 = stablehlo.broadcast_in_dim %10, dims = [0] : (tensor<1xf32>) -> tensor<1x1xf32>
    %12 = stablehlo.broadcast_in_dim %11, dims = [0, 1] : (tensor<1x1xf32>) -> tensor<1x2xf32>
    %one = stablehlo.constant dense<1.000000e+00> : tensor<1x2xf32>
    %shifted = stablehlo.add %8, %one : tensor<1x2xf32>
    %num = stablehlo.exponential %shifted : tensor<1x2xf32>
    %13 = stablehlo.divide %num, %12 : tensor<1x2xf32>
    return %13 : tensor<1x2xf32>
  }
}
