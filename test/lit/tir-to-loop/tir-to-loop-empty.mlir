// RUN: deplo-opt %s -p tir-to-loop | filecheck %s

// Zero-size tensors: an op whose result is empty has no kernel (its buffer is only allocated);
// a reduction over an empty dim stores the combiner's identity, with no reduce loop.
// CHECK-NOT:     loop.kernel @e(
// CHECK-LABEL: loop.kernel @s(%e: memref<4x0xf32>, %out: memref<4xf32>) {
// CHECK-NEXT:    %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    loop.for %[[I:.*]] = 0 to 4 free {
// CHECK-NEXT:      loop.store %[[ZERO]], %out[%[[I]]] : memref<4xf32>
// CHECK-LABEL: loop.kernel @c2(%s: memref<4xf32>, %out: memref<4xf32>) {
// CHECK-LABEL: func.func @main(%x: memref<4x0xf32>) -> (memref<4x0xf32>, memref<4xf32>) {
// CHECK-NEXT:    %e = memref.alloc() : memref<4x0xf32>
// CHECK-NEXT:    %s = memref.alloc() : memref<4xf32>
// CHECK-NEXT:    loop.launch @s(%e, %s)
// CHECK-NOT:     loop.launch @e
func.func @main(%x: tensor<4x0xf32>) -> (tensor<4x0xf32>, tensor<4xf32>) {
  %e = tir.elementwise exp(%x) : tensor<4x0xf32>
  %s = tir.reduce add %e [1] : tensor<4x0xf32> -> tensor<4xf32>
  %c = tir.concat %e, %e [1] : tensor<4x0xf32>, tensor<4x0xf32> -> tensor<4x0xf32>
  %c2 = tir.elementwise exp(%s) : tensor<4xf32>
  func.return %e, %s : tensor<4x0xf32>, tensor<4xf32>
}
