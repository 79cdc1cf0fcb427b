module @jit_fn attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<12xf32>, %arg1: tensor<10x12xf32>) -> (tensor<f32> {jax.result_info = "result"}) {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %0:5 = stablehlo.while(%iterArg = %arg1, %iterArg_1 = %c_0, %iterArg_2 = %c, %iterArg_3 = %arg0, %iterArg_4 = %cst) : tensor<10x12xf32>, tensor<i32>, tensor<i32>, tensor<12xf32>, tensor<f32>
    cond {
      %c_5 = stablehlo.constant dense<10> : tensor<i32>
      %1 = stablehlo.compare LT, %iterArg_1, %c_5, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %1 : tensor<i1>
    } do {
      %1:3 = func.call @closed_call(%iterArg, %iterArg_2, %iterArg_3, %iterArg_4) : (tensor<10x12xf32>, tensor<i32>, tensor<12xf32>, tensor<f32>) -> (tensor<i32>, tensor<12xf32>, tensor<f32>)
      %c_5 = stablehlo.constant dense<1> : tensor<i32>
      %2 = stablehlo.add %iterArg_1, %c_5 : tensor<i32>
      stablehlo.return %iterArg, %2, %1#0, %1#1, %1#2 : tensor<10x12xf32>, tensor<i32>, tensor<i32>, tensor<12xf32>, tensor<f32>
    }
    return %0#4 : tensor<f32>
  }
  func.func private @closed_call(%arg0: tensor<10x12xf32>, %arg1: tensor<i32>, %arg2: tensor<12xf32>, %arg3: tensor<f32>) -> (tensor<i32>, tensor<12xf32>, tensor<f32>) {
    %c = stablehlo.constant dense<1> : tensor<i32>
    %0 = stablehlo.add %arg1, %c : tensor<i32>
    %c_0 = stablehlo.constant dense<9> : tensor<i32>
    %1 = stablehlo.subtract %c_0, %arg1 : tensor<i32>
    %2 = call @dynamic_index_in_dim(%arg0, %1) : (tensor<10x12xf32>, tensor<i32>) -> tensor<12xf32>
    %3 = stablehlo.multiply %arg2, %2 : tensor<12xf32>
    %4 = stablehlo.multiply %3, %3 : tensor<12xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %5 = stablehlo.reduce(%4 init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<12xf32>, tensor<f32>) -> tensor<f32>
    %6 = stablehlo.add %arg3, %5 : tensor<f32>
    return %0, %3, %6 : tensor<i32>, tensor<12xf32>, tensor<f32>
  }
  func.func private @dynamic_index_in_dim(%arg0: tensor<10x12xf32>, %arg1: tensor<i32>) -> tensor<12xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.compare LT, %arg1, %c, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %1 = stablehlo.convert %arg1 : tensor<i32>
    %c_0 = stablehlo.constant dense<10> : tensor<i32>
    %2 = stablehlo.add %1, %c_0 : tensor<i32>
    %3 = stablehlo.select %0, %2, %arg1 : tensor<i1>, tensor<i32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %4 = stablehlo.dynamic_slice %arg0, %3, %c_1, sizes = [1, 12] : (tensor<10x12xf32>, tensor<i32>, tensor<i32>) -> tensor<1x12xf32>
    %5 = stablehlo.reshape %4 : (tensor<1x12xf32>) -> tensor<12xf32>
    return %5 : tensor<12xf32>
  }
}
