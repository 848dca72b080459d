// RUN: deplo-opt %s --split-input-file -p loop-to-tile,tile-map-2d | filecheck %s
// RUN: deplo-opt %s --split-input-file -p "loop-to-tile,tile-register-tile,tile-map-2d{threads-m=4 threads-n=8}" | filecheck %s --check-prefix=RT

// 64 x 80 outputs: 16 x 16 threads per block, 4 x 5 blocks; the rows and columns divide, so no
// clamp and no guard. The cell moves into the thread loops unchanged.
// CHECK-LABEL: tile.kernel @matmul({{.*}}) grid(5, 4, 1) block(16, 16, 1) schedule ["tile-map-2d{threads-m=16 threads-n=16}"] {
// CHECK:         tile.for %a0 = 0 to 4 bind(block.y) {
// CHECK-NEXT:      tile.for %a1 = 0 to 5 bind(block.x) {
// CHECK-NEXT:        tile.for %ty = 0 to 16 bind(thread.y) {
// CHECK-NEXT:          tile.for %tx = 0 to 16 bind(thread.x) {
// CHECK-NEXT:            %c16 = arith.constant 16 : index
// CHECK-NEXT:            %[[R:.*]] = arith.muli %a0, %c16 : index
// CHECK-NEXT:            %a0t = arith.addi %[[R]], %ty : index
// CHECK-NEXT:            %[[C:.*]] = arith.muli %a1, %c16 : index
// CHECK-NEXT:            %a1t = arith.addi %[[C]], %tx : index
// CHECK-NEXT:            %s = tile.for %r0 = 0 to 96 bind(serial) iter(%acc = %zero) -> f32 {
// CHECK-NEXT:              loop.load %x0[%a0t, %r0]
// CHECK-NEXT:              loop.load %x1[%r0, %a1t]
// CHECK:                 loop.store %s, %out[%a0t, %a1t] : memref<64x80xf32>
// After tile-register-tile (4 x 4 per thread: 16 x 20 tiles), 4 x 8 threads: the 20 columns of
// tiles do not divide into 8, so the column is clamped and the stores guarded.
// RT-LABEL:    tile.kernel @matmul({{.*}}) grid(3, 4, 1) block(8, 4, 1) schedule ["tile-register-tile{m=4 n=4}", "tile-map-2d{threads-m=4 threads-n=8}"] {
// RT:                    %a1t = arith.addi %{{.*}}, %tx : index
// RT-NEXT:               %c20 = arith.constant 20 : index
// RT-NEXT:               %in = arith.cmpi ult, %a1t, %c20 : index
// RT-NEXT:               %c19 = arith.constant 19 : index
// RT-NEXT:               %a1tc = arith.minsi %a1t, %c19 : index
// RT:                    %a1r0 = arith.muli %a1tc, %c4 : index
// RT:                    scf.if %in {
// RT-NEXT:                 loop.store %s, %out[%a0r0, %a1r0] : memref<64x80xf32>
builtin.module {
  loop.kernel @matmul(%x0: memref<64x96xf32>, %x1: memref<96x80xf32>, %out: memref<64x80xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    loop.for %a0 = 0 to 64 free {
      loop.for %a1 = 0 to 80 free {
        %s = loop.for %r0 = 0 to 96 reduce iter(%acc = %zero) -> f32 {
          %a = loop.load %x0[%a0, %r0] : memref<64x96xf32>
          %b = loop.load %x1[%r0, %a1] : memref<96x80xf32>
          %p = arith.mulf %a, %b : f32
          %n = arith.addf %acc, %p : f32
          loop.yield %n : f32
        }
        loop.store %s, %out[%a0, %a1] : memref<64x80xf32>
      }
    }
  }
}

// -----

// A batched matmul, 37 x 70 per batch: the batch goes to block.z; 37 rows over 16 threads.y
// leave the last block with 11 idle rows: clamped to row 36 and guarded.
// CHECK-LABEL: tile.kernel @bmm({{.*}}) grid(5, 3, 2) block(16, 16, 1) schedule ["tile-map-2d{threads-m=16 threads-n=16}"] {
// CHECK:         tile.for %a0 = 0 to 2 bind(block.z) {
// CHECK-NEXT:      tile.for %a1 = 0 to 3 bind(block.y) {
// CHECK-NEXT:        tile.for %a2 = 0 to 5 bind(block.x) {
// CHECK:                 %in = arith.cmpi ult, %a1t, %c37 : index
// CHECK-NEXT:            %c36 = arith.constant 36 : index
// CHECK-NEXT:            %a1tc = arith.minsi %a1t, %c36 : index
// CHECK:                 %[[OK:.*]] = arith.andi %in, %in_1 : i1
// CHECK:                 loop.load %x0[%a0, %a1tc, %r0]
// CHECK:                 scf.if %[[OK]] {
// CHECK-NEXT:              loop.store %s, %out[%a0, %a1tc, %a2tc] : memref<2x37x70xf32>
// RT-LABEL:    tile.kernel @bmm({{.*}}) grid(3, 5, 2) block(8, 4, 1) schedule ["tile-register-tile{m=2 n=4}", "tile-map-2d{threads-m=4 threads-n=8}"]

builtin.module {
  loop.kernel @bmm(%x0: memref<2x37x53xf32>, %x1: memref<2x53x70xf32>, %out: memref<2x37x70xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    loop.for %a0 = 0 to 2 free {
      loop.for %a1 = 0 to 37 free {
        loop.for %a2 = 0 to 70 free {
          %s = loop.for %r0 = 0 to 53 reduce iter(%acc = %zero) -> f32 {
            %a = loop.load %x0[%a0, %a1, %r0] : memref<2x37x53xf32>
            %b = loop.load %x1[%a0, %r0, %a2] : memref<2x53x70xf32>
            %p = arith.mulf %a, %b : f32
            %n = arith.addf %acc, %p : f32
            loop.yield %n : f32
          }
          loop.store %s, %out[%a0, %a1, %a2] : memref<2x37x70xf32>
        }
      }
    }
  }
}

// -----

// Too small for the heuristic (16 x 16 outputs); and not a contraction (RMSNorm): no change.
// CHECK-LABEL: tile.kernel @negative_small({{.*}}) grid(1, 1, 1) block(1, 1, 1) schedule [] {
// CHECK-LABEL: tile.kernel @negative_rms_norm({{.*}}) grid(1, 1, 1) block(1, 1, 1) schedule [] {
// RT-LABEL:    tile.kernel @negative_small({{.*}}) grid(2, 4, 1) block(8, 4, 1)
// RT-LABEL:    tile.kernel @negative_rms_norm({{.*}}) schedule [] {

builtin.module {
  loop.kernel @negative_small(%x: memref<16x64xf32>, %w: memref<64x16xf32>, %out: memref<16x16xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    loop.for %a0 = 0 to 16 free {
      loop.for %a1 = 0 to 16 free {
        %s = loop.for %r0 = 0 to 64 reduce iter(%acc = %zero) -> f32 {
          %a = loop.load %x[%a0, %r0] : memref<16x64xf32>
          %b = loop.load %w[%r0, %a1] : memref<64x16xf32>
          %p = arith.mulf %a, %b : f32
          %n = arith.addf %acc, %p : f32
          loop.yield %n : f32
        }
        loop.store %s, %out[%a0, %a1] : memref<16x16xf32>
      }
    }
  }
  loop.kernel @negative_rms_norm(%x: memref<32x2048xf32>, %out: memref<32x2048xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    loop.for %a0 = 0 to 32 free {
      %ss = loop.for %a1 = 0 to 2048 reduce iter(%acc = %zero) -> f32 {
        %v = loop.load %x[%a0, %a1] : memref<32x2048xf32>
        %sq = arith.mulf %v, %v : f32
        %s = arith.addf %acc, %sq : f32
        loop.yield %s : f32
      }
      loop.for %a2 = 0 to 2048 free {
        %v2 = loop.load %x[%a0, %a2] : memref<32x2048xf32>
        %y = arith.mulf %v2, %ss : f32
        loop.store %y, %out[%a0, %a2] : memref<32x2048xf32>
      }
    }
  }
}
