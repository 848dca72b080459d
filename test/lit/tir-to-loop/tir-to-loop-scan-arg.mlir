// RUN: deplo-opt %s -p tir-to-loop | filecheck %s

// A scan is a reduction over every j of the dim where j > i contributes the identity: the
// serial order of a scan, in a reduction kernel's canonical form.
// CHECK-LABEL: loop.kernel @c(%x: memref<4x5xf32>, %out: memref<4x5xf32>) {
// CHECK:         %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:         loop.for %[[I:.*]] = 0 to 4 free {
// CHECK-NEXT:      loop.for %[[J:.*]] = 0 to 5 free {
// CHECK-NEXT:        %[[R:.*]] = loop.for %[[K:.*]] = 0 to 5 reduce iter(%[[ACC:.*]] = %[[ZERO]]) -> f32 {
// CHECK-NEXT:          %[[V:.*]] = loop.load %x[%[[I]], %[[K]]] : memref<4x5xf32>
// CHECK-NEXT:          %[[KEEP:.*]] = arith.cmpi sle, %[[K]], %[[J]] : index
// CHECK-NEXT:          %[[VK:.*]] = arith.select %[[KEEP]], %[[V]], %[[ZERO]] : f32
// CHECK-NEXT:          %[[S:.*]] = arith.addf %[[ACC]], %[[VK]] : f32
// CHECK-NEXT:          loop.yield %[[S]] : f32
// CHECK:             loop.store %[[R]], %out[%[[I]], %[[J]]] : memref<4x5xf32>

// argmax carries (best value, its index): a strictly greater value or the first NaN replaces
// them, so the first of equal values stays.
// CHECK-LABEL: loop.kernel @a(%x: memref<4x5xf32>, %out: memref<4xi64>) {
// CHECK:         %[[NEGINF:.*]] = arith.constant 0xff800000 : f32
// CHECK-NEXT:    %[[I0:.*]] = arith.constant 0 : i64
// CHECK:           %{{.*}}, %[[IDX:.*]] = loop.for %[[K:.*]] = 0 to 5 reduce iter(%[[BEST:.*]] = %[[NEGINF]], %[[AT:.*]] = %[[I0]]) -> (f32, i64) {
// CHECK-NEXT:        %[[V:.*]] = loop.load %x
// CHECK-NEXT:        %[[GT:.*]] = arith.cmpf ogt, %[[V]], %[[BEST]] : f32
// CHECK-NEXT:        %[[NAN:.*]] = arith.cmpf une, %[[V]], %[[V]] : f32
// CHECK-NEXT:        %[[NUM:.*]] = arith.cmpf oeq, %[[BEST]], %[[BEST]] : f32
// CHECK-NEXT:        %[[FIRSTNAN:.*]] = arith.andi %[[NAN]], %[[NUM]] : i1
// CHECK-NEXT:        %[[TAKE:.*]] = arith.ori %[[GT]], %[[FIRSTNAN]] : i1
// CHECK-NEXT:        %[[KI:.*]] = arith.index_cast %[[K]] : index to i64
// CHECK-NEXT:        %[[NB:.*]] = arith.select %[[TAKE]], %[[V]], %[[BEST]] : f32
// CHECK-NEXT:        %[[NI:.*]] = arith.select %[[TAKE]], %[[KI]], %[[AT]] : i64
// CHECK-NEXT:        loop.yield %[[NB]], %[[NI]] : f32, i64
// CHECK:           loop.store %[[IDX]], %out

// Integer casts and integer arithmetic: sitofp, addi.
// CHECK-LABEL: loop.kernel @f(%i: memref<4x5xi32>, %out: memref<4x5xf32>) {
// CHECK:           arith.sitofp %{{.*}} : i32 to f32
// CHECK-LABEL: loop.kernel @n(%i: memref<4x5xi32>, %i_1: memref<4x5xi32>, %out: memref<4x5xi32>) {
// CHECK:           arith.addi %{{.*}}, %{{.*}} : i32
func.func @main(%x: tensor<4x5xf32>, %i: tensor<4x5xi32>) -> (tensor<4x5xf32>, tensor<4xi64>, tensor<4x5xf32>, tensor<4x5xi32>) {
  %c = tir.scan add %x [1] : tensor<4x5xf32>
  %a = tir.reduce argmax %x [1] : tensor<4x5xf32> -> tensor<4xi64>
  %f = tir.cast %i : tensor<4x5xi32> -> tensor<4x5xf32>
  %n = tir.elementwise add(%i, %i) : tensor<4x5xi32>
  func.return %c, %a, %f, %n : tensor<4x5xf32>, tensor<4xi64>, tensor<4x5xf32>, tensor<4x5xi32>
}
