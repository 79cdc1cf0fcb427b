#loc1 = loc("x.3")
#loc2 = loc("y.1")
#loc4 = loc("x")
#loc5 = loc("w")
#loc6 = loc("testdata/gen_bug_patterns.py":80:11)
#loc7 = loc("testdata/gen_bug_patterns.py":256:20)
#loc8 = loc("testdata/gen_bug_patterns.py":265:4)
#loc9 = loc("matmul"(#loc6))
#loc10 = loc("main"(#loc7))
#loc11 = loc("<module>"(#loc8))
#loc12 = loc(callsite(#loc10 at #loc11))
#loc13 = loc(callsite(#loc9 at #loc12))
#loc14 = loc("jit(matmul)/dot_general"(#loc13))
module @jit_matmul attributes {mhlo.cross_program_prefetches = [], mhlo.input_output_alias = [], mhlo.is_dynamic = false, mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32, mhlo.use_auto_spmd_partitioning = false} {
  sdy.mesh @mesh_device_ids_0 = <["axis_0"=1, "axis_1"=4, "axis_2"=2], device_ids=[0, 4, 1, 5, 2, 6, 3, 7]>
  sdy.mesh @mesh = <["axis_0"=1, "axis_1"=4, "axis_2"=2]> loc(#loc)
  func.func private @add.clone(%arg0: tensor<f32> loc("x.3"), %arg1: tensor<f32> loc("y.1")) -> tensor<f32> {
    %0 = stablehlo.add %arg0, %arg1 : tensor<f32> loc(#loc3)
    return %0 : tensor<f32> loc(#loc)
  } loc(#loc)
  func.func @main(%arg0: tensor<8x4xf32> {mhlo.sharding = "{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}"} loc("x"), %arg1: tensor<4x8xf32> {mhlo.sharding = "{devices=[4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}"} loc("w")) -> (tensor<8x8xf32> {mhlo.sharding = "{replicated}"}) {
    %0 = stablehlo.dot %arg0, %arg1, precision = [DEFAULT, DEFAULT] : (tensor<8x4xf32>, tensor<4x8xf32>) -> tensor<8x8xf32> loc(#loc14)
    %1 = "stablehlo.all_reduce"(%0) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 0>, replica_groups = #stablehlo.replica_group_mesh_axes<mesh = @mesh_device_ids_0, axes = [#stablehlo.axis_ref<name = "axis_2">]>, use_global_device_ids}> ({
    ^bb0(%arg2: tensor<f32> loc("jit(matmul)/dot_general"(#loc13)), %arg3: tensor<f32> loc("jit(matmul)/dot_general"(#loc13))):
      %2 = stablehlo.add %arg2, %arg3 : tensor<f32> loc(#loc3)
      stablehlo.return %2 : tensor<f32> loc(#loc)
    }) : (tensor<8x8xf32>) -> tensor<8x8xf32> loc(#loc14)
    return %1 : tensor<8x8xf32> loc(#loc)
  } loc(#loc)
} loc(#loc)
#loc = loc(unknown)
#loc3 = loc("add.1")
