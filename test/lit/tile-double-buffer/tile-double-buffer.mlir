// RUN: deplo-opt %s --split-input-file -p loop-to-tile,tile-register-tile,tile-map-2d,tile-chunk-reduce,tile-stage-chunks,tile-map-grid,tile-cooperative-reduce,tile-map-threads,tile-stage-inputs,tile-double-buffer | filecheck %s
// RUN: deplo-opt %s --split-input-file -p "loop-to-tile,tile-register-tile,tile-map-2d,tile-chunk-reduce,tile-stage-chunks,tile-map-grid,tile-cooperative-reduce,tile-map-threads,tile-stage-inputs,tile-double-buffer{max-bytes=24576}" | filecheck %s --check-prefix=TIGHT

// The K-chunk stages get a second buffer (16 KB -> 32 KB of shared memory).
// CHECK-LABEL: tile.kernel @matmul({{.*}}) schedule [{{.*}}, "tile-double-buffer{max-bytes=49152}"] {
// CHECK:         tile.stage %x0[{{.*}}] [64, 32] into shared copy(sync) buffers(2) pad(0)
// CHECK-NEXT:    tile.stage %x1[{{.*}}] [32, 64] into shared copy(sync) buffers(2) pad(0)
// With 24 KB allowed, only A's tile is doubled (8 + 8 + 8 KB).
// TIGHT-LABEL: tile.kernel @matmul({{.*}}) schedule [{{.*}}, "tile-double-buffer{max-bytes=24576}"] {
// TIGHT:         tile.stage %x0[{{.*}} buffers(2)
// TIGHT-NEXT:    tile.stage %x1[{{.*}} buffers(1)

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

// CHECK-LABEL: tile.kernel @bmm
// CHECK-COUNT-2: buffers(2)
// TIGHT-LABEL: tile.kernel @bmm
// TIGHT-COUNT-2: buffers(2)

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

// The row of RMSNorm is staged once per block, not in a loop: one buffer.
// CHECK-LABEL: tile.kernel @negative_rms_norm
// CHECK-NOT:     tile-double-buffer
// CHECK:         tile.stage %x[{{.*}} buffers(1)
// TIGHT-LABEL: tile.kernel @negative_rms_norm
// TIGHT:         buffers(1)

builtin.module {
  loop.kernel @negative_rms_norm(%x: memref<1x32x2048xf32>, %w: memref<2048xf32>, %out: memref<1x32x2048xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    %n = arith.constant 2.048000e+03 : f32
    loop.for %a0 = 0 to 1 free {
      loop.for %a1 = 0 to 32 free {
        %ss = loop.for %a2 = 0 to 2048 reduce iter(%acc = %zero) -> f32 {
          %v = loop.load %x[%a0, %a1, %a2] : memref<1x32x2048xf32>
          %sq = arith.mulf %v, %v : f32
          %s = arith.addf %acc, %sq : f32
          loop.yield %s : f32
        }
        %mean = arith.divf %ss, %n : f32
        %r = math.rsqrt %mean : f32
        loop.for %a3 = 0 to 2048 free {
          %v2 = loop.load %x[%a0, %a1, %a3] : memref<1x32x2048xf32>
          %wv = loop.load %w[%a3] : memref<2048xf32>
          %y = arith.mulf %v2, %r : f32
          %o = arith.mulf %y, %wv : f32
          loop.store %o, %out[%a0, %a1, %a3] : memref<1x32x2048xf32>
        }
      }
    }
  }
}
