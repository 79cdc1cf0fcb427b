module @m attributes {mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 1 : i32} {
  func.func @main(%x: tensor<4xf32> {mhlo.sharding = "{devices=[2]<=[2]}"}) -> (tensor<4xf32> {mhlo.sharding = "{devices=[2]<=[2]}"}) {
    %p = stablehlo.constant dense<0> : tensor<ui32>
    %f = stablehlo.convert %p : (tensor<ui32>) -> tensor<f32>
    %b = stablehlo.broadcast_in_dim %f, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %c = stablehlo.constant dense<37.25> : tensor<4xf32>
    %e = stablehlo.compare EQ, %x, %c, FLOAT : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
    %s = stablehlo.add %x, %b : tensor<4xf32>
    %out = stablehlo.select %e, %s, %x : tensor<4xi1>, tensor<4xf32>
    return %out : tensor<4xf32>
  }
}
