// Hand-written, i32 two's complement (divide truncates toward zero, remainder takes the
// sign of the dividend, negate wraps at INT_MIN).
// out0 = select(y != 0, (x / y) * y + x rem y, x)       (= x; the y == 0 case is guarded)
// out1 = select(x < 0, -((-x) rem 5), x rem 5)          (= x rem 5 except at x = INT_MIN)
module @int_ops_a {
  func.func public @main(%arg0: tensor<8xi32>, %arg1: tensor<8xi32>) -> (tensor<8xi32>, tensor<8xi32>) {
    %0 = stablehlo.divide %arg0, %arg1 : tensor<8xi32>
    %1 = stablehlo.multiply %0, %arg1 : tensor<8xi32>
    %2 = stablehlo.remainder %arg0, %arg1 : tensor<8xi32>
    %3 = stablehlo.add %1, %2 : tensor<8xi32>
    %c0 = stablehlo.constant dense<0> : tensor<8xi32>
    %4 = stablehlo.compare NE, %arg1, %c0, SIGNED : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi1>
    %5 = stablehlo.select %4, %3, %arg0 : tensor<8xi1>, tensor<8xi32>
    %c5 = stablehlo.constant dense<5> : tensor<8xi32>
    %6 = stablehlo.compare LT, %arg0, %c0, SIGNED : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi1>
    %7 = stablehlo.negate %arg0 : tensor<8xi32>
    %8 = stablehlo.remainder %7, %c5 : tensor<8xi32>
    %9 = stablehlo.negate %8 : tensor<8xi32>
    %10 = stablehlo.remainder %arg0, %c5 : tensor<8xi32>
    %11 = stablehlo.select %6, %9, %10 : tensor<8xi1>, tensor<8xi32>
    return %5, %11 : tensor<8xi32>, tensor<8xi32>
  }
}
