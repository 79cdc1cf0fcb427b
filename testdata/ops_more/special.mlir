module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8xf32>, %arg1: tensor<8xi32>) -> (tensor<8xf32> {jax.result_info = "result[0]"}, tensor<8xf32> {jax.result_info = "result[1]"}, tensor<8xf32> {jax.result_info = "result[2]"}, tensor<8xf32> {jax.result_info = "result[3]"}, tensor<8xf32> {jax.result_info = "result[4]"}, tensor<8xf32> {jax.result_info = "result[5]"}) {
    %cst = stablehlo.constant dense<4.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<8xf32>
    %1 = stablehlo.divide %arg0, %0 : tensor<8xf32>
    %2 = chlo.erf_inv %1 : tensor<8xf32> -> tensor<8xf32>
    %3 = chlo.lgamma %arg0 : tensor<8xf32> -> tensor<8xf32>
    %4 = chlo.digamma %arg0 : tensor<8xf32> -> tensor<8xf32>
    %5 = stablehlo.convert %arg1 : (tensor<8xi32>) -> tensor<8xf32>
    %6 = chlo.polygamma %5, %arg0 : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
    %cst_0 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %7 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<8xf32>
    %8 = stablehlo.add %arg0, %7 : tensor<8xf32>
    %cst_1 = stablehlo.constant dense<3.000000e+00> : tensor<f32>
    %9 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<8xf32>
    %10 = stablehlo.add %arg0, %9 : tensor<8xf32>
    %11 = chlo.zeta %8, %10 : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
    %cst_2 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %12 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<8xf32>
    %13 = stablehlo.add %arg0, %12 : tensor<8xf32>
    %14 = chlo.next_after %arg0, %13 : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
    return %2, %3, %4, %6, %11, %14 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
  }
}
