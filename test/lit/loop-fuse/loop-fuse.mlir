// RUN: deplo-opt %s --split-input-file -p tir-to-loop,loop-fuse | filecheck %s
// RUN: deplo-opt %s --split-input-file -p "tir-to-loop,loop-fuse{recompute-reductions=false}" | filecheck %s --check-prefix=NORECOMPUTE

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

// Read at a computed coordinate (a slice with a step), the iota is inlined with that
// coordinate computed (a conv's im2col mask reads its kernel row at `(k floordiv 3) mod 3`).
// CHECK-NOT:   loop.kernel @p(
// CHECK-LABEL: loop.kernel @s(%out: memref<4xi64>) {
// CHECK:         %[[TWO:.*]] = arith.constant 2 : index
// CHECK-NEXT:    %[[C:.*]] = arith.muli %{{.*}}, %[[TWO]] : index
// CHECK-NEXT:    %[[V:.*]] = arith.index_cast %[[C]] : index to i64
// CHECK-NEXT:    loop.store %[[V]], %out
func.func @iota_strided() -> tensor<4xi64> {
  %p = tir.iota dim 0 start 0 step 1 : tensor<8xi64>
  %s = tir.index_map %p (d0) -> (d0 * 2) : tensor<8xi64> -> tensor<4xi64>
  func.return %s : tensor<4xi64>
}

// -----

// A projection's bias add is its epilogue (the only reader of the product, one element each):
// it moves into the matmul kernel before the next matmul could pull it into its K loop.
// CHECK-LABEL: loop.kernel @bias_mm(%x: memref<4x8xf32>, %w: memref<8x8xf32>, %b: memref<8xf32>, %out: memref<4x8xf32>) {
// CHECK:         %[[ACC:.*]] = loop.for %{{.*}} = 0 to 8 reduce
// CHECK:         %[[B:.*]] = loop.load %b[%{{.*}}, %{{.*}}] map (d0, d1) -> (d1) : memref<8xf32>
// CHECK-NEXT:    %[[Y:.*]] = arith.addf %[[ACC]], %[[B]] : f32
// CHECK-NEXT:    loop.store %[[Y]], %out
// CHECK-LABEL: loop.kernel @out(%bias: memref<4x8xf32>, %w2: memref<8x8xf32>, %out: memref<4x8xf32>) {
// CHECK-NOT:     loop.load %b[
// CHECK-LABEL: func.func @epilogue
func.func @epilogue(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>, %w2: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %pa = tir.index_map %x (i, j, k) -> (i, k) : tensor<4x8xf32> -> tensor<4x8x8xf32>
  %pw = tir.index_map %w (i, j, k) -> (k, j) : tensor<8x8xf32> -> tensor<4x8x8xf32>
  %p = tir.elementwise mul(%pa, %pw) : tensor<4x8x8xf32>
  %mm = tir.reduce add %p [2] : tensor<4x8x8xf32> -> tensor<4x8xf32>
  %bb = tir.index_map %b (i, j) -> (j) : tensor<8xf32> -> tensor<4x8xf32>
  %bias = tir.elementwise add(%mm, %bb) : tensor<4x8xf32>
  %qa = tir.index_map %bias (i, j, k) -> (i, k) : tensor<4x8xf32> -> tensor<4x8x8xf32>
  %qw = tir.index_map %w2 (i, j, k) -> (k, j) : tensor<8x8xf32> -> tensor<4x8x8xf32>
  %q = tir.elementwise mul(%qa, %qw) : tensor<4x8x8xf32>
  %out = tir.reduce add %q [2] : tensor<4x8x8xf32> -> tensor<4x8xf32>
  func.return %out : tensor<4x8xf32>
}

// -----

// negative_reduction_read_twice: a matmul read by two kernels is written once; moving its K loop
// into each reader would read the weights twice (it reads data they do not read otherwise).
// CHECK-LABEL: loop.kernel @mm(
// CHECK-LABEL: loop.kernel @e(%mm: memref<4x8xf32>
// CHECK-NOT:     reduce
// CHECK-LABEL: loop.kernel @n(%mm: memref<4x8xf32>
// CHECK-NOT:     reduce
// CHECK-LABEL: func.func @negative_reduction_read_twice
// CHECK:         loop.launch @mm(%x, %w, %mm)
func.func @negative_reduction_read_twice(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %pa = tir.index_map %x (i, j, k) -> (i, k) : tensor<4x8xf32> -> tensor<4x8x8xf32>
  %pw = tir.index_map %w (i, j, k) -> (k, j) : tensor<8x8xf32> -> tensor<4x8x8xf32>
  %p = tir.elementwise mul(%pa, %pw) : tensor<4x8x8xf32>
  %mm = tir.reduce add %p [2] : tensor<4x8x8xf32> -> tensor<4x8xf32>
  %e = tir.elementwise exp(%mm) : tensor<4x8xf32>
  %n = tir.elementwise neg(%mm) : tensor<4x8xf32>
  func.return %e, %n : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// A row statistic read by two projections (RMSNorm before q and k) is recomputed in each: it
// reads only x, which both read anyway. With recompute-reductions=false it is its own kernel.
// CHECK-LABEL: loop.kernel @q_ss(%x: memref<4x8xf32>, %wq: memref<8x6xf32>, %out: memref<4x6xf32>) {
// CHECK:         loop.for %[[I:.*]] = 0 to 4 free {
// CHECK-NEXT:      %[[SS:.*]] = loop.for %{{.*}} = 0 to 8 reduce
// CHECK:           loop.for %{{.*}} = 0 to 6 free {
// CHECK:             arith.divf %{{.*}}, %[[SS]] : f32
// CHECK-LABEL: loop.kernel @k_ss(%x: memref<4x8xf32>, %wk: memref<8x2xf32>, %out: memref<4x2xf32>) {
// CHECK:           loop.for %{{.*}} = 0 to 8 reduce
// CHECK-LABEL: func.func @norm_feeds_two
// CHECK-NEXT:    memref.alloc
// CHECK-NEXT:    loop.launch @q_ss
// NORECOMPUTE-LABEL: loop.kernel @ss(%x: memref<4x8xf32>, %out: memref<4xf32>) {
// NORECOMPUTE-LABEL: loop.kernel @q(%x: memref<4x8xf32>, %ss: memref<4xf32>, %wq: memref<8x6xf32>, %out: memref<4x6xf32>) {
// NORECOMPUTE-LABEL: loop.kernel @k(%x: memref<4x8xf32>, %ss: memref<4xf32>, %wk: memref<8x2xf32>, %out: memref<4x2xf32>) {
// NORECOMPUTE-LABEL: func.func @norm_feeds_two
// NORECOMPUTE:         loop.launch @ss(%x, %[[SS:.*]]) :
// NORECOMPUTE:         loop.launch @q(%x, %[[SS]], %wq
// NORECOMPUTE:         loop.launch @k(%x, %[[SS]], %wk
func.func @norm_feeds_two(%x: tensor<4x8xf32>, %wq: tensor<8x6xf32>, %wk: tensor<8x2xf32>) -> (tensor<4x6xf32>, tensor<4x2xf32>) {
  %sq = tir.elementwise mul(%x, %x) : tensor<4x8xf32>
  %ss = tir.reduce add %sq [1] : tensor<4x8xf32> -> tensor<4xf32>
  %bs = tir.index_map %ss (i, j) -> (i) : tensor<4xf32> -> tensor<4x8xf32>
  %n = tir.elementwise div(%x, %bs) : tensor<4x8xf32>
  %na = tir.index_map %n (i, j, k) -> (i, k) : tensor<4x8xf32> -> tensor<4x6x8xf32>
  %qw = tir.index_map %wq (i, j, k) -> (k, j) : tensor<8x6xf32> -> tensor<4x6x8xf32>
  %qp = tir.elementwise mul(%na, %qw) : tensor<4x6x8xf32>
  %q = tir.reduce add %qp [2] : tensor<4x6x8xf32> -> tensor<4x6xf32>
  %nb = tir.index_map %n (i, j, k) -> (i, k) : tensor<4x8xf32> -> tensor<4x2x8xf32>
  %kw = tir.index_map %wk (i, j, k) -> (k, j) : tensor<8x2xf32> -> tensor<4x2x8xf32>
  %kp = tir.elementwise mul(%nb, %kw) : tensor<4x2x8xf32>
  %k = tir.reduce add %kp [2] : tensor<4x2x8xf32> -> tensor<4x2xf32>
  func.return %q, %k : tensor<4x6xf32>, tensor<4x2xf32>
}

// -----

// rotate_half's concat read at a plain index along its dim is inlined as a select between its
// parts, each read at a wrapped (always in-bounds) index: no concat kernel, no round trip.
// CHECK-LABEL: loop.kernel @r(%x: memref<2x8xf32>, %s: memref<2x8xf32>, %out: memref<2x8xf32>) {
// CHECK:         %[[C4:.*]] = arith.constant 4 : index
// CHECK:         loop.for %[[J:.*]] = 0 to 8 free {
// CHECK-NEXT:      %[[HI:.*]] = loop.load %x[%{{.*}}, %[[J]]] map (d0, d1) -> (d0, ((d1 mod 4) + 4)) : memref<2x8xf32>
// CHECK-NEXT:      %[[NEG:.*]] = arith.negf %[[HI]] : f32
// CHECK-NEXT:      %[[LO:.*]] = loop.load %x[%{{.*}}, %[[J]]] map (d0, d1) -> (d0, (d1 mod 4)) : memref<2x8xf32>
// CHECK-NEXT:      %[[FIRST:.*]] = arith.cmpi ult, %[[J]], %[[C4]] : index
// CHECK-NEXT:      arith.select %[[FIRST]], %[[NEG]], %[[LO]] : f32
// CHECK-NOT:   loop.kernel @cat
func.func @rotate_half(%x: tensor<2x8xf32>, %s: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %x1 = tir.index_map %x (i, j) -> (i, j) : tensor<2x8xf32> -> tensor<2x4xf32>
  %x2 = tir.index_map %x (i, j) -> (i, j + 4) : tensor<2x8xf32> -> tensor<2x4xf32>
  %n = tir.elementwise neg(%x2) : tensor<2x4xf32>
  %cat = tir.concat %n, %x1 [1] : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x8xf32>
  %r = tir.elementwise mul(%cat, %s) : tensor<2x8xf32>
  func.return %r : tensor<2x8xf32>
}

// -----

// concat_strided: read at a computed coordinate along its dim (a pool's window on a pad), a
// concat is inlined too: the coordinate computed, compared with the second part's offset.
// CHECK-LABEL: loop.kernel @s(%a: memref<2x3xf32>, %b: memref<2x5xf32>, %out: memref<2x4xf32>) {
// CHECK:           %[[J:.*]] = arith.muli %a1, %{{.*}} : index
// CHECK-NEXT:      %[[A:.*]] = loop.load %a[%a0, %a1] map (d0, d1) -> (d0, ((d1 * 2) mod 3)) : memref<2x3xf32>
// CHECK-NEXT:      %[[B:.*]] = loop.load %b[%a0, %a1] map (d0, d1) -> (d0, (((d1 * 2) + 2) mod 5)) : memref<2x5xf32>
// CHECK-NEXT:      %[[IN:.*]] = arith.cmpi ult, %[[J]], %{{.*}} : index
// CHECK-NEXT:      arith.select %[[IN]], %[[A]], %[[B]] : f32
// CHECK-NOT:   loop.kernel @cat
func.func @concat_strided(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>) -> tensor<2x4xf32> {
  %cat = tir.concat %a, %b [1] : tensor<2x3xf32>, tensor<2x5xf32> -> tensor<2x8xf32>
  %s = tir.index_map %cat (i, j) -> (i, j * 2) : tensor<2x8xf32> -> tensor<2x4xf32>
  func.return %s : tensor<2x4xf32>
}

// -----

// silu(gate) * up: both projections become the prologue of one kernel that writes the product
// once; the down projection reads it (rather than recomputing gate and up per output column).
// CHECK-LABEL: loop.kernel @mul_up_silu_gate(%x: memref<4x8xf32>, %wg: memref<8x6xf32>, %wu: memref<8x6xf32>, %out: memref<4x6xf32>) {
// CHECK:         %[[G:.*]] = loop.for %{{.*}} = 0 to 8 reduce
// CHECK:         %[[U:.*]] = loop.for %{{.*}} = 0 to 8 reduce
// CHECK:         %[[M:.*]] = arith.mulf %{{.*}}, %[[U]] : f32
// CHECK-NEXT:    loop.store %[[M]], %out
// CHECK-LABEL: loop.kernel @down(%mul: memref<4x6xf32>, %wd: memref<6x8xf32>, %out: memref<4x8xf32>) {
func.func @silu_gate_up(%x: tensor<4x8xf32>, %wg: tensor<8x6xf32>, %wu: tensor<8x6xf32>, %wd: tensor<6x8xf32>) -> tensor<4x8xf32> {
  %ga = tir.index_map %x (i, j, k) -> (i, k) : tensor<4x8xf32> -> tensor<4x6x8xf32>
  %gw = tir.index_map %wg (i, j, k) -> (k, j) : tensor<8x6xf32> -> tensor<4x6x8xf32>
  %gp = tir.elementwise mul(%ga, %gw) : tensor<4x6x8xf32>
  %gate = tir.reduce add %gp [2] : tensor<4x6x8xf32> -> tensor<4x6xf32>
  %uw = tir.index_map %wu (i, j, k) -> (k, j) : tensor<8x6xf32> -> tensor<4x6x8xf32>
  %up_p = tir.elementwise mul(%ga, %uw) : tensor<4x6x8xf32>
  %up = tir.reduce add %up_p [2] : tensor<4x6x8xf32> -> tensor<4x6xf32>
  %silu = tir.elementwise silu(%gate) : tensor<4x6xf32>
  %mul = tir.elementwise mul(%silu, %up) : tensor<4x6xf32>
  %da = tir.index_map %mul (i, j, k) -> (i, k) : tensor<4x6xf32> -> tensor<4x8x6xf32>
  %dw = tir.index_map %wd (i, j, k) -> (k, j) : tensor<6x8xf32> -> tensor<4x8x6xf32>
  %dp = tir.elementwise mul(%da, %dw) : tensor<4x8x6xf32>
  %down = tir.reduce add %dp [2] : tensor<4x8x6xf32> -> tensor<4x8xf32>
  func.return %down : tensor<4x8xf32>
}

// -----

// A column statistic read back over the rows: the consumer's perfect free nest is interchanged
// (free iterations are independent) so the column loop encloses the row loop and the sum is
// computed once per column, in the same kernel.
// CHECK-LABEL: loop.kernel @d_s(%x: memref<5x3xf32>, %out: memref<5x3xf32>) {
// CHECK:         loop.for %[[J:.*]] = 0 to 3 free {
// CHECK-NEXT:      %[[S:.*]] = loop.for %{{.*}} = 0 to 5 reduce
// CHECK:           loop.for %[[I:.*]] = 0 to 5 free {
// CHECK:             arith.divf %{{.*}}, %[[S]] : f32
// CHECK:             loop.store %{{.*}}, %out[%[[I]], %[[J]]] : memref<5x3xf32>
func.func @column_norm(%x: tensor<5x3xf32>) -> tensor<5x3xf32> {
  %s = tir.reduce add %x [0] : tensor<5x3xf32> -> tensor<3xf32>
  %b = tir.index_map %s (i, j) -> (j) : tensor<3xf32> -> tensor<5x3xf32>
  %d = tir.elementwise div(%x, %b) : tensor<5x3xf32>
  func.return %d : tensor<5x3xf32>
}

// -----

// negative_multiplied_reads: silu(gate) * up read inside the down projection's K loop would be
// evaluated once per output column and read gate AND up per MAC: it stays its own kernel.
// CHECK-LABEL: loop.kernel @h
// CHECK-LABEL: loop.kernel @down
// CHECK:         loop.load %h
// CHECK-NOT:     loop.load %gate
// CHECK-LABEL: func.func @main
// CHECK:         loop.launch @h
// CHECK:         loop.launch @down
func.func @main(%gate: tensor<4x16xf32>, %up: tensor<4x16xf32>, %w: tensor<16x8xf32>) -> tensor<4x8xf32> {
  %h = tir.elementwise silu(%gate) : tensor<4x16xf32>
  %h_1 = tir.elementwise mul(%h, %up) : tensor<4x16xf32>
  %pa = tir.index_map %h_1 (i, j, k) -> (i, k) : tensor<4x16xf32> -> tensor<4x8x16xf32>
  %pw = tir.index_map %w (i, j, k) -> (k, j) : tensor<16x8xf32> -> tensor<4x8x16xf32>
  %p = tir.elementwise mul(%pa, %pw) : tensor<4x8x16xf32>
  %down = tir.reduce add %p [2] : tensor<4x8x16xf32> -> tensor<4x8xf32>
  func.return %down : tensor<4x8xf32>
}

// -----

// An f16 window copy (a conv's im2col, read at `d2 + (d1 mod 3)`) is inlined into a matmul's
// K loop (`fusion_rules.im2col`): an implicit GEMM, whose gathered B tile-tensor-core takes as
// a tile.gather and tile-stage-chunks computes chunk by chunk. No im2col tensor is written.
// CHECK-LABEL: loop.kernel @y(%x: memref<2x16x66xf16>, %w: memref<32x48xf16>, %out: memref<2x32x64xf32>) {
// CHECK:           loop.load %x[%a0, %r0, %a2] map (d0, d1, d2) -> (d0, (d1 floordiv 3), (d2 + (d1 mod 3))) : memref<2x16x66xf16>
// CHECK-LABEL: func.func @window_f16(
// CHECK-NEXT:      memref.alloc() : memref<2x32x64xf32>
// CHECK-NEXT:      loop.launch @y(
func.func @window_f16(%x: tensor<2x16x66xf16>, %w: tensor<32x48xf16>) -> tensor<2x32x64xf32> {
  %c = tir.index_map %x (d0, d1, d2) -> (d0, (d1 floordiv 3), (d2 + (d1 mod 3))) : tensor<2x16x66xf16> -> tensor<2x48x64xf16>
  %cf = tir.cast %c : tensor<2x48x64xf16> -> tensor<2x48x64xf32>
  %wf = tir.cast %w : tensor<32x48xf16> -> tensor<32x48xf32>
  %a = tir.index_map %cf (d0, d1, d2, d3) -> (d0, d3, d2) : tensor<2x48x64xf32> -> tensor<2x32x64x48xf32>
  %b = tir.index_map %wf (d0, d1, d2, d3) -> (d1, d3) : tensor<32x48xf32> -> tensor<2x32x64x48xf32>
  %p = tir.elementwise mul(%a, %b) : tensor<2x32x64x48xf32>
  %y = tir.reduce add %p [3] : tensor<2x32x64x48xf32> -> tensor<2x32x64xf32>
  func.return %y : tensor<2x32x64xf32>
}

// -----

// An f16 window copy that also computes in floats (here a scale) is no im2col: it stays a
// kernel of its own before the K loop, so that the product stays a plain one tensor cores take.
// CHECK-LABEL: loop.kernel @s(%x: memref<2x16x66xf16>, %out: memref<2x48x64xf16>) {
// CHECK-LABEL: loop.kernel @y(%s: memref<2x48x64xf16>, %w: memref<32x48xf16>, %out: memref<2x32x64xf32>) {
// CHECK:           loop.load %s[%a0, %r0, %a2] : memref<2x48x64xf16>
func.func @window_scaled_f16(%x: tensor<2x16x66xf16>, %w: tensor<32x48xf16>) -> tensor<2x32x64xf32> {
  %c = tir.index_map %x (d0, d1, d2) -> (d0, (d1 floordiv 3), (d2 + (d1 mod 3))) : tensor<2x16x66xf16> -> tensor<2x48x64xf16>
  %two = tir.full 2.0 : tensor<2x48x64xf16>
  %s = tir.elementwise mul(%c, %two) : tensor<2x48x64xf16>
  %cf = tir.cast %s : tensor<2x48x64xf16> -> tensor<2x48x64xf32>
  %wf = tir.cast %w : tensor<32x48xf16> -> tensor<32x48xf32>
  %a = tir.index_map %cf (d0, d1, d2, d3) -> (d0, d3, d2) : tensor<2x48x64xf32> -> tensor<2x32x64x48xf32>
  %b = tir.index_map %wf (d0, d1, d2, d3) -> (d1, d3) : tensor<32x48xf32> -> tensor<2x32x64x48xf32>
  %p = tir.elementwise mul(%a, %b) : tensor<2x32x64x48xf32>
  %y = tir.reduce add %p [3] : tensor<2x32x64x48xf32> -> tensor<2x32x64xf32>
  func.return %y : tensor<2x32x64xf32>
}

// -----

// The same window over f32 is inlined (an FMA product reads its gathers through L1).
// CHECK-LABEL: loop.kernel @y(%x: memref<2x16x66xf32>, %w: memref<32x48xf32>, %out: memref<2x32x64xf32>) {
// CHECK:           loop.load %x[%a0, %r0, %a2] map (d0, d1, d2) -> (d0, (d1 floordiv 3), (d2 + (d1 mod 3)))
func.func @window_f32(%x: tensor<2x16x66xf32>, %w: tensor<32x48xf32>) -> tensor<2x32x64xf32> {
  %c = tir.index_map %x (d0, d1, d2) -> (d0, (d1 floordiv 3), (d2 + (d1 mod 3))) : tensor<2x16x66xf32> -> tensor<2x48x64xf32>
  %a = tir.index_map %c (d0, d1, d2, d3) -> (d0, d3, d2) : tensor<2x48x64xf32> -> tensor<2x32x64x48xf32>
  %b = tir.index_map %w (d0, d1, d2, d3) -> (d1, d3) : tensor<32x48xf32> -> tensor<2x32x64x48xf32>
  %p = tir.elementwise mul(%a, %b) : tensor<2x32x64x48xf32>
  %y = tir.reduce add %p [3] : tensor<2x32x64x48xf32> -> tensor<2x32x64xf32>
  func.return %y : tensor<2x32x64xf32>
}
