// RUN: deplo-opt %s --split-input-file -p tile-unroll | filecheck %s
// RUN: deplo-opt %s --split-input-file -p 'tile-unroll{unroll=16}' | filecheck %s --check-prefix=OPT
// RUN: not deplo-opt %s --split-input-file -p 'tile-unroll{unroll=-1}' 2>&1 | filecheck %s --check-prefix=ERR

// The 32 steps of a K chunk are unrolled (each reads constant offsets of the staged tiles and
// keeps the accumulators in registers); the chunk loop itself is not innermost (it holds the
// stages and the steps' loop).
// CHECK-LABEL: tile.kernel @scaled(
// CHECK-SAME:      unroll = 32}
// CHECK-SAME:      done ["tile-split-k", "tile-tensor-core", "tile-register-tile", "tile-map-2d", "tile-chunk-reduce", "tile-stage-chunks", "tile-pad-shared", "tile-double-buffer", "tile-cp-async", "tile-unroll"] {
// CHECK:             tile.for %{{.*}} = 0 to 96 step 32 bind(serial)
// CHECK-COUNT-3:       tile.stage
// CHECK-NEXT:          tile.for %{{.*}} = 0 to 32 bind(unroll)
// The option unrolls loops of at most 16 iterations: not the chunk of 32.
// OPT-LABEL:   tile.kernel @scaled(
// OPT-SAME:        unroll = 16}
// OPT:                 tile.for %{{.*}} = 0 to 32 bind(serial)
// OPT-NOT:             bind(unroll)
// An illegal option names the pass, the option, the kernel and the knob.
// ERR: deplo-opt: error: tile-unroll{unroll=-1}: kernel @scaled: knob unroll: expected an integer >= 0, got -1
// ERR-NOT: error

builtin.module {
  tile.kernel @scaled(%x: memref<64x96xf32>, %s: memref<96xf32>, %w: memref<96x80xf32>, %out: memref<64x80xf32>) grid(5, 4, 1) block(16, 16, 1) plan matmul(chain = [64, 80], k = 96, tensor_cores = false, splittable = true, slabs = [ik4, k4, kj4]) {splits = 1, mma = false, reg_m = 1, reg_n = 1, interleave = false, threads_m = 16, threads_n = 16, k_chunk = 32, stage = true, pad = 4, buffers = 2, copy = cp_async, unroll = 32} done ["tile-split-k", "tile-tensor-core", "tile-register-tile", "tile-map-2d", "tile-chunk-reduce", "tile-stage-chunks", "tile-pad-shared", "tile-double-buffer", "tile-cp-async"] {
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
              %xs = tile.stage %x[%2, %ko] [16, 32] into shared copy(cp_async) buffers(2) pad(4) : memref<64x96xf32> -> memref<16x36xf32, 3 : i64>
              %ss = tile.stage %s[%ko] [32] into shared copy(cp_async) buffers(2) pad(0) : memref<96xf32> -> memref<32xf32, 3 : i64>
              %ws = tile.stage %w[%ko, %3] [32, 16] into shared copy(cp_async) buffers(2) pad(4) : memref<96x80xf32> -> memref<32x20xf32, 3 : i64>
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

// -----

// Chunks of 16 and the 5 steps of K left after them: both unrolled.
// CHECK-LABEL: tile.kernel @bmm(
// CHECK-SAME:      done ["tile-split-k", "tile-tensor-core", "tile-register-tile", "tile-map-2d", "tile-chunk-reduce", "tile-stage-chunks", "tile-pad-shared", "tile-double-buffer", "tile-cp-async", "tile-unroll"] {
// CHECK:               tile.for %{{.*}} = 0 to 48 step 16 bind(serial)
// CHECK:                 tile.for %{{.*}} = 0 to 16 bind(unroll)
// CHECK:               tile.for %{{.*}} = 48 to 53 bind(unroll)
// OPT-LABEL:   tile.kernel @bmm(
// OPT:                   tile.for %{{.*}} = 0 to 16 bind(unroll)
// OPT:                 tile.for %{{.*}} = 48 to 53 bind(unroll)

builtin.module {
  tile.kernel @bmm(%x: memref<2x37x53xf32>, %w: memref<2x53x70xf32>, %out: memref<2x37x70xf32>) grid(5, 3, 2) block(16, 16, 1) plan matmul(chain = [2, 37, 70], k = 53, tensor_cores = false, splittable = true, slabs = [ik4, kj4]) {splits = 1, mma = false, reg_m = 1, reg_n = 1, interleave = false, threads_m = 16, threads_n = 16, k_chunk = 16, stage = true, pad = 4, buffers = 2, copy = cp_async, unroll = 32} done ["tile-split-k", "tile-tensor-core", "tile-register-tile", "tile-map-2d", "tile-chunk-reduce", "tile-stage-chunks", "tile-pad-shared", "tile-double-buffer", "tile-cp-async"] {
    %zero = arith.constant 0.000000e+00 : f32
    tile.for %bt = 0 to 2 bind(block.z) {
      tile.for %i = 0 to 3 bind(block.y) {
        tile.for %j = 0 to 5 bind(block.x) {
          tile.for %ty = 0 to 16 bind(thread.y) {
            tile.for %tx = 0 to 16 bind(thread.x) {
              %c16 = arith.constant 16 : index
              %0 = arith.muli %i, %c16 : index
              %it = arith.addi %0, %ty : index
              %c37 = arith.constant 37 : index
              %in = arith.cmpi ult, %it, %c37 : index
              %c36 = arith.constant 36 : index
              %itc = arith.minsi %it, %c36 : index
              %1 = arith.muli %j, %c16 : index
              %jt = arith.addi %1, %tx : index
              %c70 = arith.constant 70 : index
              %in_1 = arith.cmpi ult, %jt, %c70 : index
              %c69 = arith.constant 69 : index
              %jtc = arith.minsi %jt, %c69 : index
              %in_2 = arith.andi %in, %in_1 : i1
              %chunk = tile.for %ko = 0 to 48 step 16 bind(serial) iter(%acc = %zero) -> f32 {
                %c16_1 = arith.constant 16 : index
                %2 = arith.muli %i, %c16_1 : index
                %c16_2 = arith.constant 16 : index
                %3 = arith.muli %j, %c16_2 : index
                %xs = tile.stage %x[%bt, %2, %ko] [1, 16, 16] into shared copy(cp_async) buffers(2) pad(4) : memref<2x37x53xf32> -> memref<16x20xf32, 3 : i64>
                %ws = tile.stage %w[%bt, %ko, %3] [1, 16, 16] into shared copy(cp_async) buffers(2) pad(4) : memref<2x53x70xf32> -> memref<16x20xf32, 3 : i64>
                %chunk_1 = tile.for %ki = 0 to 16 bind(serial) iter(%acc_1 = %acc) -> f32 {
                  %xv = loop.load %xs[%itc, %i, %ki] map (d0, d1, d2) -> ((d0 + (d1 * -16)), d2) : memref<16x20xf32, 3 : i64>
                  %wv = loop.load %ws[%ki, %jtc, %j] map (d0, d1, d2) -> (d0, (d1 + (d2 * -16))) : memref<16x20xf32, 3 : i64>
                  %p = arith.mulf %xv, %wv : f32
                  %n = arith.addf %acc_1, %p : f32
                  tile.yield %n : f32
                }
                tile.yield %chunk_1 : f32
              }
              %s = tile.for %k = 48 to 53 bind(serial) iter(%acc_2 = %chunk) -> f32 {
                %xv_1 = loop.load %x[%bt, %itc, %k] : memref<2x37x53xf32>
                %wv_1 = loop.load %w[%bt, %k, %jtc] : memref<2x53x70xf32>
                %p_1 = arith.mulf %xv_1, %wv_1 : f32
                %n_1 = arith.addf %acc_2, %p_1 : f32
                tile.yield %n_1 : f32
              }
              scf.if %in_2 {
                loop.store %s, %out[%bt, %itc, %jtc] : memref<2x37x70xf32>
              }
            }
          }
        }
      }
    }
  }
  func.func @main(%x: memref<2x37x53xf32>, %w: memref<2x53x70xf32>) -> memref<2x37x70xf32> {
    %out = memref.alloc() : memref<2x37x70xf32>
    tile.launch @bmm(%x, %w, %out) : memref<2x37x53xf32>, memref<2x53x70xf32>, memref<2x37x70xf32>
    func.return %out : memref<2x37x70xf32>
  }
}

// -----

// Not only matmuls: a small matmul (K = 8) with a pointwise plan, one output a thread; its
// 8-step reduction is innermost and short: unrolled.
// CHECK-LABEL: tile.kernel @pointwise(
// CHECK-SAME:      plan pointwise(chain = [64, 16], leaf = true)
// CHECK-SAME:      done ["tile-map-grid", "tile-map-threads", "tile-stage-inputs", "tile-cp-async", "tile-unroll"] {
// CHECK:             tile.for %{{.*}} = 0 to 8 bind(unroll) iter
// OPT-LABEL:   tile.kernel @pointwise(
// OPT-SAME:        unroll = 16}
// OPT:               tile.for %{{.*}} = 0 to 8 bind(unroll) iter

builtin.module {
  tile.kernel @pointwise(%x: memref<64x8xf32>, %w: memref<8x16xf32>, %out: memref<64x16xf32>) grid(64, 1, 1) block(32, 1, 1) plan pointwise(chain = [64, 16], leaf = true) {grid_dims = 3, leave_innermost = true, chunk = 0, threads = 256, stage_inputs = reused, copy = sync, unroll = 32} done ["tile-map-grid", "tile-map-threads", "tile-stage-inputs", "tile-cp-async"] {
    %zero = arith.constant 0.000000e+00 : f32
    tile.for %i = 0 to 64 bind(block.x) {
      tile.for %j = 0 to 16 bind(thread.x) {
        %s = tile.for %k = 0 to 8 bind(serial) iter(%acc = %zero) -> f32 {
          %xv = loop.load %x[%i, %k] : memref<64x8xf32>
          %wv = loop.load %w[%k, %j] : memref<8x16xf32>
          %p = arith.mulf %xv, %wv : f32
          %n = arith.addf %acc, %p : f32
          tile.yield %n : f32
        }
        loop.store %s, %out[%i, %j] : memref<64x16xf32>
      }
    }
  }
  func.func @main(%x: memref<64x8xf32>, %w: memref<8x16xf32>) -> memref<64x16xf32> {
    %out = memref.alloc() : memref<64x16xf32>
    tile.launch @pointwise(%x, %w, %out) : memref<64x8xf32>, memref<8x16xf32>, memref<64x16xf32>
    func.return %out : memref<64x16xf32>
  }
}

// -----

// The plan unrolls nothing (unroll = 0): the step is recorded, the loops stay serial.
// CHECK-LABEL: tile.kernel @negative_unroll_zero(
// CHECK-SAME:      unroll = 0}
// CHECK-SAME:      done ["tile-split-k", "tile-tensor-core", "tile-register-tile", "tile-map-2d", "tile-chunk-reduce", "tile-stage-chunks", "tile-pad-shared", "tile-double-buffer", "tile-cp-async", "tile-unroll"] {
// CHECK-NOT:     bind(unroll)
// OPT-LABEL:   tile.kernel @negative_unroll_zero(
// OPT-SAME:        unroll = 16}
// OPT-NOT:       bind(unroll)

builtin.module {
  tile.kernel @negative_unroll_zero(%x: memref<64x96xf32>, %w: memref<96x80xf32>, %out: memref<64x80xf32>) grid(3, 2, 1) block(16, 16, 1) plan matmul(chain = [64, 80], k = 96, tensor_cores = false, splittable = true, slabs = [ik4, kj4]) {splits = 1, mma = false, reg_m = 2, reg_n = 2, interleave = false, threads_m = 16, threads_n = 16, k_chunk = 32, stage = true, pad = 0, buffers = 1, copy = sync, unroll = 0} done ["tile-split-k", "tile-tensor-core", "tile-register-tile", "tile-map-2d", "tile-chunk-reduce", "tile-stage-chunks", "tile-pad-shared", "tile-double-buffer", "tile-cp-async"] {
    %zero = arith.constant 0.000000e+00 : f32
    tile.for %i = 0 to 2 bind(block.y) {
      tile.for %j = 0 to 3 bind(block.x) {
        tile.for %ty = 0 to 16 bind(thread.y) {
          tile.for %tx = 0 to 16 bind(thread.x) {
            %c16 = arith.constant 16 : index
            %0 = arith.muli %i, %c16 : index
            %it = arith.addi %0, %ty : index
            %1 = arith.muli %j, %c16 : index
            %jt = arith.addi %1, %tx : index
            %c40 = arith.constant 40 : index
            %in = arith.cmpi ult, %jt, %c40 : index
            %c39 = arith.constant 39 : index
            %jtc = arith.minsi %jt, %c39 : index
            %c2 = arith.constant 2 : index
            %ir0 = arith.muli %it, %c2 : index
            %c1 = arith.constant 1 : index
            %ir1 = arith.addi %ir0, %c1 : index
            %jr0 = arith.muli %jtc, %c2 : index
            %jr1 = arith.addi %jr0, %c1 : index
            %s, %s_1, %s_2, %s_3 = tile.for %ko = 0 to 96 step 32 bind(serial) iter(%acc = %zero, %acc_1 = %zero, %acc_2 = %zero, %acc_3 = %zero) -> (f32, f32, f32, f32) {
              %c32 = arith.constant 32 : index
              %2 = arith.muli %i, %c32 : index
              %c32_1 = arith.constant 32 : index
              %3 = arith.muli %j, %c32_1 : index
              %xs = tile.stage %x[%2, %ko] [32, 32] into shared copy(sync) buffers(1) pad(0) : memref<64x96xf32> -> memref<32x32xf32, 3 : i64>
              %ws = tile.stage %w[%ko, %3] [32, 32] into shared copy(sync) buffers(1) pad(0) : memref<96x80xf32> -> memref<32x32xf32, 3 : i64>
              %chunk, %chunk_1, %chunk_2, %chunk_3 = tile.for %ki = 0 to 32 bind(serial) iter(%acc_4 = %acc, %acc_5 = %acc_1, %acc_6 = %acc_2, %acc_7 = %acc_3) -> (f32, f32, f32, f32) {
                %xv = loop.load %xs[%ty, %ki] map (d0, d1) -> ((d0 * 2), d1) : memref<32x32xf32, 3 : i64>
                %xv_1 = loop.load %xs[%ty, %ki] map (d0, d1) -> (((d0 * 2) + 1), d1) : memref<32x32xf32, 3 : i64>
                %wv = loop.load %ws[%ki, %jtc, %j] map (d0, d1, d2) -> (d0, ((d1 * 2) + (d2 * -32))) : memref<32x32xf32, 3 : i64>
                %wv_1 = loop.load %ws[%ki, %jtc, %j] map (d0, d1, d2) -> (d0, (((d1 * 2) + 1) + (d2 * -32))) : memref<32x32xf32, 3 : i64>
                %p = arith.mulf %xv, %wv : f32
                %p_1 = arith.mulf %xv, %wv_1 : f32
                %p_2 = arith.mulf %xv_1, %wv : f32
                %p_3 = arith.mulf %xv_1, %wv_1 : f32
                %n = arith.addf %acc_4, %p : f32
                %n_1 = arith.addf %acc_5, %p_1 : f32
                %n_2 = arith.addf %acc_6, %p_2 : f32
                %n_3 = arith.addf %acc_7, %p_3 : f32
                tile.yield %n, %n_1, %n_2, %n_3 : f32, f32, f32, f32
              }
              tile.yield %chunk, %chunk_1, %chunk_2, %chunk_3 : f32, f32, f32, f32
            }
            scf.if %in {
              loop.store %s, %out[%ir0, %jr0] : memref<64x80xf32>
              loop.store %s_1, %out[%ir0, %jr1] : memref<64x80xf32>
              loop.store %s_2, %out[%ir1, %jr0] : memref<64x80xf32>
              loop.store %s_3, %out[%ir1, %jr1] : memref<64x80xf32>
            }
          }
        }
      }
    }
  }
  func.func @main(%x: memref<64x96xf32>, %w: memref<96x80xf32>) -> memref<64x80xf32> {
    %out = memref.alloc() : memref<64x80xf32>
    tile.launch @negative_unroll_zero(%x, %w, %out) : memref<64x96xf32>, memref<96x80xf32>, memref<64x80xf32>
    func.return %out : memref<64x80xf32>
  }
}

// -----

// RMSNorm's row_reduce plan: its thread loops are strided (a dynamic start) and the batch loop
// has one iteration: nothing to unroll; the step is recorded.
// CHECK-LABEL: tile.kernel @negative_rms_norm(
// CHECK-SAME:      done ["tile-map-grid", "tile-cooperative-reduce", "tile-stage-inputs", "tile-cp-async", "tile-unroll"] {
// CHECK-NOT:     bind(unroll)
// OPT-LABEL:   tile.kernel @negative_rms_norm(
// OPT-NOT:       bind(unroll)

builtin.module {
  tile.kernel @negative_rms_norm(%x: memref<1x32x2048xf32>, %w: memref<2048xf32>, %out: memref<1x32x2048xf32>) grid(32, 1, 1) block(256, 1, 1) plan row_reduce(rows = [32], extent = 2048) {grid_dims = 1, threads = 256, stage_inputs = reused, copy = cp_async, unroll = 32} done ["tile-map-grid", "tile-cooperative-reduce", "tile-stage-inputs", "tile-cp-async"] {
    %zero = arith.constant 0.000000e+00 : f32
    %n = arith.constant 2.048000e+03 : f32
    tile.for %b = 0 to 1 bind(serial) {
      tile.for %row = 0 to 32 bind(block.x) {
        %xs = tile.stage %x[%b, %row, 0] [1, 1, 2048] into shared copy(cp_async) buffers(1) pad(0) : memref<1x32x2048xf32> -> memref<2048xf32, 3 : i64>
        tile.for %t = 0 to 256 bind(thread.x) {
          %p = tile.for %c = %t to 2048 step 256 bind(serial) iter(%acc = %zero) -> f32 {
            %v = loop.load %xs[%c] : memref<2048xf32, 3 : i64>
            %sq = arith.mulf %v, %v : f32
            %s = arith.addf %acc, %sq : f32
            tile.yield %s : f32
          }
          %ss = tile.combine add %p over thread.x : f32
          %mean = arith.divf %ss, %n : f32
          %r = math.rsqrt %mean : f32
          tile.for %c2 = %t to 2048 step 256 bind(serial) {
            %v2 = loop.load %xs[%c2] : memref<2048xf32, 3 : i64>
            %wv = loop.load %w[%c2] : memref<2048xf32>
            %y = arith.mulf %v2, %r : f32
            %o = arith.mulf %y, %wv : f32
            loop.store %o, %out[%b, %row, %c2] : memref<1x32x2048xf32>
          }
        }
      }
    }
  }
  func.func @main(%x: memref<1x32x2048xf32>, %w: memref<2048xf32>) -> memref<1x32x2048xf32> {
    %out = memref.alloc() : memref<1x32x2048xf32>
    tile.launch @negative_rms_norm(%x, %w, %out) : memref<1x32x2048xf32>, memref<2048xf32>, memref<1x32x2048xf32>
    func.return %out : memref<1x32x2048xf32>
  }
}

// -----

// Unrolled already (loops of at most 16): no change, with the option (the same limit) too.
// CHECK-LABEL: tile.kernel @negative_done(
// CHECK-SAME:      unroll = 16}
// CHECK-SAME:      done ["tile-split-k", "tile-tensor-core", "tile-register-tile", "tile-map-2d", "tile-chunk-reduce", "tile-stage-chunks", "tile-pad-shared", "tile-double-buffer", "tile-cp-async", "tile-unroll"] {
// CHECK:             tile.for %{{.*}} = 0 to 64 step 8 bind(serial)
// CHECK:               tile.for %{{.*}} = 0 to 8 bind(unroll)
// OPT-LABEL:   tile.kernel @negative_done(
// OPT:                 tile.for %{{.*}} = 0 to 8 bind(unroll)

builtin.module {
  tile.kernel @negative_done(%x: memref<16x64xf32>, %w: memref<64x16xf32>, %out: memref<16x16xf32>) grid(1, 1, 1) block(16, 16, 1) plan matmul(chain = [16, 16], k = 64, tensor_cores = false, splittable = true, slabs = [ik4, kj4]) {splits = 1, mma = false, reg_m = 1, reg_n = 1, interleave = false, threads_m = 16, threads_n = 16, k_chunk = 8, stage = true, pad = 1, buffers = 2, copy = cp_async, unroll = 16} done ["tile-split-k", "tile-tensor-core", "tile-register-tile", "tile-map-2d", "tile-chunk-reduce", "tile-stage-chunks", "tile-pad-shared", "tile-double-buffer", "tile-cp-async", "tile-unroll"] {
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
    tile.launch @negative_done(%x, %w, %out) : memref<16x64xf32>, memref<64x16xf32>, memref<16x16xf32>
    func.return %out : memref<16x16xf32>
  }
}
