module @jit_cube_loop attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<64xf32>) -> (tensor<f32> {jax.result_info = "result"}) {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0:3 = stablehlo.while(%iterArg = %arg0, %iterArg_0 = %c, %iterArg_1 = %arg0) : tensor<64xf32>, tensor<i32>, tensor<64xf32>
    cond {
      %c_2 = stablehlo.constant dense<2> : tensor<i32>
      %2 = stablehlo.compare LT, %iterArg_0, %c_2, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %2 : tensor<i1>
    } do {
      %2 = func.call @closed_call(%iterArg, %iterArg_1) : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
      %c_2 = stablehlo.constant dense<1> : tensor<i32>
      %3 = stablehlo.add %iterArg_0, %c_2 : tensor<i32>
      stablehlo.return %iterArg, %3, %2 : tensor<64xf32>, tensor<i32>, tensor<64xf32>
    }
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %1 = stablehlo.reduce(%0#2 init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<64xf32>, tensor<f32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
  func.func private @closed_call(%arg0: tensor<64xf32>, %arg1: tensor<64xf32>) -> tensor<64xf32> {
    %0 = stablehlo.multiply %arg1, %arg0 : tensor<64xf32>
    return %0 : tensor<64xf32>
  }
}
