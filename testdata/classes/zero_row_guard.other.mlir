// Written by testdata/gen_classes.py.
module @zero_row_guard_other {
  func.func public @main(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>, %s: tensor<f32>) -> tensor<2x3xf32> {
    %z = stablehlo.constant dense<0.0> : tensor<f32>
    %xx = stablehlo.multiply %x, %x : tensor<2x3xf32>
    %sx = stablehlo.reduce(%xx init: %z) applies stablehlo.add across dimensions = [1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>
    %rx = stablehlo.rsqrt %sx : tensor<2xf32>
    %rxb = stablehlo.broadcast_in_dim %rx, dims = [0] : (tensor<2xf32>) -> tensor<2x3xf32>
    %u = stablehlo.multiply %x, %rxb : tensor<2x3xf32>
    %yy = stablehlo.multiply %y, %y : tensor<2x3xf32>
    %sy = stablehlo.reduce(%yy init: %z) applies stablehlo.add across dimensions = [1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>
    %ry = stablehlo.rsqrt %sy : tensor<2xf32>
    %ryb = stablehlo.broadcast_in_dim %ry, dims = [0] : (tensor<2xf32>) -> tensor<2x3xf32>
    %t = stablehlo.multiply %y, %ryb : tensor<2x3xf32>
    %p = stablehlo.exponential %s : tensor<f32>
    %pb = stablehlo.broadcast_in_dim %p, dims = [] : (tensor<f32>) -> tensor<2x3xf32>

    %zb = stablehlo.broadcast_in_dim %z, dims = [] : (tensor<f32>) -> tensor<2xf32>
    %c = stablehlo.compare EQ, %sx, %zb, FLOAT : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xi1>
    %cb = stablehlo.broadcast_in_dim %c, dims = [0] : (tensor<2xi1>) -> tensor<2x3xi1>
    %zz = stablehlo.broadcast_in_dim %z, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
    %g = stablehlo.select %cb, %zz, %u : tensor<2x3xi1>, tensor<2x3xf32>
    %out = stablehlo.add %g, %pb : tensor<2x3xf32>
    return %out : tensor<2x3xf32>
  }
}
