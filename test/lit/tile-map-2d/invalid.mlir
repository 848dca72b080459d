// RUN: deplo-opt %s --split-input-file --verify-diagnostics -p tile-map-2d | filecheck %s
// RUN: deplo-opt %s --split-input-file --verify-diagnostics -p 'tile-map-2d{threads-n=16}' | filecheck %s --check-prefix=OPT

// A plan's steps run in order: K was chunked first, which the plan does after the mapping.
// CHECK: tile-map-2d: kernel @runs_after_chunk_reduce: runs after tile-chunk-reduce, which its matmul plan carries out later
// OPT: tile-map-2d: kernel @runs_after_chunk_reduce: runs after tile-chunk-reduce, which its matmul plan carries out later

builtin.module {
  tile.kernel @runs_after_chunk_reduce(%x: memref<64x96xf32>, %w: memref<96x80xf32>, %out: memref<64x80xf32>) grid(1, 1, 1) block(1, 1, 1) plan matmul(chain = [64, 80], k = 96, tensor_cores = false, splittable = true, slabs = [ik4, kj4]) {splits = 1, mma = false, reg_m = 1, reg_n = 1, interleave = false, threads_m = 16, threads_n = 16, k_chunk = 32, stage = true, pad = 4, buffers = 2, copy = cp_async, unroll = 32} done ["tile-split-k", "tile-tensor-core", "tile-register-tile", "tile-chunk-reduce"] {
    %zero = arith.constant 0.000000e+00 : f32
    tile.for %i = 0 to 64 bind(serial) {
      tile.for %j = 0 to 80 bind(serial) {
        %s = tile.for %ko = 0 to 96 step 32 bind(serial) iter(%acc = %zero) -> f32 {
          %chunk = tile.for %ki = 0 to 32 bind(serial) iter(%acc_1 = %acc) -> f32 {
            %k = arith.addi %ko, %ki : index
            %xv = loop.load %x[%i, %k] : memref<64x96xf32>
            %wv = loop.load %w[%k, %j] : memref<96x80xf32>
            %p = arith.mulf %xv, %wv : f32
            %n = arith.addf %acc_1, %p : f32
            tile.yield %n : f32
          }
          tile.yield %chunk : f32
        }
        loop.store %s, %out[%i, %j] : memref<64x80xf32>
      }
    }
  }
  func.func @main(%x: memref<64x96xf32>, %w: memref<96x80xf32>) -> memref<64x80xf32> {
    %out = memref.alloc() : memref<64x80xf32>
    tile.launch @runs_after_chunk_reduce(%x, %w, %out) : memref<64x96xf32>, memref<96x80xf32>, memref<64x80xf32>
    func.return %out : memref<64x80xf32>
  }
}

// -----

// Mapped already (4 x 8 threads): the pass is a no-op, but an option that asks for other
// threads is an error.
// CHECK-LABEL: tile.kernel @already_done(
// CHECK-SAME:      done ["tile-split-k", "tile-tensor-core", "tile-register-tile", "tile-map-2d"] {
// OPT: tile-map-2d{{[{].*}}threads-n=16}: kernel @already_done: knob {{.*}}: tile-map-2d has already carried out this plan

builtin.module {
  tile.kernel @already_done(%x: memref<64x96xf32>, %w: memref<96x80xf32>, %out: memref<64x80xf32>) grid(10, 16, 1) block(8, 4, 1) plan matmul(chain = [64, 80], k = 96, tensor_cores = false, splittable = true, slabs = [ik4, kj4]) {splits = 1, mma = false, reg_m = 1, reg_n = 1, interleave = false, threads_m = 4, threads_n = 8, k_chunk = 32, stage = true, pad = 4, buffers = 2, copy = cp_async, unroll = 32} done ["tile-split-k", "tile-tensor-core", "tile-register-tile", "tile-map-2d"] {
    %zero = arith.constant 0.000000e+00 : f32
    tile.for %i = 0 to 16 bind(block.y) {
      tile.for %j = 0 to 10 bind(block.x) {
        tile.for %ty = 0 to 4 bind(thread.y) {
          tile.for %tx = 0 to 8 bind(thread.x) {
            %c4 = arith.constant 4 : index
            %0 = arith.muli %i, %c4 : index
            %it = arith.addi %0, %ty : index
            %c8 = arith.constant 8 : index
            %1 = arith.muli %j, %c8 : index
            %jt = arith.addi %1, %tx : index
            %s = tile.for %k = 0 to 96 bind(serial) iter(%acc = %zero) -> f32 {
              %xv = loop.load %x[%it, %k] : memref<64x96xf32>
              %wv = loop.load %w[%k, %jt] : memref<96x80xf32>
              %p = arith.mulf %xv, %wv : f32
              %n = arith.addf %acc, %p : f32
              tile.yield %n : f32
            }
            loop.store %s, %out[%it, %jt] : memref<64x80xf32>
          }
        }
      }
    }
  }
  func.func @main(%x: memref<64x96xf32>, %w: memref<96x80xf32>) -> memref<64x80xf32> {
    %out = memref.alloc() : memref<64x80xf32>
    tile.launch @already_done(%x, %w, %out) : memref<64x96xf32>, memref<96x80xf32>, memref<64x80xf32>
    func.return %out : memref<64x80xf32>
  }
}
