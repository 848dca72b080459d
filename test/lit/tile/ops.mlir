// RUN: deplo-opt %s | deplo-opt | filecheck %s
// RUN: deplo-opt %s --print-op-generic | deplo-opt | filecheck %s

// CHECK-LABEL: tile.kernel @rms_norm(%x: memref<1x32x2048xf32>, %w: memref<2048xf32>, %out: memref<1x32x2048xf32>) grid(32, 1, 1) block(256, 1, 1) key "eb98365d218e5102" plan row_reduce(rows = [32], extent = 2048) {grid_dims = 1, threads = 256, stage_inputs = reused, copy = cp_async, unroll = 32} done ["tile-map-grid", "tile-cooperative-reduce", "tile-stage-inputs", "tile-cp-async"] {
// CHECK:         tile.for %a0 = 0 to 1 bind(serial) {
// CHECK:           tile.for %a1 = 0 to 32 bind(block.x) {
// CHECK:             %xs = tile.stage %x[%a0, %a1, 0] [1, 1, 2048] into shared copy(cp_async) buffers(1) pad(0) : memref<1x32x2048xf32> -> memref<2048xf32, 3 : i64>
// CHECK:             tile.for %t = 0 to 256 bind(thread.x) {
// CHECK:               %p = tile.for %a2 = %t to 2048 step 256 bind(serial) iter(%acc = %zero) -> f32 {
// CHECK:                 %v = loop.load %xs[%a2] : memref<2048xf32, 3 : i64>
// CHECK:                 tile.yield %s : f32
// CHECK:               %ss = tile.combine add %p over thread.x : f32
// CHECK:               tile.for %a3 = %t to 2048 step 256 bind(serial) {
// CHECK-NEXT:            loop.store %ss, %out[%a0, %a1, %a3] : memref<1x32x2048xf32>
// CHECK-LABEL: tile.kernel @short_forms(%x: memref<64x64xf32>) grid(4, 2, 1) block(8, 8, 1) {
// CHECK:         tile.for %i = 0 to 4 bind(block.x) {
// CHECK:           tile.for %j = 0 to 2 bind(block.y) {
// CHECK:             %xs = tile.stage %x[0, 0] [16, 32] into shared copy(sync) buffers(2) pad(1) : memref<64x64xf32> -> memref<16x33xf32, 3 : i64>
// CHECK:             %xt = tile.stage %x[0, 0] [16, 32] into shared copy(sync) buffers(1) pad(4) transposed : memref<64x64xf32> -> memref<32x20xf32, 3 : i64>
// CHECK-NEXT:        %xw = tile.stage %x[-1, -1] [18, 66] into shared copy(sync) buffers(1) pad(0) wrapped : memref<64x64xf32> -> memref<18x66xf32, 3 : i64>
// CHECK:             tile.for %ty = 0 to 8 bind(thread.y) {
// CHECK:               tile.for %tx = 0 to 8 bind(thread.x) {
// CHECK:                 %m, %n = tile.for %k = 0 to 4 bind(unroll) iter(%a = %zero, %b = %zero) -> (f32, f32) {
// CHECK:                 %mx = tile.combine max %m over thread.x : f32
// CHECK-LABEL: func.func @main
// CHECK:         tile.launch @rms_norm(%x, %w, %out) : memref<1x32x2048xf32>, memref<2048xf32>, memref<1x32x2048xf32>
builtin.module {
  tile.kernel @rms_norm(%x: memref<1x32x2048xf32>, %w: memref<2048xf32>, %out: memref<1x32x2048xf32>) grid(32) block(256) key "eb98365d218e5102" plan row_reduce(rows = [32], extent = 2048) {grid_dims = 1, threads = 256, stage_inputs = reused, copy = cp_async, unroll = 32} done ["tile-map-grid", "tile-cooperative-reduce", "tile-stage-inputs", "tile-cp-async"] {
    %zero = arith.constant 0.000000e+00 : f32
    tile.for %a0 = 0 to 1 bind(serial) {
      tile.for %a1 = 0 to 32 bind(block.x) {
        %xs = tile.stage %x[%a0, %a1, 0] [1, 1, 2048] into shared copy(cp_async) : memref<1x32x2048xf32> -> memref<2048xf32, 3 : i64>
        tile.for %t = 0 to 256 bind(thread.x) {
          %p = tile.for %a2 = %t to 2048 step 256 bind(serial) iter(%acc = %zero) -> f32 {
            %v = loop.load %xs[%a2] : memref<2048xf32, 3 : i64>
            %s = arith.addf %acc, %v : f32
            tile.yield %s : f32
          }
          %ss = tile.combine add %p over thread.x : f32
          tile.for %a3 = %t to 2048 step 256 bind(serial) {
            loop.store %ss, %out[%a0, %a1, %a3] : memref<1x32x2048xf32>
          }
        }
      }
    }
  }
  tile.kernel @short_forms(%x: memref<64x64xf32>) grid(4, 2) block(8, 8) {
    %zero = arith.constant 0.000000e+00 : f32
    tile.for %i = 0 to 4 bind(block.x) {
      tile.for %j = 0 to 2 bind(block.y) {
        %xs = tile.stage %x[0, 0] [16, 32] into shared buffers(2) pad(1) : memref<64x64xf32> -> memref<16x33xf32, 3 : i64>
        %xt = tile.stage %x[0, 0] [16, 32] into shared pad(4) transposed : memref<64x64xf32> -> memref<32x20xf32, 3 : i64>
        %xw = tile.stage %x[-1, -1] [18, 66] into shared wrapped : memref<64x64xf32> -> memref<18x66xf32, 3 : i64>
        tile.for %ty = 0 to 8 bind(thread.y) {
          tile.for %tx = 0 to 8 bind(thread.x) {
            %m, %n = tile.for %k = 0 to 4 bind(unroll) iter(%a = %zero, %b = %zero) -> (f32, f32) {
              tile.yield %a, %b : f32, f32
            }
            %mx = tile.combine max %m over thread.x : f32
          }
        }
      }
    }
  }
  func.func @main(%x: memref<1x32x2048xf32>, %w: memref<2048xf32>) -> memref<1x32x2048xf32> {
    %out = memref.alloc() : memref<1x32x2048xf32>
    tile.launch @rms_norm(%x, %w, %out) : memref<1x32x2048xf32>, memref<2048xf32>, memref<1x32x2048xf32>
    func.return %out : memref<1x32x2048xf32>
  }
}

// Tensor-core fragments: one warp's lanes load A and B tiles and multiply them.
// CHECK-LABEL: tile.kernel @fragments(%a: memref<64x64xf16>, %b: memref<64x64xbf16>, %bs: memref<64x64xbf16>)
// CHECK:         %a0, %a1, %a2, %a3 = tile.fragment_load a %a[%c0, %c0] lane(%l) : memref<64x64xf16> -> i32, i32, i32, i32
// CHECK-NEXT:    %b0, %b1 = tile.fragment_load b_kn %a[%c0, %c0] lane(%l) : memref<64x64xf16> -> i32, i32
// CHECK-NEXT:    %n0, %n1 = tile.fragment_load b_nk %b[%c0, %c0] lane(%l) : memref<64x64xbf16> -> i32, i32
// CHECK-NEXT:    %d0, %d1, %d2, %d3 = tile.mma f16 %a0, %a1, %a2, %a3, %b0, %b1, %z, %z, %z, %z
// CHECK-NEXT:    %e0, %e1, %e2, %e3 = tile.mma bf16 %a0, %a1, %a2, %a3, %n0, %n1, %d0, %d1, %d2, %d3
tile.kernel @fragments(%a: memref<64x64xf16>, %b: memref<64x64xbf16>, %bs: memref<64x64xbf16>) grid(1) block(32) {
  %z = arith.constant 0.000000e+00 : f32
  %c0 = arith.constant 0 : index
  tile.for %l = 0 to 32 bind(thread.x) {
    %a0, %a1, %a2, %a3 = tile.fragment_load a %a[%c0, %c0] lane(%l) : memref<64x64xf16> -> i32, i32, i32, i32
    %b0, %b1 = tile.fragment_load b_kn %a[%c0, %c0] lane(%l) : memref<64x64xf16> -> i32, i32
    %n0, %n1 = tile.fragment_load b_nk %b[%c0, %c0] lane(%l) : memref<64x64xbf16> -> i32, i32
    %d0, %d1, %d2, %d3 = tile.mma f16 %a0, %a1, %a2, %a3, %b0, %b1, %z, %z, %z, %z
    %e0, %e1, %e2, %e3 = tile.mma bf16 %a0, %a1, %a2, %a3, %n0, %n1, %d0, %d1, %d2, %d3
  }
}

// -----

// tile.gather: a tensor no buffer holds, its element at (i, j) what the region yields (an
// implicit GEMM's B: a window of the input, zero in the padding).
// CHECK-LABEL: tile.kernel @gather(
// CHECK:         %g = tile.gather {
// CHECK-NEXT:    ^bb0(%i: index, %j: index):
// CHECK-NEXT:      %v = loop.load %x[%i, %j] map (d0, d1) -> (d0, (d1 + 1)) : memref<4x9xf16>
// CHECK-NEXT:      tile.yield %v : f16
// CHECK-NEXT:    } : memref<4x8xf16>
tile.kernel @gather(%x: memref<4x9xf16>) grid(1) block(1) {
  %g = tile.gather {
  ^bb0(%i: index, %j: index):
    %v = loop.load %x[%i, %j] map (d0, d1) -> (d0, (d1 + 1)) : memref<4x9xf16>
    tile.yield %v : f16
  } : memref<4x8xf16>
}
