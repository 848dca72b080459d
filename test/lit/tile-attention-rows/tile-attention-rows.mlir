// RUN: deplo-opt %s --split-input-file -p "loop-to-tile,tile-map-grid,tile-attention-rows{threads=32 rows=1}" | filecheck %s
// RUN: deplo-opt %s --split-input-file -p "loop-to-tile,tile-map-grid,tile-attention-rows{threads=32 rows=1},tile-attention-rows" | filecheck %s
// RUN: deplo-opt %s --split-input-file -p loop-to-tile,tile-map-grid,tile-attention-rows | filecheck %s --check-prefix=AUTO

// The flash kernel of causal GQA sdpa (4 query heads on 2 kv heads, S = 7, D = 16), from
// loop-online-softmax, pinned to threads=32 rows=1: one block per (head, query) row, the head
// dim on a warp of threads. The q . k dot is a strided partial per thread + tile.combine, every
// thread runs the (m, l) update, and each thread owns its slice of the accumulator (one
// register: memref<1xf32>). Causal: the key loop stops after the query row (min(%kub, 7)).
// CHECK-LABEL: tile.kernel @sdpa({{.*}}) grid(7, 4, 1) block(32, 1, 1) key "{{.*}}" plan attention(rows = [4, 7], head_dim = 16, keys = 7, own_keys = true, kv_group = 2) {grid_dims = 2, mma = false, threads = 32, group_heads = 1, rows = 1, {{.*}}} done ["tile-map-grid", "tile-attention-rows"] {
// CHECK:         tile.for %a2 = 0 to 7 bind(block.x) {
// CHECK:           %kub = arith.addi %a2, %{{.*}} : index
// CHECK-NEXT:      tile.for %[[T:.*]] = 0 to 32 bind(thread.x) {
// CHECK-NEXT:        %acc = loop.private : memref<1xf32>
// CHECK-NEXT:        tile.for %a3 = %[[T]] to 16 step 32 bind(serial) {
// CHECK-NEXT:          loop.store %{{.*}}, %acc[%a3, %[[T]]] map (d0, d1) -> (0) : memref<1xf32>
// CHECK:             tile.for %r0 = 0 to min(%kub, 7) bind(serial) iter(%m = %{{.*}}, %l = %{{.*}}) -> (f32, f32) {
// CHECK-NEXT:          %[[P:.*]] = tile.for %r0_1 = %[[T]] to 16 step 32 bind(serial) iter(%acc_1 = %{{.*}}) -> f32 {
// CHECK:               %[[S:.*]] = tile.combine add %[[P]] over thread.x : f32
// CHECK-NEXT:          arith.mulf %[[S]], %{{.*}} : f32
// CHECK:               %m_new = arith.maximumf %m, %{{.*}} : f32
// CHECK:               tile.for %a3_1 = %[[T]] to 16 step 32 bind(serial) {
// CHECK:                 loop.load %acc[%a3_1, %[[T]]] map (d0, d1) -> (0) : memref<1xf32>
// CHECK:                 loop.store %{{.*}}, %acc[%a3_1, %[[T]]] map (d0, d1) -> (0) : memref<1xf32>
// CHECK:             tile.for %a3_2 = %[[T]] to 16 step 32 bind(serial) {
// CHECK-NEXT:          loop.load %acc[%a3_2, %[[T]]] map (d0, d1) -> (0) : memref<1xf32>
// CHECK:               loop.store %{{.*}}, %out[%a0, %a1, %a2, %a3_2] : memref<1x4x7x16xf32>

// The heuristic: a head dim up to 64, so a row's lanes own keys (lane_keys = 1: 8 lanes, each
// scoring one key a step with the whole head dim), four query rows a block on thread.y (7
// rows: two blocks, the last row clamped and its store guarded), each lane holding the whole
// accumulator row; lane 0 stores. The two query heads of each K/V head (kv_group = 2) run in
// one block on thread.z (group_heads = 2): block.y walks the K/V heads.
// AUTO-LABEL: tile.kernel @sdpa({{.*}}) grid(2, 2, 1) block(8, 4, 2) key "{{.*}}" plan attention({{.*}}) {grid_dims = 2, mma = false, threads = 8, group_heads = 2, rows = 4, stage_keys = 0, lane_keys = 1, {{.*}}}
// AUTO:         tile.for %tz = 0 to 2 bind(thread.z) {
// AUTO:         tile.for %ty = 0 to 4 bind(thread.y) {
// AUTO:           %in = arith.cmpi ult, %{{.*}}, %{{.*}} : index
// AUTO:           tile.for %t = 0 to 8 bind(thread.x) {
// AUTO-NEXT:        %acc = loop.private : memref<16xf32>
// AUTO:             tile.for %r0 = 0 to min(%kub, 8) step 8 bind(serial)
// AUTO:             %ok = arith.andi %in, %lane0 : i1
// AUTO-NEXT:        scf.if %ok {

builtin.module {
  loop.kernel @sdpa(%xs: memref<1x4x7x16xf32>, %xs_1: memref<1x2x7x16xf32>, %xs_2: memref<1x2x7x16xf32>, %out: memref<1x4x7x16xf32>) {
    %0 = arith.constant -3.40282347e+38 : f32
    %1 = arith.constant 2.500000e-01 : f32
    %2 = arith.constant 0.000000e+00 : f32
    %3 = arith.constant 0xff800000 : f32
    loop.for %a0 = 0 to 1 free {
      loop.for %a1 = 0 to 4 free {
        loop.for %a2 = 0 to 7 free {
          %acc = loop.private : memref<16xf32>
          loop.for %a3 = 0 to 16 free {
            loop.store %2, %acc[%a3] : memref<16xf32>
          }
          %4 = arith.index_cast %a2 : index to i64
          %5, %6 = loop.for %r0 = 0 to 7 reduce iter(%m = %3, %l = %2) -> (f32, f32) {
            %7 = loop.for %r0_1 = 0 to 16 reduce iter(%acc_1 = %2) -> f32 {
              %8 = loop.load %xs[%a0, %a1, %a2, %r0, %r0_1] map (d0, d1, d2, d3, d4) -> (d0, d1, d2, d4) : memref<1x4x7x16xf32>
              %9 = loop.load %xs_1[%a0, %a1, %a2, %r0, %r0_1] map (d0, d1, d2, d3, d4) -> (d0, (d1 floordiv 2), d3, d4) : memref<1x2x7x16xf32>
              %10 = arith.mulf %8, %9 : f32
              %11 = arith.addf %acc_1, %10 : f32
              loop.yield %11 : f32
            }
            %12 = arith.mulf %7, %1 : f32
            %13 = arith.index_cast %r0 : index to i64
            %14 = arith.cmpi sle, %13, %4 : i64
            %15 = arith.select %14, %12, %0 : f32
            %m_new = arith.maximumf %m, %15 : f32
            %16 = arith.subf %15, %m_new : f32
            %17 = math.exp %16 : f32
            %18 = arith.subf %m, %m_new : f32
            %alpha = math.exp %18 : f32
            %19 = arith.mulf %l, %alpha : f32
            %20 = arith.addf %19, %17 : f32
            loop.for %a3_1 = 0 to 16 free {
              %21 = loop.load %xs_2[%a0, %a1, %a2, %a3_1, %r0] map (d0, d1, d2, d3, d4) -> (d0, (d1 floordiv 2), d4, d3) : memref<1x2x7x16xf32>
              %22 = loop.load %acc[%a3_1] : memref<16xf32>
              %23 = arith.mulf %17, %21 : f32
              %24 = arith.mulf %22, %alpha : f32
              %25 = arith.addf %24, %23 : f32
              loop.store %25, %acc[%a3_1] : memref<16xf32>
            }
            loop.yield %m_new, %20 : f32, f32
          }
          loop.for %a3_2 = 0 to 16 free {
            %26 = loop.load %acc[%a3_2] : memref<16xf32>
            %27 = arith.divf %26, %6 : f32
            loop.store %27, %out[%a0, %a1, %a2, %a3_2] : memref<1x4x7x16xf32>
          }
        }
      }
    }
  }
  func.func @main(%xs: memref<1x4x7x16xf32>, %xs_1: memref<1x2x7x16xf32>, %xs_2: memref<1x2x7x16xf32>) -> memref<1x4x7x16xf32> {
    %sdpa = memref.alloc() : memref<1x4x7x16xf32>
    loop.launch @sdpa(%xs, %xs_1, %xs_2, %sdpa) : memref<1x4x7x16xf32>, memref<1x2x7x16xf32>, memref<1x2x7x16xf32>, memref<1x4x7x16xf32>
    func.return %sdpa : memref<1x4x7x16xf32>
  }
}
