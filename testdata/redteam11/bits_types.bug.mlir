module @m attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func @main(%x: tensor<4xf16>, %w: tensor<4xf16>) -> tensor<4xi16> {
    %c = stablehlo.constant dense<37.25> : tensor<4xf16>
    %z = stablehlo.constant dense<0> : tensor<4xi16>
    %d = stablehlo.subtract %x, %w : tensor<4xf16>
    %e = stablehlo.compare EQ, %d, %c, FLOAT : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xi1>
    %v = stablehlo.convert %x : (tensor<4xf16>) -> tensor<4xbf16>
    %y = stablehlo.bitcast_convert %v : (tensor<4xbf16>) -> tensor<4xi16>
    %out = stablehlo.select %e, %y, %z : tensor<4xi1>, tensor<4xi16>
    return %out : tensor<4xi16>
  }
}
