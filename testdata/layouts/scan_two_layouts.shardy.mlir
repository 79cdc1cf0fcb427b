module @jit_body attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["dp"=2, "tp"=4]> {stablehlo.mesh = {axes = [{name = "dp", size = 2 : i64}, {name = "tp", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<4x16xf32>, %arg1: tensor<4x16x32xf32>, %arg2: tensor<4x32x16xf32>) -> (tensor<4x16xf32> {jax.result_info = "result"}) {
    %0 = sdy.manual_computation(%arg0, %arg1, %arg2) in_shardings=[<@mesh, [{"dp"}, {}]>, <@mesh, [{}, {}, {"tp"}]>, <@mesh, [{}, {"tp"}, {}]>] out_shardings=[<@mesh, [{"dp"}, {"tp"}]>] manual_axes={"dp", "tp"} (%arg3: tensor<2x16xf32>, %arg4: tensor<4x16x8xf32>, %arg5: tensor<4x8x16xf32>) {
      %c = stablehlo.constant dense<1> : tensor<ui32>
      %c_0 = stablehlo.constant dense<4> : tensor<ui32>
      %1 = stablehlo.partition_id : tensor<ui32>
      %2 = stablehlo.divide %1, %c : tensor<ui32>
      %3 = stablehlo.remainder %2, %c_0 : tensor<ui32>
      %4 = stablehlo.convert %3 : (tensor<ui32>) -> tensor<i32>
      %c_1 = stablehlo.constant dense<4> : tensor<i32>
      %5 = stablehlo.multiply %4, %c_1 : tensor<i32>
      %c_2 = stablehlo.constant dense<0> : tensor<i32>
      %6 = stablehlo.compare LT, %5, %c_2, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %c_3 = stablehlo.constant dense<16> : tensor<i32>
      %7 = stablehlo.add %5, %c_3 : tensor<i32>
      %8 = stablehlo.select %6, %7, %5 : tensor<i1>, tensor<i32>
      %c_4 = stablehlo.constant dense<0> : tensor<i32>
      %9 = stablehlo.dynamic_slice %arg3, %c_4, %8, sizes = [2, 4] : (tensor<2x16xf32>, tensor<i32>, tensor<i32>) -> tensor<2x4xf32>
      %10 = stablehlo.tanh %9 : tensor<2x4xf32>
      %11 = stablehlo.tanh %arg3 : tensor<2x16xf32>
      %c_5 = stablehlo.constant dense<0> : tensor<i32>
      %12:5 = stablehlo.while(%iterArg = %arg4, %iterArg_6 = %arg5, %iterArg_7 = %c_5, %iterArg_8 = %11, %iterArg_9 = %10) : tensor<4x16x8xf32>, tensor<4x8x16xf32>, tensor<i32>, tensor<2x16xf32>, tensor<2x4xf32>
      cond {
        %c_10 = stablehlo.constant dense<4> : tensor<i32>
        %13 = stablehlo.compare LT, %iterArg_7, %c_10, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
        stablehlo.return %13 : tensor<i1>
      } do {
        %13 = func.call @dynamic_index_in_dim(%iterArg, %iterArg_7) : (tensor<4x16x8xf32>, tensor<i32>) -> tensor<16x8xf32>
        %14 = func.call @dynamic_index_in_dim_0(%iterArg_6, %iterArg_7) : (tensor<4x8x16xf32>, tensor<i32>) -> tensor<8x16xf32>
        %15:2 = func.call @closed_call(%iterArg_8, %iterArg_9, %13, %14) : (tensor<2x16xf32>, tensor<2x4xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> (tensor<2x16xf32>, tensor<2x4xf32>)
        %c_10 = stablehlo.constant dense<1> : tensor<i32>
        %16 = stablehlo.add %iterArg_7, %c_10 : tensor<i32>
        stablehlo.return %iterArg, %iterArg_6, %16, %15#0, %15#1 : tensor<4x16x8xf32>, tensor<4x8x16xf32>, tensor<i32>, tensor<2x16xf32>, tensor<2x4xf32>
      }
      sdy.return %12#4 : tensor<2x4xf32>
    } : (tensor<4x16xf32>, tensor<4x16x32xf32>, tensor<4x32x16xf32>) -> tensor<4x16xf32>
    return %0 : tensor<4x16xf32>
  }
  func.func private @dynamic_index_in_dim(%arg0: tensor<4x16x8xf32>, %arg1: tensor<i32>) -> tensor<16x8xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.dynamic_slice %arg0, %arg1, %c, %c_0, sizes = [1, 16, 8] : (tensor<4x16x8xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<1x16x8xf32>
    %1 = stablehlo.reshape %0 : (tensor<1x16x8xf32>) -> tensor<16x8xf32>
    return %1 : tensor<16x8xf32>
  }
  func.func private @dynamic_index_in_dim_0(%arg0: tensor<4x8x16xf32>, %arg1: tensor<i32>) -> tensor<8x16xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.dynamic_slice %arg0, %arg1, %c, %c_0, sizes = [1, 8, 16] : (tensor<4x8x16xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<1x8x16xf32>
    %1 = stablehlo.reshape %0 : (tensor<1x8x16xf32>) -> tensor<8x16xf32>
    return %1 : tensor<8x16xf32>
  }
  func.func private @closed_call(%arg0: tensor<2x16xf32>, %arg1: tensor<2x4xf32>, %arg2: tensor<16x8xf32>, %arg3: tensor<8x16xf32>) -> (tensor<2x16xf32>, tensor<2x4xf32>) {
    %0 = stablehlo.dot_general %arg0, %arg2, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16xf32>, tensor<16x8xf32>) -> tensor<2x8xf32>
    %1 = stablehlo.tanh %0 : tensor<2x8xf32>
    %2 = stablehlo.dot_general %1, %arg3, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x8xf32>, tensor<8x16xf32>) -> tensor<2x16xf32>
    %3 = "stablehlo.reduce_scatter"(%2) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3], [4, 5, 6, 7]]> : tensor<2x4xi64>, scatter_dimension = 1 : i64, use_global_device_ids}> ({
    ^bb0(%arg4: tensor<f32>, %arg5: tensor<f32>):
      %6 = stablehlo.add %arg4, %arg5 : tensor<f32>
      stablehlo.return %6 : tensor<f32>
    }) : (tensor<2x16xf32>) -> tensor<2x4xf32>
    %4 = stablehlo.add %arg1, %3 : tensor<2x4xf32>
    %5 = "stablehlo.all_gather"(%4) <{all_gather_dim = 1 : i64, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3], [4, 5, 6, 7]]> : tensor<2x4xi64>, use_global_device_ids}> : (tensor<2x4xf32>) -> tensor<2x16xf32>
    return %5, %4 : tensor<2x16xf32>, tensor<2x4xf32>
  }
}
