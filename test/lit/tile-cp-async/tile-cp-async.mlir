// RUN: deplo-opt %s --split-input-file -p loop-to-tile,tile-register-tile,tile-map-2d,tile-chunk-reduce,tile-stage-chunks,tile-map-grid,tile-cooperative-reduce,tile-map-threads,tile-stage-inputs,tile-cp-async | filecheck %s
// RUN: deplo-opt %s --split-input-file -p "loop-to-tile,tile-register-tile,tile-map-2d,tile-chunk-reduce,tile-stage-chunks,tile-map-grid,tile-cooperative-reduce,tile-map-threads,tile-stage-inputs,tile-cp-async{loops-only=false}" | filecheck %s --check-prefix=ALL

// The K-chunk stages copy with cp.async (tile-to-kernel picks 16-byte pieces where aligned).
// CHECK-LABEL: tile.kernel @matmul({{.*}}) schedule [{{.*}}, "tile-cp-async{min-bytes=4 loops-only=true}"] {
// CHECK:         tile.stage %x0[{{.*}} into shared copy(cp_async) buffers(1) pad(0)
// CHECK-NEXT:    tile.stage %x1[{{.*}} into shared copy(cp_async) buffers(1) pad(0)
// ALL-LABEL:   tile.kernel @matmul
// ALL-COUNT-2:   copy(cp_async)

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

// K = 53: A's rows are not a whole number of 16 bytes; cp.async of 4 bytes still applies.
// CHECK-LABEL: tile.kernel @bmm
// CHECK-COUNT-2: copy(cp_async)
// ALL-LABEL:   tile.kernel @bmm
// ALL-COUNT-2:   copy(cp_async)

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

// A stage outside any loop waits for its copy at once: left sync by the heuristic.
// CHECK-LABEL: tile.kernel @negative_rms_norm
// CHECK-NOT:     tile-cp-async
// CHECK:         tile.stage %x[{{.*}} into shared copy(sync)
// ALL-LABEL:   tile.kernel @negative_rms_norm({{.*}}) schedule [{{.*}}, "tile-cp-async{min-bytes=4 loops-only=false}"] {
// ALL:           tile.stage %x[{{.*}} into shared copy(cp_async)

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
