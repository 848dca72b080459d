// RUN: deplo-opt %s -p tile-attention-rows | deplo-opt | filecheck %s
// RUN: deplo-opt %s -p 'tile-attention-rows{stage-keys=0}' | filecheck %s --check-prefix=UNSTAGED

// stage_keys = 16: the key loop walks 16 keys a step (its causal stop kept: uniform over the
// block, as the copy needs); each step's K (%x1, grouped-query: head floordiv 2) and V tiles
// are copied into shared memory by the block, and the step's keys read them there at
// (key - k0, d). q is read once into registers before the key loop. The step overhangs the 6
// keys (the copy reads zero there; the inner loop stops at 6).
// CHECK:         %x0r = loop.private : memref<4xf32>
// CHECK:         tile.for %k0 = 0 to min(%kub, 16) step 16 bind(serial) iter(
// CHECK:           %[[H:.*]] = arith.floordivsi %a1, %c2 : index
// CHECK-NEXT:      %x1s = tile.stage %x1[%a0, %[[H]], %k0, 0] [1, 1, 16, 16] into shared copy(sync) buffers(1) pad(0) : memref<1x1x6x16xf32> -> memref<16x16xf32, 3 : i64>
// CHECK:           %x2s = tile.stage %x2[%a0, %{{.*}}, %k0, 0] [1, 1, 16, 16] into shared
// CHECK:           %[[END:.*]] = arith.addi %k0, %c16 : index
// CHECK-NEXT:      tile.for %r0 = %k0 to min(%[[END]], 6) bind(serial) iter(
// CHECK-NEXT:        %[[KEY:.*]] = arith.subi %r0, %k0 : index
// CHECK:             loop.load %x0r[%j_2] : memref<4xf32>
// CHECK-NEXT:        loop.load %x1s[%[[KEY]], %r0_1] : memref<16x16xf32, 3 : i64>
// CHECK:             tile.combine add
// CHECK:             loop.load %x2s[%[[KEY]], %a3_1] : memref<16x16xf32, 3 : i64>
// UNSTAGED-NOT:  tile.stage
// UNSTAGED:      tile.for %r0 = 0 to min(%kub, 6) bind(serial)
// UNSTAGED-NOT:  tile.stage
builtin.module {
  tile.kernel @sdpa(%x0: memref<1x2x6x16xf32>, %x1: memref<1x1x6x16xf32>, %x2: memref<1x1x6x16xf32>, %out: memref<1x2x6x16xf32>) grid(6, 2, 1) block(1, 1, 1) key "45458d8203a662c3" plan attention(rows = [2, 6], head_dim = 16, keys = 6) {grid_dims = 2, mma = false, threads = 4, rows = 4, stage_keys = 16, stage_inputs = reused, copy = sync, unroll = 32} done ["tile-map-grid"] {
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

