// Written by testdata/gen_classes.py.
module @clip_small_ref {
  func.func public @main(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>, %s: tensor<f32>) -> tensor<2x2xf32> {
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

    %pu = stablehlo.multiply %pb, %u : tensor<2x3xf32>
    %l = stablehlo.dot_general %pu, %t, contracting_dims = [1] x [1] : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x2xf32>

    %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %m = stablehlo.reduce(%l init: %ninf) applies stablehlo.maximum across dimensions = [1] : (tensor<2x2xf32>, tensor<f32>) -> tensor<2xf32>
    %mb = stablehlo.broadcast_in_dim %m, dims = [0] : (tensor<2xf32>) -> tensor<2x2xf32>
    %d = stablehlo.subtract %l, %mb : tensor<2x2xf32>
    %e = stablehlo.exponential %d : tensor<2x2xf32>
    %se = stablehlo.reduce(%e init: %z) applies stablehlo.add across dimensions = [1] : (tensor<2x2xf32>, tensor<f32>) -> tensor<2xf32>
    %lse = stablehlo.log %se : tensor<2xf32>
    %lseb = stablehlo.broadcast_in_dim %lse, dims = [0] : (tensor<2xf32>) -> tensor<2x2xf32>
    %out = stablehlo.subtract %d, %lseb : tensor<2x2xf32>
    return %out : tensor<2x2xf32>
  }
}
