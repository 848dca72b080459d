// RUN: deplo-opt %s -p "loop-to-tile,tile-register-tile{reg-m=4 reg-n=4 interleave=false transpose=true},tile-map-2d{threads-m=16 threads-n=16},tile-chunk-reduce{k-chunk=32},tile-stage-chunks,tile-pad-shared" | filecheck %s
// RUN: deplo-opt %s -p "loop-to-tile,tile-register-tile{reg-m=4 reg-n=4 interleave=false transpose=true},tile-map-2d{threads-m=16 threads-n=16},tile-chunk-reduce{k-chunk=32},tile-stage-chunks,tile-pad-shared,tile-to-kernel,kernel-vectorize" | filecheck %s --check-prefix=KERNEL

// A linear layer: both slabs have K innermost ([rows][k] of x, [cols][k] of the weight). With
// the register tile's `transpose` they are stored k-major, [32][64 + pad]: the loads swap their
// last two coordinates, and a thread's 4 rows (columns) of one k are consecutive words.
// CHECK-LABEL: tile.kernel @linear(
// CHECK-SAME:      transpose = true
// CHECK:           %xs = tile.stage %x[%{{.*}}, %{{.*}}] [64, 32] into shared copy(sync) buffers(1) pad(4) transposed : memref<64x96xf32> -> memref<32x68xf32, 3 : i64>
// CHECK-NEXT:      %ws = tile.stage %w[%{{.*}}, %{{.*}}] [64, 32] into shared copy(sync) buffers(1) pad(4) transposed : memref<80x96xf32> -> memref<32x68xf32, 3 : i64>
// CHECK:           %a = loop.load %xs[%ty, %r0i] map (d0, d1) -> (d1, (d0 * 4)) : memref<32x68xf32, 3 : i64>
// CHECK:           %b = loop.load %ws[%a1tc, %a1, %r0i] map (d0, d1, d2) -> (d2, ((d0 * 4) + (d1 * -64))) : memref<32x68xf32, 3 : i64>

// The copy walks a 32-byte sector of a row (8 fp32 of K, two 128-bit loads), then the next row:
// a warp writes 8 shared rows x 4 columns, every lane its own bank. The register tile reads a
// 128-bit vector of each stage per k.
// KERNEL-LABEL: kernel.func @linear(
// KERNEL:         kernel.vector_load %x[
// KERNEL-COUNT-4: memref.store {{.*}}, %xs[
// KERNEL:         kernel.vector_load %xs[%{{.*}}, %{{.*}}] : memref<32x68xf32, 3 : i64> -> f32, f32, f32, f32
// KERNEL:         kernel.vector_load %ws[%{{.*}}, %{{.*}}] : memref<32x68xf32, 3 : i64> -> f32, f32, f32, f32

builtin.module {
  loop.kernel @linear(%x: memref<64x96xf32>, %w: memref<80x96xf32>, %out: memref<64x80xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    loop.for %a0 = 0 to 64 free {
      loop.for %a1 = 0 to 80 free {
        %s = loop.for %r0 = 0 to 96 reduce iter(%acc = %zero) -> f32 {
          %a = loop.load %x[%a0, %r0] : memref<64x96xf32>
          %b = loop.load %w[%a1, %r0] : memref<80x96xf32>
          %p = arith.mulf %a, %b : f32
          %n = arith.addf %acc, %p : f32
          loop.yield %n : f32
        }
        loop.store %s, %out[%a0, %a1] : memref<64x80xf32>
      }
    }
  }
}
