module @jit_ref attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<12xf32>, %arg1: tensor<10x12xf32>) -> (tensor<f32> {jax.result_info = "result"}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0:4 = stablehlo.while(%iterArg = %arg1, %iterArg_0 = %c, %iterArg_1 = %arg0, %iterArg_2 = %cst) : tensor<10x12xf32>, tensor<i32>, tensor<12xf32>, tensor<f32>
    cond {
      %c_3 = stablehlo.constant dense<10> : tensor<i32>
      %1 = stablehlo.compare LT, %iterArg_0, %c_3, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %1 : tensor<i1>
    } do {
      %1 = func.call @dynamic_index_in_dim(%iterArg, %iterArg_0) : (tensor<10x12xf32>, tensor<i32>) -> tensor<12xf32>
      %2:2 = func.call @closed_call(%iterArg_1, %iterArg_2, %1) : (tensor<12xf32>, tensor<f32>, tensor<12xf32>) -> (tensor<12xf32>, tensor<f32>)
      %c_3 = stablehlo.constant dense<1> : tensor<i32>
      %3 = stablehlo.add %iterArg_0, %c_3 : tensor<i32>
      stablehlo.return %iterArg, %3, %2#0, %2#1 : tensor<10x12xf32>, tensor<i32>, tensor<12xf32>, tensor<f32>
    }
    return %0#3 : tensor<f32>
  }
  func.func private @dynamic_index_in_dim(%arg0: tensor<10x12xf32>, %arg1: tensor<i32>) -> tensor<12xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.dynamic_slice %arg0, %arg1, %c, sizes = [1, 12] : (tensor<10x12xf32>, tensor<i32>, tensor<i32>) -> tensor<1x12xf32>
    %1 = stablehlo.reshape %0 : (tensor<1x12xf32>) -> tensor<12xf32>
    return %1 : tensor<12xf32>
  }
  func.func private @closed_call(%arg0: tensor<12xf32>, %arg1: tensor<f32>, %arg2: tensor<12xf32>) -> (tensor<12xf32>, tensor<f32>) {
    %0 = stablehlo.multiply %arg0, %arg2 : tensor<12xf32>
    %1 = stablehlo.multiply %0, %0 : tensor<12xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %2 = stablehlo.reduce(%1 init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<12xf32>, tensor<f32>) -> tensor<f32>
    %3 = stablehlo.add %arg1, %2 : tensor<f32>
    return %0, %3 : tensor<12xf32>, tensor<f32>
  }
}
