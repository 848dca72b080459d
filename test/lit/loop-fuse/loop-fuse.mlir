// RUN: deplo-opt %s --split-input-file -p tir-to-loop,loop-fuse | filecheck %s

// relu((x + b) @ w): ONE kernel; the 16x16x64 product is never materialized, the bias add sits
// inside the reduce loop, the relu after it.
// CHECK-LABEL: loop.kernel @relu_matmul(%x: memref<16x64xf32>, %b: memref<64xf32>, %w: memref<64x16xf32>, %out: memref<16x16xf32>) {
// CHECK:         loop.for %[[I:.*]] = 0 to 16 free {
// CHECK-NEXT:      loop.for %[[J:.*]] = 0 to 16 free {
// CHECK-NEXT:        %[[ACC:.*]] = loop.for %[[K:.*]] = 0 to 64 reduce
// CHECK:               loop.load %x[%[[I]], %[[K]]] : memref<16x64xf32>
// CHECK:               loop.load %b[%[[I]], %[[K]]] map (d0, d1) -> (d1) : memref<64xf32>
// CHECK:               arith.addf
// CHECK:               loop.load %w[%[[I]], %[[J]], %[[K]]] map (d0, d1, d2) -> (d2, d1) : memref<64x16xf32>
// CHECK:               arith.mulf
// CHECK:             %[[R:.*]] = arith.maximumf %[[ACC]], %{{.*}} : f32
// CHECK-NEXT:        loop.store %[[R]], %out[%[[I]], %[[J]]] : memref<16x16xf32>
// CHECK-NOT:   loop.kernel
// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %[[O:.*]] = memref.alloc() : memref<16x16xf32>
// CHECK-NEXT:    loop.launch @relu_matmul(%x, %b, %w, %[[O]])
// CHECK-NEXT:    func.return %[[O]]
func.func @main(%x: tensor<16x64xf32>, %b: tensor<64xf32>, %w: tensor<64x16xf32>) -> tensor<16x16xf32> {
  %bb = tir.index_map %b (i, j) -> (j) {} : tensor<64xf32> -> tensor<16x64xf32>
  %relu = tir.elementwise add(%x, %bb) : tensor<16x64xf32>
  %pa = tir.index_map %relu (i, j, k) -> (i, k) : tensor<16x64xf32> -> tensor<16x16x64xf32>
  %pw = tir.index_map %w (i, j, k) -> (k, j) : tensor<64x16xf32> -> tensor<16x16x64xf32>
  %p = tir.elementwise mul(%pa, %pw) : tensor<16x16x64xf32>
  %matmul = tir.reduce add %p [2] : tensor<16x16x64xf32> -> tensor<16x16xf32>
  %z = tir.full 0.0 : tensor<16x16xf32>
  %relu_1 = tir.elementwise max(%matmul, %z) : tensor<16x16xf32>
  func.return %relu_1 : tensor<16x16xf32>
}

// -----

// A row reduction feeding a broadcast: hoisted once per row, in front of the epilogue loop.
// CHECK-LABEL: loop.kernel @norm(%x: memref<4x8xf32>, %out: memref<4x8xf32>) {
// CHECK:         loop.for %[[I:.*]] = 0 to 4 free {
// CHECK-NEXT:      %[[S:.*]] = loop.for %{{.*}} = 0 to 8 reduce
// CHECK:           loop.for %[[J:.*]] = 0 to 8 free {
// CHECK:             arith.divf %{{.*}}, %[[S]]
// CHECK-NOT:   loop.kernel
func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %norm = tir.reduce add %x [1] : tensor<4x8xf32> -> tensor<4xf32>
  %norm_1 = tir.index_map %norm (i, j) -> (i) : tensor<4xf32> -> tensor<4x8xf32>
  %norm_2 = tir.elementwise div(%x, %norm_1) : tensor<4x8xf32>
  func.return %norm_2 : tensor<4x8xf32>
}

// -----

// negative_reduce_in_reduce: a reduction read inside another reduction at an index that does
// not use every enclosing loop (here j) would be recomputed per j: it stays its own kernel.
// CHECK-LABEL: loop.kernel @rowsum
// CHECK-LABEL: loop.kernel @mm
// CHECK:         loop.load %rowsum
// CHECK-LABEL: func.func @main
// CHECK:         loop.launch @rowsum
// CHECK:         loop.launch @mm
func.func @main(%x: tensor<4x8x3xf32>, %w: tensor<8x5xf32>) -> tensor<4x5xf32> {
  %rowsum = tir.reduce add %x [2] : tensor<4x8x3xf32> -> tensor<4x8xf32>
  %pa = tir.index_map %rowsum (i, j, k) -> (i, k) : tensor<4x8xf32> -> tensor<4x5x8xf32>
  %pw = tir.index_map %w (i, j, k) -> (k, j) : tensor<8x5xf32> -> tensor<4x5x8xf32>
  %p = tir.elementwise mul(%pa, %pw) : tensor<4x5x8xf32>
  %mm = tir.reduce add %p [2] : tensor<4x5x8xf32> -> tensor<4x5xf32>
  func.return %mm : tensor<4x5xf32>
}

// -----

// negative_returned: a buffer the function returns is written out even when a consumer could
// inline it; a dead value is removed.
// CHECK-LABEL: loop.kernel @e
// CHECK-LABEL: loop.kernel @f
// CHECK-NOT:   loop.kernel @dead
// CHECK-LABEL: func.func @main
// CHECK:         loop.launch @e
// CHECK:         loop.launch @f
// CHECK:         func.return %e, %f
func.func @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %e = tir.elementwise exp(%x) : tensor<4xf32>
  %dead = tir.elementwise neg(%x) : tensor<4xf32>
  %f = tir.elementwise neg(%e) : tensor<4xf32>
  func.return %e, %f : tensor<4xf32>, tensor<4xf32>
}

// -----

// An iota uses its loop index as a value: fused where the consumer reads it at a plain loop
// index (the index_cast then takes the consumer's index), here through a broadcast and as the
// row index of a gather.
// CHECK-LABEL: loop.kernel @g(%w: memref<9x4xf32>, %out: memref<2x5x4xf32>) {
// CHECK:         loop.for %{{.*}} = 0 to 2 free {
// CHECK-NEXT:      loop.for %[[S:.*]] = 0 to 5 free {
// CHECK-NEXT:        loop.for %[[D:.*]] = 0 to 4 free {
// CHECK-NEXT:          %[[I:.*]] = arith.index_cast %[[S]] : index to i64
// CHECK-NEXT:          %[[J:.*]] = arith.addi %[[I]], %{{.*}} : i64
// CHECK-NEXT:          %[[X:.*]] = arith.index_cast %[[J]] : i64 to index
// CHECK-NEXT:          loop.load %w[%{{.*}}, %[[S]], %[[D]], %[[X]]] map (d0, d1, d2, d3) -> (d3, d2) : memref<9x4xf32>
// CHECK-NOT:     loop.kernel @p
func.func @iota_into_gather(%w: tensor<9x4xf32>) -> tensor<2x5x4xf32> {
  %p = tir.iota dim 0 start 2 step 1 : tensor<5xi64>
  %b = tir.index_map %p (d0, d1) -> (d1) : tensor<5xi64> -> tensor<2x5xi64>
  %g = tir.gather %w (d0, d1, d2)[s0] -> (s0, d2) indices(%b (d0, d1, d2) -> (d0, d1)) : tensor<9x4xf32>, tensor<2x5xi64> -> tensor<2x5x4xf32>
  func.return %g : tensor<2x5x4xf32>
}

// -----

// Read at a computed coordinate (a slice with a step), the iota stays its own kernel.
// CHECK-LABEL: loop.kernel @p(%out: memref<8xi64>) {
// CHECK-LABEL: loop.kernel @s(%p: memref<8xi64>, %out: memref<4xi64>) {
// CHECK:         loop.load %p[%{{.*}}] map (d0) -> ((d0 * 2)) : memref<8xi64>
func.func @negative_iota_strided() -> tensor<4xi64> {
  %p = tir.iota dim 0 start 0 step 1 : tensor<8xi64>
  %s = tir.index_map %p (d0) -> (d0 * 2) : tensor<8xi64> -> tensor<4xi64>
  func.return %s : tensor<4xi64>
}
