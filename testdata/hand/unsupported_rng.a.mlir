// Hand-written. Both sides use stablehlo.rng (stateful: no symbolic semantics):
// a = 2 * rng(0, 1), b = rng(0, 1) + rng(0, 1) of one draw. Expected verdict: unknown.
module @unsupported_rng_a {
  func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %lo = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %hi = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %shape = stablehlo.constant dense<4> : tensor<1xi64>
    %0 = stablehlo.rng %lo, %hi, %shape, distribution = UNIFORM : (tensor<f32>, tensor<f32>, tensor<1xi64>) -> tensor<4xf32>
    %cst = stablehlo.constant dense<2.000000e+00> : tensor<4xf32>
    %1 = stablehlo.multiply %cst, %0 : tensor<4xf32>
    %2 = stablehlo.add %1, %arg0 : tensor<4xf32>
    return %2 : tensor<4xf32>
  }
}
