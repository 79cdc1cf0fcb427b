module @jit_big200_b attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8x8xf32>, %arg1: tensor<8x8xf32>, %arg2: tensor<8x8xf32>, %arg3: tensor<8x8xf32>) -> (tensor<8x8xf32> {jax.result_info = "result[0]"}, tensor<8x8xf32> {jax.result_info = "result[1]"}, tensor<8x8xf32> {jax.result_info = "result[2]"}) {
    %0 = stablehlo.negate %arg0 : tensor<8x8xf32>
    %1 = stablehlo.negate %arg1 : tensor<8x8xf32>
    %2 = stablehlo.maximum %0, %1 : tensor<8x8xf32>
    %3 = stablehlo.negate %2 : tensor<8x8xf32>
    %4 = stablehlo.reshape %arg1 : (tensor<8x8xf32>) -> tensor<4x16xf32>
    %5 = stablehlo.reshape %3 : (tensor<8x8xf32>) -> tensor<4x16xf32>
    %6 = stablehlo.subtract %4, %5 : tensor<4x16xf32>
    %7 = stablehlo.reshape %6 : (tensor<4x16xf32>) -> tensor<8x8xf32>
    %8 = stablehlo.transpose %arg3, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %9 = stablehlo.add %arg2, %8 : tensor<8x8xf32>
    %10 = stablehlo.transpose %9, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %11 = stablehlo.add %10, %3 : tensor<8x8xf32>
    %12 = stablehlo.negate %7 : tensor<8x8xf32>
    %13 = stablehlo.negate %10 : tensor<8x8xf32>
    %14 = stablehlo.maximum %12, %13 : tensor<8x8xf32>
    %15 = stablehlo.negate %14 : tensor<8x8xf32>
    %16 = stablehlo.transpose %arg2, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %17 = stablehlo.transpose %arg1, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %18 = stablehlo.dot_general %16, %17, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    %19 = stablehlo.transpose %18, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %20 = stablehlo.add %19, %10 : tensor<8x8xf32>
    %21 = stablehlo.multiply %arg1, %10 : tensor<8x8xf32>
    %22 = stablehlo.add %11, %21 : tensor<8x8xf32>
    %23 = stablehlo.maximum %arg3, %15 : tensor<8x8xf32>
    %24 = stablehlo.add %arg1, %arg3 : tensor<8x8xf32>
    %25 = stablehlo.add %20, %24 : tensor<8x8xf32>
    %26 = stablehlo.add %22, %22 : tensor<8x8xf32>
    %27 = stablehlo.add %26, %23 : tensor<8x8xf32>
    %28 = stablehlo.add %27, %arg3 : tensor<8x8xf32>
    %29 = stablehlo.transpose %25, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %30 = stablehlo.transpose %arg3, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %31 = stablehlo.dot_general %29, %30, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    %32 = stablehlo.transpose %31, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %33 = stablehlo.subtract %15, %26 : tensor<8x8xf32>
    %34 = stablehlo.negate %33 : tensor<8x8xf32>
    %35 = stablehlo.add %28, %28 : tensor<8x8xf32>
    %36 = stablehlo.multiply %arg2, %32 : tensor<8x8xf32>
    %37 = stablehlo.multiply %arg2, %25 : tensor<8x8xf32>
    %38 = stablehlo.add %36, %37 : tensor<8x8xf32>
    %39 = stablehlo.add %34, %34 : tensor<8x8xf32>
    %40 = stablehlo.transpose %7, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %41 = stablehlo.add %35, %40 : tensor<8x8xf32>
    %42 = stablehlo.transpose %41, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %43 = stablehlo.add %arg2, %38 : tensor<8x8xf32>
    %44 = stablehlo.transpose %42, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %45 = stablehlo.reduce(%44 init: %cst) applies stablehlo.add across dimensions = [1] : (tensor<8x8xf32>, tensor<f32>) -> tensor<8xf32>
    %46 = stablehlo.broadcast_in_dim %45, dims = [1] : (tensor<8xf32>) -> tensor<8x8xf32>
    %47 = stablehlo.add %46, %39 : tensor<8x8xf32>
    %48 = stablehlo.reshape %42 : (tensor<8x8xf32>) -> tensor<4x16xf32>
    %49 = stablehlo.reshape %47 : (tensor<8x8xf32>) -> tensor<4x16xf32>
    %50 = stablehlo.subtract %48, %49 : tensor<4x16xf32>
    %51 = stablehlo.reshape %50 : (tensor<4x16xf32>) -> tensor<8x8xf32>
    %52 = stablehlo.add %arg0, %43 : tensor<8x8xf32>
    %53 = stablehlo.multiply %arg1, %arg2 : tensor<8x8xf32>
    %54 = stablehlo.add %53, %47 : tensor<8x8xf32>
    %55 = stablehlo.add %arg0, %51 : tensor<8x8xf32>
    %56 = stablehlo.add %52, %52 : tensor<8x8xf32>
    %57 = stablehlo.add %arg0, %54 : tensor<8x8xf32>
    %58 = stablehlo.add %57, %22 : tensor<8x8xf32>
    %59 = stablehlo.compare GT, %55, %23, FLOAT : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xi1>
    %60 = stablehlo.select %59, %55, %23 : tensor<8x8xi1>, tensor<8x8xf32>
    %61 = stablehlo.add %56, %56 : tensor<8x8xf32>
    %62 = stablehlo.transpose %arg2, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %63 = stablehlo.reduce(%62 init: %cst_0) applies stablehlo.add across dimensions = [1] : (tensor<8x8xf32>, tensor<f32>) -> tensor<8xf32>
    %64 = stablehlo.broadcast_in_dim %63, dims = [1] : (tensor<8xf32>) -> tensor<8x8xf32>
    %65 = stablehlo.add %64, %58 : tensor<8x8xf32>
    %66 = stablehlo.multiply %arg3, %arg2 : tensor<8x8xf32>
    %67 = stablehlo.add %66, %60 : tensor<8x8xf32>
    %68 = stablehlo.broadcast_in_dim %61, dims = [1, 2] : (tensor<8x8xf32>) -> tensor<1x8x8xf32>
    %69 = stablehlo.broadcast_in_dim %arg1, dims = [1, 2] : (tensor<8x8xf32>) -> tensor<1x8x8xf32>
    %70 = stablehlo.add %68, %69 : tensor<1x8x8xf32>
    %71 = stablehlo.reshape %70 : (tensor<1x8x8xf32>) -> tensor<8x8xf32>
    %72 = stablehlo.add %39, %65 : tensor<8x8xf32>
    %73 = stablehlo.multiply %arg0, %arg2 : tensor<8x8xf32>
    %74 = stablehlo.add %73, %67 : tensor<8x8xf32>
    %75 = stablehlo.add %arg1, %71 : tensor<8x8xf32>
    %76 = stablehlo.transpose %25, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %77 = stablehlo.transpose %arg3, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %78 = stablehlo.dot_general %76, %77, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    %79 = stablehlo.transpose %78, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %80 = stablehlo.add %79, %72 : tensor<8x8xf32>
    %81 = stablehlo.reshape %74 : (tensor<8x8xf32>) -> tensor<4x16xf32>
    %82 = stablehlo.reshape %43 : (tensor<8x8xf32>) -> tensor<4x16xf32>
    %83 = stablehlo.subtract %81, %82 : tensor<4x16xf32>
    %84 = stablehlo.reshape %83 : (tensor<4x16xf32>) -> tensor<8x8xf32>
    %85 = stablehlo.transpose %arg2, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %86 = stablehlo.add %75, %85 : tensor<8x8xf32>
    %87 = stablehlo.transpose %86, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %88 = stablehlo.compare LE, %80, %arg2, FLOAT : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xi1>
    %89 = stablehlo.select %88, %80, %arg3 : tensor<8x8xi1>, tensor<8x8xf32>
    %90 = stablehlo.compare GT, %84, %arg2, FLOAT : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xi1>
    %91 = stablehlo.select %90, %84, %arg2 : tensor<8x8xi1>, tensor<8x8xf32>
    %92 = stablehlo.add %87, %87 : tensor<8x8xf32>
    %93 = stablehlo.add %arg2, %89 : tensor<8x8xf32>
    %94 = stablehlo.add %93, %34 : tensor<8x8xf32>
    %95 = stablehlo.multiply %arg2, %arg2 : tensor<8x8xf32>
    %96 = stablehlo.add %91, %95 : tensor<8x8xf32>
    %97 = stablehlo.transpose %arg2, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %98 = stablehlo.add %92, %97 : tensor<8x8xf32>
    %99 = stablehlo.transpose %98, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %100 = stablehlo.compare LE, %94, %arg0, FLOAT : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xi1>
    %101 = stablehlo.select %100, %94, %arg3 : tensor<8x8xi1>, tensor<8x8xf32>
    %102 = stablehlo.negate %arg0 : tensor<8x8xf32>
    %103 = stablehlo.add %96, %102 : tensor<8x8xf32>
    %104 = stablehlo.add %arg2, %99 : tensor<8x8xf32>
    %105 = stablehlo.add %104, %52 : tensor<8x8xf32>
    %106 = stablehlo.transpose %10, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %107 = stablehlo.transpose %arg1, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %108 = stablehlo.dot_general %106, %107, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    %109 = stablehlo.transpose %108, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %110 = stablehlo.add %109, %101 : tensor<8x8xf32>
    %111 = stablehlo.transpose %3, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %112 = stablehlo.add %103, %111 : tensor<8x8xf32>
    %113 = stablehlo.transpose %112, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %114 = stablehlo.add %99, %105 : tensor<8x8xf32>
    %115 = stablehlo.reshape %110 : (tensor<8x8xf32>) -> tensor<4x16xf32>
    %116 = stablehlo.reshape %arg2 : (tensor<8x8xf32>) -> tensor<4x16xf32>
    %117 = stablehlo.subtract %115, %116 : tensor<4x16xf32>
    %118 = stablehlo.reshape %117 : (tensor<4x16xf32>) -> tensor<8x8xf32>
    %119 = stablehlo.transpose %26, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %120 = stablehlo.add %113, %119 : tensor<8x8xf32>
    %121 = stablehlo.transpose %120, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %122 = stablehlo.transpose %87, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %123 = stablehlo.reduce(%122 init: %cst_1) applies stablehlo.add across dimensions = [1] : (tensor<8x8xf32>, tensor<f32>) -> tensor<8xf32>
    %124 = stablehlo.broadcast_in_dim %123, dims = [1] : (tensor<8xf32>) -> tensor<8x8xf32>
    %125 = stablehlo.add %124, %114 : tensor<8x8xf32>
    %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %126 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %127 = stablehlo.compare GT, %118, %126, FLOAT : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xi1>
    %cst_3 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %128 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %129 = stablehlo.select %127, %118, %128 : tensor<8x8xi1>, tensor<8x8xf32>
    %130 = stablehlo.multiply %arg2, %arg0 : tensor<8x8xf32>
    %131 = stablehlo.add %130, %121 : tensor<8x8xf32>
    %132 = stablehlo.broadcast_in_dim %125, dims = [1, 2] : (tensor<8x8xf32>) -> tensor<1x8x8xf32>
    %133 = stablehlo.broadcast_in_dim %arg3, dims = [1, 2] : (tensor<8x8xf32>) -> tensor<1x8x8xf32>
    %134 = stablehlo.add %132, %133 : tensor<1x8x8xf32>
    %135 = stablehlo.reshape %134 : (tensor<1x8x8xf32>) -> tensor<8x8xf32>
    %136 = stablehlo.compare LE, %129, %arg3, FLOAT : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xi1>
    %137 = stablehlo.select %136, %129, %28 : tensor<8x8xi1>, tensor<8x8xf32>
    %138 = stablehlo.add %131, %131 : tensor<8x8xf32>
    %139 = stablehlo.add %32, %135 : tensor<8x8xf32>
    %cst_4 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %140 = stablehlo.broadcast_in_dim %cst_4, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %141 = stablehlo.compare GT, %137, %140, FLOAT : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xi1>
    %cst_5 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %142 = stablehlo.broadcast_in_dim %cst_5, dims = [] : (tensor<f32>) -> tensor<8x8xf32>
    %143 = stablehlo.select %141, %137, %142 : tensor<8x8xi1>, tensor<8x8xf32>
    %144 = stablehlo.add %arg2, %138 : tensor<8x8xf32>
    %145 = stablehlo.add %144, %137 : tensor<8x8xf32>
    %146 = stablehlo.transpose %arg3, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %cst_6 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %147 = stablehlo.reduce(%146 init: %cst_6) applies stablehlo.add across dimensions = [1] : (tensor<8x8xf32>, tensor<f32>) -> tensor<8xf32>
    %148 = stablehlo.broadcast_in_dim %147, dims = [1] : (tensor<8xf32>) -> tensor<8x8xf32>
    %149 = stablehlo.add %148, %139 : tensor<8x8xf32>
    %150 = stablehlo.compare LE, %143, %3, FLOAT : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xi1>
    %151 = stablehlo.select %150, %143, %105 : tensor<8x8xi1>, tensor<8x8xf32>
    %152 = stablehlo.add %arg2, %145 : tensor<8x8xf32>
    %153 = stablehlo.add %152, %15 : tensor<8x8xf32>
    %154 = stablehlo.negate %139 : tensor<8x8xf32>
    %155 = stablehlo.add %149, %154 : tensor<8x8xf32>
    %156 = stablehlo.compare LE, %151, %51, FLOAT : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xi1>
    %157 = stablehlo.select %156, %151, %arg1 : tensor<8x8xi1>, tensor<8x8xf32>
    %158 = stablehlo.maximum %131, %153 : tensor<8x8xf32>
    %159 = stablehlo.add %arg0, %155 : tensor<8x8xf32>
    %160 = stablehlo.transpose %arg1, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %161 = stablehlo.transpose %arg0, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %162 = stablehlo.dot_general %160, %161, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    %163 = stablehlo.transpose %162, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %164 = stablehlo.add %163, %157 : tensor<8x8xf32>
    %165 = stablehlo.negate %158 : tensor<8x8xf32>
    %166 = stablehlo.negate %52 : tensor<8x8xf32>
    %167 = stablehlo.maximum %165, %166 : tensor<8x8xf32>
    %168 = stablehlo.negate %167 : tensor<8x8xf32>
    %169 = stablehlo.add %159, %159 : tensor<8x8xf32>
    %170 = stablehlo.add %arg1, %164 : tensor<8x8xf32>
    %171 = stablehlo.subtract %3, %168 : tensor<8x8xf32>
    %172 = stablehlo.negate %171 : tensor<8x8xf32>
    %173 = stablehlo.multiply %arg1, %arg3 : tensor<8x8xf32>
    %174 = stablehlo.add %173, %169 : tensor<8x8xf32>
    %175 = stablehlo.add %arg0, %170 : tensor<8x8xf32>
    %176 = stablehlo.add %175, %67 : tensor<8x8xf32>
    %177 = stablehlo.compare GT, %172, %arg3, FLOAT : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xi1>
    %178 = stablehlo.select %177, %172, %arg3 : tensor<8x8xi1>, tensor<8x8xf32>
    %179 = stablehlo.add %10, %arg1 : tensor<8x8xf32>
    %180 = stablehlo.add %174, %179 : tensor<8x8xf32>
    %181 = stablehlo.compare GT, %176, %74, FLOAT : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xi1>
    %182 = stablehlo.select %181, %176, %74 : tensor<8x8xi1>, tensor<8x8xf32>
    %183 = stablehlo.transpose %105, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %184 = stablehlo.add %178, %183 : tensor<8x8xf32>
    %185 = stablehlo.transpose %184, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %186 = stablehlo.add %arg1, %52 : tensor<8x8xf32>
    %187 = stablehlo.add %180, %186 : tensor<8x8xf32>
    %188 = stablehlo.multiply %arg2, %arg3 : tensor<8x8xf32>
    %189 = stablehlo.add %182, %188 : tensor<8x8xf32>
    %190 = stablehlo.compare GT, %185, %38, FLOAT : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xi1>
    %191 = stablehlo.select %190, %185, %38 : tensor<8x8xi1>, tensor<8x8xf32>
    %192 = stablehlo.negate %149 : tensor<8x8xf32>
    %193 = stablehlo.add %187, %192 : tensor<8x8xf32>
    %194 = stablehlo.add %169, %189 : tensor<8x8xf32>
    %195 = stablehlo.add %arg1, %99 : tensor<8x8xf32>
    %196 = stablehlo.add %191, %195 : tensor<8x8xf32>
    %197 = stablehlo.reshape %193 : (tensor<8x8xf32>) -> tensor<4x16xf32>
    %198 = stablehlo.reshape %arg0 : (tensor<8x8xf32>) -> tensor<4x16xf32>
    %199 = stablehlo.subtract %197, %198 : tensor<4x16xf32>
    %200 = stablehlo.reshape %199 : (tensor<4x16xf32>) -> tensor<8x8xf32>
    %201 = stablehlo.negate %arg2 : tensor<8x8xf32>
    %202 = stablehlo.add %194, %201 : tensor<8x8xf32>
    %203 = stablehlo.compare GT, %196, %arg3, FLOAT : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xi1>
    %204 = stablehlo.select %203, %196, %arg3 : tensor<8x8xi1>, tensor<8x8xf32>
    %205 = stablehlo.reshape %200 : (tensor<8x8xf32>) -> tensor<4x16xf32>
    %206 = stablehlo.reshape %75 : (tensor<8x8xf32>) -> tensor<4x16xf32>
    %207 = stablehlo.subtract %205, %206 : tensor<4x16xf32>
    %208 = stablehlo.reshape %207 : (tensor<4x16xf32>) -> tensor<8x8xf32>
    %209 = stablehlo.subtract %34, %202 : tensor<8x8xf32>
    %210 = stablehlo.multiply %arg2, %arg1 : tensor<8x8xf32>
    %211 = stablehlo.add %204, %210 : tensor<8x8xf32>
    %212 = stablehlo.add %208, %208 : tensor<8x8xf32>
    %213 = stablehlo.multiply %arg0, %arg3 : tensor<8x8xf32>
    %214 = stablehlo.add %213, %209 : tensor<8x8xf32>
    %215 = stablehlo.add %32, %211 : tensor<8x8xf32>
    %216 = stablehlo.transpose %arg1, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %cst_7 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %217 = stablehlo.reduce(%216 init: %cst_7) applies stablehlo.add across dimensions = [1] : (tensor<8x8xf32>, tensor<f32>) -> tensor<8xf32>
    %218 = stablehlo.broadcast_in_dim %217, dims = [1] : (tensor<8xf32>) -> tensor<8x8xf32>
    %219 = stablehlo.add %218, %212 : tensor<8x8xf32>
    %220 = stablehlo.add %arg1, %arg3 : tensor<8x8xf32>
    %221 = stablehlo.add %214, %220 : tensor<8x8xf32>
    %222 = stablehlo.negate %215 : tensor<8x8xf32>
    %223 = stablehlo.negate %60 : tensor<8x8xf32>
    %224 = stablehlo.maximum %222, %223 : tensor<8x8xf32>
    %225 = stablehlo.negate %224 : tensor<8x8xf32>
    %226 = stablehlo.transpose %arg0, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %227 = stablehlo.add %219, %226 : tensor<8x8xf32>
    %228 = stablehlo.transpose %227, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %229 = stablehlo.transpose %105, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %230 = stablehlo.add %221, %229 : tensor<8x8xf32>
    %231 = stablehlo.transpose %230, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %232 = stablehlo.add %170, %225 : tensor<8x8xf32>
    %233 = stablehlo.add %232, %arg1 : tensor<8x8xf32>
    %234 = stablehlo.transpose %92, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %235 = stablehlo.add %228, %234 : tensor<8x8xf32>
    %236 = stablehlo.transpose %235, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %237 = stablehlo.add %arg2, %231 : tensor<8x8xf32>
    %238 = stablehlo.subtract %58, %233 : tensor<8x8xf32>
    %239 = stablehlo.negate %238 : tensor<8x8xf32>
    %240 = stablehlo.subtract %arg2, %236 : tensor<8x8xf32>
    %241 = stablehlo.transpose %58, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %242 = stablehlo.add %237, %241 : tensor<8x8xf32>
    %243 = stablehlo.transpose %242, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %244 = stablehlo.add %arg0, %239 : tensor<8x8xf32>
    %245 = stablehlo.add %244, %182 : tensor<8x8xf32>
    %246 = stablehlo.add %arg3, %139 : tensor<8x8xf32>
    %247 = stablehlo.add %240, %246 : tensor<8x8xf32>
    %248 = stablehlo.multiply %arg1, %arg3 : tensor<8x8xf32>
    %249 = stablehlo.add %243, %248 : tensor<8x8xf32>
    %250 = stablehlo.subtract %103, %245 : tensor<8x8xf32>
    %251 = stablehlo.reshape %247 : (tensor<8x8xf32>) -> tensor<4x16xf32>
    %252 = stablehlo.reshape %arg1 : (tensor<8x8xf32>) -> tensor<4x16xf32>
    %253 = stablehlo.subtract %251, %252 : tensor<4x16xf32>
    %254 = stablehlo.reshape %253 : (tensor<4x16xf32>) -> tensor<8x8xf32>
    %255 = stablehlo.add %arg1, %94 : tensor<8x8xf32>
    %256 = stablehlo.add %249, %255 : tensor<8x8xf32>
    %257 = stablehlo.multiply %arg2, %arg1 : tensor<8x8xf32>
    %258 = stablehlo.add %250, %257 : tensor<8x8xf32>
    %259 = stablehlo.add %219, %254 : tensor<8x8xf32>
    return %256, %258, %259 : tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>
  }
}
