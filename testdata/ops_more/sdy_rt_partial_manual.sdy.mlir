module @jit__partial_manual attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["dp"=2, "tp"=4]> {stablehlo.mesh = {axes = [{name = "dp", size = 2 : i64}, {name = "tp", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}, %arg1: tensor<16x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"tp"}, {}]>}) -> (tensor<8x4xf32> {jax.result_info = "result[0]", sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {}]>}, tensor<8x16xf32> {jax.result_info = "result[1]", sdy.sharding = #sdy.sharding<@mesh, [{"dp"}, {"tp"}]>}) {
    %0:2 = sdy.manual_computation(%arg0, %arg1) in_shardings=[<@mesh, [{?}, {"tp", ?}]>, <@mesh, [{"tp", ?}, {?}]>] out_shardings=[<@mesh, [{?}, {?}]>, <@mesh, [{?}, {"tp", ?}]>] manual_axes={"tp"} (%arg2: tensor<8x4xf32>, %arg3: tensor<4x4xf32>) {
      %4 = stablehlo.dot_general %arg2, %arg3, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
      %5 = sdy.sharding_constraint %4 <@mesh, [{?}, {?}]> : tensor<8x4xf32>
      %6 = "stablehlo.all_reduce"(%5) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3], [4, 5, 6, 7]]> : tensor<2x4xi64>, use_global_device_ids}> ({
      ^bb0(%arg4: tensor<f32>, %arg5: tensor<f32>):
        %11 = stablehlo.add %arg4, %arg5 : tensor<f32>
        %12 = sdy.sharding_constraint %11 <@mesh, []> : tensor<f32>
        stablehlo.return %12 : tensor<f32>
      }) : (tensor<8x4xf32>) -> tensor<8x4xf32>
      %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
      %7 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<8x4xf32>
      %8 = sdy.sharding_constraint %7 <@mesh, [{?}, {?}]> : tensor<8x4xf32>
      %9 = stablehlo.multiply %arg2, %8 : tensor<8x4xf32>
      %10 = sdy.sharding_constraint %9 <@mesh, [{?}, {?}]> : tensor<8x4xf32>
      sdy.return %6, %10 : tensor<8x4xf32>, tensor<8x4xf32>
    } : (tensor<8x16xf32>, tensor<16x4xf32>) -> (tensor<8x4xf32>, tensor<8x16xf32>)
    %1 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
    sdy.sharding_group %0#0 group_id=0 : tensor<8x4xf32>
    sdy.sharding_group %1 group_id=0 : tensor<8x4xf32>
    %2 = stablehlo.tanh %0#0 : tensor<8x4xf32>
    %3 = stablehlo.add %2, %1 : tensor<8x4xf32>
    return %3, %0#1 : tensor<8x4xf32>, tensor<8x16xf32>
  }
}
