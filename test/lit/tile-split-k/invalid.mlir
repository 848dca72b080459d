// RUN: deplo-opt %s --split-input-file --verify-diagnostics -p tile-split-k | filecheck %s
// RUN: deplo-opt %s --split-input-file --verify-diagnostics -p 'tile-split-k{splits=4}' | filecheck %s --check-prefix=OPT

// A plan's steps run in order: splitting K after the kernel is mapped to threads is an error
// (tile-tensor-core is the first of the later steps done), with or without the option.
// CHECK: tile-split-k: kernel @runs_after_map_2d: runs after tile-tensor-core, which its matmul plan carries out later
// OPT: tile-split-k: kernel @runs_after_map_2d: runs after tile-tensor-core, which its matmul plan carries out later

builtin.module {
  tile.kernel @runs_after_map_2d(%x: memref<64x512xf32>, %w: memref<512x64xf32>, %out: memref<64x64xf32>) grid(4, 4, 1) block(16, 16, 1) plan matmul(chain = [64, 64], k = 512, tensor_cores = false, splittable = true, slabs = [ik4, kj4]) {splits = 1, mma = false, reg_m = 1, reg_n = 1, interleave = false, threads_m = 16, threads_n = 16, k_chunk = 32, stage = true, pad = 4, buffers = 2, copy = cp_async, unroll = 32} done ["tile-tensor-core", "tile-register-tile", "tile-map-2d"] {
    %zero = arith.constant 0.000000e+00 : f32
    tile.for %i = 0 to 4 bind(block.y) {
      tile.for %j = 0 to 4 bind(block.x) {
        tile.for %ty = 0 to 16 bind(thread.y) {
          tile.for %tx = 0 to 16 bind(thread.x) {
            %c16 = arith.constant 16 : index
            %0 = arith.muli %i, %c16 : index
            %it = arith.addi %0, %ty : index
            %1 = arith.muli %j, %c16 : index
            %jt = arith.addi %1, %tx : index
            %s = tile.for %k = 0 to 512 bind(serial) iter(%acc = %zero) -> f32 {
              %xv = loop.load %x[%it, %k] : memref<64x512xf32>
              %wv = loop.load %w[%k, %jt] : memref<512x64xf32>
              %p = arith.mulf %xv, %wv : f32
              %n = arith.addf %acc, %p : f32
              tile.yield %n : f32
            }
            loop.store %s, %out[%it, %jt] : memref<64x64xf32>
          }
        }
      }
    }
  }
  func.func @main(%x: memref<64x512xf32>, %w: memref<512x64xf32>) -> memref<64x64xf32> {
    %out = memref.alloc() : memref<64x64xf32>
    tile.launch @runs_after_map_2d(%x, %w, %out) : memref<64x512xf32>, memref<512x64xf32>, memref<64x64xf32>
    func.return %out : memref<64x64xf32>
  }
}

// -----

// Split already: the pass is a no-op, but an option that asks for another split is an error
// (the partials and the sum kernel of the first split exist).
// CHECK-LABEL: tile.kernel @already_split(
// CHECK-SAME:      done ["tile-split-k"] {
// OPT: tile-split-k{splits=4}: kernel @already_split: knob splits: tile-split-k has already carried out this plan

builtin.module {
  tile.kernel @already_split(%x: memref<64x4096xf32>, %w: memref<4096x64xf32>, %out: memref<64x64xf32>, %partials: memref<128x64x64xf32>) grid(1, 1, 1) block(1, 1, 1) plan matmul(chain = [64, 64], k = 4096, tensor_cores = false, splittable = true, slabs = [ik4, kj4]) {splits = 128, mma = false, reg_m = 4, reg_n = 4, interleave = false, threads_m = 8, threads_n = 8, k_chunk = 16, stage = true, pad = 4, buffers = 2, copy = cp_async, unroll = 32} done ["tile-split-k"] {
    %zero = arith.constant 0.000000e+00 : f32
    tile.for %split = 0 to 128 bind(serial) {
      tile.for %i = 0 to 64 bind(serial) {
        tile.for %j = 0 to 64 bind(serial) {
          %c32 = arith.constant 32 : index
          %k0 = arith.muli %split, %c32 : index
          %s = tile.for %kk = 0 to 32 bind(serial) iter(%acc = %zero) -> f32 {
            %k = arith.addi %k0, %kk : index
            %xv = loop.load %x[%i, %k] : memref<64x4096xf32>
            %wv = loop.load %w[%k, %j] : memref<4096x64xf32>
            %p = arith.mulf %xv, %wv : f32
            %n = arith.addf %acc, %p : f32
            tile.yield %n : f32
          }
          loop.store %s, %partials[%split, %i, %j] : memref<128x64x64xf32>
        }
      }
    }
  }
  func.func @main(%x: memref<64x4096xf32>, %w: memref<4096x64xf32>) -> memref<64x64xf32> {
    %out = memref.alloc() : memref<64x64xf32>
    %partials = memref.alloc() : memref<128x64x64xf32>
    tile.launch @already_split(%x, %w, %out, %partials) : memref<64x4096xf32>, memref<4096x64xf32>, memref<64x64xf32>, memref<128x64x64xf32>
    func.return %out : memref<64x64xf32>
  }
}
