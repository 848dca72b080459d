// RUN: deplo-opt %s -p "loop-to-tile,tile-map-grid,tile-attention-mma,tile-attention-rows{threads=4 rows=2 lane-keys=1 head-parts=1 group-heads=2}" | filecheck %s
// RUN: deplo-opt %s -p "loop-to-tile,tile-map-grid,tile-attention-mma,tile-attention-rows{threads=4 rows=2 lane-keys=1 head-parts=1 group-heads=2}" | deplo-opt | filecheck %s
// RUN: deplo-opt %s -p "loop-to-tile,tile-map-grid,tile-attention-mma,tile-attention-rows" | filecheck %s --check-prefix=HEURISTIC
// RUN: not deplo-opt %s -p "loop-to-tile,tile-map-grid,tile-attention-mma,tile-attention-rows{threads=8 rows=4 lane-keys=1 group-heads=3}" 2>&1 | filecheck %s --check-prefix=DIVISOR
// RUN: not deplo-opt %s -p "loop-to-tile,tile-map-grid,tile-attention-mma,tile-attention-rows{threads=4 lane-keys=1 group-heads=2 key-splits=2}" 2>&1 | filecheck %s --check-prefix=SPLIT

// Grouped-query attention (4 query heads on 2 K/V heads: K and V read at head floordiv 2, the
// fact kv_group = 2), causal, 6 keys, D = 16. group_heads = 2: the two query heads of a K/V
// head run in one block on thread.z, so their rows read each key's K and V at the same time;
// the heads' loop (block.y) walks the K/V heads and the query head is %a1 2 + %tz. Rows (2 a
// block, thread.y), the causal stop and the lanes that own keys are as without it.
// CHECK-LABEL: tile.kernel @sdpa(
// CHECK-SAME:      grid(3, 2, 1) block(4, 2, 2)
// CHECK-SAME:      kv_group = 2
// CHECK-SAME:      group_heads = 2
// CHECK:           tile.for %a1 = 0 to 2 bind(block.y) {
// CHECK-NEXT:        tile.for %a2 = 0 to 3 bind(block.x) {
// CHECK-NEXT:          tile.for %tz = 0 to 2 bind(thread.z) {
// CHECK-NEXT:            %[[C2:.*]] = arith.constant 2 : index
// CHECK-NEXT:            %[[HB:.*]] = arith.muli %a1, %[[C2]] : index
// CHECK-NEXT:            %[[H:.*]] = arith.addi %[[HB]], %tz : index
// CHECK:                 %kub = arith.addi
// CHECK:                 tile.for %ty = 0 to 2 bind(thread.y) {
// CHECK:                   tile.for %t = 0 to 4 bind(thread.x) {
// CHECK:                       loop.load %x0[%a0, %[[H]], %{{.*}}, %{{.*}}] : memref<1x4x6x16xf32>
// CHECK:                       loop.load %x1[%a0, %[[H]], %{{.*}}, %{{.*}}, %{{.*}}] map (d0, d1, d2, d3, d4) -> (d0, (d1 floordiv 2), d3, d4)
// CHECK:                       loop.store %{{.*}}, %out[%a0, %[[H]], %{{.*}}, %{{.*}}] : memref<1x4x6x16xf32>
// The heuristic groups the heads too, a warp of rows each (8 lanes, 6 rows: 4 rows a block).
// HEURISTIC:     tile.kernel @sdpa(
// HEURISTIC-SAME:  group_heads = 2
// HEURISTIC:       bind(thread.z)
// DIVISOR: knob group_heads: expected a divisor of the 2 query head(s) a K/V head serves (fact kv_group) up to 64 (thread.z), got 3
// SPLIT: knob group_heads: 2 heads a block: one slice of the keys (key_splits 1)

builtin.module {
  loop.kernel @sdpa(%x0: memref<1x4x6x16xf32>, %x1: memref<1x2x6x16xf32>, %x2: memref<1x2x6x16xf32>, %out: memref<1x4x6x16xf32>) attributes {origin = ["scaled_dot_product_attention: aten.scaled_dot_product_attention at the expression"]} {
    %0 = arith.constant -3.40282347e+38 : f32
    %1 = arith.constant 2.500000e-01 : f32
    %2 = arith.constant 0.000000e+00 : f32
    %3 = arith.constant 0xff800000 : f32
    loop.for %a0 = 0 to 1 free {
      loop.for %a1 = 0 to 4 free {
        loop.for %a2 = 0 to 6 free {
          %acc = loop.private : memref<16xf32>
          loop.for %a3 = 0 to 16 free {
            loop.store %2, %acc[%a3] : memref<16xf32>
          }
          %4 = arith.index_cast %a2 : index to i64
          %5, %6 = loop.for %r0 = 0 to 6 reduce iter(%m = %0, %l = %2) -> (f32, f32) {
            %7 = loop.for %r0_1 = 0 to 16 reduce iter(%acc_1 = %2) -> f32 {
              %8 = loop.load %x0[%a0, %a1, %a2, %r0, %r0_1] map (d0, d1, d2, d3, d4) -> (d0, d1, d2, d4) : memref<1x4x6x16xf32>
              %9 = loop.load %x1[%a0, %a1, %a2, %r0, %r0_1] map (d0, d1, d2, d3, d4) -> (d0, (d1 floordiv 2), d3, d4) : memref<1x2x6x16xf32>
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
              %21 = loop.load %x2[%a0, %a1, %a2, %a3_1, %r0] map (d0, d1, d2, d3, d4) -> (d0, (d1 floordiv 2), d4, d3) : memref<1x2x6x16xf32>
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
            loop.store %27, %out[%a0, %a1, %a2, %a3_2] : memref<1x4x6x16xf32>
          }
        }
      }
    }
  }
  func.func @main(%x0: memref<1x4x6x16xf32>, %x1: memref<1x2x6x16xf32>, %x2: memref<1x2x6x16xf32>) -> memref<1x4x6x16xf32> {
    %sdpa = memref.alloc() : memref<1x4x6x16xf32>
    loop.launch @sdpa(%x0, %x1, %x2, %sdpa) : memref<1x4x6x16xf32>, memref<1x2x6x16xf32>, memref<1x2x6x16xf32>, memref<1x4x6x16xf32>
    func.return %sdpa : memref<1x4x6x16xf32>
  }
}
