module @jit_cube_newton2 attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<64xf32>) -> (tensor<f32> {jax.result_info = "result"}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<64xf32>, tensor<f32>) -> tensor<f32>
    %1 = stablehlo.multiply %arg0, %arg0 : tensor<64xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %2 = stablehlo.reduce(%1 init: %cst_0) applies stablehlo.add across dimensions = [0] : (tensor<64xf32>, tensor<f32>) -> tensor<f32>
    %cst_1 = stablehlo.constant dense<1.500000e+00> : tensor<f32>
    %3 = stablehlo.multiply %cst_1, %0 : tensor<f32>
    %4 = stablehlo.multiply %3, %2 : tensor<f32>
    %cst_2 = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %5 = stablehlo.multiply %cst_2, %0 : tensor<f32>
    %6 = stablehlo.multiply %5, %0 : tensor<f32>
    %7 = stablehlo.multiply %6, %0 : tensor<f32>
    %8 = stablehlo.subtract %4, %7 : tensor<f32>
    return %8 : tensor<f32>
  }
}
