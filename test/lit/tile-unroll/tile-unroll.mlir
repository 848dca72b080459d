// RUN: deplo-opt %s --split-input-file -p loop-to-tile,tile-register-tile,tile-map-2d,tile-chunk-reduce,tile-stage-chunks,tile-map-grid,tile-cooperative-reduce,tile-map-threads,tile-stage-inputs,tile-unroll | filecheck %s
// RUN: deplo-opt %s --split-input-file -p "loop-to-tile,tile-register-tile,tile-map-2d,tile-chunk-reduce,tile-stage-chunks,tile-map-grid,tile-cooperative-reduce,tile-map-threads,tile-stage-inputs,tile-unroll{max-extent=16}" | filecheck %s --check-prefix=SHORT
// RUN: deplo-opt %s --split-input-file -p loop-to-tile,tile-register-tile,tile-map-2d,tile-chunk-reduce,tile-stage-chunks,tile-map-grid,tile-cooperative-reduce,tile-map-threads,tile-stage-inputs,tile-unroll,tile-to-kernel,kernel-to-cuda -t cuda | filecheck %s --check-prefix=CUDA

// The 32 steps of a K chunk are unrolled (each reads constant offsets of the staged tiles and
// updates the 16 accumulators in registers); the chunk loop itself is not innermost.
// CHECK-LABEL: tile.kernel @matmul({{.*}}) schedule [{{.*}}, "tile-unroll{max-extent=32}"] {
// CHECK:         tile.for %r0o = 0 to 96 step 32 bind(serial)
// CHECK:           tile.for %r0i = 0 to 32 bind(unroll)
// SHORT-LABEL: tile.kernel @matmul
// SHORT-NOT:     bind(unroll)
// CUDA-LABEL:  void __launch_bounds__(256) matmul(
// CUDA:          for (int r0o = 0; r0o < 96; r0o += 32) {
// CUDA:            #pragma unroll
// CUDA-NEXT:       for (int r0i = 0; r0i < 32; r0i += 1) {

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

// Chunks of 16 and the 5 steps of K left after them: both unrolled.
// CHECK-LABEL: tile.kernel @bmm
// CHECK:           tile.for %r0i = 0 to 16 bind(unroll)
// CHECK:         tile.for %{{.*}} = 48 to 53 bind(unroll)
// SHORT-LABEL: tile.kernel @bmm({{.*}}) schedule [{{.*}}, "tile-unroll{max-extent=16}"] {
// SHORT:           tile.for %r0i = 0 to 16 bind(unroll)
// SHORT:         tile.for %{{.*}} = 48 to 53 bind(unroll)

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

// Strided thread loops (a dynamic start) and a loop of one iteration stay as they are.
// CHECK-LABEL: tile.kernel @negative_rms_norm
// CHECK-NOT:     unroll
// SHORT-LABEL: tile.kernel @negative_rms_norm
// SHORT-NOT:     unroll

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
