module @m attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func @main(%x: tensor<4xf32>) -> tensor<f32> {
    %z = stablehlo.constant dense<0.0> : tensor<f32>
    %out = stablehlo.reduce(%x init: %z) across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
      reducer(%a: tensor<f32>, %b: tensor<f32>) {
        %s = stablehlo.subtract %b, %a : tensor<f32>
        stablehlo.return %s : tensor<f32>
      }
    return %out : tensor<f32>
  }
}
