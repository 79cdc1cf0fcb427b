module @m attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func @main(%t: tensor<8x64xf32>, %ids: tensor<1x64xi32>) -> tensor<64x64xf32> {
    %one = stablehlo.constant dense<1> : tensor<1x64xi32>
    %j = stablehlo.add %ids, %one : tensor<1x64xi32>
    %out = "stablehlo.gather"(%t, %j) {dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 0>, slice_sizes = array<i64: 1, 64>, indices_are_sorted = false} : (tensor<8x64xf32>, tensor<1x64xi32>) -> tensor<64x64xf32>
    return %out : tensor<64x64xf32>
  }
}
