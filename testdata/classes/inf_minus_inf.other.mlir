// Written by testdata/gen_classes.py.
module @inf_minus_inf_other {
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

    %zz = stablehlo.broadcast_in_dim %z, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
    %xz = stablehlo.multiply %x, %zz : tensor<2x3xf32>
    %o2 = stablehlo.add %xz, %pb : tensor<2x3xf32>
    return %o2 : tensor<2x3xf32>
  }
}
