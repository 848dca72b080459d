// RUN: deplo-opt %s --split-input-file -p loop-to-tile,tile-register-tile,tile-map-2d,tile-chunk-reduce,tile-stage-chunks | filecheck %s
// RUN: deplo-opt %s --split-input-file -p "loop-to-tile,tile-register-tile,tile-map-2d,tile-chunk-reduce,tile-stage-chunks{max-bytes=8192}" | filecheck %s --check-prefix=SMALL

// 4 x 4 outputs per thread, 16 x 16 threads: a block covers 64 rows and 64 columns. At the top of
// each K chunk, the block copies A's [64 x 32] and B's [32 x 64] tiles; the chunk's loads read
// them at their coordinates minus the tile's offset (the block's first row cancels out).
// CHECK-LABEL: tile.kernel @matmul({{.*}}) schedule [{{.*}}, "tile-chunk-reduce{k=32}", "tile-stage-chunks{max-bytes=49152}"] {
// CHECK:           tile.for %r0o = 0 to 96 step 32 bind(serial)
// CHECK-NEXT:        %c64 = arith.constant 64 : index
// CHECK-NEXT:        %[[ROW:.*]] = arith.muli %a0, %c64 : index
// CHECK:             %[[COL:.*]] = arith.muli %a1, %c64{{.*}} : index
// CHECK-NEXT:        %x0s = tile.stage %x0[%[[ROW]], %r0o] [64, 32] into shared copy(sync) buffers(1) pad(0) : memref<64x96xf32> -> memref<64x32xf32, 3 : i64>
// CHECK-NEXT:        %x1s = tile.stage %x1[%r0o, %[[COL]]] [32, 64] into shared copy(sync) buffers(1) pad(0) : memref<96x80xf32> -> memref<32x64xf32, 3 : i64>
// CHECK-NEXT:        tile.for %r0i = 0 to 32 bind(serial)
// CHECK-NEXT:          %a = loop.load %x0s[%ty, %r0i] map (d0, d1) -> ((d0 * 4), d1) : memref<64x32xf32, 3 : i64>
// CHECK:               %b = loop.load %x1s[%r0i, %a1tc, %a1] map (d0, d1, d2) -> (d0, ((d1 * 4) + (d2 * -64))) : memref<32x64xf32, 3 : i64>
// CHECK-NOT:           loop.load %x0[
// CHECK-NOT:           loop.load %x1[
// 8 KB of shared memory: A's tile fits, B's stays in global memory.
// SMALL-LABEL: tile.kernel @matmul({{.*}}) schedule [{{.*}}, "tile-stage-chunks{max-bytes=8192}"] {
// SMALL:             %x0s = tile.stage %x0
// SMALL-NOT:         tile.stage
// SMALL:               loop.load %x1[

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

// 37 x 70 per batch, K = 53: the batch coordinate is a unit dim of the slab (dropped); the last
// block's A tile passes row 37 (tile.stage reads it as zero, the clamped loads never read it);
// the 5 columns of K left after the chunks stay in global memory.
// CHECK-LABEL: tile.kernel @bmm({{.*}}) schedule [{{.*}}, "tile-stage-chunks{max-bytes=49152}"] {
// CHECK:             %x0s = tile.stage %x0[%a0, %{{.*}}, %r0o] [1, 32, 16] into shared copy(sync) buffers(1) pad(0) : memref<2x37x53xf32> -> memref<32x16xf32, 3 : i64>
// CHECK-NEXT:        %x1s = tile.stage %x1[%a0, %r0o, %{{.*}}] [1, 16, 64] into shared copy(sync) buffers(1) pad(0) : memref<2x53x70xf32> -> memref<16x64xf32, 3 : i64>
// CHECK:               loop.load %x0s[%a1r0, %a1, %r0i] map (d0, d1, d2) -> ((d0 + (d1 * -32)), d2)
// CHECK:             tile.for %{{.*}} = 48 to 53 bind(serial)
// CHECK-NEXT:          loop.load %x0[%a0, %a1r0,
// SMALL-LABEL: tile.kernel @bmm
// SMALL-COUNT-2:     tile.stage

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

// out[i, j] = sum_k x[i, k] * y[i, j, k]: every thread reads its own y (its coordinates depend on
// both thread axes, nothing to share): only x is staged.
// CHECK-LABEL: tile.kernel @negative_no_reuse
// CHECK:             %xs = tile.stage %x[
// CHECK-NOT:         tile.stage
// CHECK:               loop.load %y[
// SMALL-LABEL: tile.kernel @negative_no_reuse
// SMALL-COUNT-1:     tile.stage %x[

builtin.module {
  loop.kernel @negative_no_reuse(%x: memref<32x64xf32>, %y: memref<32x32x64xf32>, %out: memref<32x32xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    loop.for %a0 = 0 to 32 free {
      loop.for %a1 = 0 to 32 free {
        %s = loop.for %r0 = 0 to 64 reduce iter(%acc = %zero) -> f32 {
          %a = loop.load %x[%a0, %r0] : memref<32x64xf32>
          %b = loop.load %y[%a0, %a1, %r0] : memref<32x32x64xf32>
          %p = arith.mulf %a, %b : f32
          %n = arith.addf %acc, %p : f32
          loop.yield %n : f32
        }
        loop.store %s, %out[%a0, %a1] : memref<32x32xf32>
      }
    }
  }
}
