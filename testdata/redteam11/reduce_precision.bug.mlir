module @m attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %r = stablehlo.reduce_precision %x, format = e5m2 : tensor<4xf32>
    %out = stablehlo.add %r, %r : tensor<4xf32>
    return %out : tensor<4xf32>
  }
}
