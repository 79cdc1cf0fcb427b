module @jit_fn attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<64xf32>, %arg1: tensor<2x64xf32>) -> (tensor<f32> {jax.result_info = "result"}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<64xf32>, tensor<f32>) -> tensor<f32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1:4 = stablehlo.while(%iterArg = %arg1, %iterArg_0 = %c, %iterArg_1 = %arg0, %iterArg_2 = %0) : tensor<2x64xf32>, tensor<i32>, tensor<64xf32>, tensor<f32>
    cond {
      %c_3 = stablehlo.constant dense<2> : tensor<i32>
      %2 = stablehlo.compare LT, %iterArg_0, %c_3, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %2 : tensor<i1>
    } do {
      %2 = func.call @dynamic_index_in_dim(%iterArg, %iterArg_0) : (tensor<2x64xf32>, tensor<i32>) -> tensor<64xf32>
      %3:2 = func.call @closed_call(%iterArg_1, %iterArg_2, %2) : (tensor<64xf32>, tensor<f32>, tensor<64xf32>) -> (tensor<64xf32>, tensor<f32>)
      %c_3 = stablehlo.constant dense<1> : tensor<i32>
      %4 = stablehlo.add %iterArg_0, %c_3 : tensor<i32>
      stablehlo.return %iterArg, %4, %3#0, %3#1 : tensor<2x64xf32>, tensor<i32>, tensor<64xf32>, tensor<f32>
    }
    return %1#3 : tensor<f32>
  }
  func.func private @dynamic_index_in_dim(%arg0: tensor<2x64xf32>, %arg1: tensor<i32>) -> tensor<64xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.dynamic_slice %arg0, %arg1, %c, sizes = [1, 64] : (tensor<2x64xf32>, tensor<i32>, tensor<i32>) -> tensor<1x64xf32>
    %1 = stablehlo.reshape %0 : (tensor<1x64xf32>) -> tensor<64xf32>
    return %1 : tensor<64xf32>
  }
  func.func private @closed_call(%arg0: tensor<64xf32>, %arg1: tensor<f32>, %arg2: tensor<64xf32>) -> (tensor<64xf32>, tensor<f32>) {
    %0 = stablehlo.multiply %arg0, %arg2 : tensor<64xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %1 = stablehlo.reduce(%0 init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<64xf32>, tensor<f32>) -> tensor<f32>
    %2 = stablehlo.multiply %0, %0 : tensor<64xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %3 = stablehlo.reduce(%2 init: %cst_0) applies stablehlo.add across dimensions = [0] : (tensor<64xf32>, tensor<f32>) -> tensor<f32>
    %4 = stablehlo.multiply %0, %0 : tensor<64xf32>
    %5 = stablehlo.multiply %4, %0 : tensor<64xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %6 = stablehlo.reduce(%5 init: %cst_1) applies stablehlo.add across dimensions = [0] : (tensor<64xf32>, tensor<f32>) -> tensor<f32>
    %7 = stablehlo.multiply %0, %0 : tensor<64xf32>
    %8 = stablehlo.multiply %7, %7 : tensor<64xf32>
    %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %9 = stablehlo.reduce(%8 init: %cst_2) applies stablehlo.add across dimensions = [0] : (tensor<64xf32>, tensor<f32>) -> tensor<f32>
    %10 = stablehlo.multiply %1, %1 : tensor<f32>
    %11 = stablehlo.subtract %10, %3 : tensor<f32>
    %cst_3 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %12 = stablehlo.divide %11, %cst_3 : tensor<f32>
    %13 = stablehlo.multiply %12, %1 : tensor<f32>
    %14 = stablehlo.multiply %1, %3 : tensor<f32>
    %15 = stablehlo.subtract %13, %14 : tensor<f32>
    %16 = stablehlo.add %15, %6 : tensor<f32>
    %cst_4 = stablehlo.constant dense<3.000000e+00> : tensor<f32>
    %17 = stablehlo.divide %16, %cst_4 : tensor<f32>
    %18 = stablehlo.multiply %17, %1 : tensor<f32>
    %19 = stablehlo.multiply %12, %3 : tensor<f32>
    %20 = stablehlo.subtract %18, %19 : tensor<f32>
    %21 = stablehlo.multiply %1, %6 : tensor<f32>
    %22 = stablehlo.add %20, %21 : tensor<f32>
    %23 = stablehlo.subtract %22, %9 : tensor<f32>
    %cst_5 = stablehlo.constant dense<4.000000e+00> : tensor<f32>
    %24 = stablehlo.divide %23, %cst_5 : tensor<f32>
    %25 = stablehlo.multiply %1, %9 : tensor<f32>
    %26 = stablehlo.multiply %12, %6 : tensor<f32>
    %27 = stablehlo.subtract %25, %26 : tensor<f32>
    %28 = stablehlo.multiply %17, %3 : tensor<f32>
    %29 = stablehlo.add %27, %28 : tensor<f32>
    %30 = stablehlo.multiply %24, %1 : tensor<f32>
    %31 = stablehlo.subtract %29, %30 : tensor<f32>
    %32 = stablehlo.add %arg1, %31 : tensor<f32>
    return %0, %32 : tensor<64xf32>, tensor<f32>
  }
}
