module @jit_fn attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<12xf32>, %arg1: tensor<10x12xf32>) -> (tensor<f32> {jax.result_info = "result"}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<12xf32>
    %1 = stablehlo.multiply %arg0, %0 : tensor<12xf32>
    %cst_0 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<12xf32>
    %3 = stablehlo.add %1, %2 : tensor<12xf32>
    %4 = stablehlo.convert %3 : (tensor<12xf32>) -> tensor<12xi32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %5 = stablehlo.reduce(%4 init: %c) applies stablehlo.add across dimensions = [0] : (tensor<12xi32>, tensor<i32>) -> tensor<i32>
    %c_1 = stablehlo.constant dense<3> : tensor<i32>
    %6 = stablehlo.subtract %5, %c_1 : tensor<i32>
    %c_2 = stablehlo.constant dense<0> : tensor<i32>
    %c_3 = stablehlo.constant dense<0> : tensor<i32>
    %7:5 = stablehlo.while(%iterArg = %arg1, %iterArg_5 = %6, %iterArg_6 = %c_3, %iterArg_7 = %arg0, %iterArg_8 = %c_2) : tensor<10x12xf32>, tensor<i32>, tensor<i32>, tensor<12xf32>, tensor<i32>
    cond {
      %c_9 = stablehlo.constant dense<10> : tensor<i32>
      %10 = stablehlo.compare LT, %iterArg_6, %c_9, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %10 : tensor<i1>
    } do {
      %10 = func.call @dynamic_index_in_dim(%iterArg, %iterArg_6) : (tensor<10x12xf32>, tensor<i32>) -> tensor<12xf32>
      %11:2 = func.call @closed_call(%iterArg_5, %iterArg_7, %iterArg_8, %10) : (tensor<i32>, tensor<12xf32>, tensor<i32>, tensor<12xf32>) -> (tensor<12xf32>, tensor<i32>)
      %c_9 = stablehlo.constant dense<1> : tensor<i32>
      %12 = stablehlo.add %iterArg_6, %c_9 : tensor<i32>
      stablehlo.return %iterArg, %iterArg_5, %12, %11#0, %11#1 : tensor<10x12xf32>, tensor<i32>, tensor<i32>, tensor<12xf32>, tensor<i32>
    }
    %8 = stablehlo.multiply %7#3, %7#3 : tensor<12xf32>
    %cst_4 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %9 = stablehlo.reduce(%8 init: %cst_4) applies stablehlo.add across dimensions = [0] : (tensor<12xf32>, tensor<f32>) -> tensor<f32>
    return %9 : tensor<f32>
  }
  func.func private @dynamic_index_in_dim(%arg0: tensor<10x12xf32>, %arg1: tensor<i32>) -> tensor<12xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.dynamic_slice %arg0, %arg1, %c, sizes = [1, 12] : (tensor<10x12xf32>, tensor<i32>, tensor<i32>) -> tensor<1x12xf32>
    %1 = stablehlo.reshape %0 : (tensor<1x12xf32>) -> tensor<12xf32>
    return %1 : tensor<12xf32>
  }
  func.func private @closed_call(%arg0: tensor<i32>, %arg1: tensor<12xf32>, %arg2: tensor<i32>, %arg3: tensor<12xf32>) -> (tensor<12xf32>, tensor<i32>) {
    %0 = stablehlo.compare EQ, %arg2, %arg0, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c = stablehlo.constant dense<4> : tensor<i32>
    %1 = stablehlo.compare LT, %arg2, %c, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %2 = stablehlo.and %0, %1 : tensor<i1>
    %3 = stablehlo.multiply %arg1, %arg3 : tensor<12xf32>
    %4 = call @_where(%2, %3, %arg1) : (tensor<i1>, tensor<12xf32>, tensor<12xf32>) -> tensor<12xf32>
    %c_0 = stablehlo.constant dense<1> : tensor<i32>
    %5 = stablehlo.add %arg2, %c_0 : tensor<i32>
    return %4, %5 : tensor<12xf32>, tensor<i32>
  }
  func.func private @_where(%arg0: tensor<i1>, %arg1: tensor<12xf32>, %arg2: tensor<12xf32>) -> tensor<12xf32> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<i1>, tensor<12xf32>
    return %0 : tensor<12xf32>
  }
}
