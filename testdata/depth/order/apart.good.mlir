module @jit_fn attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<16xf32>, %arg1: tensor<10x16xf32>) -> (tensor<f32> {jax.result_info = "result"}) {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %0:4 = stablehlo.while(%iterArg = %arg1, %iterArg_2 = %c_0, %iterArg_3 = %c, %iterArg_4 = %arg0) : tensor<10x16xf32>, tensor<i32>, tensor<i32>, tensor<16xf32>
    cond {
      %c_5 = stablehlo.constant dense<10> : tensor<i32>
      %3 = stablehlo.compare LT, %iterArg_2, %c_5, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %3 : tensor<i1>
    } do {
      %3:2 = func.call @closed_call(%iterArg, %iterArg_3, %iterArg_4) : (tensor<10x16xf32>, tensor<i32>, tensor<16xf32>) -> (tensor<i32>, tensor<16xf32>)
      %c_5 = stablehlo.constant dense<1> : tensor<i32>
      %4 = stablehlo.add %iterArg_2, %c_5 : tensor<i32>
      stablehlo.return %iterArg, %4, %3#0, %3#1 : tensor<10x16xf32>, tensor<i32>, tensor<i32>, tensor<16xf32>
    }
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %1 = stablehlo.reduce(%0#3 init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<16xf32>, tensor<f32>) -> tensor<f32>
    %cst_1 = stablehlo.constant dense<1.600000e+01> : tensor<f32>
    %2 = stablehlo.divide %1, %cst_1 : tensor<f32>
    return %2 : tensor<f32>
  }
  func.func private @closed_call(%arg0: tensor<10x16xf32>, %arg1: tensor<i32>, %arg2: tensor<16xf32>) -> (tensor<i32>, tensor<16xf32>) {
    %c = stablehlo.constant dense<1> : tensor<i32>
    %0 = stablehlo.add %arg1, %c : tensor<i32>
    %1 = call @dynamic_index_in_dim(%arg0, %arg1) : (tensor<10x16xf32>, tensor<i32>) -> tensor<16xf32>
    %2 = stablehlo.multiply %arg2, %1 : tensor<16xf32>
    return %0, %2 : tensor<i32>, tensor<16xf32>
  }
  func.func private @dynamic_index_in_dim(%arg0: tensor<10x16xf32>, %arg1: tensor<i32>) -> tensor<16xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.compare LT, %arg1, %c, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %1 = stablehlo.convert %arg1 : tensor<i32>
    %c_0 = stablehlo.constant dense<10> : tensor<i32>
    %2 = stablehlo.add %1, %c_0 : tensor<i32>
    %3 = stablehlo.select %0, %2, %arg1 : tensor<i1>, tensor<i32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %4 = stablehlo.dynamic_slice %arg0, %3, %c_1, sizes = [1, 16] : (tensor<10x16xf32>, tensor<i32>, tensor<i32>) -> tensor<1x16xf32>
    %5 = stablehlo.reshape %4 : (tensor<1x16xf32>) -> tensor<16xf32>
    return %5 : tensor<16xf32>
  }
}
