// Hand-written. Both sides use stablehlo.cholesky (exact semantics, sqrt uninterpreted):
// a = 2 * cholesky(x), b = cholesky(x) + cholesky(x). Expected verdict: equivalent.
module @cholesky_twice_a {
  func.func public @main(%arg0: tensor<4x4xf32>) -> tensor<4x4xf32> {
    %0 = stablehlo.cholesky %arg0, lower = true : tensor<4x4xf32>
    %cst = stablehlo.constant dense<2.000000e+00> : tensor<4x4xf32>
    %1 = stablehlo.multiply %cst, %0 : tensor<4x4xf32>
    return %1 : tensor<4x4xf32>
  }
}
