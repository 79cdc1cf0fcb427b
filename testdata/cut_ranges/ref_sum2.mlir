func.func public @main(%a: tensor<2xi16>, %b: tensor<2xi16>) -> tensor<i64> {
  %a32 = stablehlo.convert %a : (tensor<2xi16>) -> tensor<2xi32>
  %b32 = stablehlo.convert %b : (tensor<2xi16>) -> tensor<2xi32>
  %p = stablehlo.multiply %a32, %b32 : tensor<2xi32>
  %p1 = stablehlo.slice %p [0:1] : (tensor<2xi32>) -> tensor<1xi32>
  %p2 = stablehlo.slice %p [1:2] : (tensor<2xi32>) -> tensor<1xi32>
  %s = stablehlo.add %p1, %p2 : tensor<1xi32>
  %r1 = stablehlo.convert %s : (tensor<1xi32>) -> tensor<1xi64>
  %r = stablehlo.reshape %r1 : (tensor<1xi64>) -> tensor<i64>
  return %r : tensor<i64>
}
