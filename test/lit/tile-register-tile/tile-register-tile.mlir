// RUN: deplo-opt %s --split-input-file -p tile-register-tile | filecheck %s
// RUN: deplo-opt %s --split-input-file -p 'tile-register-tile{reg-m=1 reg-n=4}' | filecheck %s --check-prefix=OPT
// RUN: not deplo-opt %s --split-input-file -p 'tile-register-tile{reg-m=100}' 2>&1 | filecheck %s --check-prefix=ERR

// 64 x 80 outputs, K = 96, 4 x 4 outputs a thread. The loops count tiles, the rows and columns
// of a tile are computed once, the reduce loop carries 16 accumulators and reads 4 + 4 values
// per step (the repeated loads are merged).
// CHECK-LABEL: tile.kernel @matmul(
// CHECK-SAME:      grid(1, 1, 1) block(1, 1, 1)
// CHECK-SAME:      done ["tile-split-k", "tile-tensor-core", "tile-register-tile"] {
// CHECK:         tile.for %[[I:.*]] = 0 to 16 bind(serial) {
// CHECK-NEXT:      tile.for %[[J:.*]] = 0 to 20 bind(serial) {
// CHECK-NEXT:        %[[C4:.*]] = arith.constant 4 : index
// CHECK-NEXT:        %[[R0:.*]] = arith.muli
// CHECK-SAME:            %[[I]], %[[C4]] : index
// CHECK:             %[[THREE:.*]] = arith.constant 3 : index
// CHECK-NEXT:        %[[R3:.*]] = arith.addi
// CHECK-SAME:            %[[R0]], %[[THREE]] : index
// CHECK-NEXT:        %[[C0:.*]] = arith.muli
// CHECK-SAME:            %[[J]], %[[C4]] : index
// CHECK-COUNT-2:     arith.addi %[[C0]]
// CHECK-NEXT:        %[[C3:.*]] = arith.addi
// CHECK-SAME:            %[[C0]], %[[THREE]] : index
// CHECK-NEXT:        %{{.*}} = tile.for %[[K:.*]] = 0 to 96 bind(serial) iter(%{{.*}} = %zero, {{.*}}) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) {
// CHECK-NEXT:          loop.load %x[%[[R0]], %[[K]]]
// CHECK-COUNT-3:       loop.load %x[
// CHECK-COUNT-4:       loop.load %w[%[[K]],
// CHECK-COUNT-16:      arith.mulf
// CHECK-COUNT-16:      arith.addf
// CHECK-NEXT:          tile.yield
// CHECK-NEXT:        }
// CHECK-NEXT:        loop.store %{{.*}}, %out[%[[R0]], %[[C0]]] : memref<64x80xf32>
// CHECK-COUNT-14:    loop.store
// CHECK-NEXT:        loop.store %{{.*}}, %out[%[[R3]], %[[C3]]] : memref<64x80xf32>
// The option sets the tile (one row of 4 columns); the threads are re-planned around it.
// OPT-LABEL:   tile.kernel @matmul(
// OPT-SAME:        reg_m = 1, reg_n = 4, interleave = false, transpose = {{true|false}}, threads_m = 16, threads_n = 16,
// OPT-SAME:        done ["tile-split-k", "tile-tensor-core", "tile-register-tile"]
// OPT:           tile.for %[[I:.*]] = 0 to 64 bind(serial) {
// OPT-NEXT:        tile.for %{{.*}} = 0 to 20 bind(serial) {
// OPT:               tile.for %[[K:.*]] = 0 to 96 bind(serial) iter(%{{.*}} = %zero, %{{.*}} = %zero, %{{.*}} = %zero, %{{.*}} = %zero) -> (f32, f32, f32, f32) {
// OPT-NEXT:            loop.load %x[%[[I]], %[[K]]] : memref<64x96xf32>
// OPT-COUNT-4:         loop.load %w[%[[K]],
// OPT-NOT:             loop.load
// OPT:               loop.store
// OPT-COUNT-3:       loop.store
// OPT-NOT:           loop.store
// An illegal option names the pass, the option, the kernel and the knob.
// ERR: deplo-opt: error: tile-register-tile{{[{].*}}reg-m=100}: kernel @matmul: knob reg_m: 100: expected 1 to 64 (the rows)
// ERR-NOT: error

builtin.module {
  tile.kernel @matmul(%x: memref<64x96xf32>, %w: memref<96x80xf32>, %out: memref<64x80xf32>) grid(1, 1, 1) block(1, 1, 1) plan matmul(chain = [64, 80], k = 96, tensor_cores = false, splittable = true, slabs = [ik4, kj4]) {splits = 1, mma = false, reg_m = 4, reg_n = 4, interleave = false, threads_m = 8, threads_n = 8, k_chunk = 32, stage = true, pad = 4, buffers = 2, copy = cp_async, unroll = 32} done ["tile-split-k", "tile-tensor-core"] {
    %zero = arith.constant 0.000000e+00 : f32
    tile.for %i = 0 to 64 bind(serial) {
      tile.for %j = 0 to 80 bind(serial) {
        %s = tile.for %k = 0 to 96 bind(serial) iter(%acc = %zero) -> f32 {
          %xv = loop.load %x[%i, %k] : memref<64x96xf32>
          %wv = loop.load %w[%k, %j] : memref<96x80xf32>
          %p = arith.mulf %xv, %wv : f32
          %n = arith.addf %acc, %p : f32
          tile.yield %n : f32
        }
        loop.store %s, %out[%i, %j] : memref<64x80xf32>
      }
    }
  }
  func.func @main(%x: memref<64x96xf32>, %w: memref<96x80xf32>) -> memref<64x80xf32> {
    %out = memref.alloc() : memref<64x80xf32>
    tile.launch @matmul(%x, %w, %out) : memref<64x96xf32>, memref<96x80xf32>, memref<64x80xf32>
    func.return %out : memref<64x80xf32>
  }
}

// -----

// A linear layer with bias and residual, 37 x 48: 2 x 2 outputs a thread, interleaved (the
// weight is [N][K], so neighbouring threads take neighbouring rows of it: no bank conflicts once
// staged). Tile t of 16 threads holds rows (t / 16) 32 + t % 16 + {0, 16}: 32 tiles of rows for
// 37 (the last rows are clamped to 36 for the loads and their stores guarded), likewise columns.
// The epilogue is replicated per output (the bias is read once per column).
// CHECK-LABEL: tile.kernel @add_linear(
// CHECK-SAME:      done ["tile-split-k", "tile-tensor-core", "tile-register-tile"] {
// CHECK:         tile.for %[[I:.*]] = 0 to 32 bind(serial) {
// CHECK-NEXT:      tile.for %{{.*}} = 0 to 32 bind(serial) {
// CHECK-NEXT:        %[[C16:.*]] = arith.constant 16 : index
// CHECK-NEXT:        %[[Q:.*]] = arith.divsi
// CHECK-SAME:            %[[I]], %[[C16]] : index
// CHECK-NEXT:        %[[LANE:.*]] = arith.remsi
// CHECK-SAME:            %[[I]], %[[C16]] : index
// CHECK-NEXT:        %[[C32:.*]] = arith.constant 32 : index
// CHECK-NEXT:        %[[BASE:.*]] = arith.muli
// CHECK-SAME:            %[[Q]], %[[C32]] : index
// CHECK-NEXT:        %[[ROW:.*]] = arith.addi
// CHECK-SAME:            %[[BASE]], %[[LANE]] : index
// CHECK-NEXT:        %[[C37:.*]] = arith.constant 37 : index
// CHECK-NEXT:        %[[IN:.*]] = arith.cmpi
// CHECK-SAME:            ult, %[[ROW]], %[[C37]] : index
// CHECK-NEXT:        %[[C36:.*]] = arith.constant 36 : index
// CHECK-NEXT:        %[[R0:.*]] = arith.minsi
// CHECK-SAME:            %[[ROW]], %[[C36]] : index
// CHECK-NEXT:        %[[ROW1:.*]] = arith.addi
// CHECK-SAME:            %[[ROW]], %[[C16]] : index
// CHECK:             %[[IN4:.*]] = arith.andi
// CHECK-SAME:            %[[IN]], %{{.*}} : i1
// CHECK:             tile.for %[[K:.*]] = 0 to 64 bind(serial)
// CHECK-NEXT:          loop.load %x[%[[R0]], %[[K]]] : memref<37x64xf32>
// CHECK:             %[[B0:.*]] = loop.load %b[
// CHECK-NEXT:        %{{.*}} = loop.load %b[
// CHECK-NOT:         loop.load %b
// CHECK:             scf.if %[[IN4]] {
// CHECK-NEXT:          loop.store %{{.*}}, %out[%[[R0]], %{{.*}}] : memref<37x48xf32>
// CHECK-COUNT-3:     scf.if
// OPT-LABEL:   tile.kernel @add_linear(
// OPT-SAME:        reg_m = 1, reg_n = 4, interleave = true, transpose = true, threads_m = 16, threads_n = 8,
// OPT:           tile.for %{{.*}} = 0 to 37 bind(serial) {
// OPT-NEXT:        tile.for %{{.*}} = 0 to 16 bind(serial) {

builtin.module {
  tile.kernel @add_linear(%x: memref<37x64xf32>, %w: memref<48x64xf32>, %b: memref<48xf32>, %res: memref<37x48xf32>, %out: memref<37x48xf32>) grid(1, 1, 1) block(1, 1, 1) plan matmul(chain = [37, 48], k = 64, tensor_cores = false, splittable = true, slabs = [ik4, jk4]) {splits = 1, mma = false, reg_m = 2, reg_n = 2, interleave = true, threads_m = 16, threads_n = 16, k_chunk = 32, stage = true, pad = 1, buffers = 2, copy = cp_async, unroll = 32} done ["tile-split-k", "tile-tensor-core"] {
    %zero = arith.constant 0.000000e+00 : f32
    tile.for %i = 0 to 37 bind(serial) {
      tile.for %j = 0 to 48 bind(serial) {
        %s = tile.for %k = 0 to 64 bind(serial) iter(%acc = %zero) -> f32 {
          %xv = loop.load %x[%i, %k] : memref<37x64xf32>
          %wv = loop.load %w[%j, %k] : memref<48x64xf32>
          %p = arith.mulf %xv, %wv : f32
          %n = arith.addf %acc, %p : f32
          tile.yield %n : f32
        }
        %bv = loop.load %b[%j] : memref<48xf32>
        %y = arith.addf %s, %bv : f32
        %rv = loop.load %res[%i, %j] : memref<37x48xf32>
        %z = arith.addf %y, %rv : f32
        loop.store %z, %out[%i, %j] : memref<37x48xf32>
      }
    }
  }
  func.func @main(%x: memref<37x64xf32>, %w: memref<48x64xf32>, %b: memref<48xf32>, %res: memref<37x48xf32>) -> memref<37x48xf32> {
    %out = memref.alloc() : memref<37x48xf32>
    tile.launch @add_linear(%x, %w, %b, %res, %out) : memref<37x64xf32>, memref<48x64xf32>, memref<48xf32>, memref<37x48xf32>, memref<37x48xf32>
    func.return %out : memref<37x48xf32>
  }
}

// -----

// A 1 x 1 register tile (each thread one output): nothing to unroll, the step is recorded.
// CHECK-LABEL: tile.kernel @negative_reg_one(
// CHECK-SAME:      reg_m = 1, reg_n = 1,
// CHECK-SAME:      done ["tile-split-k", "tile-tensor-core", "tile-register-tile"] {
// CHECK-NEXT:      %zero = arith.constant
// CHECK-NEXT:      tile.for %i = 0 to 16 bind(serial) {
// CHECK-NEXT:        tile.for %j = 0 to 16 bind(serial) {
// CHECK-NEXT:          %s = tile.for %k = 0 to 64 bind(serial) iter(%acc = %zero) -> f32 {
// OPT-LABEL:   tile.kernel @negative_reg_one(
// OPT-SAME:        reg_m = 1, reg_n = 4, interleave = false, transpose = false, threads_m = 16, threads_n = 4,
// OPT:           tile.for %{{.*}} = 0 to 16 bind(serial) {
// OPT-NEXT:        tile.for %{{.*}} = 0 to 4 bind(serial) {

builtin.module {
  tile.kernel @negative_reg_one(%x: memref<16x64xf32>, %w: memref<64x16xf32>, %out: memref<16x16xf32>) grid(1, 1, 1) block(1, 1, 1) plan matmul(chain = [16, 16], k = 64, tensor_cores = false, splittable = true, slabs = [ik4, kj4]) {splits = 1, mma = false, reg_m = 1, reg_n = 1, interleave = false, threads_m = 16, threads_n = 16, k_chunk = 0, stage = false, pad = 0, buffers = 1, copy = sync, unroll = 32} done ["tile-split-k", "tile-tensor-core"] {
    %zero = arith.constant 0.000000e+00 : f32
    tile.for %i = 0 to 16 bind(serial) {
      tile.for %j = 0 to 16 bind(serial) {
        %s = tile.for %k = 0 to 64 bind(serial) iter(%acc = %zero) -> f32 {
          %xv = loop.load %x[%i, %k] : memref<16x64xf32>
          %wv = loop.load %w[%k, %j] : memref<64x16xf32>
          %p = arith.mulf %xv, %wv : f32
          %n = arith.addf %acc, %p : f32
          tile.yield %n : f32
        }
        loop.store %s, %out[%i, %j] : memref<16x16xf32>
      }
    }
  }
  func.func @main(%x: memref<16x64xf32>, %w: memref<64x16xf32>) -> memref<16x16xf32> {
    %out = memref.alloc() : memref<16x16xf32>
    tile.launch @negative_reg_one(%x, %w, %out) : memref<16x64xf32>, memref<64x16xf32>, memref<16x16xf32>
    func.return %out : memref<16x16xf32>
  }
}

// -----

// A row reduction (RMSNorm's sum of squares, then a free loop): its row_reduce plan has no
// register tile; left alone (not marked done), with the option too.
// CHECK-LABEL: tile.kernel @negative_rms_norm(
// CHECK-SAME:      plan row_reduce(rows = [32], extent = 2048)
// CHECK-NOT:       done
// CHECK-SAME:      {
// OPT-LABEL:   tile.kernel @negative_rms_norm(
// OPT-SAME:        plan row_reduce(rows = [32], extent = 2048)
// OPT-NOT:         done
// OPT-SAME:        {

builtin.module {
  tile.kernel @negative_rms_norm(%x: memref<32x2048xf32>, %out: memref<32x2048xf32>) grid(1, 1, 1) block(1, 1, 1) plan row_reduce(rows = [32], extent = 2048) {grid_dims = 1, threads = 256, stage_inputs = reused, copy = sync, unroll = 32} {
    %zero = arith.constant 0.000000e+00 : f32
    tile.for %i = 0 to 32 bind(serial) {
      %ss = tile.for %j = 0 to 2048 bind(serial) iter(%acc = %zero) -> f32 {
        %v = loop.load %x[%i, %j] : memref<32x2048xf32>
        %sq = arith.mulf %v, %v : f32
        %s = arith.addf %acc, %sq : f32
        tile.yield %s : f32
      }
      tile.for %a2 = 0 to 2048 bind(serial) {
        %v2 = loop.load %x[%i, %a2] : memref<32x2048xf32>
        %y = arith.mulf %v2, %ss : f32
        loop.store %y, %out[%i, %a2] : memref<32x2048xf32>
      }
    }
  }
  func.func @main(%x: memref<32x2048xf32>) -> memref<32x2048xf32> {
    %out = memref.alloc() : memref<32x2048xf32>
    tile.launch @negative_rms_norm(%x, %out) : memref<32x2048xf32>, memref<32x2048xf32>
    func.return %out : memref<32x2048xf32>
  }
}

// -----

// An fp16 matmul planned for tensor cores: the plan's mma mode has no register tile, so the
// step is not its own. The option's register tile implies mma = false: the plan is re-planned
// for threads (the tensor-core step is not done yet) and the tile carried out.
// CHECK-LABEL: tile.kernel @negative_mma(
// CHECK-SAME:      mma = true,
// CHECK-SAME:      done ["tile-split-k"] {
// CHECK:           tile.for %{{.*}} = 0 to 64 bind(serial) {
// CHECK-NEXT:        tile.for %{{.*}} = 0 to 80 bind(serial) {
// OPT-LABEL:   tile.kernel @negative_mma(
// OPT-SAME:        {splits = 1, split_sum = kernel, mma = false, reg_m = 1, reg_n = 4,
// OPT-SAME:        done ["tile-split-k", "tile-register-tile"] {
// OPT:             tile.for %{{.*}} = 0 to 20 bind(serial) {

builtin.module {
  tile.kernel @negative_mma(%a: memref<64x96xf16>, %b: memref<96x80xf16>, %out: memref<64x80xf16>) grid(1, 1, 1) block(1, 1, 1) plan matmul(chain = [64, 80], k = 96, tensor_cores = true, splittable = true, slabs = [ik2, kj2]) {splits = 1, mma = true, warps_m = 1, warps_n = 1, frags_m = 1, frags_n = 1, k_chunk = 32, stage = true, pad = 8, buffers = 2, copy = cp_async, unroll = 32} done ["tile-split-k"] {
    %zero = arith.constant 0.000000e+00 : f32
    tile.for %i = 0 to 64 bind(serial) {
      tile.for %j = 0 to 80 bind(serial) {
        %s = tile.for %k = 0 to 96 bind(serial) iter(%acc = %zero) -> f32 {
          %av = loop.load %a[%i, %k] : memref<64x96xf16>
          %ae = arith.extf %av : f16 to f32
          %bv = loop.load %b[%k, %j] : memref<96x80xf16>
          %be = arith.extf %bv : f16 to f32
          %p = arith.mulf %ae, %be : f32
          %n = arith.addf %acc, %p : f32
          tile.yield %n : f32
        }
        %t = arith.truncf %s : f32 to f16
        loop.store %t, %out[%i, %j] : memref<64x80xf16>
      }
    }
  }
  func.func @main(%a: memref<64x96xf16>, %b: memref<96x80xf16>) -> memref<64x80xf16> {
    %out = memref.alloc() : memref<64x80xf16>
    tile.launch @negative_mma(%a, %b, %out) : memref<64x96xf16>, memref<96x80xf16>, memref<64x80xf16>
    func.return %out : memref<64x80xf16>
  }
}

// -----

// Register-tiled already (1 x 4): no change, with the option (the same tile) too.
// CHECK-LABEL: tile.kernel @negative_done(
// CHECK-SAME:      done ["tile-split-k", "tile-tensor-core", "tile-register-tile"] {
// CHECK:           tile.for %{{.*}} = 0 to 16 bind(serial) {
// CHECK-NEXT:        tile.for %{{.*}} = 0 to 4 bind(serial) {
// CHECK-COUNT-4:         arith.mulf
// CHECK-NOT:             arith.mulf
// OPT-LABEL:   tile.kernel @negative_done(
// OPT:             tile.for %{{.*}} = 0 to 16 bind(serial) {
// OPT-NEXT:          tile.for %{{.*}} = 0 to 4 bind(serial) {
// OPT-COUNT-4:           arith.mulf
// OPT-NOT:               arith.mulf

builtin.module {
  tile.kernel @negative_done(%x: memref<16x64xf32>, %w: memref<64x16xf32>, %out: memref<16x16xf32>) grid(1, 1, 1) block(1, 1, 1) plan matmul(chain = [16, 16], k = 64, tensor_cores = false, splittable = true, slabs = [ik4, kj4]) {splits = 1, mma = false, reg_m = 1, reg_n = 4, interleave = false, threads_m = 16, threads_n = 4, k_chunk = 0, stage = false, pad = 0, buffers = 1, copy = sync, unroll = 32} done ["tile-split-k", "tile-tensor-core", "tile-register-tile"] {
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
    tile.launch @negative_done(%x, %w, %out) : memref<16x64xf32>, memref<64x16xf32>, memref<16x16xf32>
    func.return %out : memref<16x16xf32>
  }
}
