module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8xf32>, %arg1: tensor<f32>, %arg2: tensor<f32>, %arg3: tensor<i32>) -> (tensor<f32> {jax.result_info = "result"}) {
    %c = stablehlo.constant dense<8> : tensor<i32>
    %0 = call @remainder(%arg3, %c) : (tensor<i32>, tensor<i32>) -> tensor<i32>
    %1 = stablehlo.slice %arg0 [0:4] : (tensor<8xf32>) -> tensor<4xf32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %2 = stablehlo.subtract %0, %c_0 : tensor<i32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %3 = stablehlo.compare GE, %2, %c_1, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_2 = stablehlo.constant dense<4> : tensor<i32>
    %4 = stablehlo.compare LT, %2, %c_2, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %5 = stablehlo.and %3, %4 : tensor<i1>
    %6 = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<f32>) -> tensor<1xf32>
    %c_3 = stablehlo.constant dense<0> : tensor<i32>
    %c_4 = stablehlo.constant dense<3> : tensor<i32>
    %7 = call @clip(%2, %c_3, %c_4) : (tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<i32>
    %c_5 = stablehlo.constant dense<0> : tensor<i32>
    %8 = stablehlo.compare LT, %7, %c_5, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_6 = stablehlo.constant dense<4> : tensor<i32>
    %9 = stablehlo.add %7, %c_6 : tensor<i32>
    %10 = stablehlo.select %8, %9, %7 : tensor<i1>, tensor<i32>
    %11 = stablehlo.dynamic_update_slice %1, %6, %10 : (tensor<4xf32>, tensor<1xf32>, tensor<i32>) -> tensor<4xf32>
    %12 = call @_where_0(%5, %11, %1) : (tensor<i1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %13 = stablehlo.slice %arg0 [4:8] : (tensor<8xf32>) -> tensor<4xf32>
    %c_7 = stablehlo.constant dense<4> : tensor<i32>
    %14 = stablehlo.subtract %0, %c_7 : tensor<i32>
    %c_8 = stablehlo.constant dense<0> : tensor<i32>
    %15 = stablehlo.compare GE, %14, %c_8, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_9 = stablehlo.constant dense<4> : tensor<i32>
    %16 = stablehlo.compare LT, %14, %c_9, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %17 = stablehlo.and %15, %16 : tensor<i1>
    %18 = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<f32>) -> tensor<1xf32>
    %c_10 = stablehlo.constant dense<0> : tensor<i32>
    %c_11 = stablehlo.constant dense<3> : tensor<i32>
    %19 = call @clip(%14, %c_10, %c_11) : (tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<i32>
    %c_12 = stablehlo.constant dense<0> : tensor<i32>
    %20 = stablehlo.compare LT, %19, %c_12, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_13 = stablehlo.constant dense<4> : tensor<i32>
    %21 = stablehlo.add %19, %c_13 : tensor<i32>
    %22 = stablehlo.select %20, %21, %19 : tensor<i1>, tensor<i32>
    %23 = stablehlo.dynamic_update_slice %13, %18, %22 : (tensor<4xf32>, tensor<1xf32>, tensor<i32>) -> tensor<4xf32>
    %24 = call @_where_0(%17, %23, %13) : (tensor<i1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %25 = stablehlo.broadcast_in_dim %arg2, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %26 = stablehlo.multiply %12, %25 : tensor<4xf32>
    %27 = stablehlo.broadcast_in_dim %arg2, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %28 = stablehlo.multiply %24, %27 : tensor<4xf32>
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %29 = stablehlo.reduce(%26 init: %cst) applies stablehlo.maximum across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
    %cst_14 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %30 = stablehlo.reduce(%28 init: %cst_14) applies stablehlo.maximum across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
    %31 = stablehlo.maximum %29, %30 : tensor<f32>
    %32 = stablehlo.broadcast_in_dim %31, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %33 = stablehlo.subtract %26, %32 : tensor<4xf32>
    %34 = stablehlo.exponential %33 : tensor<4xf32>
    %35 = stablehlo.broadcast_in_dim %31, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %36 = stablehlo.subtract %28, %35 : tensor<4xf32>
    %37 = stablehlo.exponential %36 : tensor<4xf32>
    %cst_15 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %38 = stablehlo.reduce(%34 init: %cst_15) applies stablehlo.add across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
    %cst_16 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %39 = stablehlo.add %cst_16, %38 : tensor<f32>
    %cst_17 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %40 = stablehlo.reduce(%37 init: %cst_17) applies stablehlo.add across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
    %41 = stablehlo.add %39, %40 : tensor<f32>
    %42 = stablehlo.multiply %34, %12 : tensor<4xf32>
    %cst_18 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %43 = stablehlo.reduce(%42 init: %cst_18) applies stablehlo.add across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
    %cst_19 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %44 = stablehlo.add %cst_19, %43 : tensor<f32>
    %45 = stablehlo.multiply %37, %24 : tensor<4xf32>
    %cst_20 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %46 = stablehlo.reduce(%45 init: %cst_20) applies stablehlo.add across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
    %47 = stablehlo.add %44, %46 : tensor<f32>
    %48 = stablehlo.divide %47, %41 : tensor<f32>
    return %48 : tensor<f32>
  }
  func.func private @remainder(%arg0: tensor<i32>, %arg1: tensor<i32>) -> tensor<i32> {
    %0 = stablehlo.convert %arg1 : tensor<i32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1 = stablehlo.compare EQ, %0, %c, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_0 = stablehlo.constant dense<1> : tensor<i32>
    %2 = call @_where(%1, %c_0, %0) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
    %3 = stablehlo.remainder %arg0, %2 : tensor<i32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %4 = stablehlo.compare NE, %3, %c_1, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_2 = stablehlo.constant dense<0> : tensor<i32>
    %5 = stablehlo.compare LT, %3, %c_2, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_3 = stablehlo.constant dense<0> : tensor<i32>
    %6 = stablehlo.compare LT, %2, %c_3, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %7 = stablehlo.compare NE, %5, %6, UNSIGNED : (tensor<i1>, tensor<i1>) -> tensor<i1>
    %8 = stablehlo.and %7, %4 : tensor<i1>
    %9 = stablehlo.add %3, %2 : tensor<i32>
    %10 = stablehlo.select %8, %9, %3 : tensor<i1>, tensor<i32>
    return %10 : tensor<i32>
  }
  func.func private @_where(%arg0: tensor<i1>, %arg1: tensor<i32>, %arg2: tensor<i32>) -> tensor<i32> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<i1>, tensor<i32>
    return %0 : tensor<i32>
  }
  func.func private @clip(%arg0: tensor<i32>, %arg1: tensor<i32>, %arg2: tensor<i32>) -> tensor<i32> {
    %0 = stablehlo.convert %arg1 : tensor<i32>
    %1 = stablehlo.maximum %0, %arg0 : tensor<i32>
    %2 = stablehlo.convert %arg2 : tensor<i32>
    %3 = stablehlo.minimum %2, %1 : tensor<i32>
    return %3 : tensor<i32>
  }
  func.func private @_where_0(%arg0: tensor<i1>, %arg1: tensor<4xf32>, %arg2: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<i1>, tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
