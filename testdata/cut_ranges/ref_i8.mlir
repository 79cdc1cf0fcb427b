func.func public @main(%a: tensor<8xi8>, %b: tensor<8xi8>) -> tensor<i64> {
  %a32 = stablehlo.convert %a : (tensor<8xi8>) -> tensor<8xi32>
  %b32 = stablehlo.convert %b : (tensor<8xi8>) -> tensor<8xi32>
  %d = stablehlo.dot_general %a32, %b32, contracting_dims = [0] x [0] : (tensor<8xi32>, tensor<8xi32>) -> tensor<i32>
  %r = stablehlo.convert %d : (tensor<i32>) -> tensor<i64>
  return %r : tensor<i64>
}
