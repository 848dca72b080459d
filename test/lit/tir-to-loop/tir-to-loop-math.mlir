// RUN: deplo-opt %s -p tir-to-loop | filecheck %s

// A comparison is one arith.cmpf per element: ordered, except ne (NaN != x is true, as torch).
// CHECK-LABEL: loop.kernel @c(%x: memref<4x6xf32>, %y: memref<4x6xf32>, %out: memref<4x6xi1>) {
// CHECK:         %[[X:.*]] = loop.load %x[%[[I:.*]], %[[J:.*]]] : memref<4x6xf32>
// CHECK-NEXT:    %[[Y:.*]] = loop.load %y[%[[I]], %[[J]]] : memref<4x6xf32>
// CHECK-NEXT:    %[[C:.*]] = arith.cmpf olt, %[[X]], %[[Y]] : f32
// CHECK-NEXT:    loop.store %[[C]], %out[%[[I]], %[[J]]] : memref<4x6xi1>
// CHECK-LABEL: loop.kernel @n(
// CHECK:         arith.cmpf une
// CHECK-LABEL: loop.kernel @a(%c: memref<4x6xi1>, %n: memref<4x6xi1>, %out: memref<4x6xi1>) {
// CHECK:         arith.ori %{{.*}}, %{{.*}} : i1

// select loads the condition with the operands.
// CHECK-LABEL: loop.kernel @s(%a: memref<4x6xi1>, %x: memref<4x6xf32>, %y: memref<4x6xf32>, %out: memref<4x6xf32>) {
// CHECK:         %[[A:.*]] = loop.load %a
// CHECK-NEXT:    %[[SX:.*]] = loop.load %x
// CHECK-NEXT:    %[[SY:.*]] = loop.load %y
// CHECK-NEXT:    %[[S:.*]] = arith.select %[[A]], %[[SX]], %[[SY]] : f32
// CHECK-NEXT:    loop.store %[[S]], %out
// CHECK-LABEL: loop.kernel @p(
// CHECK:         math.powf %{{.*}}, %{{.*}} : f32
// CHECK-LABEL: loop.kernel @e(
// CHECK:         math.erf %{{.*}} : f32

// Casts: extf / truncf (f16 <-> bf16 through f32), uitofp from i1, cmpf une 0 to i1.
// CHECK-LABEL: loop.kernel @b(%h: memref<4x6xf16>, %out: memref<4x6xbf16>) {
// CHECK:         %[[H:.*]] = arith.extf %{{.*}} : f16 to f32
// CHECK-NEXT:    arith.truncf %[[H]] : f32 to bf16
// CHECK-LABEL: loop.kernel @t(
// CHECK:         arith.truncf %{{.*}} : f32 to f16
// CHECK-LABEL: loop.kernel @w(
// CHECK:         arith.extf %{{.*}} : f16 to f32
// CHECK-LABEL: loop.kernel @f(
// CHECK:         arith.uitofp %{{.*}} : i1 to f32
// CHECK-LABEL: loop.kernel @z(
// CHECK:         %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    arith.cmpf une, %{{.*}}, %[[ZERO]] : f32
func.func @main(%x: tensor<4x6xf32>, %y: tensor<4x6xf32>, %h: tensor<4x6xf16>) -> (tensor<4x6xbf16>, tensor<4x6xf16>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xi1>) {
  %c = tir.compare lt(%x, %y) : tensor<4x6xf32> -> tensor<4x6xi1>
  %n = tir.compare ne(%x, %y) : tensor<4x6xf32> -> tensor<4x6xi1>
  %a = tir.elementwise or(%c, %n) : tensor<4x6xi1>
  %s = tir.select %a, %x, %y : tensor<4x6xf32>
  %p = tir.elementwise pow(%s, %y) : tensor<4x6xf32>
  %e = tir.elementwise erf(%p) : tensor<4x6xf32>
  %b = tir.cast %h : tensor<4x6xf16> -> tensor<4x6xbf16>
  %t = tir.cast %e : tensor<4x6xf32> -> tensor<4x6xf16>
  %w = tir.cast %h : tensor<4x6xf16> -> tensor<4x6xf32>
  %f = tir.cast %a : tensor<4x6xi1> -> tensor<4x6xf32>
  %z = tir.cast %w : tensor<4x6xf32> -> tensor<4x6xi1>
  func.return %b, %t, %w, %f, %z : tensor<4x6xbf16>, tensor<4x6xf16>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xi1>
}
