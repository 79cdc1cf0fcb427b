// Hand-written. See unsupported_rng.a.mlir.
module @unsupported_rng_b {
  func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %lo = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %hi = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %shape = stablehlo.constant dense<4> : tensor<1xi64>
    %0 = stablehlo.rng %lo, %hi, %shape, distribution = UNIFORM : (tensor<f32>, tensor<f32>, tensor<1xi64>) -> tensor<4xf32>
    %1 = stablehlo.add %0, %0 : tensor<4xf32>
    %2 = stablehlo.add %1, %arg0 : tensor<4xf32>
    return %2 : tensor<4xf32>
  }
}
