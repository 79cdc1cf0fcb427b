module @jit__partial_manual attributes {mhlo.cross_program_prefetches = [], mhlo.frontend_attributes = {xla.sdy.meshes = "{mesh = #sdy.mesh<[\22dp\22=2, \22tp\22=4]>}"}, mhlo.input_output_alias = [], mhlo.is_dynamic = false, mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32, mhlo.use_auto_spmd_partitioning = false} {
  func.func private @region_0.1(%arg0: tensor<f32>, %arg1: tensor<f32>) -> (tensor<f32> {mhlo.sharding = "{replicated}"}) {
    %0 = stablehlo.add %arg0, %arg1 : tensor<f32>
    %1 = stablehlo.custom_call @Sharding(%0) {backend_config = "", mhlo.frontend_attributes = {xla.sdy.sharding = "#sdy.sharding_per_value<[<@mesh, []>]>"}, mhlo.sharding = "{replicated}"} : (tensor<f32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
  func.func private @xla.sdy.manual_computation_body.2(%arg0: tensor<8x4xf32>, %arg1: tensor<4x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
    %0 = stablehlo.dot %arg0, %arg1, precision = [DEFAULT, DEFAULT] : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
    %1 = stablehlo.custom_call @Sharding(%0) {backend_config = "", mhlo.frontend_attributes = {xla.sdy.sharding = "#sdy.sharding_per_value<[<@mesh, [{?}, {?}]>]>"}, mhlo.sharding = "{replicated}"} : (tensor<8x4xf32>) -> tensor<8x4xf32>
    %2 = "stablehlo.all_reduce"(%1) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 0>, replica_groups = dense<[[0, 1, 2, 3], [4, 5, 6, 7]]> : tensor<2x4xi64>, use_global_device_ids}> ({
    ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
      %7 = stablehlo.add %arg2, %arg3 : tensor<f32>
      %8 = stablehlo.custom_call @Sharding(%7) {backend_config = "", mhlo.frontend_attributes = {xla.sdy.sharding = "#sdy.sharding_per_value<[<@mesh, []>]>"}, mhlo.sharding = "{replicated}"} : (tensor<f32>) -> tensor<f32>
      stablehlo.return %8 : tensor<f32>
    }) : (tensor<8x4xf32>) -> tensor<8x4xf32>
    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %3 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<8x4xf32>
    %4 = stablehlo.custom_call @Sharding(%3) {backend_config = "", mhlo.frontend_attributes = {xla.sdy.sharding = "#sdy.sharding_per_value<[<@mesh, [{?}, {?}]>]>"}, mhlo.sharding = "{replicated}"} : (tensor<8x4xf32>) -> tensor<8x4xf32>
    %5 = stablehlo.multiply %arg0, %4 : tensor<8x4xf32>
    %6 = stablehlo.custom_call @Sharding(%5) {backend_config = "", mhlo.frontend_attributes = {xla.sdy.sharding = "#sdy.sharding_per_value<[<@mesh, [{?}, {?}]>]>"}, mhlo.sharding = "{replicated}"} : (tensor<8x4xf32>) -> tensor<8x4xf32>
    return %2, %6 : tensor<8x4xf32>, tensor<8x4xf32>
  }
  func.func @main(%arg0: tensor<8x16xf32> {mhlo.frontend_attributes = {xla.sdy.sharding = "#sdy.sharding<@mesh, [{\22dp\22}, {\22tp\22}]>"}, mhlo.sharding = "{devices=[2,4]<=[8]}"}, %arg1: tensor<16x4xf32> {mhlo.frontend_attributes = {xla.sdy.sharding = "#sdy.sharding<@mesh, [{\22tp\22}, {}]>"}, mhlo.sharding = "{devices=[4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}"}) -> (tensor<8x4xf32> {mhlo.sharding = "{devices=[2,1,4]<=[8] last_tile_dim_replicate}"}, tensor<8x16xf32> {mhlo.sharding = "{devices=[2,4]<=[8]}"}) {
    %0 = stablehlo.custom_call @xla.sdy.GlobalToLocalShape(%arg0, %arg1) {backend_config = "", has_side_effect = true, mhlo.frontend_attributes = {xla.sdy.in_shardings = "#sdy.sharding_per_value<[<@mesh, [{?}, {\22tp\22, ?}]>, <@mesh, [{\22tp\22, ?}, {?}]>]>", xla.sdy.manual_axes = "#sdy<manual_axes{\22tp\22}>"}, xla_shape = "(f32[8,4]{1,0}, f32[4,4]{1,0})"} : (tensor<8x16xf32>, tensor<16x4xf32>) -> tuple<tensor<8x4xf32>, tensor<4x4xf32>>
    %1 = stablehlo.get_tuple_element %0[0] : (tuple<tensor<8x4xf32>, tensor<4x4xf32>>) -> tensor<8x4xf32>
    %2 = stablehlo.get_tuple_element %0[1] : (tuple<tensor<8x4xf32>, tensor<4x4xf32>>) -> tensor<4x4xf32>
    %3:2 = call @xla.sdy.manual_computation_body.2(%1, %2) {mhlo.frontend_attributes = {inlineable = "false"}} : (tensor<8x4xf32>, tensor<4x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>)
    %4 = stablehlo.custom_call @xla.sdy.LocalToGlobalShape(%3#1, %3#0) {backend_config = "", has_side_effect = true, mhlo.frontend_attributes = {xla.sdy.manual_axes = "#sdy<manual_axes{\22tp\22}>", xla.sdy.out_shardings = "#sdy.sharding_per_value<[<@mesh, [{?}, {?}]>, <@mesh, [{?}, {\22tp\22, ?}]>]>"}, xla_shape = "(f32[8,4]{1,0}, f32[8,16]{1,0})"} : (tensor<8x4xf32>, tensor<8x4xf32>) -> tuple<tensor<8x4xf32>, tensor<8x16xf32>>
    %5 = stablehlo.get_tuple_element %4[0] : (tuple<tensor<8x4xf32>, tensor<8x16xf32>>) -> tensor<8x4xf32>
    %6 = stablehlo.custom_call @xla.sdy.ShardingGroup(%5) {backend_config = "", has_side_effect = true, mhlo.frontend_attributes = {xla.sdy.sharding_group_id = "0 : i64"}, xla_shape = "()"} : (tensor<8x4xf32>) -> tuple<>
    %7 = stablehlo.dot %arg0, %arg1, precision = [DEFAULT, DEFAULT] : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
    %8 = stablehlo.custom_call @xla.sdy.ShardingGroup(%7) {backend_config = "", has_side_effect = true, mhlo.frontend_attributes = {xla.sdy.sharding_group_id = "0 : i64"}, xla_shape = "()"} : (tensor<8x4xf32>) -> tuple<>
    %9 = stablehlo.tanh %5 : tensor<8x4xf32>
    %10 = stablehlo.add %9, %7 : tensor<8x4xf32>
    %11 = stablehlo.custom_call @xla.sdy.FuncResultSharding(%10) {backend_config = "", has_side_effect = true, mhlo.frontend_attributes = {xla.sdy.sharding = "#sdy.sharding_per_value<[<@mesh, [{\22dp\22}, {}]>]>"}} : (tensor<8x4xf32>) -> tensor<8x4xf32>
    %12 = stablehlo.reshape %11 {mhlo.sharding = "{devices=[2,1,4]<=[8] last_tile_dim_replicate}"} : (tensor<8x4xf32>) -> tensor<8x4xf32>
    %13 = stablehlo.get_tuple_element %4[1] : (tuple<tensor<8x4xf32>, tensor<8x16xf32>>) -> tensor<8x16xf32>
    %14 = stablehlo.custom_call @xla.sdy.FuncResultSharding(%13) {backend_config = "", has_side_effect = true, mhlo.frontend_attributes = {xla.sdy.sharding = "#sdy.sharding_per_value<[<@mesh, [{\22dp\22}, {\22tp\22}]>]>"}} : (tensor<8x16xf32>) -> tensor<8x16xf32>
    %15 = stablehlo.reshape %14 {mhlo.sharding = "{devices=[2,4]<=[8]}"} : (tensor<8x16xf32>) -> tensor<8x16xf32>
    return %11, %14 : tensor<8x4xf32>, tensor<8x16xf32>
  }
}
