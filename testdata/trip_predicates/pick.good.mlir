module @jit_fn attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<12xf32>, %arg1: tensor<10x12xf32>) -> (tensor<f32> {jax.result_info = "result"}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %0:5 = stablehlo.while(%iterArg = %arg1, %iterArg_1 = %c_0, %iterArg_2 = %arg0, %iterArg_3 = %cst, %iterArg_4 = %c) : tensor<10x12xf32>, tensor<i32>, tensor<12xf32>, tensor<f32>, tensor<i32>
    cond {
      %c_5 = stablehlo.constant dense<10> : tensor<i32>
      %1 = stablehlo.compare LT, %iterArg_1, %c_5, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %1 : tensor<i1>
    } do {
      %1 = func.call @dynamic_index_in_dim(%iterArg, %iterArg_1) : (tensor<10x12xf32>, tensor<i32>) -> tensor<12xf32>
      %2:3 = func.call @closed_call(%iterArg_2, %iterArg_3, %iterArg_4, %1) : (tensor<12xf32>, tensor<f32>, tensor<i32>, tensor<12xf32>) -> (tensor<12xf32>, tensor<f32>, tensor<i32>)
      %c_5 = stablehlo.constant dense<1> : tensor<i32>
      %3 = stablehlo.add %iterArg_1, %c_5 : tensor<i32>
      stablehlo.return %iterArg, %3, %2#0, %2#1, %2#2 : tensor<10x12xf32>, tensor<i32>, tensor<12xf32>, tensor<f32>, tensor<i32>
    }
    return %0#3 : tensor<f32>
  }
  func.func private @dynamic_index_in_dim(%arg0: tensor<10x12xf32>, %arg1: tensor<i32>) -> tensor<12xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.dynamic_slice %arg0, %arg1, %c, sizes = [1, 12] : (tensor<10x12xf32>, tensor<i32>, tensor<i32>) -> tensor<1x12xf32>
    %1 = stablehlo.reshape %0 : (tensor<1x12xf32>) -> tensor<12xf32>
    return %1 : tensor<12xf32>
  }
  func.func private @closed_call(%arg0: tensor<12xf32>, %arg1: tensor<f32>, %arg2: tensor<i32>, %arg3: tensor<12xf32>) -> (tensor<12xf32>, tensor<f32>, tensor<i32>) {
    %c = stablehlo.constant dense<7> : tensor<i32>
    %0 = stablehlo.compare EQ, %arg2, %c, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %1 = stablehlo.multiply %arg3, %arg0 : tensor<12xf32>
    %2 = stablehlo.multiply %arg0, %arg3 : tensor<12xf32>
    %3 = call @_where(%0, %1, %2) : (tensor<i1>, tensor<12xf32>, tensor<12xf32>) -> tensor<12xf32>
    %4 = stablehlo.multiply %3, %3 : tensor<12xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %5 = stablehlo.reduce(%4 init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<12xf32>, tensor<f32>) -> tensor<f32>
    %6 = stablehlo.add %arg1, %5 : tensor<f32>
    %c_0 = stablehlo.constant dense<1> : tensor<i32>
    %7 = stablehlo.add %arg2, %c_0 : tensor<i32>
    return %3, %6, %7 : tensor<12xf32>, tensor<f32>, tensor<i32>
  }
  func.func private @_where(%arg0: tensor<i1>, %arg1: tensor<12xf32>, %arg2: tensor<12xf32>) -> tensor<12xf32> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<i1>, tensor<12xf32>
    return %0 : tensor<12xf32>
  }
}
