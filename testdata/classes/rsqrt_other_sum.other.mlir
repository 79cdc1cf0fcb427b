// Written by testdata/gen_classes.py.
module @rsqrt_other_sum_other {
  func.func public @main(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>, %s: tensor<f32>) -> tensor<2x3xf32> {
    %z = stablehlo.constant dense<0.0> : tensor<f32>
    %xx = stablehlo.multiply %x, %x : tensor<2x3xf32>
    %sx = stablehlo.reduce(%xx init: %z) applies stablehlo.add across dimensions = [1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>
    %rx = stablehlo.rsqrt %sx : tensor<2xf32>
    %rxb = stablehlo.broadcast_in_dim %rx, dims = [0] : (tensor<2xf32>) -> tensor<2x3xf32>
    %u0 = stablehlo.multiply %x, %rxb : tensor<2x3xf32>
    %yy = stablehlo.multiply %y, %y : tensor<2x3xf32>
    %sy = stablehlo.reduce(%yy init: %z) applies stablehlo.add across dimensions = [1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>
    %ry = stablehlo.rsqrt %sy : tensor<2xf32>
    %ryb = stablehlo.broadcast_in_dim %ry, dims = [0] : (tensor<2xf32>) -> tensor<2x3xf32>
    %t = stablehlo.multiply %y, %ryb : tensor<2x3xf32>
    %p = stablehlo.exponential %s : tensor<f32>
    %pb = stablehlo.broadcast_in_dim %p, dims = [] : (tensor<f32>) -> tensor<2x3xf32>

    %xs = stablehlo.slice %xx [0:2, 0:2] : (tensor<2x3xf32>) -> tensor<2x2xf32>
    %s2 = stablehlo.reduce(%xs init: %z) applies stablehlo.add across dimensions = [1] : (tensor<2x2xf32>, tensor<f32>) -> tensor<2xf32>
    %r2 = stablehlo.rsqrt %s2 : tensor<2xf32>
    %r2b = stablehlo.broadcast_in_dim %r2, dims = [0] : (tensor<2xf32>) -> tensor<2x3xf32>
    %u2 = stablehlo.multiply %x, %r2b : tensor<2x3xf32>
    %row = stablehlo.iota dim = 0 : tensor<2x3xi32>
    %zero = stablehlo.constant dense<0> : tensor<2x3xi32>
    %first = stablehlo.compare EQ, %row, %zero, SIGNED : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi1>
    %u = stablehlo.select %first, %u2, %u0 : tensor<2x3xi1>, tensor<2x3xf32>
    %out = stablehlo.add %u, %pb : tensor<2x3xf32>
    return %out : tensor<2x3xf32>
  }
}
