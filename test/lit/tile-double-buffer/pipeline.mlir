// RUN: deplo-opt %s -p 'tile-double-buffer{buffers=3}' | filecheck %s --check-prefix=THREE
// RUN: not deplo-opt %s -p 'tile-double-buffer{buffers=4}' 2>&1 | filecheck %s --check-prefix=ERR
// RUN: deplo-opt %s -p 'tile-double-buffer{buffers=3},tile-cp-async,tile-unroll,tile-to-kernel' | filecheck %s --check-prefix=PIPE

// Three buffers for the three K chunks: a pipeline of two chunks in flight.
// THREE-LABEL: tile.kernel @scaled(
// THREE-SAME:      buffers = 3,
// THREE-COUNT-3:     buffers(3)
// An illegal option names the pass, the option, the kernel and the knob: four buffers for
// three chunks.
// ERR: deplo-opt: error: tile-double-buffer{buffers=4}: kernel @scaled: knob buffers: 4 buffers for 3 whole K chunk(s) of 32 (K = 96): more buffers than chunks
// ERR-NOT: error
// Lowered with cp.async: the prologue copies chunks 0 and 1 (a group each); iteration t waits
// at a barrier (t - 1 has read buffer (t + 2) mod 3), copies chunk t + 2 into it where there is
// one, commits, waits for all but the 2 newest groups (chunk t is in) and for every thread.
// PIPE-LABEL:  kernel.func @scaled(
// PIPE-COUNT-3:  memref<3x
// PIPE:          kernel.cp_async
// PIPE:          kernel.cp_async_commit
// PIPE:          kernel.cp_async
// PIPE:          kernel.cp_async_commit
// PIPE:          scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}}
// PIPE:            kernel.barrier
// PIPE:            %[[AHEAD:.*]] = arith.addi %[[K]], %{{.*}} : index
// PIPE:            %[[MORE:.*]] = arith.cmpi slt, %[[AHEAD]], %{{.*}} : index
// PIPE-NEXT:       scf.if %[[MORE]] {
// PIPE:              arith.remsi %{{.*}}, %{{.*}} : index
// PIPE:              kernel.cp_async
// PIPE:            kernel.cp_async_commit
// PIPE-NEXT:       kernel.cp_async_wait 2
// PIPE-NEXT:       kernel.barrier

builtin.module {
  tile.kernel @scaled(%x: memref<64x96xf32>, %s: memref<96xf32>, %w: memref<96x80xf32>, %out: memref<64x80xf32>) grid(5, 4, 1) block(16, 16, 1) plan matmul(chain = [64, 80], k = 96, tensor_cores = false, splittable = true, slabs = [ik4, k4, kj4]) {splits = 1, mma = false, reg_m = 1, reg_n = 1, interleave = false, threads_m = 16, threads_n = 16, k_chunk = 32, stage = true, pad = 4, buffers = 2, copy = cp_async, unroll = 32} done ["tile-split-k", "tile-tensor-core", "tile-register-tile", "tile-map-2d", "tile-chunk-reduce", "tile-stage-chunks", "tile-pad-shared"] {
    %zero = arith.constant 0.000000e+00 : f32
    tile.for %i = 0 to 4 bind(block.y) {
      tile.for %j = 0 to 5 bind(block.x) {
        tile.for %ty = 0 to 16 bind(thread.y) {
          tile.for %tx = 0 to 16 bind(thread.x) {
            %c16 = arith.constant 16 : index
            %0 = arith.muli %i, %c16 : index
            %it = arith.addi %0, %ty : index
            %1 = arith.muli %j, %c16 : index
            %jt = arith.addi %1, %tx : index
            %r = tile.for %ko = 0 to 96 step 32 bind(serial) iter(%acc = %zero) -> f32 {
              %c16_1 = arith.constant 16 : index
              %2 = arith.muli %i, %c16_1 : index
              %c16_2 = arith.constant 16 : index
              %3 = arith.muli %j, %c16_2 : index
              %xs = tile.stage %x[%2, %ko] [16, 32] into shared copy(sync) buffers(1) pad(4) : memref<64x96xf32> -> memref<16x36xf32, 3 : i64>
              %ss = tile.stage %s[%ko] [32] into shared copy(sync) buffers(1) pad(0) : memref<96xf32> -> memref<32xf32, 3 : i64>
              %ws = tile.stage %w[%ko, %3] [32, 16] into shared copy(sync) buffers(1) pad(4) : memref<96x80xf32> -> memref<32x20xf32, 3 : i64>
              %chunk = tile.for %ki = 0 to 32 bind(serial) iter(%acc_1 = %acc) -> f32 {
                %xv = loop.load %xs[%ty, %ki] : memref<16x36xf32, 3 : i64>
                %sv = loop.load %ss[%ki] : memref<32xf32, 3 : i64>
                %wv = loop.load %ws[%ki, %tx] : memref<32x20xf32, 3 : i64>
                %xs_1 = arith.mulf %xv, %sv : f32
                %p = arith.mulf %xs_1, %wv : f32
                %n = arith.addf %acc_1, %p : f32
                tile.yield %n : f32
              }
              tile.yield %chunk : f32
            }
            loop.store %r, %out[%it, %jt] : memref<64x80xf32>
          }
        }
      }
    }
  }
  func.func @main(%x: memref<64x96xf32>, %s: memref<96xf32>, %w: memref<96x80xf32>) -> memref<64x80xf32> {
    %out = memref.alloc() : memref<64x80xf32>
    tile.launch @scaled(%x, %s, %w, %out) : memref<64x96xf32>, memref<96xf32>, memref<96x80xf32>, memref<64x80xf32>
    func.return %out : memref<64x80xf32>
  }
}
