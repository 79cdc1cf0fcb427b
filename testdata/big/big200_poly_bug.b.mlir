module @jit_big200_poly_bug_b attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8x8xf32>, %arg1: tensor<8x8xf32>, %arg2: tensor<8x8xf32>, %arg3: tensor<8x8xf32>) -> (tensor<8x8xf32> {jax.result_info = "result[0]"}, tensor<8x8xf32> {jax.result_info = "result[1]"}, tensor<8x8xf32> {jax.result_info = "result[2]"}) {
    %0 = stablehlo.transpose %arg0, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %1 = stablehlo.transpose %arg2, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %2 = stablehlo.dot_general %0, %1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    %3 = stablehlo.add %arg1, %arg1 : tensor<8x8xf32>
    %4 = stablehlo.transpose %arg3, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %5 = stablehlo.reduce(%4 init: %cst) applies stablehlo.add across dimensions = [1] : (tensor<8x8xf32>, tensor<f32>) -> tensor<8xf32>
    %6 = stablehlo.broadcast_in_dim %5, dims = [1] : (tensor<8xf32>) -> tensor<8x8xf32>
    %7 = stablehlo.add %6, %arg2 : tensor<8x8xf32>
    %8 = stablehlo.add %7, %2 : tensor<8x8xf32>
    %9 = stablehlo.add %3, %3 : tensor<8x8xf32>
    %10 = stablehlo.multiply %arg1, %7 : tensor<8x8xf32>
    %11 = stablehlo.subtract %2, %8 : tensor<8x8xf32>
    %12 = stablehlo.negate %11 : tensor<8x8xf32>
    %13 = stablehlo.transpose %9, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %14 = stablehlo.transpose %10, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %15 = stablehlo.dot_general %13, %14, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    %16 = stablehlo.dot_general %10, %3, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    %17 = stablehlo.dot_general %arg3, %3, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    %18 = stablehlo.add %16, %17 : tensor<8x8xf32>
    %19 = stablehlo.add %18, %arg2 : tensor<8x8xf32>
    %20 = stablehlo.add %12, %19 : tensor<8x8xf32>
    %21 = stablehlo.transpose %15, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %22 = stablehlo.transpose %arg1, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %23 = stablehlo.dot_general %21, %22, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    %24 = stablehlo.transpose %23, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %25 = stablehlo.add %8, %18 : tensor<8x8xf32>
    %26 = stablehlo.add %25, %2 : tensor<8x8xf32>
    %27 = stablehlo.add %arg3, %20 : tensor<8x8xf32>
    %28 = stablehlo.add %7, %24 : tensor<8x8xf32>
    %29 = stablehlo.dot_general %26, %arg2, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    %30 = stablehlo.dot_general %arg3, %arg2, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    %31 = stablehlo.add %29, %30 : tensor<8x8xf32>
    %32 = stablehlo.multiply %arg3, %27 : tensor<8x8xf32>
    %33 = stablehlo.add %28, %28 : tensor<8x8xf32>
    %34 = stablehlo.transpose %8, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %35 = stablehlo.add %31, %34 : tensor<8x8xf32>
    %36 = stablehlo.transpose %35, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %37 = stablehlo.transpose %9, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %38 = stablehlo.transpose %7, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %39 = stablehlo.dot_general %37, %38, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    %40 = stablehlo.transpose %39, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %41 = stablehlo.add %40, %32 : tensor<8x8xf32>
    %42 = stablehlo.transpose %9, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %43 = stablehlo.reduce(%42 init: %cst_0) applies stablehlo.add across dimensions = [1] : (tensor<8x8xf32>, tensor<f32>) -> tensor<8xf32>
    %44 = stablehlo.broadcast_in_dim %43, dims = [1] : (tensor<8xf32>) -> tensor<8x8xf32>
    %45 = stablehlo.add %44, %33 : tensor<8x8xf32>
    %46 = stablehlo.add %36, %36 : tensor<8x8xf32>
    %47 = stablehlo.multiply %arg2, %arg3 : tensor<8x8xf32>
    %48 = stablehlo.add %41, %47 : tensor<8x8xf32>
    %49 = stablehlo.add %28, %45 : tensor<8x8xf32>
    %50 = stablehlo.reshape %46 : (tensor<8x8xf32>) -> tensor<4x16xf32>
    %51 = stablehlo.reshape %arg3 : (tensor<8x8xf32>) -> tensor<4x16xf32>
    %52 = stablehlo.subtract %50, %51 : tensor<4x16xf32>
    %53 = stablehlo.reshape %52 : (tensor<4x16xf32>) -> tensor<8x8xf32>
    %54 = stablehlo.add %arg0, %48 : tensor<8x8xf32>
    %55 = stablehlo.add %49, %49 : tensor<8x8xf32>
    %56 = stablehlo.add %arg0, %53 : tensor<8x8xf32>
    %57 = stablehlo.add %56, %12 : tensor<8x8xf32>
    %58 = stablehlo.add %49, %54 : tensor<8x8xf32>
    %59 = stablehlo.add %58, %28 : tensor<8x8xf32>
    %60 = stablehlo.add %54, %55 : tensor<8x8xf32>
    %61 = stablehlo.multiply %arg1, %arg0 : tensor<8x8xf32>
    %62 = stablehlo.add %57, %61 : tensor<8x8xf32>
    %63 = stablehlo.add %arg3, %45 : tensor<8x8xf32>
    %64 = stablehlo.add %59, %63 : tensor<8x8xf32>
    %65 = stablehlo.subtract %32, %60 : tensor<8x8xf32>
    %66 = stablehlo.negate %18 : tensor<8x8xf32>
    %67 = stablehlo.add %62, %66 : tensor<8x8xf32>
    %68 = stablehlo.multiply %arg0, %arg2 : tensor<8x8xf32>
    %69 = stablehlo.add %64, %68 : tensor<8x8xf32>
    %70 = stablehlo.transpose %arg2, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %71 = stablehlo.add %65, %70 : tensor<8x8xf32>
    %72 = stablehlo.transpose %71, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %73 = stablehlo.add %67, %67 : tensor<8x8xf32>
    %74 = stablehlo.add %41, %69 : tensor<8x8xf32>
    %75 = stablehlo.add %59, %72 : tensor<8x8xf32>
    %76 = stablehlo.add %49, %73 : tensor<8x8xf32>
    %77 = stablehlo.add %76, %arg2 : tensor<8x8xf32>
    %78 = stablehlo.transpose %arg2, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %79 = stablehlo.add %74, %78 : tensor<8x8xf32>
    %80 = stablehlo.transpose %79, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %81 = stablehlo.transpose %arg0, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %82 = stablehlo.add %75, %81 : tensor<8x8xf32>
    %83 = stablehlo.transpose %82, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %84 = stablehlo.multiply %arg2, %arg3 : tensor<8x8xf32>
    %85 = stablehlo.add %77, %84 : tensor<8x8xf32>
    %86 = stablehlo.add %60, %80 : tensor<8x8xf32>
    %87 = stablehlo.negate %48 : tensor<8x8xf32>
    %88 = stablehlo.add %83, %87 : tensor<8x8xf32>
    %89 = stablehlo.subtract %33, %85 : tensor<8x8xf32>
    %90 = stablehlo.add %80, %86 : tensor<8x8xf32>
    %91 = stablehlo.transpose %arg2, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %92 = stablehlo.reduce(%91 init: %cst_1) applies stablehlo.add across dimensions = [1] : (tensor<8x8xf32>, tensor<f32>) -> tensor<8xf32>
    %93 = stablehlo.broadcast_in_dim %92, dims = [1] : (tensor<8xf32>) -> tensor<8x8xf32>
    %94 = stablehlo.add %93, %88 : tensor<8x8xf32>
    %95 = stablehlo.add %89, %89 : tensor<8x8xf32>
    %96 = stablehlo.transpose %2, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %97 = stablehlo.add %90, %96 : tensor<8x8xf32>
    %98 = stablehlo.transpose %97, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %99 = stablehlo.transpose %3, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %100 = stablehlo.add %94, %99 : tensor<8x8xf32>
    %101 = stablehlo.transpose %100, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %102 = stablehlo.reshape %95 : (tensor<8x8xf32>) -> tensor<4x16xf32>
    %103 = stablehlo.reshape %89 : (tensor<8x8xf32>) -> tensor<4x16xf32>
    %104 = stablehlo.subtract %102, %103 : tensor<4x16xf32>
    %105 = stablehlo.reshape %104 : (tensor<4x16xf32>) -> tensor<8x8xf32>
    %106 = stablehlo.add %45, %98 : tensor<8x8xf32>
    %107 = stablehlo.negate %32 : tensor<8x8xf32>
    %108 = stablehlo.add %101, %107 : tensor<8x8xf32>
    %109 = stablehlo.transpose %12, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %110 = stablehlo.add %105, %109 : tensor<8x8xf32>
    %111 = stablehlo.transpose %110, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %112 = stablehlo.subtract %arg2, %106 : tensor<8x8xf32>
    %113 = stablehlo.negate %112 : tensor<8x8xf32>
    %114 = stablehlo.multiply %arg0, %arg1 : tensor<8x8xf32>
    %115 = stablehlo.add %114, %108 : tensor<8x8xf32>
    %116 = stablehlo.subtract %arg3, %111 : tensor<8x8xf32>
    %117 = stablehlo.add %113, %113 : tensor<8x8xf32>
    %118 = stablehlo.multiply %arg1, %arg3 : tensor<8x8xf32>
    %119 = stablehlo.add %118, %115 : tensor<8x8xf32>
    %120 = stablehlo.transpose %arg0, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %121 = stablehlo.add %116, %120 : tensor<8x8xf32>
    %122 = stablehlo.transpose %121, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %123 = stablehlo.multiply %arg1, %arg2 : tensor<8x8xf32>
    %124 = stablehlo.add %117, %123 : tensor<8x8xf32>
    %125 = stablehlo.add %arg1, %119 : tensor<8x8xf32>
    %126 = stablehlo.transpose %31, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %127 = stablehlo.add %122, %126 : tensor<8x8xf32>
    %128 = stablehlo.transpose %127, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %129 = stablehlo.add %arg2, %124 : tensor<8x8xf32>
    %130 = stablehlo.add %arg1, %125 : tensor<8x8xf32>
    %131 = stablehlo.subtract %2, %128 : tensor<8x8xf32>
    %132 = stablehlo.negate %131 : tensor<8x8xf32>
    %133 = stablehlo.broadcast_in_dim %129, dims = [1, 2] : (tensor<8x8xf32>) -> tensor<1x8x8xf32>
    %134 = stablehlo.broadcast_in_dim %arg3, dims = [1, 2] : (tensor<8x8xf32>) -> tensor<1x8x8xf32>
    %135 = stablehlo.add %133, %134 : tensor<1x8x8xf32>
    %136 = stablehlo.reshape %135 : (tensor<1x8x8xf32>) -> tensor<8x8xf32>
    %137 = stablehlo.add %129, %130 : tensor<8x8xf32>
    %138 = stablehlo.multiply %arg0, %arg0 : tensor<8x8xf32>
    %139 = stablehlo.add %132, %138 : tensor<8x8xf32>
    %140 = stablehlo.subtract %117, %136 : tensor<8x8xf32>
    %141 = stablehlo.subtract %119, %137 : tensor<8x8xf32>
    %142 = stablehlo.negate %141 : tensor<8x8xf32>
    %143 = stablehlo.transpose %77, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %144 = stablehlo.add %139, %143 : tensor<8x8xf32>
    %145 = stablehlo.transpose %144, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %146 = stablehlo.broadcast_in_dim %140, dims = [1, 2] : (tensor<8x8xf32>) -> tensor<1x8x8xf32>
    %147 = stablehlo.broadcast_in_dim %142, dims = [1, 2] : (tensor<8x8xf32>) -> tensor<1x8x8xf32>
    %148 = stablehlo.add %146, %147 : tensor<1x8x8xf32>
    %149 = stablehlo.reshape %148 : (tensor<1x8x8xf32>) -> tensor<8x8xf32>
    %150 = stablehlo.negate %117 : tensor<8x8xf32>
    %151 = stablehlo.add %142, %150 : tensor<8x8xf32>
    %152 = stablehlo.add %145, %145 : tensor<8x8xf32>
    %153 = stablehlo.negate %9 : tensor<8x8xf32>
    %154 = stablehlo.add %149, %153 : tensor<8x8xf32>
    %155 = stablehlo.subtract %arg2, %151 : tensor<8x8xf32>
    %156 = stablehlo.negate %155 : tensor<8x8xf32>
    %157 = stablehlo.transpose %arg1, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %158 = stablehlo.reduce(%157 init: %cst_2) applies stablehlo.add across dimensions = [1] : (tensor<8x8xf32>, tensor<f32>) -> tensor<8xf32>
    %159 = stablehlo.broadcast_in_dim %158, dims = [1] : (tensor<8xf32>) -> tensor<8x8xf32>
    %160 = stablehlo.add %159, %152 : tensor<8x8xf32>
    %161 = stablehlo.subtract %arg2, %154 : tensor<8x8xf32>
    %162 = stablehlo.transpose %arg1, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %cst_3 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %163 = stablehlo.reduce(%162 init: %cst_3) applies stablehlo.add across dimensions = [1] : (tensor<8x8xf32>, tensor<f32>) -> tensor<8xf32>
    %164 = stablehlo.broadcast_in_dim %163, dims = [1] : (tensor<8xf32>) -> tensor<8x8xf32>
    %165 = stablehlo.add %164, %156 : tensor<8x8xf32>
    %166 = stablehlo.add %160, %160 : tensor<8x8xf32>
    %167 = stablehlo.multiply %arg0, %arg2 : tensor<8x8xf32>
    %168 = stablehlo.add %161, %167 : tensor<8x8xf32>
    %169 = stablehlo.subtract %80, %165 : tensor<8x8xf32>
    %170 = stablehlo.negate %169 : tensor<8x8xf32>
    %171 = stablehlo.multiply %arg2, %8 : tensor<8x8xf32>
    %172 = stablehlo.add %171, %166 : tensor<8x8xf32>
    %173 = stablehlo.add %168, %168 : tensor<8x8xf32>
    %174 = stablehlo.add %arg1, %170 : tensor<8x8xf32>
    %175 = stablehlo.add %174, %32 : tensor<8x8xf32>
    %176 = stablehlo.broadcast_in_dim %172, dims = [1, 2] : (tensor<8x8xf32>) -> tensor<1x8x8xf32>
    %177 = stablehlo.broadcast_in_dim %arg3, dims = [1, 2] : (tensor<8x8xf32>) -> tensor<1x8x8xf32>
    %178 = stablehlo.add %176, %177 : tensor<1x8x8xf32>
    %179 = stablehlo.reshape %178 : (tensor<1x8x8xf32>) -> tensor<8x8xf32>
    %180 = stablehlo.reshape %173 : (tensor<8x8xf32>) -> tensor<4x16xf32>
    %181 = stablehlo.reshape %33 : (tensor<8x8xf32>) -> tensor<4x16xf32>
    %182 = stablehlo.subtract %180, %181 : tensor<4x16xf32>
    %183 = stablehlo.reshape %182 : (tensor<4x16xf32>) -> tensor<8x8xf32>
    %184 = stablehlo.add %175, %175 : tensor<8x8xf32>
    %185 = stablehlo.transpose %arg0, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %186 = stablehlo.add %179, %185 : tensor<8x8xf32>
    %187 = stablehlo.transpose %186, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %188 = stablehlo.add %183, %183 : tensor<8x8xf32>
    %189 = stablehlo.add %98, %54 : tensor<8x8xf32>
    %190 = stablehlo.add %184, %189 : tensor<8x8xf32>
    %191 = stablehlo.subtract %arg3, %187 : tensor<8x8xf32>
    %192 = stablehlo.negate %191 : tensor<8x8xf32>
    %193 = stablehlo.negate %101 : tensor<8x8xf32>
    %194 = stablehlo.add %188, %193 : tensor<8x8xf32>
    %195 = stablehlo.add %arg0, %190 : tensor<8x8xf32>
    %196 = stablehlo.add %195, %arg1 : tensor<8x8xf32>
    %197 = stablehlo.subtract %arg2, %192 : tensor<8x8xf32>
    %198 = stablehlo.negate %197 : tensor<8x8xf32>
    %199 = stablehlo.reshape %194 : (tensor<8x8xf32>) -> tensor<4x16xf32>
    %200 = stablehlo.reshape %88 : (tensor<8x8xf32>) -> tensor<4x16xf32>
    %201 = stablehlo.subtract %199, %200 : tensor<4x16xf32>
    %202 = stablehlo.reshape %201 : (tensor<4x16xf32>) -> tensor<8x8xf32>
    %203 = stablehlo.multiply %arg2, %arg1 : tensor<8x8xf32>
    %204 = stablehlo.add %196, %203 : tensor<8x8xf32>
    %205 = stablehlo.transpose %27, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %206 = stablehlo.add %198, %205 : tensor<8x8xf32>
    %207 = stablehlo.transpose %206, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %208 = stablehlo.add %54, %202 : tensor<8x8xf32>
    %209 = stablehlo.add %208, %arg2 : tensor<8x8xf32>
    %210 = stablehlo.subtract %86, %204 : tensor<8x8xf32>
    %211 = stablehlo.negate %210 : tensor<8x8xf32>
    %212 = stablehlo.subtract %55, %207 : tensor<8x8xf32>
    %213 = stablehlo.negate %212 : tensor<8x8xf32>
    %214 = stablehlo.reshape %209 : (tensor<8x8xf32>) -> tensor<4x16xf32>
    %215 = stablehlo.reshape %arg3 : (tensor<8x8xf32>) -> tensor<4x16xf32>
    %216 = stablehlo.subtract %214, %215 : tensor<4x16xf32>
    %217 = stablehlo.reshape %216 : (tensor<4x16xf32>) -> tensor<8x8xf32>
    %218 = stablehlo.add %arg3, %211 : tensor<8x8xf32>
    %219 = stablehlo.add %213, %213 : tensor<8x8xf32>
    %220 = stablehlo.add %98, %arg2 : tensor<8x8xf32>
    %221 = stablehlo.add %217, %220 : tensor<8x8xf32>
    %222 = stablehlo.transpose %arg3, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %cst_4 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %223 = stablehlo.reduce(%222 init: %cst_4) applies stablehlo.add across dimensions = [1] : (tensor<8x8xf32>, tensor<f32>) -> tensor<8xf32>
    %224 = stablehlo.broadcast_in_dim %223, dims = [1] : (tensor<8xf32>) -> tensor<8x8xf32>
    %225 = stablehlo.add %224, %218 : tensor<8x8xf32>
    %226 = stablehlo.negate %arg3 : tensor<8x8xf32>
    %227 = stablehlo.add %219, %226 : tensor<8x8xf32>
    %228 = stablehlo.add %arg1, %80 : tensor<8x8xf32>
    %229 = stablehlo.add %221, %228 : tensor<8x8xf32>
    %230 = stablehlo.multiply %arg2, %arg1 : tensor<8x8xf32>
    %231 = stablehlo.add %225, %230 : tensor<8x8xf32>
    return %229, %231, %227 : tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>
  }
}
