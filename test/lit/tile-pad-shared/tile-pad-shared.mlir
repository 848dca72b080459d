// RUN: deplo-opt %s --split-input-file -p tile-pad-shared | filecheck %s
// RUN: deplo-opt %s --split-input-file -p 'tile-pad-shared{pad=1}' | filecheck %s --check-prefix=OPT
// RUN: not deplo-opt %s --split-input-file -p 'tile-pad-shared{pad=-4}' 2>&1 | filecheck %s --check-prefix=ERR

// x's chunk is 16 rows of 32 fp32 (128 bytes: every row starts in bank 0) and w's 32 rows of 16
// (64 bytes: every other row in the same banks): both get 16 bytes more per row (pad = 4). The
// scale s is a 1-D stage: no rows, nothing to pad. The loads are unchanged (same coordinates,
// new row stride).
// CHECK-LABEL: tile.kernel @scaled(
// CHECK-SAME:      pad = 4,
// CHECK-SAME:      done ["tile-split-k", "tile-tensor-core", "tile-register-tile", "tile-map-2d", "tile-chunk-reduce", "tile-stage-chunks", "tile-pad-shared"] {
// CHECK:           %[[XS:.*]] = tile.stage
// CHECK-SAME:          %x[{{.*}}] [16, 32] into shared copy(sync) buffers(1) pad(4) : memref<64x96xf32> -> memref<16x36xf32, 3 : i64>
// CHECK-NEXT:      %[[SS:.*]] = tile.stage
// CHECK-SAME:          %s[{{.*}}] [32] into shared copy(sync) buffers(1) pad(0) : memref<96xf32> -> memref<32xf32, 3 : i64>
// CHECK-NEXT:      %[[WS:.*]] = tile.stage
// CHECK-SAME:          %w[{{.*}}] [32, 16] into shared copy(sync) buffers(1) pad(4) : memref<96x80xf32> -> memref<32x20xf32, 3 : i64>
// CHECK-NEXT:      tile.for %[[KI:.*]] = 0 to 32 bind(serial)
// CHECK-NEXT:        loop.load %[[XS]][%{{.*}}, %[[KI]]] : memref<16x36xf32, 3 : i64>
// CHECK-NEXT:        loop.load %[[SS]][%[[KI]]] : memref<32xf32, 3 : i64>
// CHECK-NEXT:        loop.load %[[WS]][%[[KI]], %{{.*}}] : memref<32x20xf32, 3 : i64>
// The option sets the padding: one element a row (rows of 33 and 17).
// OPT-LABEL:   tile.kernel @scaled(
// OPT-SAME:        pad = 1,
// OPT:             tile.stage %x[{{.*}} pad(1) : memref<64x96xf32> -> memref<16x33xf32, 3 : i64>
// OPT-NEXT:        tile.stage %s[{{.*}} pad(0) : memref<96xf32> -> memref<32xf32, 3 : i64>
// OPT-NEXT:        tile.stage %w[{{.*}} pad(1) : memref<96x80xf32> -> memref<32x17xf32, 3 : i64>
// An illegal option names the pass, the option, the kernel and the knob.
// ERR: deplo-opt: error: tile-pad-shared{pad=-4}: kernel @scaled: knob pad: expected an integer >= 0, got -4
// ERR-NOT: error

builtin.module {
  tile.kernel @scaled(%x: memref<64x96xf32>, %s: memref<96xf32>, %w: memref<96x80xf32>, %out: memref<64x80xf32>) grid(5, 4, 1) block(16, 16, 1) plan matmul(chain = [64, 80], k = 96, tensor_cores = false, splittable = true, slabs = [ik4, k4, kj4]) {splits = 1, mma = false, reg_m = 1, reg_n = 1, interleave = false, threads_m = 16, threads_n = 16, k_chunk = 32, stage = true, pad = 4, buffers = 2, copy = cp_async, unroll = 32} done ["tile-split-k", "tile-tensor-core", "tile-register-tile", "tile-map-2d", "tile-chunk-reduce", "tile-stage-chunks"] {
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
              %xs = tile.stage %x[%2, %ko] [16, 32] into shared copy(sync) buffers(1) pad(0) : memref<64x96xf32> -> memref<16x32xf32, 3 : i64>
              %ss = tile.stage %s[%ko] [32] into shared copy(sync) buffers(1) pad(0) : memref<96xf32> -> memref<32xf32, 3 : i64>
              %ws = tile.stage %w[%ko, %3] [32, 16] into shared copy(sync) buffers(1) pad(0) : memref<96x80xf32> -> memref<32x16xf32, 3 : i64>
              %chunk = tile.for %ki = 0 to 32 bind(serial) iter(%acc_1 = %acc) -> f32 {
                %xv = loop.load %xs[%ty, %ki] : memref<16x32xf32, 3 : i64>
                %sv = loop.load %ss[%ki] : memref<32xf32, 3 : i64>
                %wv = loop.load %ws[%ki, %tx] : memref<32x16xf32, 3 : i64>
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

// fp16 on tensor cores: rows of 32 (64 bytes; ldmatrix reads 8 rows of 16 bytes at once) and of
// 8 get 8 elements (16 bytes) more, which keeps the rows 16-byte aligned for ldmatrix.
// CHECK-LABEL: tile.kernel @matmul_mma(
// CHECK-SAME:      pad = 8,
// CHECK-SAME:      done ["tile-split-k", "tile-tensor-core", "tile-chunk-reduce", "tile-stage-chunks", "tile-pad-shared"] {
// CHECK:           %[[AS:.*]] = tile.stage
// CHECK-SAME:          %a[{{.*}}] [16, 32] into shared copy(sync) buffers(1) pad(8) : memref<64x96xf16> -> memref<16x40xf16, 3 : i64>
// CHECK-NEXT:      %[[BS:.*]] = tile.stage
// CHECK-SAME:          %b[{{.*}}] [32, 8] into shared copy(sync) buffers(1) pad(8) : memref<96x80xf16> -> memref<32x16xf16, 3 : i64>
// CHECK:             tile.fragment_load a %[[AS]][{{.*}}] lane(%{{.*}}) : memref<16x40xf16, 3 : i64>
// CHECK:             tile.fragment_load b_kn %[[BS]][{{.*}}] lane(%{{.*}}) : memref<32x16xf16, 3 : i64>
// OPT-LABEL:   tile.kernel @matmul_mma(
// OPT:             tile.stage %a[{{.*}} pad(1) : memref<64x96xf16> -> memref<16x33xf16, 3 : i64>

builtin.module {
  tile.kernel @matmul_mma(%a: memref<64x96xf16>, %b: memref<96x80xf16>, %out: memref<64x80xf16>) grid(10, 4, 1) block(32, 1, 1) plan matmul(chain = [64, 80], k = 96, tensor_cores = true, splittable = true, slabs = [ik2, kj2]) {splits = 1, mma = true, warps_m = 1, warps_n = 1, frags_m = 1, frags_n = 1, k_chunk = 32, stage = true, pad = 8, buffers = 2, copy = cp_async, unroll = 32} done ["tile-split-k", "tile-tensor-core", "tile-chunk-reduce", "tile-stage-chunks"] {
    %zero = arith.constant 0.000000e+00 : f32
    tile.for %i = 0 to 4 bind(block.y) {
      tile.for %j = 0 to 10 bind(block.x) {
        tile.for %w = 0 to 1 bind(thread.y) {
          tile.for %l = 0 to 32 bind(thread.x) {
            %c0 = arith.constant 0 : index
            %c16 = arith.constant 16 : index
            %0 = arith.muli %i, %c16 : index
            %1 = arith.muli %c0, %c16 : index
            %row0 = arith.addi %0, %1 : index
            %c8 = arith.constant 8 : index
            %2 = arith.muli %j, %c8 : index
            %3 = arith.muli %c0, %c8 : index
            %col0 = arith.addi %2, %3 : index
            %c, %c_1, %c_2, %c_3 = tile.for %ko = 0 to 96 step 32 bind(serial) iter(%acc = %zero, %acc_1 = %zero, %acc_2 = %zero, %acc_3 = %zero) -> (f32, f32, f32, f32) {
              %c16_1 = arith.constant 16 : index
              %4 = arith.muli %i, %c16_1 : index
              %c8_1 = arith.constant 8 : index
              %5 = arith.muli %j, %c8_1 : index
              %as = tile.stage %a[%4, %ko] [16, 32] into shared copy(sync) buffers(1) pad(0) : memref<64x96xf16> -> memref<16x32xf16, 3 : i64>
              %bs = tile.stage %b[%ko, %5] [32, 8] into shared copy(sync) buffers(1) pad(0) : memref<96x80xf16> -> memref<32x8xf16, 3 : i64>
              %chunk, %chunk_1, %chunk_2, %chunk_3 = tile.for %ki = 0 to 32 step 16 bind(serial) iter(%acc_4 = %acc, %acc_5 = %acc_1, %acc_6 = %acc_2, %acc_7 = %acc_3) -> (f32, f32, f32, f32) {
                %c0_1 = arith.constant 0 : index
                %fa0, %fa0_1, %fa0_2, %fa0_3 = tile.fragment_load a %as[%c0_1, %ki] lane(%l) : memref<16x32xf16, 3 : i64> -> i32, i32, i32, i32
                %c0_2 = arith.constant 0 : index
                %fb0, %fb0_1 = tile.fragment_load b_kn %bs[%ki, %c0_2] lane(%l) : memref<32x8xf16, 3 : i64> -> i32, i32
                %d, %d_1, %d_2, %d_3 = tile.mma f16 %fa0, %fa0_1, %fa0_2, %fa0_3, %fb0, %fb0_1, %acc_4, %acc_5, %acc_6, %acc_7
                tile.yield %d, %d_1, %d_2, %d_3 : f32, f32, f32, f32
              }
              tile.yield %chunk, %chunk_1, %chunk_2, %chunk_3 : f32, f32, f32, f32
            }
            %c4 = arith.constant 4 : index
            %g = arith.divsi %l, %c4 : index
            %6 = arith.remsi %l, %c4 : index
            %c2 = arith.constant 2 : index
            %t2 = arith.muli %6, %c2 : index
            %rg = arith.addi %row0, %g : index
            %cg = arith.addi %col0, %t2 : index
            %c1 = arith.constant 1 : index
            %7 = arith.addi %cg, %c1 : index
            %8 = arith.addi %rg, %c8 : index
            %t = arith.truncf %c : f32 to f16
            %t_1 = arith.truncf %c_1 : f32 to f16
            %t_2 = arith.truncf %c_2 : f32 to f16
            %t_3 = arith.truncf %c_3 : f32 to f16
            loop.store %t, %out[%rg, %cg] : memref<64x80xf16>
            loop.store %t_1, %out[%rg, %7] : memref<64x80xf16>
            loop.store %t_2, %out[%8, %cg] : memref<64x80xf16>
            loop.store %t_3, %out[%8, %7] : memref<64x80xf16>
          }
        }
      }
    }
  }
  func.func @main(%a: memref<64x96xf16>, %b: memref<96x80xf16>) -> memref<64x80xf16> {
    %out = memref.alloc() : memref<64x80xf16>
    tile.launch @matmul_mma(%a, %b, %out) : memref<64x96xf16>, memref<96x80xf16>, memref<64x80xf16>
    func.return %out : memref<64x80xf16>
  }
}

// -----

// The plan does not pad (pad = 0): the step is recorded, the stages keep their rows.
// CHECK-LABEL: tile.kernel @negative_pad_zero(
// CHECK-SAME:      pad = 0,
// CHECK-SAME:      done ["tile-split-k", "tile-tensor-core", "tile-register-tile", "tile-map-2d", "tile-chunk-reduce", "tile-stage-chunks", "tile-pad-shared"] {
// CHECK:           tile.stage %x[{{.*}} pad(0) : memref<64x96xf32> -> memref<32x32xf32, 3 : i64>
// CHECK-NEXT:      tile.stage %w[{{.*}} pad(0) : memref<96x80xf32> -> memref<32x32xf32, 3 : i64>
// OPT-LABEL:   tile.kernel @negative_pad_zero(
// OPT-SAME:        pad = 1,
// OPT:             tile.stage %x[{{.*}} pad(1) : memref<64x96xf32> -> memref<32x33xf32, 3 : i64>

builtin.module {
  tile.kernel @negative_pad_zero(%x: memref<64x96xf32>, %w: memref<96x80xf32>, %out: memref<64x80xf32>) grid(3, 2, 1) block(16, 16, 1) plan matmul(chain = [64, 80], k = 96, tensor_cores = false, splittable = true, slabs = [ik4, kj4]) {splits = 1, mma = false, reg_m = 2, reg_n = 2, interleave = false, threads_m = 16, threads_n = 16, k_chunk = 32, stage = true, pad = 0, buffers = 1, copy = sync, unroll = 32} done ["tile-split-k", "tile-tensor-core", "tile-register-tile", "tile-map-2d", "tile-chunk-reduce", "tile-stage-chunks"] {
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
    tile.launch @negative_pad_zero(%x, %w, %out) : memref<64x96xf32>, memref<96x80xf32>, memref<64x80xf32>
    func.return %out : memref<64x80xf32>
  }
}

// -----

// RMSNorm's row, staged by its row_reduce plan (tile-stage-inputs): that plan has no padding
// step; left alone (not marked done), with the option too.
// CHECK-LABEL: tile.kernel @negative_rms_norm(
// CHECK-SAME:      done ["tile-map-grid", "tile-cooperative-reduce", "tile-stage-inputs"] {
// CHECK:           tile.stage %x[{{.*}} pad(0) : memref<1x32x2048xf32> -> memref<2048xf32, 3 : i64>
// OPT-LABEL:   tile.kernel @negative_rms_norm(
// OPT-SAME:        done ["tile-map-grid", "tile-cooperative-reduce", "tile-stage-inputs"] {
// OPT:             tile.stage %x[{{.*}} pad(0)

builtin.module {
  tile.kernel @negative_rms_norm(%x: memref<1x32x2048xf32>, %w: memref<2048xf32>, %out: memref<1x32x2048xf32>) grid(32, 1, 1) block(256, 1, 1) plan row_reduce(rows = [32], extent = 2048) {grid_dims = 1, threads = 256, stage_inputs = reused, copy = sync, unroll = 32} done ["tile-map-grid", "tile-cooperative-reduce", "tile-stage-inputs"] {
    %zero = arith.constant 0.000000e+00 : f32
    %n = arith.constant 2.048000e+03 : f32
    tile.for %b = 0 to 1 bind(serial) {
      tile.for %row = 0 to 32 bind(block.x) {
        %xs = tile.stage %x[%b, %row, 0] [1, 1, 2048] into shared copy(sync) buffers(1) pad(0) : memref<1x32x2048xf32> -> memref<2048xf32, 3 : i64>
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

// Padded already (pad = 1): no change, with the option (the same padding) too.
// CHECK-LABEL: tile.kernel @negative_done(
// CHECK-SAME:      done ["tile-split-k", "tile-tensor-core", "tile-register-tile", "tile-map-2d", "tile-chunk-reduce", "tile-stage-chunks", "tile-pad-shared"] {
// CHECK:           tile.stage %x[{{.*}} pad(1) : memref<16x64xf32> -> memref<16x9xf32, 3 : i64>
// CHECK-NEXT:      tile.stage %w[{{.*}} pad(1) : memref<64x16xf32> -> memref<8x17xf32, 3 : i64>
// OPT-LABEL:   tile.kernel @negative_done(
// OPT:             tile.stage %x[{{.*}} pad(1) : memref<16x64xf32> -> memref<16x9xf32, 3 : i64>

builtin.module {
  tile.kernel @negative_done(%x: memref<16x64xf32>, %w: memref<64x16xf32>, %out: memref<16x16xf32>) grid(1, 1, 1) block(16, 16, 1) plan matmul(chain = [16, 16], k = 64, tensor_cores = false, splittable = true, slabs = [ik4, kj4]) {splits = 1, mma = false, reg_m = 1, reg_n = 1, interleave = false, threads_m = 16, threads_n = 16, k_chunk = 8, stage = true, pad = 1, buffers = 2, copy = cp_async, unroll = 32} done ["tile-split-k", "tile-tensor-core", "tile-register-tile", "tile-map-2d", "tile-chunk-reduce", "tile-stage-chunks", "tile-pad-shared"] {
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
              %xs = tile.stage %x[%2, %ko] [16, 8] into shared copy(sync) buffers(1) pad(1) : memref<16x64xf32> -> memref<16x9xf32, 3 : i64>
              %ws = tile.stage %w[%ko, %3] [8, 16] into shared copy(sync) buffers(1) pad(1) : memref<64x16xf32> -> memref<8x17xf32, 3 : i64>
              %chunk = tile.for %ki = 0 to 8 bind(serial) iter(%acc_1 = %acc) -> f32 {
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
