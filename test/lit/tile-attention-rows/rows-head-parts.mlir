// RUN: deplo-opt %s -p tile-attention-rows | deplo-opt | filecheck %s

// lane_keys = 1 with head_parts = 2: a row's 4 lanes are 2 key lanes (%kl = t mod 2) times
// 2 parts of the head dim (%part = t div 2, 8 of its 16 each). The loops over the head dim
// walk the lane's part (d = 8 part + j) and the arrays (accumulator, q) hold it, indexed by j;
// a key's q . k partial sums are added over its parts (lanes 2 apart: `stride 2`), the max,
// l and the accumulator over the key lanes of one part (`lanes 2`); key lane
// 0 of each part stores its 8 outputs.
// CHECK:         tile.for %t = 0 to 4 bind(thread.x) {
// CHECK-NEXT:      %c2 = arith.constant 2 : index
// CHECK-NEXT:      %part = arith.divsi %t, %c2 : index
// CHECK-NEXT:      %c2_1 = arith.constant 2 : index
// CHECK-NEXT:      %kl = arith.remsi %t, %c2_1 : index
// CHECK-NEXT:      %acc = loop.private : memref<8xf32>
// CHECK:           %x0r = loop.private : memref<8xf32>
// CHECK-NEXT:      tile.for %[[J:.*]] = 0 to 8 bind(unroll) {
// CHECK:             %[[P8:.*]] = arith.muli %part, %c8 : index
// CHECK-NEXT:        %[[D:.*]] = arith.addi %[[P8]], %[[J]] : index
// CHECK-NEXT:        %[[Q:.*]] = loop.load %x0[%a0, %a1, %{{.*}}, %[[D]]]
// CHECK-NEXT:        loop.store %[[Q]], %x0r[%[[J]]] : memref<8xf32>
// CHECK:           tile.for %r0 = 0 to min(%kub, 6) step 2 bind(serial)
// CHECK-NEXT:        %[[KEY:.*]] = arith.addi %r0, %kl : index
// CHECK:             arith.cmpi sle,
// CHECK-NEXT:        %[[S:.*]] = tile.for %r0_1 = 0 to 8 step 4 bind(unroll)
// CHECK:               loop.load %x0r[%r0_1] : memref<8xf32>
// CHECK:             %[[ALL:.*]] = tile.combine add %[[S]] over thread.x lanes 4 stride 2 : f32
// CHECK-NEXT:        arith.mulf %[[ALL]], %{{.*}} : f32
// CHECK:             tile.combine max %{{.*}} over thread.x lanes 2 : f32
// CHECK:             tile.for %a3_1 = 0 to 8 step 4 bind(unroll) {
// CHECK:           tile.combine add %{{.*}} over thread.x lanes 2 : f32
// CHECK:           %lane0 = arith.cmpi eq, %kl, %{{.*}} : index
// CHECK-NEXT:      tile.for %a3_2 = 0 to 8 bind(unroll) {
// CHECK:             %ok = arith.andi %in, %lane0 : i1
// CHECK-NEXT:        scf.if %ok {
// CHECK-NEXT:          loop.store

builtin.module {
  tile.kernel @sdpa(%x0: memref<1x2x6x16xf32>, %x1: memref<1x1x6x16xf32>, %x2: memref<1x1x6x16xf32>, %out: memref<1x2x6x16xf32>) grid(6, 2, 1) block(1, 1, 1) key "45458d8203a662c3" plan attention(rows = [2, 6], head_dim = 16, keys = 6, own_keys = true) {grid_dims = 2, mma = false, threads = 4, rows = 4, stage_keys = 0, lane_keys = 1, head_parts = 2, stage_inputs = reused, copy = sync, unroll = 32} done ["tile-map-grid"] {
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
