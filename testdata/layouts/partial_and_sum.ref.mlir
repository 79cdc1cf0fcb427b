module @jit_partial_ref attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x16xf32>, %arg1: tensor<16x8xf32>) -> (tensor<4x8xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
    %1 = stablehlo.tanh %0 : tensor<4x8xf32>
    %2 = stablehlo.multiply %1, %0 : tensor<4x8xf32>
    %3 = stablehlo.tanh %2 : tensor<4x8xf32>
    %4 = stablehlo.multiply %0, %0 : tensor<4x8xf32>
    %5 = stablehlo.add %3, %4 : tensor<4x8xf32>
    %6 = stablehlo.tanh %5 : tensor<4x8xf32>
    return %6 : tensor<4x8xf32>
  }
}
