module @jit_big200_poly_a attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8x8xf32>, %arg1: tensor<8x8xf32>, %arg2: tensor<8x8xf32>, %arg3: tensor<8x8xf32>) -> (tensor<8x8xf32> {jax.result_info = "result[0]"}, tensor<8x8xf32> {jax.result_info = "result[1]"}, tensor<8x8xf32> {jax.result_info = "result[2]"}) {
    %0 = stablehlo.dot_general %arg2, %arg0, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    %1 = stablehlo.transpose %0, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %3 = stablehlo.multiply %arg1, %2 : tensor<8x8xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %4 = stablehlo.reduce(%arg3 init: %cst_0) applies stablehlo.add across dimensions = [0] : (tensor<8x8xf32>, tensor<f32>) -> tensor<8xf32>
    %5 = stablehlo.broadcast_in_dim %4, dims = [1] : (tensor<8xf32>) -> tensor<8x8xf32>
    %6 = stablehlo.add %arg2, %5 : tensor<8x8xf32>
    %7 = stablehlo.add %1, %6 : tensor<8x8xf32>
    %cst_1 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %8 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %9 = stablehlo.multiply %3, %8 : tensor<8x8xf32>
    %10 = stablehlo.multiply %6, %arg1 : tensor<8x8xf32>
    %11 = stablehlo.subtract %7, %1 : tensor<8x8xf32>
    %12 = stablehlo.dot_general %10, %9, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    %13 = stablehlo.transpose %12, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %14 = stablehlo.add %10, %arg3 : tensor<8x8xf32>
    %15 = stablehlo.dot_general %14, %3, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    %16 = stablehlo.add %11, %15 : tensor<8x8xf32>
    %17 = stablehlo.add %16, %arg2 : tensor<8x8xf32>
    %18 = stablehlo.dot_general %arg1, %13, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    %19 = stablehlo.add %15, %1 : tensor<8x8xf32>
    %20 = stablehlo.add %19, %7 : tensor<8x8xf32>
    %21 = stablehlo.add %17, %arg3 : tensor<8x8xf32>
    %22 = stablehlo.add %18, %6 : tensor<8x8xf32>
    %23 = stablehlo.add %20, %arg3 : tensor<8x8xf32>
    %24 = stablehlo.dot_general %23, %arg2, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    %25 = stablehlo.multiply %21, %arg3 : tensor<8x8xf32>
    %cst_2 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %26 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %27 = stablehlo.multiply %22, %26 : tensor<8x8xf32>
    %28 = stablehlo.transpose %24, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %29 = stablehlo.add %28, %7 : tensor<8x8xf32>
    %30 = stablehlo.dot_general %6, %9, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    %31 = stablehlo.add %25, %30 : tensor<8x8xf32>
    %cst_3 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %32 = stablehlo.reduce(%9 init: %cst_3) applies stablehlo.add across dimensions = [0] : (tensor<8x8xf32>, tensor<f32>) -> tensor<8xf32>
    %33 = stablehlo.broadcast_in_dim %32, dims = [1] : (tensor<8xf32>) -> tensor<8x8xf32>
    %34 = stablehlo.add %27, %33 : tensor<8x8xf32>
    %cst_4 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %35 = stablehlo.broadcast_in_dim %cst_4, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %36 = stablehlo.multiply %29, %35 : tensor<8x8xf32>
    %37 = stablehlo.multiply %arg3, %arg2 : tensor<8x8xf32>
    %38 = stablehlo.add %31, %37 : tensor<8x8xf32>
    %39 = stablehlo.add %34, %22 : tensor<8x8xf32>
    %40 = stablehlo.subtract %36, %arg3 : tensor<8x8xf32>
    %41 = stablehlo.add %38, %arg0 : tensor<8x8xf32>
    %cst_5 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %42 = stablehlo.broadcast_in_dim %cst_5, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %43 = stablehlo.multiply %39, %42 : tensor<8x8xf32>
    %44 = stablehlo.add %40, %11 : tensor<8x8xf32>
    %45 = stablehlo.add %44, %arg0 : tensor<8x8xf32>
    %46 = stablehlo.add %41, %22 : tensor<8x8xf32>
    %47 = stablehlo.add %46, %39 : tensor<8x8xf32>
    %48 = stablehlo.add %43, %41 : tensor<8x8xf32>
    %49 = stablehlo.multiply %arg0, %arg1 : tensor<8x8xf32>
    %50 = stablehlo.add %45, %49 : tensor<8x8xf32>
    %51 = stablehlo.add %47, %arg3 : tensor<8x8xf32>
    %52 = stablehlo.add %51, %34 : tensor<8x8xf32>
    %53 = stablehlo.subtract %48, %25 : tensor<8x8xf32>
    %54 = stablehlo.negate %53 : tensor<8x8xf32>
    %55 = stablehlo.subtract %50, %15 : tensor<8x8xf32>
    %56 = stablehlo.multiply %arg2, %arg0 : tensor<8x8xf32>
    %57 = stablehlo.add %52, %56 : tensor<8x8xf32>
    %58 = stablehlo.transpose %54, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %59 = stablehlo.add %58, %arg2 : tensor<8x8xf32>
    %cst_6 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %60 = stablehlo.broadcast_in_dim %cst_6, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %61 = stablehlo.multiply %55, %60 : tensor<8x8xf32>
    %62 = stablehlo.add %57, %31 : tensor<8x8xf32>
    %63 = stablehlo.add %59, %47 : tensor<8x8xf32>
    %64 = stablehlo.add %61, %arg2 : tensor<8x8xf32>
    %65 = stablehlo.add %64, %39 : tensor<8x8xf32>
    %66 = stablehlo.transpose %62, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %67 = stablehlo.add %66, %arg2 : tensor<8x8xf32>
    %68 = stablehlo.transpose %63, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %69 = stablehlo.add %68, %arg0 : tensor<8x8xf32>
    %70 = stablehlo.multiply %arg3, %arg2 : tensor<8x8xf32>
    %71 = stablehlo.add %65, %70 : tensor<8x8xf32>
    %72 = stablehlo.add %67, %48 : tensor<8x8xf32>
    %73 = stablehlo.subtract %69, %38 : tensor<8x8xf32>
    %74 = stablehlo.subtract %71, %27 : tensor<8x8xf32>
    %75 = stablehlo.negate %74 : tensor<8x8xf32>
    %76 = stablehlo.add %72, %67 : tensor<8x8xf32>
    %cst_7 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %77 = stablehlo.reduce(%arg2 init: %cst_7) applies stablehlo.add across dimensions = [0] : (tensor<8x8xf32>, tensor<f32>) -> tensor<8xf32>
    %78 = stablehlo.broadcast_in_dim %77, dims = [1] : (tensor<8xf32>) -> tensor<8x8xf32>
    %79 = stablehlo.add %73, %78 : tensor<8x8xf32>
    %cst_8 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %80 = stablehlo.broadcast_in_dim %cst_8, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %81 = stablehlo.multiply %75, %80 : tensor<8x8xf32>
    %82 = stablehlo.transpose %76, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %83 = stablehlo.add %82, %1 : tensor<8x8xf32>
    %84 = stablehlo.transpose %79, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %85 = stablehlo.add %84, %3 : tensor<8x8xf32>
    %86 = stablehlo.subtract %81, %75 : tensor<8x8xf32>
    %87 = stablehlo.add %83, %34 : tensor<8x8xf32>
    %88 = stablehlo.subtract %85, %25 : tensor<8x8xf32>
    %89 = stablehlo.transpose %86, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %90 = stablehlo.add %89, %11 : tensor<8x8xf32>
    %91 = stablehlo.subtract %87, %arg2 : tensor<8x8xf32>
    %92 = stablehlo.multiply %arg1, %arg0 : tensor<8x8xf32>
    %93 = stablehlo.add %88, %92 : tensor<8x8xf32>
    %94 = stablehlo.subtract %90, %arg3 : tensor<8x8xf32>
    %95 = stablehlo.negate %94 : tensor<8x8xf32>
    %cst_9 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %96 = stablehlo.broadcast_in_dim %cst_9, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %97 = stablehlo.multiply %91, %96 : tensor<8x8xf32>
    %98 = stablehlo.multiply %arg3, %arg1 : tensor<8x8xf32>
    %99 = stablehlo.add %93, %98 : tensor<8x8xf32>
    %100 = stablehlo.transpose %95, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %101 = stablehlo.add %100, %arg0 : tensor<8x8xf32>
    %102 = stablehlo.multiply %arg2, %arg1 : tensor<8x8xf32>
    %103 = stablehlo.add %97, %102 : tensor<8x8xf32>
    %104 = stablehlo.add %99, %arg1 : tensor<8x8xf32>
    %105 = stablehlo.transpose %101, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %106 = stablehlo.add %105, %24 : tensor<8x8xf32>
    %107 = stablehlo.add %103, %arg2 : tensor<8x8xf32>
    %108 = stablehlo.add %104, %arg1 : tensor<8x8xf32>
    %109 = stablehlo.subtract %106, %1 : tensor<8x8xf32>
    %110 = stablehlo.add %107, %arg3 : tensor<8x8xf32>
    %111 = stablehlo.add %108, %107 : tensor<8x8xf32>
    %112 = stablehlo.multiply %arg0, %arg0 : tensor<8x8xf32>
    %113 = stablehlo.add %109, %112 : tensor<8x8xf32>
    %114 = stablehlo.subtract %110, %97 : tensor<8x8xf32>
    %115 = stablehlo.negate %114 : tensor<8x8xf32>
    %116 = stablehlo.subtract %111, %99 : tensor<8x8xf32>
    %117 = stablehlo.transpose %113, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %118 = stablehlo.add %117, %65 : tensor<8x8xf32>
    %119 = stablehlo.add %115, %116 : tensor<8x8xf32>
    %120 = stablehlo.subtract %116, %97 : tensor<8x8xf32>
    %cst_10 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %121 = stablehlo.broadcast_in_dim %cst_10, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %122 = stablehlo.multiply %118, %121 : tensor<8x8xf32>
    %123 = stablehlo.subtract %119, %9 : tensor<8x8xf32>
    %124 = stablehlo.subtract %120, %arg2 : tensor<8x8xf32>
    %cst_11 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %125 = stablehlo.reduce(%arg1 init: %cst_11) applies stablehlo.add across dimensions = [0] : (tensor<8x8xf32>, tensor<f32>) -> tensor<8xf32>
    %126 = stablehlo.broadcast_in_dim %125, dims = [1] : (tensor<8xf32>) -> tensor<8x8xf32>
    %127 = stablehlo.add %122, %126 : tensor<8x8xf32>
    %128 = stablehlo.subtract %123, %arg2 : tensor<8x8xf32>
    %cst_12 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %129 = stablehlo.reduce(%arg1 init: %cst_12) applies stablehlo.add across dimensions = [0] : (tensor<8x8xf32>, tensor<f32>) -> tensor<8xf32>
    %130 = stablehlo.broadcast_in_dim %129, dims = [1] : (tensor<8xf32>) -> tensor<8x8xf32>
    %131 = stablehlo.add %124, %130 : tensor<8x8xf32>
    %cst_13 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %132 = stablehlo.broadcast_in_dim %cst_13, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %133 = stablehlo.multiply %127, %132 : tensor<8x8xf32>
    %134 = stablehlo.multiply %arg2, %arg0 : tensor<8x8xf32>
    %135 = stablehlo.add %128, %134 : tensor<8x8xf32>
    %136 = stablehlo.subtract %131, %67 : tensor<8x8xf32>
    %137 = stablehlo.multiply %7, %arg2 : tensor<8x8xf32>
    %138 = stablehlo.add %133, %137 : tensor<8x8xf32>
    %cst_14 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %139 = stablehlo.broadcast_in_dim %cst_14, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %140 = stablehlo.multiply %135, %139 : tensor<8x8xf32>
    %141 = stablehlo.add %136, %25 : tensor<8x8xf32>
    %142 = stablehlo.add %141, %arg1 : tensor<8x8xf32>
    %143 = stablehlo.add %138, %arg3 : tensor<8x8xf32>
    %144 = stablehlo.subtract %140, %27 : tensor<8x8xf32>
    %cst_15 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %145 = stablehlo.broadcast_in_dim %cst_15, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %146 = stablehlo.multiply %142, %145 : tensor<8x8xf32>
    %147 = stablehlo.transpose %143, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %148 = stablehlo.add %147, %arg0 : tensor<8x8xf32>
    %cst_16 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %149 = stablehlo.broadcast_in_dim %cst_16, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %150 = stablehlo.multiply %144, %149 : tensor<8x8xf32>
    %151 = stablehlo.add %146, %83 : tensor<8x8xf32>
    %152 = stablehlo.add %151, %41 : tensor<8x8xf32>
    %153 = stablehlo.subtract %148, %arg3 : tensor<8x8xf32>
    %154 = stablehlo.subtract %150, %85 : tensor<8x8xf32>
    %155 = stablehlo.add %152, %arg1 : tensor<8x8xf32>
    %156 = stablehlo.add %155, %arg0 : tensor<8x8xf32>
    %157 = stablehlo.subtract %153, %arg2 : tensor<8x8xf32>
    %158 = stablehlo.subtract %154, %73 : tensor<8x8xf32>
    %159 = stablehlo.multiply %arg1, %arg2 : tensor<8x8xf32>
    %160 = stablehlo.add %156, %159 : tensor<8x8xf32>
    %161 = stablehlo.transpose %157, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %162 = stablehlo.add %161, %21 : tensor<8x8xf32>
    %163 = stablehlo.add %158, %arg2 : tensor<8x8xf32>
    %164 = stablehlo.add %163, %41 : tensor<8x8xf32>
    %165 = stablehlo.subtract %160, %72 : tensor<8x8xf32>
    %166 = stablehlo.subtract %162, %43 : tensor<8x8xf32>
    %167 = stablehlo.subtract %164, %arg3 : tensor<8x8xf32>
    %168 = stablehlo.add %165, %arg3 : tensor<8x8xf32>
    %cst_17 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %169 = stablehlo.broadcast_in_dim %cst_17, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %170 = stablehlo.multiply %166, %169 : tensor<8x8xf32>
    %171 = stablehlo.add %167, %83 : tensor<8x8xf32>
    %172 = stablehlo.add %171, %arg2 : tensor<8x8xf32>
    %cst_18 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %173 = stablehlo.reduce(%arg3 init: %cst_18) applies stablehlo.add across dimensions = [0] : (tensor<8x8xf32>, tensor<f32>) -> tensor<8xf32>
    %174 = stablehlo.broadcast_in_dim %173, dims = [1] : (tensor<8xf32>) -> tensor<8x8xf32>
    %175 = stablehlo.add %168, %174 : tensor<8x8xf32>
    %176 = stablehlo.subtract %170, %arg3 : tensor<8x8xf32>
    %177 = stablehlo.add %172, %arg1 : tensor<8x8xf32>
    %178 = stablehlo.add %177, %67 : tensor<8x8xf32>
    %179 = stablehlo.multiply %arg1, %arg2 : tensor<8x8xf32>
    %180 = stablehlo.add %175, %179 : tensor<8x8xf32>
    return %178, %180, %176 : tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>
  }
}
