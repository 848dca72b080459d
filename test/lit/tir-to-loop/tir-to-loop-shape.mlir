// RUN: deplo-opt %s -p tir-to-loop | filecheck %s

// Gather: the index value is loaded at its map, cast to `index`, and becomes an extra operand
// of the table load, whose map takes (ivs..., index values...).
// CHECK-LABEL: loop.kernel @g(%w: memref<10x4xf32>, %ids: memref<2x3xi64>, %out: memref<2x3x4xf32>) {
// CHECK:         loop.for %[[I:.*]] = 0 to 2 free {
// CHECK-NEXT:      loop.for %[[J:.*]] = 0 to 3 free {
// CHECK-NEXT:        loop.for %[[K:.*]] = 0 to 4 free {
// CHECK-NEXT:          %[[ID:.*]] = loop.load %ids[%[[I]], %[[J]], %[[K]]] map (d0, d1, d2) -> (d0, d1) : memref<2x3xi64>
// CHECK-NEXT:          %[[IX:.*]] = arith.index_cast %[[ID]] : i64 to index
// CHECK-NEXT:          %[[V:.*]] = loop.load %w[%[[I]], %[[J]], %[[K]], %[[IX]]] map (d0, d1, d2, d3) -> (d3, d2) : memref<10x4xf32>
// CHECK-NEXT:          loop.store %[[V]], %out[%[[I]], %[[J]], %[[K]]] : memref<2x3x4xf32>

// Concat: one kernel, one nest per input, each storing its region (offset along the dim).
// CHECK-LABEL: loop.kernel @c(%a: memref<2x3xf32>, %b: memref<2x5xf32>, %out: memref<2x8xf32>) {
// CHECK:           %[[A:.*]] = loop.load %a[%[[A0:.*]], %[[A1:.*]]] : memref<2x3xf32>
// CHECK-NEXT:      loop.store %[[A]], %out[%[[A0]], %[[A1]]] : memref<2x8xf32>
// CHECK:           %[[B:.*]] = loop.load %b[%[[B0:.*]], %[[B1:.*]]] : memref<2x5xf32>
// CHECK-NEXT:      loop.store %[[B]], %out[%[[B0]], %[[B1]]] map (d0, d1) -> (d0, (d1 + 3)) : memref<2x8xf32>

// Iota: start + step * iv in the element type (integer arithmetic for integers).
// CHECK-LABEL: loop.kernel @p(%out: memref<7xi64>) {
// CHECK-DAG:     %[[START:.*]] = arith.constant 2 : i64
// CHECK-DAG:     %[[STEP:.*]] = arith.constant 3 : i64
// CHECK:         loop.for %[[P:.*]] = 0 to 7 free {
// CHECK-NEXT:      %[[PI:.*]] = arith.index_cast %[[P]] : index to i64
// CHECK-NEXT:      %[[PM:.*]] = arith.muli %[[PI]], %[[STEP]] : i64
// CHECK-NEXT:      %[[PA:.*]] = arith.addi %[[PM]], %[[START]] : i64
// CHECK-NEXT:      loop.store %[[PA]], %out[%[[P]]] : memref<7xi64>

// CHECK-LABEL: loop.kernel @q(%out: memref<2x7xf32>) {
// CHECK:             %[[QI:.*]] = arith.index_cast %{{.*}} : index to i64
// CHECK-NEXT:        %[[QF:.*]] = arith.sitofp %[[QI]] : i64 to f32
// CHECK-NEXT:        arith.mulf %[[QF]]
// CHECK-NEXT:        arith.addf

// An integer full stores an integer constant.
// CHECK-LABEL: loop.kernel @f(%out: memref<3xi64>) {
// CHECK:         %[[C:.*]] = arith.constant 3 : i64
// CHECK:         loop.store %[[C]], %out
func.func @main(%w: tensor<10x4xf32>, %ids: tensor<2x3xi64>, %a: tensor<2x3xf32>, %b: tensor<2x5xf32>) -> (tensor<2x3x4xf32>, tensor<2x8xf32>, tensor<7xi64>, tensor<2x7xf32>, tensor<3xi64>) {
  %g = tir.gather %w (d0, d1, d2)[s0] -> (s0, d2) indices(%ids (d0, d1, d2) -> (d0, d1)) : tensor<10x4xf32>, tensor<2x3xi64> -> tensor<2x3x4xf32>
  %c = tir.concat %a, %b [1] : tensor<2x3xf32>, tensor<2x5xf32> -> tensor<2x8xf32>
  %p = tir.iota dim 0 start 2 step 3 : tensor<7xi64>
  %q = tir.iota dim 1 start 1.5 step -0.5 : tensor<2x7xf32>
  %f = tir.full 3 : tensor<3xi64>
  func.return %g, %c, %p, %q, %f : tensor<2x3x4xf32>, tensor<2x8xf32>, tensor<7xi64>, tensor<2x7xf32>, tensor<3xi64>
}
