module @jit_split attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4xf32>, %arg1: tensor<4xf32>, %arg2: tensor<i32>) -> (tensor<f32> {jax.result_info = "result"}) {
    %0 = stablehlo.slice %arg0 [0:2] : (tensor<4xf32>) -> tensor<2xf32>
    %1 = stablehlo.slice %arg1 [0:2] : (tensor<4xf32>) -> tensor<2xf32>
    %2 = stablehlo.iota dim = 0 : tensor<2xi32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %3 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<2xi32>
    %4 = stablehlo.add %2, %3 : tensor<2xi32>
    %5 = stablehlo.broadcast_in_dim %arg2, dims = [] : (tensor<i32>) -> tensor<2xi32>
    %6 = stablehlo.compare LT, %4, %5, SIGNED : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi1>
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %7 = call @_where(%6, %0, %cst) : (tensor<2xi1>, tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
    %cst_0 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %8 = stablehlo.reduce(%7 init: %cst_0) applies stablehlo.maximum across dimensions = [0] : (tensor<2xf32>, tensor<f32>) -> tensor<f32>
    %9 = stablehlo.broadcast_in_dim %8, dims = [] : (tensor<f32>) -> tensor<2xf32>
    %10 = stablehlo.subtract %0, %9 : tensor<2xf32>
    %11 = stablehlo.exponential %10 : tensor<2xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %12 = call @_where(%6, %11, %cst_1) : (tensor<2xi1>, tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
    %13 = stablehlo.slice %arg0 [2:4] : (tensor<4xf32>) -> tensor<2xf32>
    %14 = stablehlo.slice %arg1 [2:4] : (tensor<4xf32>) -> tensor<2xf32>
    %15 = stablehlo.iota dim = 0 : tensor<2xi32>
    %c_2 = stablehlo.constant dense<2> : tensor<i32>
    %16 = stablehlo.broadcast_in_dim %c_2, dims = [] : (tensor<i32>) -> tensor<2xi32>
    %17 = stablehlo.add %15, %16 : tensor<2xi32>
    %18 = stablehlo.broadcast_in_dim %arg2, dims = [] : (tensor<i32>) -> tensor<2xi32>
    %19 = stablehlo.compare LE, %17, %18, SIGNED : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi1>
    %cst_3 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %20 = call @_where(%19, %13, %cst_3) : (tensor<2xi1>, tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
    %cst_4 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %21 = stablehlo.reduce(%20 init: %cst_4) applies stablehlo.maximum across dimensions = [0] : (tensor<2xf32>, tensor<f32>) -> tensor<f32>
    %22 = stablehlo.broadcast_in_dim %21, dims = [] : (tensor<f32>) -> tensor<2xf32>
    %23 = stablehlo.subtract %13, %22 : tensor<2xf32>
    %24 = stablehlo.exponential %23 : tensor<2xf32>
    %cst_5 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %25 = call @_where(%19, %24, %cst_5) : (tensor<2xi1>, tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
    %26 = stablehlo.maximum %8, %21 : tensor<f32>
    %27 = stablehlo.multiply %12, %1 : tensor<2xf32>
    %cst_6 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %28 = stablehlo.reduce(%27 init: %cst_6) applies stablehlo.add across dimensions = [0] : (tensor<2xf32>, tensor<f32>) -> tensor<f32>
    %29 = stablehlo.subtract %8, %26 : tensor<f32>
    %30 = stablehlo.exponential %29 : tensor<f32>
    %31 = stablehlo.multiply %28, %30 : tensor<f32>
    %cst_7 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %32 = stablehlo.add %cst_7, %31 : tensor<f32>
    %33 = stablehlo.multiply %25, %14 : tensor<2xf32>
    %cst_8 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %34 = stablehlo.reduce(%33 init: %cst_8) applies stablehlo.add across dimensions = [0] : (tensor<2xf32>, tensor<f32>) -> tensor<f32>
    %35 = stablehlo.subtract %21, %26 : tensor<f32>
    %36 = stablehlo.exponential %35 : tensor<f32>
    %37 = stablehlo.multiply %34, %36 : tensor<f32>
    %38 = stablehlo.add %32, %37 : tensor<f32>
    %cst_9 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %39 = stablehlo.reduce(%12 init: %cst_9) applies stablehlo.add across dimensions = [0] : (tensor<2xf32>, tensor<f32>) -> tensor<f32>
    %40 = stablehlo.subtract %8, %26 : tensor<f32>
    %41 = stablehlo.exponential %40 : tensor<f32>
    %42 = stablehlo.multiply %39, %41 : tensor<f32>
    %cst_10 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %43 = stablehlo.add %cst_10, %42 : tensor<f32>
    %cst_11 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %44 = stablehlo.reduce(%25 init: %cst_11) applies stablehlo.add across dimensions = [0] : (tensor<2xf32>, tensor<f32>) -> tensor<f32>
    %45 = stablehlo.subtract %21, %26 : tensor<f32>
    %46 = stablehlo.exponential %45 : tensor<f32>
    %47 = stablehlo.multiply %44, %46 : tensor<f32>
    %48 = stablehlo.add %43, %47 : tensor<f32>
    %49 = stablehlo.divide %38, %48 : tensor<f32>
    return %49 : tensor<f32>
  }
  func.func private @_where(%arg0: tensor<2xi1>, %arg1: tensor<2xf32>, %arg2: tensor<f32>) -> tensor<2xf32> {
    %0 = stablehlo.convert %arg2 : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<f32>) -> tensor<2xf32>
    %2 = stablehlo.select %arg0, %arg1, %1 : tensor<2xi1>, tensor<2xf32>
    return %2 : tensor<2xf32>
  }
}
