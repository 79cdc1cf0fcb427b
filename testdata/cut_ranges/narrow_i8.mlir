func.func public @main(%a: tensor<8xi8>, %b: tensor<8xi8>) -> tensor<i64> {
  %a32 = stablehlo.convert %a : (tensor<8xi8>) -> tensor<8xi32>
  %b32 = stablehlo.convert %b : (tensor<8xi8>) -> tensor<8xi32>
  %a1 = stablehlo.slice %a32 [0:4] : (tensor<8xi32>) -> tensor<4xi32>
  %a2 = stablehlo.slice %a32 [4:8] : (tensor<8xi32>) -> tensor<4xi32>
  %b1 = stablehlo.slice %b32 [0:4] : (tensor<8xi32>) -> tensor<4xi32>
  %b2 = stablehlo.slice %b32 [4:8] : (tensor<8xi32>) -> tensor<4xi32>
  %d1 = stablehlo.dot_general %a1, %b1, contracting_dims = [0] x [0] : (tensor<4xi32>, tensor<4xi32>) -> tensor<i32>
  %d2 = stablehlo.dot_general %a2, %b2, contracting_dims = [0] x [0] : (tensor<4xi32>, tensor<4xi32>) -> tensor<i32>
  %s = stablehlo.add %d1, %d2 : tensor<i32>
  %r = stablehlo.convert %s : (tensor<i32>) -> tensor<i64>
  return %r : tensor<i64>
}
