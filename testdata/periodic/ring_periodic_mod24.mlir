module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8xf32>, %arg1: tensor<f32>, %arg2: tensor<f32>, %arg3: tensor<i32>) -> (tensor<f32> {jax.result_info = "result"}) {
    %c = stablehlo.constant dense<24> : tensor<i32>
    %0 = call @remainder(%arg3, %c) : (tensor<i32>, tensor<i32>) -> tensor<i32>
    %c_0 = stablehlo.constant dense<8> : tensor<i32>
    %1 = call @remainder(%0, %c_0) : (tensor<i32>, tensor<i32>) -> tensor<i32>
    %2 = stablehlo.slice %arg0 [0:4] : (tensor<8xf32>) -> tensor<4xf32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %3 = stablehlo.subtract %1, %c_1 : tensor<i32>
    %c_2 = stablehlo.constant dense<0> : tensor<i32>
    %4 = stablehlo.compare GE, %3, %c_2, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_3 = stablehlo.constant dense<4> : tensor<i32>
    %5 = stablehlo.compare LT, %3, %c_3, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %6 = stablehlo.and %4, %5 : tensor<i1>
    %7 = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<f32>) -> tensor<1xf32>
    %c_4 = stablehlo.constant dense<0> : tensor<i32>
    %c_5 = stablehlo.constant dense<3> : tensor<i32>
    %8 = call @clip(%3, %c_4, %c_5) : (tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<i32>
    %c_6 = stablehlo.constant dense<0> : tensor<i32>
    %9 = stablehlo.compare LT, %8, %c_6, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_7 = stablehlo.constant dense<4> : tensor<i32>
    %10 = stablehlo.add %8, %c_7 : tensor<i32>
    %11 = stablehlo.select %9, %10, %8 : tensor<i1>, tensor<i32>
    %12 = stablehlo.dynamic_update_slice %2, %7, %11 : (tensor<4xf32>, tensor<1xf32>, tensor<i32>) -> tensor<4xf32>
    %13 = call @_where_0(%6, %12, %2) : (tensor<i1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %14 = stablehlo.slice %arg0 [4:8] : (tensor<8xf32>) -> tensor<4xf32>
    %c_8 = stablehlo.constant dense<4> : tensor<i32>
    %15 = stablehlo.subtract %1, %c_8 : tensor<i32>
    %c_9 = stablehlo.constant dense<0> : tensor<i32>
    %16 = stablehlo.compare GE, %15, %c_9, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_10 = stablehlo.constant dense<4> : tensor<i32>
    %17 = stablehlo.compare LT, %15, %c_10, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %18 = stablehlo.and %16, %17 : tensor<i1>
    %19 = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<f32>) -> tensor<1xf32>
    %c_11 = stablehlo.constant dense<0> : tensor<i32>
    %c_12 = stablehlo.constant dense<3> : tensor<i32>
    %20 = call @clip(%15, %c_11, %c_12) : (tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<i32>
    %c_13 = stablehlo.constant dense<0> : tensor<i32>
    %21 = stablehlo.compare LT, %20, %c_13, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_14 = stablehlo.constant dense<4> : tensor<i32>
    %22 = stablehlo.add %20, %c_14 : tensor<i32>
    %23 = stablehlo.select %21, %22, %20 : tensor<i1>, tensor<i32>
    %24 = stablehlo.dynamic_update_slice %14, %19, %23 : (tensor<4xf32>, tensor<1xf32>, tensor<i32>) -> tensor<4xf32>
    %25 = call @_where_0(%18, %24, %14) : (tensor<i1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %26 = stablehlo.broadcast_in_dim %arg2, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %27 = stablehlo.multiply %13, %26 : tensor<4xf32>
    %28 = stablehlo.broadcast_in_dim %arg2, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %29 = stablehlo.multiply %25, %28 : tensor<4xf32>
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %30 = stablehlo.reduce(%27 init: %cst) applies stablehlo.maximum across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
    %cst_15 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %31 = stablehlo.reduce(%29 init: %cst_15) applies stablehlo.maximum across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
    %32 = stablehlo.maximum %30, %31 : tensor<f32>
    %33 = stablehlo.broadcast_in_dim %32, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %34 = stablehlo.subtract %27, %33 : tensor<4xf32>
    %35 = stablehlo.exponential %34 : tensor<4xf32>
    %36 = stablehlo.broadcast_in_dim %32, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %37 = stablehlo.subtract %29, %36 : tensor<4xf32>
    %38 = stablehlo.exponential %37 : tensor<4xf32>
    %cst_16 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %39 = stablehlo.reduce(%35 init: %cst_16) applies stablehlo.add across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
    %cst_17 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %40 = stablehlo.add %cst_17, %39 : tensor<f32>
    %cst_18 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %41 = stablehlo.reduce(%38 init: %cst_18) applies stablehlo.add across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
    %42 = stablehlo.add %40, %41 : tensor<f32>
    %43 = stablehlo.multiply %35, %13 : tensor<4xf32>
    %cst_19 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %44 = stablehlo.reduce(%43 init: %cst_19) applies stablehlo.add across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
    %cst_20 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %45 = stablehlo.add %cst_20, %44 : tensor<f32>
    %46 = stablehlo.multiply %38, %25 : tensor<4xf32>
    %cst_21 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %47 = stablehlo.reduce(%46 init: %cst_21) applies stablehlo.add across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
    %48 = stablehlo.add %45, %47 : tensor<f32>
    %49 = stablehlo.divide %48, %42 : tensor<f32>
    return %49 : tensor<f32>
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
