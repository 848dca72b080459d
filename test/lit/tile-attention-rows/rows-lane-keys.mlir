// RUN: deplo-opt %s -p tile-attention-rows | deplo-opt | filecheck %s

// lane_keys = 2: each of a row's 4 lanes owns 2 keys a step (keys k0 + t and k0 + 4 + t,
// clamped to the last key for the loads, masked past it: 6 keys in steps of 8), with the
// whole head dim of q . k in one lane (16-byte groups of K and V side by side for
// kernel-vectorize). One max over the lanes a step; p a key; l and the accumulator partial
// a lane (the second key's accumulator loop without the rescale), summed across the lanes
// after the key loop; lane 0 stores. The causal stop (the block's last row) and the rows on
// thread.y are as without lane_keys; the loops over the head dim are unrolled; the chain's
// work that needs no q . k (the causal compare) goes before the q . k loop.
// CHECK-LABEL: tile.kernel @sdpa(
// CHECK-SAME:      grid(2, 2, 1) block(4, 4, 1)
// CHECK:           tile.for %ty = 0 to 4 bind(thread.y) {
// CHECK:             tile.for %t = 0 to 4 bind(thread.x) {
// CHECK-NEXT:          %acc = loop.private : memref<16xf32>
// CHECK-NEXT:          tile.for %a3 = 0 to 16 bind(unroll) {
// CHECK:               %x0r = loop.private : memref<16xf32>
// CHECK:               tile.for %r0 = 0 to min(%kub, 8) step 8 bind(serial) iter(%m = %{{.*}}, %l = %{{.*}}) -> (f32, f32) {
// CHECK-NEXT:            %[[K0:.*]] = arith.addi %r0, %t : index
// CHECK-NEXT:            %c4_2 = arith.constant 4 : index
// CHECK-NEXT:            %[[R4:.*]] = arith.addi %r0, %c4_2 : index
// CHECK-NEXT:            %[[K1:.*]] = arith.addi %[[R4]], %t : index
// CHECK:                 %[[C0:.*]] = arith.minsi %[[K0]], %c5_2 : index
// CHECK:                 %[[C1:.*]] = arith.minsi %[[K1]], %c5_3 : index
// CHECK:                 arith.cmpi sle,
// CHECK-NEXT:            %[[S0:.*]] = tile.for %r0_1 = 0 to 16 step 4 bind(unroll) iter(
// CHECK:                   loop.load %x1[%a0, %a1, %{{.*}}, %[[C0]], %r0_1]
// CHECK:                   %[[D1:.*]] = arith.addi %r0_1, %c1_1 : index
// CHECK:                   loop.load %x1[%a0, %a1, %{{.*}}, %[[C0]], %[[D1]]]
// CHECK:                 %in_1 = arith.cmpi ult, %[[K0]], %c6_1 : index
// CHECK-NEXT:            %[[X0:.*]] = arith.select %in_1, %{{.*}}, %{{.*}} : f32
// CHECK:                 arith.cmpi sle,
// CHECK-NEXT:            tile.for %r0_2 = 0 to 16 step 4 bind(unroll) iter(
// CHECK:                   loop.load %x1[%a0, %a1, %{{.*}}, %[[C1]], %r0_2]
// CHECK:                 %in_2 = arith.cmpi ult, %[[K1]], %c6_2 : index
// CHECK-NEXT:            %[[X1:.*]] = arith.select %in_2, %{{.*}}, %{{.*}} : f32
// CHECK-NEXT:            %[[MX:.*]] = arith.maximumf %[[X0]], %[[X1]] : f32
// CHECK-NEXT:            %[[ALL:.*]] = tile.combine max %[[MX]] over thread.x : f32
// CHECK-NEXT:            %m_new = arith.maximumf %m, %[[ALL]] : f32
// CHECK:                 %alpha = math.exp
// CHECK:                 tile.for %a3_1 = 0 to 16 step 4 bind(unroll) {
// CHECK:                   arith.mulf %{{.*}}, %alpha : f32
// CHECK:                 tile.for %a3_2 = 0 to 16 step 4 bind(unroll) {
// CHECK-NOT:               %alpha
// CHECK:                 tile.yield %m_new, %{{.*}} : f32, f32
// CHECK:               %[[L:.*]] = tile.combine add %{{.*}} over thread.x : f32
// CHECK:               %[[A0:.*]] = loop.load %acc[%c0] : memref<16xf32>
// CHECK-NEXT:          %[[S:.*]] = tile.combine add %[[A0]] over thread.x : f32
// CHECK-NEXT:          loop.store %[[S]], %acc[%c0] : memref<16xf32>
// CHECK:               %lane0 = arith.cmpi eq, %t, %{{.*}} : index
// CHECK-NEXT:          tile.for %a3_3 = 0 to 16 bind(unroll) {
// CHECK:                 arith.divf %{{.*}}, %[[L]] : f32
// CHECK-NEXT:            %ok = arith.andi %in, %lane0 : i1
// CHECK-NEXT:            scf.if %ok {
// CHECK-NEXT:              loop.store

builtin.module {
  tile.kernel @sdpa(%x0: memref<1x2x6x16xf32>, %x1: memref<1x1x6x16xf32>, %x2: memref<1x1x6x16xf32>, %out: memref<1x2x6x16xf32>) grid(6, 2, 1) block(1, 1, 1) key "45458d8203a662c3" plan attention(rows = [2, 6], head_dim = 16, keys = 6, own_keys = true) {grid_dims = 2, mma = false, threads = 4, rows = 4, stage_keys = 0, lane_keys = 2, stage_inputs = reused, copy = sync, unroll = 32} done ["tile-map-grid"] {
    %0 = arith.constant -3.40282347e+38 : f32
    %1 = arith.constant 2.500000e-01 : f32
    %2 = arith.constant 0.000000e+00 : f32
    %3 = arith.constant 0xff800000 : f32
    tile.for %a0 = 0 to 1 bind(serial) {
      tile.for %a1 = 0 to 2 bind(block.y) {
        tile.for %a2 = 0 to 6 bind(block.x) {
          %acc = loop.private : memref<16xf32>
          tile.for %a3 = 0 to 16 bind(serial) {
            loop.store %2, %acc[%a3] : memref<16xf32>
          }
          %4 = arith.index_cast %a2 : index to i64
          %5, %6 = tile.for %r0 = 0 to 6 bind(serial) iter(%m = %3, %l = %2) -> (f32, f32) {
            %7 = tile.for %r0_1 = 0 to 16 bind(serial) iter(%acc_1 = %2) -> f32 {
              %8 = loop.load %x0[%a0, %a1, %a2, %r0, %r0_1] map (d0, d1, d2, d3, d4) -> (d0, d1, d2, d4) : memref<1x2x6x16xf32>
              %9 = loop.load %x1[%a0, %a1, %a2, %r0, %r0_1] map (d0, d1, d2, d3, d4) -> (d0, (d1 floordiv 2), d3, d4) : memref<1x1x6x16xf32>
              %10 = arith.mulf %8, %9 : f32
              %11 = arith.addf %acc_1, %10 : f32
              tile.yield %11 : f32
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
            tile.for %a3_1 = 0 to 16 bind(serial) {
              %21 = loop.load %x2[%a0, %a1, %a2, %a3_1, %r0] map (d0, d1, d2, d3, d4) -> (d0, (d1 floordiv 2), d4, d3) : memref<1x1x6x16xf32>
              %22 = loop.load %acc[%a3_1] : memref<16xf32>
              %23 = arith.mulf %17, %21 : f32
              %24 = arith.mulf %22, %alpha : f32
              %25 = arith.addf %24, %23 : f32
              loop.store %25, %acc[%a3_1] : memref<16xf32>
            }
            tile.yield %m_new, %20 : f32, f32
          }
          tile.for %a3_2 = 0 to 16 bind(serial) {
            %26 = loop.load %acc[%a3_2] : memref<16xf32>
            %27 = arith.divf %26, %6 : f32
            loop.store %27, %out[%a0, %a1, %a2, %a3_2] : memref<1x2x6x16xf32>
          }
        }
      }
    }
  }
  func.func @main(%x0: memref<1x2x6x16xf32>, %x1: memref<1x1x6x16xf32>, %x2: memref<1x1x6x16xf32>) -> memref<1x2x6x16xf32> {
    %sdpa = memref.alloc() : memref<1x2x6x16xf32>
    tile.launch @sdpa(%x0, %x1, %x2, %sdpa) : memref<1x2x6x16xf32>, memref<1x1x6x16xf32>, memref<1x1x6x16xf32>, memref<1x2x6x16xf32>
    func.return %sdpa : memref<1x2x6x16xf32>
  }
}

