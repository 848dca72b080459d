// RUN: deplo-opt %s --split-input-file --verify-diagnostics -p 'tile-unroll{unroll=32}' | filecheck %s

// tile-unroll is the last step of every plan, so nothing can run after it; but once it is done,
// an option that asks for another limit is an error (the loops are unrolled already).
// CHECK: tile-unroll{unroll=32}: kernel @already_done: knob unroll: tile-unroll has already carried out this plan

builtin.module {
  tile.kernel @already_done(%x: memref<16x64xf32>, %w: memref<64x16xf32>, %out: memref<16x16xf32>) grid(1, 1, 1) block(16, 16, 1) plan matmul(chain = [16, 16], k = 64, tensor_cores = false, splittable = true, slabs = [ik4, kj4]) {splits = 1, mma = false, reg_m = 1, reg_n = 1, interleave = false, threads_m = 16, threads_n = 16, k_chunk = 8, stage = true, pad = 1, buffers = 2, copy = cp_async, unroll = 16} done ["tile-split-k", "tile-tensor-core", "tile-register-tile", "tile-map-2d", "tile-chunk-reduce", "tile-stage-chunks", "tile-pad-shared", "tile-double-buffer", "tile-cp-async", "tile-unroll"] {
    %zero = arith.constant 0.000000e+00 : f32
    tile.for %i = 0 to 1 bind(block.y) {
      tile.for %j = 0 to 1 bind(block.x) {
        tile.for %ty = 0 to 16 bind(thread.y) {
          tile.for %tx = 0 to 16 bind(thread.x) {
            %c16 = arith.constant 16 : index
            %0 = arith.muli %i, %c16 : index
            %it = arith.addi %0, %ty : index
            %1 = arith.muli %j, %c16 : index
            %jt = arith.addi %1, %tx : index
            %s = tile.for %ko = 0 to 64 step 8 bind(serial) iter(%acc = %zero) -> f32 {
              %c16_1 = arith.constant 16 : index
              %2 = arith.muli %i, %c16_1 : index
              %c16_2 = arith.constant 16 : index
              %3 = arith.muli %j, %c16_2 : index
              %xs = tile.stage %x[%2, %ko] [16, 8] into shared copy(cp_async) buffers(2) pad(1) : memref<16x64xf32> -> memref<16x9xf32, 3 : i64>
              %ws = tile.stage %w[%ko, %3] [8, 16] into shared copy(cp_async) buffers(2) pad(1) : memref<64x16xf32> -> memref<8x17xf32, 3 : i64>
              %chunk = tile.for %ki = 0 to 8 bind(unroll) iter(%acc_1 = %acc) -> f32 {
                %xv = loop.load %xs[%ty, %ki] : memref<16x9xf32, 3 : i64>
                %wv = loop.load %ws[%ki, %tx] : memref<8x17xf32, 3 : i64>
                %p = arith.mulf %xv, %wv : f32
                %n = arith.addf %acc_1, %p : f32
                tile.yield %n : f32
              }
              tile.yield %chunk : f32
            }
            loop.store %s, %out[%it, %jt] : memref<16x16xf32>
          }
        }
      }
    }
  }
  func.func @main(%x: memref<16x64xf32>, %w: memref<64x16xf32>) -> memref<16x16xf32> {
    %out = memref.alloc() : memref<16x16xf32>
    tile.launch @already_done(%x, %w, %out) : memref<16x64xf32>, memref<64x16xf32>, memref<16x16xf32>
    func.return %out : memref<16x16xf32>
  }
}
