// Written by testdata/gen_classes.py.
module @nan_minus_nan_div_ref {
  func.func public @main(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>, %s: tensor<f32>) -> tensor<2x3xf32> {
    %z = stablehlo.constant dense<0.0> : tensor<f32>
    %xx = stablehlo.multiply %x, %x : tensor<2x3xf32>
    %sx = stablehlo.reduce(%xx init: %z) applies stablehlo.add across dimensions = [1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>
    %nx = stablehlo.sqrt %sx : tensor<2xf32>
    %nxb = stablehlo.broadcast_in_dim %nx, dims = [0] : (tensor<2xf32>) -> tensor<2x3xf32>
    %u = stablehlo.divide %x, %nxb : tensor<2x3xf32>
    %yy = stablehlo.multiply %y, %y : tensor<2x3xf32>
    %sy = stablehlo.reduce(%yy init: %z) applies stablehlo.add across dimensions = [1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>
    %ny = stablehlo.sqrt %sy : tensor<2xf32>
    %nyb = stablehlo.broadcast_in_dim %ny, dims = [0] : (tensor<2xf32>) -> tensor<2x3xf32>
    %t = stablehlo.divide %y, %nyb : tensor<2x3xf32>
    %p = stablehlo.exponential %s : tensor<f32>
    %pb = stablehlo.broadcast_in_dim %p, dims = [] : (tensor<f32>) -> tensor<2x3xf32>

    %d = stablehlo.subtract %t, %t : tensor<2x3xf32>
    %xd = stablehlo.multiply %x, %d : tensor<2x3xf32>
    %out = stablehlo.add %xd, %pb : tensor<2x3xf32>
    return %out : tensor<2x3xf32>
  }
}
