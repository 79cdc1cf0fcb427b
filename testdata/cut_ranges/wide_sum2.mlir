func.func public @main(%a: tensor<2xi16>, %b: tensor<2xi16>) -> tensor<i64> {
  %a32 = stablehlo.convert %a : (tensor<2xi16>) -> tensor<2xi32>
  %b32 = stablehlo.convert %b : (tensor<2xi16>) -> tensor<2xi32>
  %p = stablehlo.multiply %a32, %b32 : tensor<2xi32>
  %q = stablehlo.convert %p : (tensor<2xi32>) -> tensor<2xi64>
  %q1 = stablehlo.slice %q [0:1] : (tensor<2xi64>) -> tensor<1xi64>
  %q2 = stablehlo.slice %q [1:2] : (tensor<2xi64>) -> tensor<1xi64>
  %s = stablehlo.add %q1, %q2 : tensor<1xi64>
  %r = stablehlo.reshape %s : (tensor<1xi64>) -> tensor<i64>
  return %r : tensor<i64>
}
