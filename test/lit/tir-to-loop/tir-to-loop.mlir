// RUN: deplo-opt %s -p tir-to-loop | filecheck %s

// Each tir op becomes one kernel writing its last argument, launched from the host function.
// CHECK-LABEL: loop.kernel @b(%bias: memref<64xf32>, %out: memref<16x64xf32>) {
// CHECK:         loop.for %[[I:.*]] = 0 to 16 free {
// CHECK-NEXT:      loop.for %[[J:.*]] = 0 to 64 free {
// CHECK-NEXT:        %[[V:.*]] = loop.load %bias[%[[I]], %[[J]]] map (d0, d1) -> (d1) : memref<64xf32>
// CHECK-NEXT:        loop.store %[[V]], %out[%[[I]], %[[J]]] : memref<16x64xf32>

// CHECK-LABEL: loop.kernel @s(%x: memref<16x64xf32>, %b: memref<16x64xf32>, %out: memref<16x64xf32>) {
// CHECK:           arith.addf

// A reduction: free loops over the kept dims, a reduce loop carrying the accumulator.
// CHECK-LABEL: loop.kernel @r(%s: memref<16x64xf32>, %out: memref<64xf32>) {
// CHECK:         %[[NEGINF:.*]] = arith.constant 0xff800000 : f32
// CHECK:         loop.for %[[A:.*]] = 0 to 64 free {
// CHECK-NEXT:      %[[R:.*]] = loop.for %[[K:.*]] = 0 to 16 reduce iter(%[[ACC:.*]] = %[[NEGINF]]) -> f32 {
// CHECK-NEXT:        %[[L:.*]] = loop.load %s[%[[K]], %[[A]]] : memref<16x64xf32>
// CHECK-NEXT:        %[[M:.*]] = arith.maximumf %[[ACC]], %[[L]] : f32
// CHECK-NEXT:        loop.yield %[[M]] : f32
// CHECK:           loop.store %[[R]], %out[%[[A]]] : memref<64xf32>

// CHECK-LABEL: loop.kernel @z(%out: memref<64xf32>) {
// CHECK:         arith.constant 5.000000e-01 : f32

// CHECK-LABEL: func.func @main(%x: memref<16x64xf32>, %bias: memref<64xf32>) -> memref<64xf32> {
// CHECK-NEXT:    %b = memref.alloc() : memref<16x64xf32>
// CHECK-NEXT:    loop.launch @b(%bias, %b) : memref<64xf32>, memref<16x64xf32>
// CHECK-NEXT:    %s = memref.alloc() : memref<16x64xf32>
// CHECK-NEXT:    loop.launch @s(%x, %b, %s)
// CHECK:         func.return %o : memref<64xf32>
func.func @main(%x: tensor<16x64xf32>, %bias: tensor<64xf32>) -> tensor<64xf32> {
  %b = tir.index_map %bias (i, j) -> (j) : tensor<64xf32> -> tensor<16x64xf32>
  %s = tir.elementwise add(%x, %b) : tensor<16x64xf32>
  %r = tir.reduce max %s [0] : tensor<16x64xf32> -> tensor<64xf32>
  %z = tir.full 0.5 : tensor<64xf32>
  %o = tir.elementwise mul(%r, %z) : tensor<64xf32>
  func.return %o : tensor<64xf32>
}
