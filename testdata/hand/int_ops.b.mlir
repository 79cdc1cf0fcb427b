// Hand-written: out0 = x, out1 = x rem 5. See int_ops.a.mlir.
module @int_ops_b {
  func.func public @main(%arg0: tensor<8xi32>, %arg1: tensor<8xi32>) -> (tensor<8xi32>, tensor<8xi32>) {
    %c5 = stablehlo.constant dense<5> : tensor<8xi32>
    %0 = stablehlo.remainder %arg0, %c5 : tensor<8xi32>
    return %arg0, %0 : tensor<8xi32>, tensor<8xi32>
  }
}
