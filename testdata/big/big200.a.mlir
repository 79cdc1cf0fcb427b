module @jit_big200_a attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8x8xf32>, %arg1: tensor<8x8xf32>, %arg2: tensor<8x8xf32>, %arg3: tensor<8x8xf32>) -> (tensor<8x8xf32> {jax.result_info = "result[0]"}, tensor<8x8xf32> {jax.result_info = "result[1]"}, tensor<8x8xf32> {jax.result_info = "result[2]"}) {
    %0 = stablehlo.minimum %arg0, %arg1 : tensor<8x8xf32>
    %1 = stablehlo.subtract %arg1, %0 : tensor<8x8xf32>
    %2 = stablehlo.transpose %arg2, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %3 = stablehlo.add %2, %arg3 : tensor<8x8xf32>
    %4 = stablehlo.add %0, %3 : tensor<8x8xf32>
    %5 = stablehlo.minimum %1, %3 : tensor<8x8xf32>
    %6 = stablehlo.dot_general %arg1, %arg2, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    %7 = stablehlo.add %3, %6 : tensor<8x8xf32>
    %8 = stablehlo.multiply %3, %arg1 : tensor<8x8xf32>
    %9 = stablehlo.add %4, %8 : tensor<8x8xf32>
    %10 = stablehlo.maximum %5, %arg3 : tensor<8x8xf32>
    %11 = stablehlo.add %7, %arg1 : tensor<8x8xf32>
    %12 = stablehlo.add %11, %arg3 : tensor<8x8xf32>
    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %13 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %14 = stablehlo.multiply %9, %13 : tensor<8x8xf32>
    %15 = stablehlo.add %10, %arg3 : tensor<8x8xf32>
    %16 = stablehlo.add %15, %14 : tensor<8x8xf32>
    %17 = stablehlo.dot_general %arg3, %12, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    %18 = stablehlo.subtract %14, %5 : tensor<8x8xf32>
    %cst_0 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %19 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %20 = stablehlo.multiply %16, %19 : tensor<8x8xf32>
    %21 = stablehlo.add %17, %12 : tensor<8x8xf32>
    %22 = stablehlo.multiply %21, %arg2 : tensor<8x8xf32>
    %cst_1 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %23 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %24 = stablehlo.multiply %18, %23 : tensor<8x8xf32>
    %25 = stablehlo.transpose %20, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %26 = stablehlo.add %25, %1 : tensor<8x8xf32>
    %27 = stablehlo.add %22, %arg2 : tensor<8x8xf32>
    %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %28 = stablehlo.reduce(%26 init: %cst_2) applies stablehlo.add across dimensions = [0] : (tensor<8x8xf32>, tensor<f32>) -> tensor<8xf32>
    %29 = stablehlo.broadcast_in_dim %28, dims = [1] : (tensor<8xf32>) -> tensor<8x8xf32>
    %30 = stablehlo.add %24, %29 : tensor<8x8xf32>
    %31 = stablehlo.subtract %26, %30 : tensor<8x8xf32>
    %32 = stablehlo.add %27, %arg0 : tensor<8x8xf32>
    %33 = stablehlo.multiply %arg2, %arg1 : tensor<8x8xf32>
    %34 = stablehlo.add %30, %33 : tensor<8x8xf32>
    %35 = stablehlo.add %31, %arg0 : tensor<8x8xf32>
    %cst_3 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %36 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %37 = stablehlo.multiply %32, %36 : tensor<8x8xf32>
    %38 = stablehlo.add %34, %9 : tensor<8x8xf32>
    %39 = stablehlo.add %38, %arg0 : tensor<8x8xf32>
    %40 = stablehlo.maximum %35, %10 : tensor<8x8xf32>
    %cst_4 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %41 = stablehlo.broadcast_in_dim %cst_4, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %42 = stablehlo.multiply %37, %41 : tensor<8x8xf32>
    %cst_5 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %43 = stablehlo.reduce(%arg2 init: %cst_5) applies stablehlo.add across dimensions = [0] : (tensor<8x8xf32>, tensor<f32>) -> tensor<8xf32>
    %44 = stablehlo.broadcast_in_dim %43, dims = [1] : (tensor<8xf32>) -> tensor<8x8xf32>
    %45 = stablehlo.add %39, %44 : tensor<8x8xf32>
    %46 = stablehlo.multiply %arg2, %arg3 : tensor<8x8xf32>
    %47 = stablehlo.add %40, %46 : tensor<8x8xf32>
    %48 = stablehlo.add %42, %arg1 : tensor<8x8xf32>
    %49 = stablehlo.add %45, %24 : tensor<8x8xf32>
    %50 = stablehlo.multiply %arg2, %arg0 : tensor<8x8xf32>
    %51 = stablehlo.add %47, %50 : tensor<8x8xf32>
    %52 = stablehlo.add %48, %arg1 : tensor<8x8xf32>
    %53 = stablehlo.dot_general %arg3, %12, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    %54 = stablehlo.add %49, %53 : tensor<8x8xf32>
    %55 = stablehlo.subtract %51, %27 : tensor<8x8xf32>
    %56 = stablehlo.transpose %52, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %57 = stablehlo.add %56, %arg2 : tensor<8x8xf32>
    %58 = stablehlo.compare GT, %54, %arg2, FLOAT : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xi1>
    %59 = stablehlo.select %58, %arg3, %54 : tensor<8x8xi1>, tensor<8x8xf32>
    %60 = stablehlo.maximum %55, %arg2 : tensor<8x8xf32>
    %cst_6 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %61 = stablehlo.broadcast_in_dim %cst_6, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %62 = stablehlo.multiply %57, %61 : tensor<8x8xf32>
    %63 = stablehlo.add %59, %18 : tensor<8x8xf32>
    %64 = stablehlo.add %63, %arg2 : tensor<8x8xf32>
    %65 = stablehlo.multiply %arg2, %arg2 : tensor<8x8xf32>
    %66 = stablehlo.add %60, %65 : tensor<8x8xf32>
    %67 = stablehlo.transpose %62, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %68 = stablehlo.add %67, %arg2 : tensor<8x8xf32>
    %69 = stablehlo.compare GT, %64, %arg0, FLOAT : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xi1>
    %70 = stablehlo.select %69, %arg3, %64 : tensor<8x8xi1>, tensor<8x8xf32>
    %71 = stablehlo.subtract %66, %arg0 : tensor<8x8xf32>
    %72 = stablehlo.add %68, %32 : tensor<8x8xf32>
    %73 = stablehlo.add %72, %arg2 : tensor<8x8xf32>
    %74 = stablehlo.dot_general %arg1, %3, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    %75 = stablehlo.add %70, %74 : tensor<8x8xf32>
    %76 = stablehlo.transpose %71, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %77 = stablehlo.add %76, %0 : tensor<8x8xf32>
    %78 = stablehlo.add %73, %68 : tensor<8x8xf32>
    %79 = stablehlo.subtract %75, %arg2 : tensor<8x8xf32>
    %80 = stablehlo.transpose %77, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %81 = stablehlo.add %80, %14 : tensor<8x8xf32>
    %cst_7 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %82 = stablehlo.reduce(%57 init: %cst_7) applies stablehlo.add across dimensions = [0] : (tensor<8x8xf32>, tensor<f32>) -> tensor<8xf32>
    %83 = stablehlo.broadcast_in_dim %82, dims = [1] : (tensor<8xf32>) -> tensor<8x8xf32>
    %84 = stablehlo.add %78, %83 : tensor<8x8xf32>
    %cst_8 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %85 = stablehlo.broadcast_in_dim %cst_8, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %86 = stablehlo.maximum %79, %85 : tensor<8x8xf32>
    %87 = stablehlo.multiply %arg0, %arg2 : tensor<8x8xf32>
    %88 = stablehlo.add %81, %87 : tensor<8x8xf32>
    %89 = stablehlo.add %84, %arg3 : tensor<8x8xf32>
    %90 = stablehlo.compare GT, %86, %arg3, FLOAT : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xi1>
    %91 = stablehlo.select %90, %16, %86 : tensor<8x8xi1>, tensor<8x8xf32>
    %cst_9 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %92 = stablehlo.broadcast_in_dim %cst_9, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %93 = stablehlo.multiply %88, %92 : tensor<8x8xf32>
    %94 = stablehlo.add %89, %17 : tensor<8x8xf32>
    %cst_10 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %95 = stablehlo.broadcast_in_dim %cst_10, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %96 = stablehlo.maximum %91, %95 : tensor<8x8xf32>
    %97 = stablehlo.add %93, %91 : tensor<8x8xf32>
    %98 = stablehlo.add %97, %arg2 : tensor<8x8xf32>
    %cst_11 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %99 = stablehlo.reduce(%arg3 init: %cst_11) applies stablehlo.add across dimensions = [0] : (tensor<8x8xf32>, tensor<f32>) -> tensor<8xf32>
    %100 = stablehlo.broadcast_in_dim %99, dims = [1] : (tensor<8xf32>) -> tensor<8x8xf32>
    %101 = stablehlo.add %94, %100 : tensor<8x8xf32>
    %102 = stablehlo.compare GT, %96, %0, FLOAT : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xi1>
    %103 = stablehlo.select %102, %73, %96 : tensor<8x8xi1>, tensor<8x8xf32>
    %104 = stablehlo.add %98, %5 : tensor<8x8xf32>
    %105 = stablehlo.add %104, %arg2 : tensor<8x8xf32>
    %106 = stablehlo.subtract %101, %94 : tensor<8x8xf32>
    %107 = stablehlo.compare GT, %103, %31, FLOAT : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xi1>
    %108 = stablehlo.select %107, %arg1, %103 : tensor<8x8xi1>, tensor<8x8xf32>
    %109 = stablehlo.maximum %105, %88 : tensor<8x8xf32>
    %110 = stablehlo.add %106, %arg0 : tensor<8x8xf32>
    %111 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    %112 = stablehlo.add %108, %111 : tensor<8x8xf32>
    %113 = stablehlo.minimum %109, %32 : tensor<8x8xf32>
    %cst_12 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %114 = stablehlo.broadcast_in_dim %cst_12, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %115 = stablehlo.multiply %110, %114 : tensor<8x8xf32>
    %116 = stablehlo.add %112, %arg1 : tensor<8x8xf32>
    %117 = stablehlo.subtract %113, %0 : tensor<8x8xf32>
    %118 = stablehlo.multiply %arg3, %arg1 : tensor<8x8xf32>
    %119 = stablehlo.add %115, %118 : tensor<8x8xf32>
    %120 = stablehlo.add %116, %47 : tensor<8x8xf32>
    %121 = stablehlo.add %120, %arg0 : tensor<8x8xf32>
    %122 = stablehlo.maximum %117, %arg3 : tensor<8x8xf32>
    %123 = stablehlo.add %119, %3 : tensor<8x8xf32>
    %124 = stablehlo.add %123, %arg1 : tensor<8x8xf32>
    %125 = stablehlo.maximum %121, %51 : tensor<8x8xf32>
    %126 = stablehlo.transpose %122, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %127 = stablehlo.add %126, %73 : tensor<8x8xf32>
    %128 = stablehlo.add %124, %arg1 : tensor<8x8xf32>
    %129 = stablehlo.add %128, %32 : tensor<8x8xf32>
    %130 = stablehlo.multiply %arg3, %arg2 : tensor<8x8xf32>
    %131 = stablehlo.add %125, %130 : tensor<8x8xf32>
    %132 = stablehlo.maximum %127, %22 : tensor<8x8xf32>
    %133 = stablehlo.subtract %129, %101 : tensor<8x8xf32>
    %134 = stablehlo.add %131, %115 : tensor<8x8xf32>
    %135 = stablehlo.add %132, %arg1 : tensor<8x8xf32>
    %136 = stablehlo.add %135, %68 : tensor<8x8xf32>
    %137 = stablehlo.subtract %133, %arg0 : tensor<8x8xf32>
    %138 = stablehlo.subtract %134, %arg2 : tensor<8x8xf32>
    %139 = stablehlo.maximum %136, %arg3 : tensor<8x8xf32>
    %140 = stablehlo.subtract %137, %52 : tensor<8x8xf32>
    %141 = stablehlo.subtract %138, %18 : tensor<8x8xf32>
    %142 = stablehlo.negate %141 : tensor<8x8xf32>
    %143 = stablehlo.multiply %arg1, %arg2 : tensor<8x8xf32>
    %144 = stablehlo.add %139, %143 : tensor<8x8xf32>
    %cst_13 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %145 = stablehlo.broadcast_in_dim %cst_13, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %146 = stablehlo.multiply %140, %145 : tensor<8x8xf32>
    %147 = stablehlo.multiply %arg3, %arg0 : tensor<8x8xf32>
    %148 = stablehlo.add %142, %147 : tensor<8x8xf32>
    %149 = stablehlo.add %144, %17 : tensor<8x8xf32>
    %cst_14 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %150 = stablehlo.reduce(%arg1 init: %cst_14) applies stablehlo.add across dimensions = [0] : (tensor<8x8xf32>, tensor<f32>) -> tensor<8xf32>
    %151 = stablehlo.broadcast_in_dim %150, dims = [1] : (tensor<8xf32>) -> tensor<8x8xf32>
    %152 = stablehlo.add %146, %151 : tensor<8x8xf32>
    %153 = stablehlo.add %148, %arg1 : tensor<8x8xf32>
    %154 = stablehlo.add %153, %arg3 : tensor<8x8xf32>
    %155 = stablehlo.minimum %149, %40 : tensor<8x8xf32>
    %156 = stablehlo.transpose %152, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %157 = stablehlo.add %156, %arg0 : tensor<8x8xf32>
    %158 = stablehlo.transpose %154, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %159 = stablehlo.add %158, %73 : tensor<8x8xf32>
    %160 = stablehlo.add %155, %arg1 : tensor<8x8xf32>
    %161 = stablehlo.add %160, %116 : tensor<8x8xf32>
    %162 = stablehlo.transpose %157, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %163 = stablehlo.add %162, %62 : tensor<8x8xf32>
    %164 = stablehlo.add %159, %arg2 : tensor<8x8xf32>
    %165 = stablehlo.subtract %161, %39 : tensor<8x8xf32>
    %166 = stablehlo.subtract %163, %arg2 : tensor<8x8xf32>
    %167 = stablehlo.negate %166 : tensor<8x8xf32>
    %168 = stablehlo.transpose %164, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %169 = stablehlo.add %168, %39 : tensor<8x8xf32>
    %170 = stablehlo.add %165, %125 : tensor<8x8xf32>
    %171 = stablehlo.add %170, %arg0 : tensor<8x8xf32>
    %172 = stablehlo.add %167, %arg3 : tensor<8x8xf32>
    %173 = stablehlo.add %172, %94 : tensor<8x8xf32>
    %174 = stablehlo.multiply %arg3, %arg1 : tensor<8x8xf32>
    %175 = stablehlo.add %169, %174 : tensor<8x8xf32>
    %176 = stablehlo.subtract %171, %71 : tensor<8x8xf32>
    %177 = stablehlo.negate %176 : tensor<8x8xf32>
    %178 = stablehlo.subtract %173, %arg1 : tensor<8x8xf32>
    %179 = stablehlo.add %175, %arg1 : tensor<8x8xf32>
    %180 = stablehlo.add %179, %64 : tensor<8x8xf32>
    %181 = stablehlo.multiply %arg1, %arg2 : tensor<8x8xf32>
    %182 = stablehlo.add %177, %181 : tensor<8x8xf32>
    %183 = stablehlo.add %178, %152 : tensor<8x8xf32>
    return %180, %182, %183 : tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>
  }
}
