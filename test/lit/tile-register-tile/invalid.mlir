// RUN: deplo-opt %s --split-input-file --verify-diagnostics -p tile-register-tile | filecheck %s
// RUN: deplo-opt %s --split-input-file --verify-diagnostics -p 'tile-register-tile{reg-n=2}' | filecheck %s --check-prefix=OPT

// A plan's steps run in order: the kernel is on threads already (tile-map-2d), which the plan
// does after the register tile.
// CHECK: tile-register-tile: kernel @runs_after_map_2d: runs after tile-map-2d, which its matmul plan carries out later
// OPT: tile-register-tile: kernel @runs_after_map_2d: runs after tile-map-2d, which its matmul plan carries out later

builtin.module {
  tile.kernel @runs_after_map_2d(%x: memref<64x96xf32>, %w: memref<96x80xf32>, %out: memref<64x80xf32>) grid(10, 8, 1) block(8, 8, 1) plan matmul(chain = [64, 80], k = 96, tensor_cores = false, splittable = true, slabs = [ik4, kj4]) {splits = 1, mma = false, reg_m = 4, reg_n = 4, interleave = false, threads_m = 8, threads_n = 8, k_chunk = 32, stage = true, pad = 4, buffers = 2, copy = cp_async, unroll = 32} done ["tile-split-k", "tile-tensor-core", "tile-map-2d"] {
    %zero = arith.constant 0.000000e+00 : f32
    tile.for %i = 0 to 8 bind(block.y) {
      tile.for %j = 0 to 10 bind(block.x) {
        tile.for %ty = 0 to 8 bind(thread.y) {
          tile.for %tx = 0 to 8 bind(thread.x) {
            %c8 = arith.constant 8 : index
            %0 = arith.muli %i, %c8 : index
            %it = arith.addi %0, %ty : index
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
    tile.launch @runs_after_map_2d(%x, %w, %out) : memref<64x96xf32>, memref<96x80xf32>, memref<64x80xf32>
    func.return %out : memref<64x80xf32>
  }
}

// -----

// Register-tiled already (1 x 4): the pass is a no-op, but an option that asks for another tile
// is an error.
// CHECK-LABEL: tile.kernel @already_done(
// CHECK-SAME:      done ["tile-split-k", "tile-tensor-core", "tile-register-tile"] {
// OPT: tile-register-tile{{[{].*}}reg-n=2}: kernel @already_done: knob {{.*}}: tile-register-tile has already carried out this plan

builtin.module {
  tile.kernel @already_done(%x: memref<16x64xf32>, %w: memref<64x16xf32>, %out: memref<16x16xf32>) grid(1, 1, 1) block(1, 1, 1) plan matmul(chain = [16, 16], k = 64, tensor_cores = false, splittable = true, slabs = [ik4, kj4]) {splits = 1, mma = false, reg_m = 1, reg_n = 4, interleave = false, threads_m = 16, threads_n = 4, k_chunk = 0, stage = false, pad = 0, buffers = 1, copy = sync, unroll = 32} done ["tile-split-k", "tile-tensor-core", "tile-register-tile"] {
    %zero = arith.constant 0.000000e+00 : f32
    tile.for %i = 0 to 16 bind(serial) {
      tile.for %j = 0 to 4 bind(serial) {
        %c4 = arith.constant 4 : index
        %jr0 = arith.muli %j, %c4 : index
        %c1 = arith.constant 1 : index
        %jr1 = arith.addi %jr0, %c1 : index
        %c2 = arith.constant 2 : index
        %jr2 = arith.addi %jr0, %c2 : index
        %c3 = arith.constant 3 : index
        %jr3 = arith.addi %jr0, %c3 : index
        %s, %s_1, %s_2, %s_3 = tile.for %k = 0 to 64 bind(serial) iter(%acc = %zero, %acc_1 = %zero, %acc_2 = %zero, %acc_3 = %zero) -> (f32, f32, f32, f32) {
          %xv = loop.load %x[%i, %k] : memref<16x64xf32>
          %wv = loop.load %w[%k, %jr0] : memref<64x16xf32>
          %wv_1 = loop.load %w[%k, %jr1] : memref<64x16xf32>
          %wv_2 = loop.load %w[%k, %jr2] : memref<64x16xf32>
          %wv_3 = loop.load %w[%k, %jr3] : memref<64x16xf32>
          %p = arith.mulf %xv, %wv : f32
          %p_1 = arith.mulf %xv, %wv_1 : f32
          %p_2 = arith.mulf %xv, %wv_2 : f32
          %p_3 = arith.mulf %xv, %wv_3 : f32
          %n = arith.addf %acc, %p : f32
          %n_1 = arith.addf %acc_1, %p_1 : f32
          %n_2 = arith.addf %acc_2, %p_2 : f32
          %n_3 = arith.addf %acc_3, %p_3 : f32
          tile.yield %n, %n_1, %n_2, %n_3 : f32, f32, f32, f32
        }
        loop.store %s, %out[%i, %jr0] : memref<16x16xf32>
        loop.store %s_1, %out[%i, %jr1] : memref<16x16xf32>
        loop.store %s_2, %out[%i, %jr2] : memref<16x16xf32>
        loop.store %s_3, %out[%i, %jr3] : memref<16x16xf32>
      }
    }
  }
  func.func @main(%x: memref<16x64xf32>, %w: memref<64x16xf32>) -> memref<16x16xf32> {
    %out = memref.alloc() : memref<16x16xf32>
    tile.launch @already_done(%x, %w, %out) : memref<16x64xf32>, memref<64x16xf32>, memref<16x16xf32>
    func.return %out : memref<16x16xf32>
  }
}
