// RUN: deplo-opt %s --split-input-file -p tile-map-2d | filecheck %s
// RUN: deplo-opt %s --split-input-file -p 'tile-map-2d{threads-m=4 threads-n=8}' | filecheck %s --check-prefix=OPT
// RUN: not deplo-opt %s --split-input-file -p 'tile-map-2d{threads-m=2048}' 2>&1 | filecheck %s --check-prefix=ERR

// 64 x 80 outputs, one a thread (a 1 x 1 register tile): 16 x 16 threads per block, 4 x 5
// blocks; the rows and columns divide, so no clamp and no guard. The cell moves into the
// thread loops unchanged.
// CHECK-LABEL: tile.kernel @matmul(
// CHECK-SAME:      grid(5, 4, 1) block(16, 16, 1)
// CHECK-SAME:      done ["tile-split-k", "tile-tensor-core", "tile-register-tile", "tile-map-2d"] {
// CHECK:         tile.for %[[I:.*]] = 0 to 4 bind(block.y) {
// CHECK-NEXT:      tile.for %[[J:.*]] = 0 to 5 bind(block.x) {
// CHECK-NEXT:        tile.for %[[TY:.*]] = 0 to 16 bind(thread.y) {
// CHECK-NEXT:          tile.for %[[TX:.*]] = 0 to 16 bind(thread.x) {
// CHECK-NEXT:            %[[C16:.*]] = arith.constant 16 : index
// CHECK-NEXT:            %[[R:.*]] = arith.muli
// CHECK-SAME:                %[[I]], %[[C16]] : index
// CHECK-NEXT:            %[[IT:.*]] = arith.addi
// CHECK-SAME:                %[[R]], %[[TY]] : index
// CHECK-NEXT:            %[[C:.*]] = arith.muli
// CHECK-SAME:                %[[J]], %[[C16]] : index
// CHECK-NEXT:            %[[JT:.*]] = arith.addi
// CHECK-SAME:                %[[C]], %[[TX]] : index
// CHECK-NEXT:            %[[S:.*]] = tile.for
// CHECK-SAME:                %[[K:.*]] = 0 to 96 bind(serial) iter(%acc = %zero) -> f32 {
// CHECK-NEXT:              loop.load %x[%[[IT]], %[[K]]]
// CHECK-NEXT:              loop.load %w[%[[K]], %[[JT]]]
// CHECK:                 loop.store %[[S]], %out[%[[IT]], %[[JT]]] : memref<64x80xf32>
// CHECK-NOT:             scf.if
// The option sets the threads: 4 x 8 a block, 16 x 10 blocks.
// OPT-LABEL:   tile.kernel @matmul(
// OPT-SAME:        grid(10, 16, 1) block(8, 4, 1)
// OPT-SAME:        threads_m = 4, threads_n = 8,
// OPT-SAME:        done ["tile-split-k", "tile-tensor-core", "tile-register-tile", "tile-map-2d"] {
// OPT:           tile.for %{{.*}} = 0 to 16 bind(block.y) {
// OPT-NEXT:        tile.for %{{.*}} = 0 to 10 bind(block.x) {
// OPT-NEXT:          tile.for %{{.*}} = 0 to 4 bind(thread.y) {
// OPT-NEXT:            tile.for %{{.*}} = 0 to 8 bind(thread.x) {
// An illegal option names the pass, the option, the kernel and the knob.
// ERR: deplo-opt: error: tile-map-2d{{[{].*}}threads-m=2048}: kernel @matmul: knob threads_m: expected 1 to 1024 threads, got 2048
// ERR-NOT: error

builtin.module {
  tile.kernel @matmul(%x: memref<64x96xf32>, %w: memref<96x80xf32>, %out: memref<64x80xf32>) grid(1, 1, 1) block(1, 1, 1) plan matmul(chain = [64, 80], k = 96, tensor_cores = false, splittable = true, slabs = [ik4, kj4]) {splits = 1, mma = false, reg_m = 1, reg_n = 1, interleave = false, threads_m = 16, threads_n = 16, k_chunk = 32, stage = true, pad = 4, buffers = 2, copy = cp_async, unroll = 32} done ["tile-split-k", "tile-tensor-core", "tile-register-tile"] {
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

// Two batch loops (a conv's image and output row) become one block.z index over their
// product, taken apart again where the cell starts; the batch loop outside runs once. The
// load between them (a per-image scale) moves in with it.
// CHECK-LABEL: tile.kernel @bmm2(
// CHECK-SAME:      grid(5, 3, 6) block(16, 16, 1)
// CHECK:         tile.for %{{.*}} = 0 to 1 bind(serial) {
// CHECK-NEXT:      tile.for %[[Z:.*]] = 0 to 6 bind(block.z) {
// CHECK-NEXT:        %[[C3:.*]] = arith.constant 3 : index
// CHECK-NEXT:        %[[H:.*]] = arith.remsi %[[Z]], %[[C3]] : index
// CHECK-NEXT:        %[[N:.*]] = arith.divsi %[[Z]], %[[C3]] : index
// CHECK-NEXT:        %[[SC:.*]] = loop.load %scale[%[[N]]] : memref<2xf32>
// CHECK-NEXT:        tile.for %{{.*}} = 0 to 3 bind(block.y) {
// CHECK:                   loop.load %x[%[[N]], %[[H]], %{{.*}}, %{{.*}}]
// CHECK:                   arith.mulf %{{.*}}, %[[SC]] : f32
// CHECK:                   loop.store %{{.*}}, %out[%[[N]], %[[H]], %{{.*}}, %{{.*}}] : memref<2x3x37x70xf32>

builtin.module {
  tile.kernel @bmm2(%x: memref<2x3x37x53xf32>, %w: memref<53x70xf32>, %scale: memref<2xf32>, %out: memref<2x3x37x70xf32>) grid(1, 1, 1) block(1, 1, 1) plan matmul(chain = [2, 3, 37, 70], k = 53, tensor_cores = false, splittable = true, slabs = [ik4, kj4]) {splits = 1, mma = false, reg_m = 1, reg_n = 1, interleave = false, threads_m = 16, threads_n = 16, k_chunk = 16, stage = true, pad = 4, buffers = 2, copy = cp_async, unroll = 32} done ["tile-split-k", "tile-tensor-core", "tile-register-tile"] {
    %zero = arith.constant 0.000000e+00 : f32
    tile.for %n = 0 to 2 bind(serial) {
      %sc = loop.load %scale[%n] : memref<2xf32>
      tile.for %h = 0 to 3 bind(serial) {
        tile.for %i = 0 to 37 bind(serial) {
          tile.for %j = 0 to 70 bind(serial) {
            %s = tile.for %k = 0 to 53 bind(serial) iter(%acc = %zero) -> f32 {
              %xv = loop.load %x[%n, %h, %i, %k] : memref<2x3x37x53xf32>
              %wv = loop.load %w[%k, %j] : memref<53x70xf32>
              %p = arith.mulf %xv, %wv : f32
              %a = arith.addf %acc, %p : f32
              tile.yield %a : f32
            }
            %r = arith.mulf %s, %sc : f32
            loop.store %r, %out[%n, %h, %i, %j] : memref<2x3x37x70xf32>
          }
        }
      }
    }
  }
  func.func @main(%x: memref<2x3x37x53xf32>, %w: memref<53x70xf32>, %scale: memref<2xf32>) -> memref<2x3x37x70xf32> {
    %out = memref.alloc() : memref<2x3x37x70xf32>
    tile.launch @bmm2(%x, %w, %scale, %out) : memref<2x3x37x53xf32>, memref<53x70xf32>, memref<2xf32>, memref<2x3x37x70xf32>
    func.return %out : memref<2x3x37x70xf32>
  }
}

// -----

// A batched matmul, 37 x 70 per batch: the batch goes to block.z; 37 rows over 16 threads.y
// leave the last block with 11 idle rows: clamped to row 36 (the loads stay in bounds) and the
// store guarded, likewise the columns.
// CHECK-LABEL: tile.kernel @bmm(
// CHECK-SAME:      grid(5, 3, 2) block(16, 16, 1)
// CHECK-SAME:      done ["tile-split-k", "tile-tensor-core", "tile-register-tile", "tile-map-2d"] {
// CHECK:         tile.for %[[B:.*]] = 0 to 2 bind(block.z) {
// CHECK-NEXT:      tile.for %{{.*}} = 0 to 3 bind(block.y) {
// CHECK-NEXT:        tile.for %{{.*}} = 0 to 5 bind(block.x) {
// CHECK:                 %[[IT:.*]] = arith.addi
// CHECK-NEXT:            %[[C37:.*]] = arith.constant 37 : index
// CHECK-NEXT:            %[[IN:.*]] = arith.cmpi
// CHECK-SAME:                ult, %[[IT]], %[[C37]] : index
// CHECK-NEXT:            %[[C36:.*]] = arith.constant 36 : index
// CHECK-NEXT:            %[[ITC:.*]] = arith.minsi
// CHECK-SAME:                %[[IT]], %[[C36]] : index
// CHECK:                 %[[JTC:.*]] = arith.minsi
// CHECK-NEXT:            %[[OK:.*]] = arith.andi
// CHECK-SAME:                %[[IN]], %{{.*}} : i1
// CHECK:                   loop.load %x[%[[B]], %[[ITC]], %{{.*}}]
// CHECK:                 scf.if %[[OK]] {
// CHECK-NEXT:              loop.store %{{.*}}, %out[%[[B]], %[[ITC]], %[[JTC]]] : memref<2x37x70xf32>
// OPT-LABEL:   tile.kernel @bmm(
// OPT-SAME:        grid(9, 10, 2) block(8, 4, 1)

builtin.module {
  tile.kernel @bmm(%x: memref<2x37x53xf32>, %w: memref<2x53x70xf32>, %out: memref<2x37x70xf32>) grid(1, 1, 1) block(1, 1, 1) plan matmul(chain = [2, 37, 70], k = 53, tensor_cores = false, splittable = true, slabs = [ik4, kj4]) {splits = 1, mma = false, reg_m = 1, reg_n = 1, interleave = false, threads_m = 16, threads_n = 16, k_chunk = 16, stage = true, pad = 4, buffers = 2, copy = cp_async, unroll = 32} done ["tile-split-k", "tile-tensor-core", "tile-register-tile"] {
    %zero = arith.constant 0.000000e+00 : f32
    tile.for %bt = 0 to 2 bind(serial) {
      tile.for %i = 0 to 37 bind(serial) {
        tile.for %j = 0 to 70 bind(serial) {
          %s = tile.for %k = 0 to 53 bind(serial) iter(%acc = %zero) -> f32 {
            %xv = loop.load %x[%bt, %i, %k] : memref<2x37x53xf32>
            %wv = loop.load %w[%bt, %k, %j] : memref<2x53x70xf32>
            %p = arith.mulf %xv, %wv : f32
            %n = arith.addf %acc, %p : f32
            tile.yield %n : f32
          }
          loop.store %s, %out[%bt, %i, %j] : memref<2x37x70xf32>
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

// After a 1 x 4 register tile (64 x 20 tiles of outputs), 16 x 8 threads: the 20 columns of
// tiles do not divide into 8, so the tile's column is clamped and its 4 stores guarded (one scf.if).
// CHECK-LABEL: tile.kernel @matmul_reg_tile(
// CHECK-SAME:      grid(3, 4, 1) block(8, 16, 1)
// CHECK:                 %[[C8:.*]] = arith.constant 8 : index
// CHECK-NEXT:            arith.muli %{{.*}}, %[[C8]] : index
// CHECK-NEXT:            %[[JT:.*]] = arith.addi
// CHECK-NEXT:            %[[C20:.*]] = arith.constant 20 : index
// CHECK-NEXT:            %[[IN:.*]] = arith.cmpi
// CHECK-SAME:                ult, %[[JT]], %[[C20]] : index
// CHECK-NEXT:            %[[C19:.*]] = arith.constant 19 : index
// CHECK-NEXT:            %[[JTC:.*]] = arith.minsi
// CHECK-SAME:                %[[JT]], %[[C19]] : index
// CHECK-NEXT:            %[[C4:.*]] = arith.constant 4 : index
// CHECK-NEXT:            %[[J0:.*]] = arith.muli
// CHECK-SAME:                %[[JTC]], %[[C4]] : index
// CHECK:                 scf.if %[[IN]] {
// CHECK-NEXT:              loop.store %{{.*}}, %out[%{{.*}}, %[[J0]]] : memref<64x80xf32>
// CHECK-COUNT-3:           loop.store
// CHECK-NEXT:            }
// OPT-LABEL:   tile.kernel @matmul_reg_tile(
// OPT-SAME:        grid(3, 16, 1) block(8, 4, 1)

builtin.module {
  tile.kernel @matmul_reg_tile(%x: memref<64x96xf32>, %w: memref<96x80xf32>, %out: memref<64x80xf32>) grid(1, 1, 1) block(1, 1, 1) plan matmul(chain = [64, 80], k = 96, tensor_cores = false, splittable = true, slabs = [ik4, kj4]) {splits = 1, mma = false, reg_m = 1, reg_n = 4, interleave = false, threads_m = 16, threads_n = 8, k_chunk = 32, stage = true, pad = 4, buffers = 2, copy = cp_async, unroll = 32} done ["tile-split-k", "tile-tensor-core", "tile-register-tile"] {
    %zero = arith.constant 0.000000e+00 : f32
    tile.for %i = 0 to 64 bind(serial) {
      tile.for %j = 0 to 20 bind(serial) {
        %c4 = arith.constant 4 : index
        %jr0 = arith.muli %j, %c4 : index
        %c1 = arith.constant 1 : index
        %jr1 = arith.addi %jr0, %c1 : index
        %c2 = arith.constant 2 : index
        %jr2 = arith.addi %jr0, %c2 : index
        %c3 = arith.constant 3 : index
        %jr3 = arith.addi %jr0, %c3 : index
        %s, %s_1, %s_2, %s_3 = tile.for %k = 0 to 96 bind(serial) iter(%acc = %zero, %acc_1 = %zero, %acc_2 = %zero, %acc_3 = %zero) -> (f32, f32, f32, f32) {
          %xv = loop.load %x[%i, %k] : memref<64x96xf32>
          %wv = loop.load %w[%k, %jr0] : memref<96x80xf32>
          %wv_1 = loop.load %w[%k, %jr1] : memref<96x80xf32>
          %wv_2 = loop.load %w[%k, %jr2] : memref<96x80xf32>
          %wv_3 = loop.load %w[%k, %jr3] : memref<96x80xf32>
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
        loop.store %s, %out[%i, %jr0] : memref<64x80xf32>
        loop.store %s_1, %out[%i, %jr1] : memref<64x80xf32>
        loop.store %s_2, %out[%i, %jr2] : memref<64x80xf32>
        loop.store %s_3, %out[%i, %jr3] : memref<64x80xf32>
      }
    }
  }
  func.func @main(%x: memref<64x96xf32>, %w: memref<96x80xf32>) -> memref<64x80xf32> {
    %out = memref.alloc() : memref<64x80xf32>
    tile.launch @matmul_reg_tile(%x, %w, %out) : memref<64x96xf32>, memref<96x80xf32>, memref<64x80xf32>
    func.return %out : memref<64x80xf32>
  }
}

// -----

// A row reduction (RMSNorm's sum of squares): its row_reduce plan has no 2-D mapping; left alone
// (not marked done), with the option too.
// CHECK-LABEL: tile.kernel @negative_rms_norm(
// CHECK-SAME:      grid(1, 1, 1) block(1, 1, 1) plan row_reduce(rows = [32], extent = 2048)
// CHECK-NOT:       done
// CHECK-SAME:      {
// CHECK-NOT:     bind(thread
// OPT-LABEL:   tile.kernel @negative_rms_norm(
// OPT-SAME:        grid(1, 1, 1) block(1, 1, 1) plan row_reduce(rows = [32], extent = 2048)
// OPT-NOT:         done
// OPT-SAME:        {
// OPT-NOT:       bind(thread

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
      tile.for %j2 = 0 to 2048 bind(serial) {
        %v2 = loop.load %x[%i, %j2] : memref<32x2048xf32>
        %y = arith.mulf %v2, %ss : f32
        loop.store %y, %out[%i, %j2] : memref<32x2048xf32>
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

// Mapped already (4 x 8 threads): no change, with the option (the same threads) too.
// CHECK-LABEL: tile.kernel @negative_done(
// CHECK-SAME:      grid(10, 16, 1) block(8, 4, 1)
// CHECK-SAME:      done ["tile-split-k", "tile-tensor-core", "tile-register-tile", "tile-map-2d"] {
// CHECK-NEXT:      %zero = arith.constant
// CHECK-NEXT:      tile.for %i = 0 to 16 bind(block.y) {
// CHECK-NEXT:        tile.for %j = 0 to 10 bind(block.x) {
// CHECK-NEXT:          tile.for %ty = 0 to 4 bind(thread.y) {
// CHECK-NEXT:            tile.for %tx = 0 to 8 bind(thread.x) {
// CHECK-NOT:               bind(thread
// OPT-LABEL:   tile.kernel @negative_done(
// OPT-SAME:        grid(10, 16, 1) block(8, 4, 1)
// OPT:                     tile.for %tx = 0 to 8 bind(thread.x) {
// OPT-NOT:                 bind(thread

builtin.module {
  tile.kernel @negative_done(%x: memref<64x96xf32>, %w: memref<96x80xf32>, %out: memref<64x80xf32>) grid(10, 16, 1) block(8, 4, 1) plan matmul(chain = [64, 80], k = 96, tensor_cores = false, splittable = true, slabs = [ik4, kj4]) {splits = 1, mma = false, reg_m = 1, reg_n = 1, interleave = false, threads_m = 4, threads_n = 8, k_chunk = 32, stage = true, pad = 4, buffers = 2, copy = cp_async, unroll = 32} done ["tile-split-k", "tile-tensor-core", "tile-register-tile", "tile-map-2d"] {
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
    tile.launch @negative_done(%x, %w, %out) : memref<64x96xf32>, memref<96x80xf32>, memref<64x80xf32>
    func.return %out : memref<64x80xf32>
  }
}
