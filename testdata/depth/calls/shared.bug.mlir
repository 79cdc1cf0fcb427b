module @jit_fn attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<16xf32>, %arg1: tensor<3x16xf32>, %arg2: tensor<3x16xf32>) -> (tensor<16xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.iota dim = 0 : tensor<16xi32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %1:6 = stablehlo.while(%iterArg = %arg1, %iterArg_1 = %arg2, %iterArg_2 = %0, %iterArg_3 = %c_0, %iterArg_4 = %c, %iterArg_5 = %arg0) : tensor<3x16xf32>, tensor<3x16xf32>, tensor<16xi32>, tensor<i32>, tensor<i32>, tensor<16xf32>
    cond {
      %c_6 = stablehlo.constant dense<3> : tensor<i32>
      %2 = stablehlo.compare LT, %iterArg_3, %c_6, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %2 : tensor<i1>
    } do {
      %2:2 = func.call @closed_call(%iterArg, %iterArg_1, %iterArg_2, %iterArg_4, %iterArg_5) : (tensor<3x16xf32>, tensor<3x16xf32>, tensor<16xi32>, tensor<i32>, tensor<16xf32>) -> (tensor<i32>, tensor<16xf32>)
      %c_6 = stablehlo.constant dense<1> : tensor<i32>
      %3 = stablehlo.add %iterArg_3, %c_6 : tensor<i32>
      stablehlo.return %iterArg, %iterArg_1, %iterArg_2, %3, %2#0, %2#1 : tensor<3x16xf32>, tensor<3x16xf32>, tensor<16xi32>, tensor<i32>, tensor<i32>, tensor<16xf32>
    }
    return %1#5 : tensor<16xf32>
  }
  func.func private @closed_call(%arg0: tensor<3x16xf32>, %arg1: tensor<3x16xf32>, %arg2: tensor<16xi32>, %arg3: tensor<i32>, %arg4: tensor<16xf32>) -> (tensor<i32>, tensor<16xf32>) {
    %c = stablehlo.constant dense<1> : tensor<i32>
    %0 = stablehlo.add %arg3, %c : tensor<i32>
    %1 = call @dynamic_index_in_dim(%arg0, %arg3) : (tensor<3x16xf32>, tensor<i32>) -> tensor<16xf32>
    %2 = call @dynamic_index_in_dim(%arg1, %arg3) : (tensor<3x16xf32>, tensor<i32>) -> tensor<16xf32>
    %c_0 = stablehlo.constant dense<10> : tensor<i32>
    %3 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i32>) -> tensor<16xi32>
    %4 = stablehlo.compare LT, %arg2, %3, SIGNED : (tensor<16xi32>, tensor<16xi32>) -> tensor<16xi1>
    %5 = stablehlo.multiply %arg4, %1 : tensor<16xf32>
    %6 = stablehlo.add %5, %2 : tensor<16xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %7 = call @_where(%4, %6, %cst) : (tensor<16xi1>, tensor<16xf32>, tensor<f32>) -> tensor<16xf32>
    return %0, %7 : tensor<i32>, tensor<16xf32>
  }
  func.func private @dynamic_index_in_dim(%arg0: tensor<3x16xf32>, %arg1: tensor<i32>) -> tensor<16xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.compare LT, %arg1, %c, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %1 = stablehlo.convert %arg1 : tensor<i32>
    %c_0 = stablehlo.constant dense<3> : tensor<i32>
    %2 = stablehlo.add %1, %c_0 : tensor<i32>
    %3 = stablehlo.select %0, %2, %arg1 : tensor<i1>, tensor<i32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %4 = stablehlo.dynamic_slice %arg0, %3, %c_1, sizes = [1, 16] : (tensor<3x16xf32>, tensor<i32>, tensor<i32>) -> tensor<1x16xf32>
    %5 = stablehlo.reshape %4 : (tensor<1x16xf32>) -> tensor<16xf32>
    return %5 : tensor<16xf32>
  }
  func.func private @_where(%arg0: tensor<16xi1>, %arg1: tensor<16xf32>, %arg2: tensor<f32>) -> tensor<16xf32> {
    %0 = stablehlo.convert %arg2 : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<f32>) -> tensor<16xf32>
    %2 = stablehlo.select %arg0, %arg1, %1 : tensor<16xi1>, tensor<16xf32>
    return %2 : tensor<16xf32>
  }
}
