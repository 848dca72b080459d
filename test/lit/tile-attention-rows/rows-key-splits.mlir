// RUN: deplo-opt %s -p "loop-to-tile,tile-map-grid,tile-attention-mma,tile-attention-rows{threads=4 rows=2 lane-keys=1 head-parts=2 key-splits=2}" | filecheck %s
// RUN: deplo-opt %s -p "loop-to-tile,tile-map-grid,tile-attention-mma,tile-attention-rows{threads=4 rows=2 lane-keys=1 head-parts=2 key-splits=2}" | deplo-opt | filecheck %s
// RUN: not deplo-opt %s -p "loop-to-tile,tile-map-grid,tile-attention-mma,tile-attention-rows{threads=4 lane-keys=0 key-splits=2}" 2>&1 | filecheck %s --check-prefix=SPLIT

// One decoded token (a query row a head, 4 heads on 2 kv heads, 40 keys, D = 16): the row
// sits under a unit loop the grid skips (%a2); two heads a block (thread.y), 4 lanes a row
// owning keys (2 key lanes x 2 parts of the head dim), and split-KV: the keys in two slices
// of 20 on block.z. Each slice walks its keys from %kbase; after the lane sums, key lane 0 of
// each part stores its 8 accumulators and lane 0 the row's m and l to the scratch
// [slice, batch, head pair, unit, row, D + 2]; the last slice of the block rescales both
// slices' into the accumulator and runs the final loop.
// CHECK-LABEL: tile.kernel @sdpa(
// CHECK-SAME:      %slices: memref<2x1x2x1x2x18xf32>) grid(2, 1, 2) block(4, 2, 1)
// CHECK-SAME:      key_splits = 2
// CHECK:         tile.for %a1 = 0 to 2 bind(block.x) {
// CHECK-NEXT:      tile.for %a2 = 0 to 1 bind(serial) {
// CHECK-NEXT:        tile.for %ks = 0 to 2 bind(block.z) {
// CHECK-NEXT:          tile.for %ty = 0 to 2 bind(thread.y) {
// CHECK:                 tile.for %t = 0 to 4 bind(thread.x) {
// CHECK:                   %kbase = arith.muli %ks, %c20 : index
// CHECK:                   %[[STOP:.*]] = arith.subi %c40, %kbase : index
// CHECK-NEXT:              {{.*}} = tile.for %r0 = 0 to min(%[[STOP]], 20) step 2 bind(serial)
// CHECK-NEXT:                {{.*}} = arith.addi %r0, %kbase : index
// CHECK:                   %lane0 = arith.cmpi eq, %kl, %c0
// CHECK:                   scf.if %lane0 {
// CHECK-NEXT:                loop.store %{{.*}}, %slices[%ks, %a0, %a1, %a2, %ty, %{{.*}}] : memref<2x1x2x1x2x18xf32>
// CHECK:                   scf.if %{{.*}} {
// CHECK-NEXT:                loop.store %{{.*}}, %slices[%ks, %a0, %a1, %a2, %ty, %c16]
// CHECK-NEXT:                loop.store %{{.*}}, %slices[%ks, %a0, %a1, %a2, %ty, %c17]
// CHECK:                   %last = tile.split_last %slices[%ks] of 2 : memref<2x1x2x1x2x18xf32>
// CHECK-NEXT:              scf.if %last {
// CHECK:                     arith.maximumf
// CHECK:                     math.exp
// CHECK:                     arith.divf
// CHECK:                     loop.store %{{.*}}, %out[%a0, %{{.*}}, %a2, %{{.*}}] : memref<1x4x1x16xf32>
// CHECK:         func.func @main(
// CHECK:           %slices = memref.alloc() : memref<2x1x2x1x2x18xf32>

// SPLIT: knob key_splits: slices of the keys need lanes that own keys (lane_keys) or tensor cores

builtin.module {
  loop.kernel @sdpa(%x0: memref<1x4x1x16xf32>, %x1: memref<1x2x40x16xf32>, %x2: memref<1x2x40x16xf32>, %out: memref<1x4x1x16xf32>) attributes {origin = ["scaled_dot_product_attention: aten.scaled_dot_product_attention at the expression"]} {
    %0 = arith.constant 2.500000e-01 : f32
    %1 = arith.constant 0.000000e+00 : f32
    %2 = arith.constant 0xff800000 : f32
    loop.for %a0 = 0 to 1 free {
      loop.for %a1 = 0 to 4 free {
        loop.for %a2 = 0 to 1 free {
          %acc = loop.private : memref<16xf32>
          loop.for %a3 = 0 to 16 free {
            loop.store %1, %acc[%a3] : memref<16xf32>
          }
          %3, %4 = loop.for %r0 = 0 to 40 reduce iter(%m = %2, %l = %1) -> (f32, f32) {
            %5 = loop.for %r0_1 = 0 to 16 reduce iter(%acc_1 = %1) -> f32 {
              %6 = loop.load %x0[%a0, %a1, %a2, %r0, %r0_1] map (d0, d1, d2, d3, d4) -> (d0, d1, d2, d4) : memref<1x4x1x16xf32>
              %7 = loop.load %x1[%a0, %a1, %a2, %r0, %r0_1] map (d0, d1, d2, d3, d4) -> (d0, (d1 floordiv 2), d3, d4) : memref<1x2x40x16xf32>
              %8 = arith.mulf %6, %7 : f32
              %9 = arith.addf %acc_1, %8 : f32
              loop.yield %9 : f32
            }
            %10 = arith.mulf %5, %0 : f32
            %m_new = arith.maximumf %m, %10 : f32
            %11 = arith.subf %10, %m_new : f32
            %12 = math.exp %11 : f32
            %13 = arith.subf %m, %m_new : f32
            %alpha = math.exp %13 : f32
            %14 = arith.mulf %l, %alpha : f32
            %15 = arith.addf %14, %12 : f32
            loop.for %a3_1 = 0 to 16 free {
              %16 = loop.load %x2[%a0, %a1, %a2, %a3_1, %r0] map (d0, d1, d2, d3, d4) -> (d0, (d1 floordiv 2), d4, d3) : memref<1x2x40x16xf32>
              %17 = loop.load %acc[%a3_1] : memref<16xf32>
              %18 = arith.mulf %12, %16 : f32
              %19 = arith.mulf %17, %alpha : f32
              %20 = arith.addf %19, %18 : f32
              loop.store %20, %acc[%a3_1] : memref<16xf32>
            }
            loop.yield %m_new, %15 : f32, f32
          }
          loop.for %a3_2 = 0 to 16 free {
            %21 = loop.load %acc[%a3_2] : memref<16xf32>
            %22 = arith.divf %21, %4 : f32
            loop.store %22, %out[%a0, %a1, %a2, %a3_2] : memref<1x4x1x16xf32>
          }
        }
      }
    }
  }
  func.func @main(%x0: memref<1x4x1x16xf32>, %x1: memref<1x2x40x16xf32>, %x2: memref<1x2x40x16xf32>) -> memref<1x4x1x16xf32> {
    %sdpa = memref.alloc() : memref<1x4x1x16xf32>
    loop.launch @sdpa(%x0, %x1, %x2, %sdpa) : memref<1x4x1x16xf32>, memref<1x2x40x16xf32>, memref<1x2x40x16xf32>, memref<1x4x1x16xf32>
    func.return %sdpa : memref<1x4x1x16xf32>
  }
}
