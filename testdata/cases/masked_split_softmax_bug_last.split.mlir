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
    %c_3 = stablehlo.constant dense<3> : tensor<i32>
    %18 = stablehlo.minimum %arg2, %c_3 : tensor<i32>
    %19 = stablehlo.broadcast_in_dim %18, dims = [] : (tensor<i32>) -> tensor<2xi32>
    %20 = stablehlo.compare LT, %17, %19, SIGNED : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi1>
    %cst_4 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %21 = call @_where(%20, %13, %cst_4) : (tensor<2xi1>, tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
    %cst_5 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %22 = stablehlo.reduce(%21 init: %cst_5) applies stablehlo.maximum across dimensions = [0] : (tensor<2xf32>, tensor<f32>) -> tensor<f32>
    %23 = stablehlo.broadcast_in_dim %22, dims = [] : (tensor<f32>) -> tensor<2xf32>
    %24 = stablehlo.subtract %13, %23 : tensor<2xf32>
    %25 = stablehlo.exponential %24 : tensor<2xf32>
    %cst_6 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %26 = call @_where(%20, %25, %cst_6) : (tensor<2xi1>, tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
    %27 = stablehlo.maximum %8, %22 : tensor<f32>
    %28 = stablehlo.multiply %12, %1 : tensor<2xf32>
    %cst_7 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %29 = stablehlo.reduce(%28 init: %cst_7) applies stablehlo.add across dimensions = [0] : (tensor<2xf32>, tensor<f32>) -> tensor<f32>
    %30 = stablehlo.subtract %8, %27 : tensor<f32>
    %31 = stablehlo.exponential %30 : tensor<f32>
    %32 = stablehlo.multiply %29, %31 : tensor<f32>
    %cst_8 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %33 = stablehlo.add %cst_8, %32 : tensor<f32>
    %34 = stablehlo.multiply %26, %14 : tensor<2xf32>
    %cst_9 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %35 = stablehlo.reduce(%34 init: %cst_9) applies stablehlo.add across dimensions = [0] : (tensor<2xf32>, tensor<f32>) -> tensor<f32>
    %36 = stablehlo.subtract %22, %27 : tensor<f32>
    %37 = stablehlo.exponential %36 : tensor<f32>
    %38 = stablehlo.multiply %35, %37 : tensor<f32>
    %39 = stablehlo.add %33, %38 : tensor<f32>
    %cst_10 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %40 = stablehlo.reduce(%12 init: %cst_10) applies stablehlo.add across dimensions = [0] : (tensor<2xf32>, tensor<f32>) -> tensor<f32>
    %41 = stablehlo.subtract %8, %27 : tensor<f32>
    %42 = stablehlo.exponential %41 : tensor<f32>
    %43 = stablehlo.multiply %40, %42 : tensor<f32>
    %cst_11 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %44 = stablehlo.add %cst_11, %43 : tensor<f32>
    %cst_12 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %45 = stablehlo.reduce(%26 init: %cst_12) applies stablehlo.add across dimensions = [0] : (tensor<2xf32>, tensor<f32>) -> tensor<f32>
    %46 = stablehlo.subtract %22, %27 : tensor<f32>
    %47 = stablehlo.exponential %46 : tensor<f32>
    %48 = stablehlo.multiply %45, %47 : tensor<f32>
    %49 = stablehlo.add %44, %48 : tensor<f32>
    %50 = stablehlo.divide %39, %49 : tensor<f32>
    return %50 : tensor<f32>
  }
  func.func private @_where(%arg0: tensor<2xi1>, %arg1: tensor<2xf32>, %arg2: tensor<f32>) -> tensor<2xf32> {
    %0 = stablehlo.convert %arg2 : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<f32>) -> tensor<2xf32>
    %2 = stablehlo.select %arg0, %arg1, %1 : tensor<2xi1>, tensor<2xf32>
    return %2 : tensor<2xf32>
  }
}
