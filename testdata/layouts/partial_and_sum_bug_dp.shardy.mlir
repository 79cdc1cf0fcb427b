module @jit_body attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["dp"=2, "tp"=4]> {stablehlo.mesh = {axes = [{name = "dp", size = 2 : i64}, {name = "tp", size = 4 : i64}]}}
  func.func public @main(%arg0: tensor<4x16xf32>, %arg1: tensor<16x8xf32>) -> (tensor<4x8xf32> {jax.result_info = "result"}) {
    %0 = sdy.manual_computation(%arg0, %arg1) in_shardings=[<@mesh, [{"dp"}, {"tp"}]>, <@mesh, [{"tp"}, {}]>] out_shardings=[<@mesh, [{"dp"}, {}]>] manual_axes={"dp", "tp"} (%arg2: tensor<2x4xf32>, %arg3: tensor<4x8xf32>) {
      %1 = stablehlo.dot_general %arg2, %arg3, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x4xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
      %2 = "stablehlo.all_reduce"(%1) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3], [4, 5, 6, 7]]> : tensor<2x4xi64>, use_global_device_ids}> ({
      ^bb0(%arg4: tensor<f32>, %arg5: tensor<f32>):
        %10 = stablehlo.add %arg4, %arg5 : tensor<f32>
        stablehlo.return %10 : tensor<f32>
      }) : (tensor<2x8xf32>) -> tensor<2x8xf32>
      %3 = stablehlo.tanh %2 : tensor<2x8xf32>
      %4 = stablehlo.multiply %3, %2 : tensor<2x8xf32>
      %5 = stablehlo.tanh %4 : tensor<2x8xf32>
      %6 = stablehlo.multiply %2, %1 : tensor<2x8xf32>
      %7 = "stablehlo.all_reduce"(%6) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 4], [1, 5], [2, 6], [3, 7]]> : tensor<4x2xi64>, use_global_device_ids}> ({
      ^bb0(%arg4: tensor<f32>, %arg5: tensor<f32>):
        %10 = stablehlo.add %arg4, %arg5 : tensor<f32>
        stablehlo.return %10 : tensor<f32>
      }) : (tensor<2x8xf32>) -> tensor<2x8xf32>
      %8 = stablehlo.add %5, %7 : tensor<2x8xf32>
      %9 = stablehlo.tanh %8 : tensor<2x8xf32>
      sdy.return %9 : tensor<2x8xf32>
    } : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
    return %0 : tensor<4x8xf32>
  }
}
