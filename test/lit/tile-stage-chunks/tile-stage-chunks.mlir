// RUN: deplo-opt %s --split-input-file -p tile-stage-chunks | filecheck %s
// RUN: deplo-opt %s --split-input-file --verify-diagnostics -p 'tile-stage-chunks{stage=true}' | filecheck %s --check-prefix=OPT
// RUN: not deplo-opt %s --split-input-file -p 'tile-stage-chunks{stage=true}' 2>&1 | filecheck %s --check-prefix=ERR

// 2 x 2 outputs a thread, 16 x 16 threads: a block covers 32 rows and 32 columns. At the top of
// each K chunk the block copies A's [32 x 32] and B's [32 x 32] tiles; the chunk's loads read
// them at their coordinates minus the tile's offset (the block's first row cancels out).
// The staged bytes are what the plan predicts (dialects/tile_plan.py, shared_bytes): slabs
// ik and kj, each shared by 16 threads, of block tile x k_chunk elements plus pad, times buffers:
//   (32 x (32 + 0) + 32 x (32 + 0)) x 4 bytes x 1 buffer = 8192 bytes.
// CHECK-LABEL: tile.kernel @matmul(
// CHECK-SAME:      k_chunk = 32, stage = true, pad = 0, buffers = 1,
// CHECK-SAME:      done ["tile-split-k", "tile-tensor-core", "tile-register-tile", "tile-map-2d", "tile-chunk-reduce", "tile-stage-chunks"] {
// CHECK:           tile.for %[[TY:.*]] = 0 to 16 bind(thread.y) {
// CHECK:             tile.for %[[KO:.*]] = 0 to 96 step 32 bind(serial)
// CHECK-NEXT:          %[[C32:.*]] = arith.constant 32 : index
// CHECK-NEXT:          %[[ROW:.*]] = arith.muli
// CHECK-SAME:              %{{.*}}, %[[C32]] : index
// CHECK:               %[[COL:.*]] = arith.muli
// CHECK-NEXT:          %[[XS:.*]] = tile.stage
// CHECK-SAME:              %x[%[[ROW]], %[[KO]]] [32, 32] into shared copy(sync) buffers(1) pad(0) : memref<64x96xf32> -> memref<32x32xf32, 3 : i64>
// CHECK-NEXT:          %[[WS:.*]] = tile.stage
// CHECK-SAME:              %w[%[[KO]], %[[COL]]] [32, 32] into shared copy(sync) buffers(1) pad(0) : memref<96x80xf32> -> memref<32x32xf32, 3 : i64>
// CHECK-NEXT:          tile.for %[[KI:.*]] = 0 to 32 bind(serial)
// CHECK-NEXT:            loop.load %[[XS]][%[[TY]], %[[KI]]] map (d0, d1) -> ((d0 * 2), d1) : memref<32x32xf32, 3 : i64>
// CHECK-NEXT:            loop.load %[[XS]][%[[TY]], %[[KI]]] map (d0, d1) -> (((d0 * 2) + 1), d1) : memref<32x32xf32, 3 : i64>
// CHECK-NEXT:            loop.load %[[WS]][%[[KI]], %{{.*}}, %{{.*}}] map (d0, d1, d2) -> (d0, ((d1 * 2) + (d2 * -32))) : memref<32x32xf32, 3 : i64>
// CHECK-NOT:           loop.load %x[
// CHECK-NOT:           loop.load %w[
// CHECK-NOT:         tile.stage
// OPT-LABEL:   tile.kernel @matmul(
// OPT-COUNT-2:       tile.stage
// ERR: deplo-opt: error: tile-stage-chunks{{[{].*}}}: kernel @negative_no_chunks: knob stage: staging needs K chunks (k_chunk > 0)
// ERR-NOT: error

builtin.module {
  tile.kernel @matmul(%x: memref<64x96xf32>, %w: memref<96x80xf32>, %out: memref<64x80xf32>) grid(3, 2, 1) block(16, 16, 1) plan matmul(chain = [64, 80], k = 96, tensor_cores = false, splittable = true, slabs = [ik4, kj4]) {splits = 1, mma = false, reg_m = 2, reg_n = 2, interleave = false, threads_m = 16, threads_n = 16, k_chunk = 32, stage = true, pad = 0, buffers = 1, copy = sync, unroll = 32} done ["tile-split-k", "tile-tensor-core", "tile-register-tile", "tile-map-2d", "tile-chunk-reduce"] {
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
              %chunk, %chunk_1, %chunk_2, %chunk_3 = tile.for %ki = 0 to 32 bind(serial) iter(%acc_4 = %acc, %acc_5 = %acc_1, %acc_6 = %acc_2, %acc_7 = %acc_3) -> (f32, f32, f32, f32) {
                %k = arith.addi %ko, %ki : index
                %xv = loop.load %x[%ir0, %k] : memref<64x96xf32>
                %xv_1 = loop.load %x[%ir1, %k] : memref<64x96xf32>
                %wv = loop.load %w[%k, %jr0] : memref<96x80xf32>
                %wv_1 = loop.load %w[%k, %jr1] : memref<96x80xf32>
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
    tile.launch @matmul(%x, %w, %out) : memref<64x96xf32>, memref<96x80xf32>, memref<64x80xf32>
    func.return %out : memref<64x80xf32>
  }
}

// -----

// 37 x 70 per batch, K = 53 in chunks of 16: the batch coordinate is a unit dim of the slab
// (dropped); the last block's A tile passes row 37 (tile.stage reads it as zero, the clamped
// loads never read it); the 5 elements of K left after the chunks stay in global memory.
// CHECK-LABEL: tile.kernel @bmm(
// CHECK:             tile.for %[[KO:.*]] = 0 to 48 step 16 bind(serial)
// CHECK:               %[[XS:.*]] = tile.stage
// CHECK-SAME:              %x[
// CHECK-SAME:              %[[B:[a-z0-9_]+]],
// CHECK-SAME:              %{{.*}}, %[[KO]]] [1, 16, 16] into shared copy(sync) buffers(1) pad(0) : memref<2x37x53xf32> -> memref<16x16xf32, 3 : i64>
// CHECK-NEXT:          %[[WS:.*]] = tile.stage
// CHECK-SAME:              %w[%[[B]], %[[KO]], %{{.*}}] [1, 16, 16] into shared copy(sync) buffers(1) pad(0) : memref<2x53x70xf32> -> memref<16x16xf32, 3 : i64>
// CHECK:                 loop.load %[[XS]][%{{.*}}, %{{.*}}, %{{.*}}] map (d0, d1, d2) -> ((d0 + (d1 * -16)), d2)
// CHECK:             tile.for %{{.*}} = 48 to 53 bind(serial)
// CHECK-NEXT:          loop.load %x[%[[B]],
// CHECK-NEXT:          loop.load %w[%[[B]],
// OPT-LABEL:   tile.kernel @bmm(
// OPT-COUNT-2:       tile.stage

builtin.module {
  tile.kernel @bmm(%x: memref<2x37x53xf32>, %w: memref<2x53x70xf32>, %out: memref<2x37x70xf32>) grid(5, 3, 2) block(16, 16, 1) plan matmul(chain = [2, 37, 70], k = 53, tensor_cores = false, splittable = true, slabs = [ik4, kj4]) {splits = 1, mma = false, reg_m = 1, reg_n = 1, interleave = false, threads_m = 16, threads_n = 16, k_chunk = 16, stage = true, pad = 4, buffers = 2, copy = cp_async, unroll = 32} done ["tile-split-k", "tile-tensor-core", "tile-register-tile", "tile-map-2d", "tile-chunk-reduce"] {
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
                %chunk_1 = tile.for %ki = 0 to 16 bind(serial) iter(%acc_1 = %acc) -> f32 {
                  %k = arith.addi %ko, %ki : index
                  %xv = loop.load %x[%bt, %itc, %k] : memref<2x37x53xf32>
                  %wv = loop.load %w[%bt, %k, %jtc] : memref<2x53x70xf32>
                  %p = arith.mulf %xv, %wv : f32
                  %n = arith.addf %acc_1, %p : f32
                  tile.yield %n : f32
                }
                tile.yield %chunk_1 : f32
              }
              %s = tile.for %k_1 = 48 to 53 bind(serial) iter(%acc_2 = %chunk) -> f32 {
                %xv_1 = loop.load %x[%bt, %itc, %k_1] : memref<2x37x53xf32>
                %wv_1 = loop.load %w[%bt, %k_1, %jtc] : memref<2x53x70xf32>
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

// On tensor cores every lane shares its warp's tiles: A's [16 x 32] and B's [32 x 8] chunks
// are staged and the fragments load from them (ldmatrix), at their origin minus the slab's.
// CHECK-LABEL: tile.kernel @matmul_mma(
// CHECK-SAME:      done ["tile-split-k", "tile-tensor-core", "tile-chunk-reduce", "tile-stage-chunks"] {
// CHECK:             tile.for %[[KO:.*]] = 0 to 96 step 32 bind(serial)
// CHECK:               %[[AS:.*]] = tile.stage
// CHECK-SAME:              %a[%{{.*}}, %[[KO]]] [16, 32] into shared copy(sync) buffers(1) pad(0) : memref<64x96xf16> -> memref<16x32xf16, 3 : i64>
// CHECK-NEXT:          %[[BS:.*]] = tile.stage
// CHECK-SAME:              %b[%[[KO]], %{{.*}}] [32, 8] into shared copy(sync) buffers(1) pad(0) : memref<96x80xf16> -> memref<32x8xf16, 3 : i64>
// CHECK-NEXT:          tile.for %[[KI:.*]] = 0 to 32 step 16 bind(serial)
// CHECK:                 tile.fragment_load a %[[AS]][%{{.*}}, %[[KI]]] lane(%{{.*}}) : memref<16x32xf16, 3 : i64>
// CHECK:                 tile.fragment_load b_kn %[[BS]][%[[KI]], %{{.*}}] lane(%{{.*}}) : memref<32x8xf16, 3 : i64>
// OPT-LABEL:   tile.kernel @matmul_mma(
// OPT-COUNT-2:       tile.stage

builtin.module {
  tile.kernel @matmul_mma(%a: memref<64x96xf16>, %b: memref<96x80xf16>, %out: memref<64x80xf16>) grid(10, 4, 1) block(32, 1, 1) plan matmul(chain = [64, 80], k = 96, tensor_cores = true, splittable = true, slabs = [ik2, kj2]) {splits = 1, mma = true, warps_m = 1, warps_n = 1, frags_m = 1, frags_n = 1, k_chunk = 32, stage = true, pad = 8, buffers = 2, copy = cp_async, unroll = 32} done ["tile-split-k", "tile-tensor-core", "tile-chunk-reduce"] {
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
              %chunk, %chunk_1, %chunk_2, %chunk_3 = tile.for %ki = 0 to 32 step 16 bind(serial) iter(%acc_4 = %acc, %acc_5 = %acc_1, %acc_6 = %acc_2, %acc_7 = %acc_3) -> (f32, f32, f32, f32) {
                %k = arith.addi %ko, %ki : index
                %fa0, %fa0_1, %fa0_2, %fa0_3 = tile.fragment_load a %a[%row0, %k] lane(%l) : memref<64x96xf16> -> i32, i32, i32, i32
                %fb0, %fb0_1 = tile.fragment_load b_kn %b[%k, %col0] lane(%l) : memref<96x80xf16> -> i32, i32
                %d, %d_1, %d_2, %d_3 = tile.mma f16 %fa0, %fa0_1, %fa0_2, %fa0_3, %fb0, %fb0_1, %acc_4, %acc_5, %acc_6, %acc_7
                tile.yield %d, %d_1, %d_2, %d_3 : f32, f32, f32, f32
              }
              tile.yield %chunk, %chunk_1, %chunk_2, %chunk_3 : f32, f32, f32, f32
            }
            %c4 = arith.constant 4 : index
            %g = arith.divsi %l, %c4 : index
            %4 = arith.remsi %l, %c4 : index
            %c2 = arith.constant 2 : index
            %t2 = arith.muli %4, %c2 : index
            %rg = arith.addi %row0, %g : index
            %cg = arith.addi %col0, %t2 : index
            %c1 = arith.constant 1 : index
            %5 = arith.addi %cg, %c1 : index
            %6 = arith.addi %rg, %c8 : index
            %t = arith.truncf %c : f32 to f16
            %t_1 = arith.truncf %c_1 : f32 to f16
            %t_2 = arith.truncf %c_2 : f32 to f16
            %t_3 = arith.truncf %c_3 : f32 to f16
            loop.store %t, %out[%rg, %cg] : memref<64x80xf16>
            loop.store %t_1, %out[%rg, %5] : memref<64x80xf16>
            loop.store %t_2, %out[%6, %cg] : memref<64x80xf16>
            loop.store %t_3, %out[%6, %5] : memref<64x80xf16>
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

// out[i, j] = sum_k x[i, k] * y[i, j, k]: every thread reads its own y (its coordinates depend on
// both thread axes, nothing to share; the plan's facts list only x's slab): only x is staged.
// CHECK-LABEL: tile.kernel @negative_no_reuse(
// CHECK-SAME:      slabs = [ik4]
// CHECK:             %[[XS:.*]] = tile.stage
// CHECK-SAME:            %x[
// CHECK-NOT:         tile.stage
// CHECK:               loop.load %[[XS]][
// CHECK:               loop.load %y[
// OPT-LABEL:   tile.kernel @negative_no_reuse(
// OPT-COUNT-1:       tile.stage %x[
// OPT-NOT:           tile.stage

builtin.module {
  tile.kernel @negative_no_reuse(%x: memref<32x64xf32>, %y: memref<32x32x64xf32>, %out: memref<32x32xf32>) grid(1, 1, 1) block(16, 16, 1) plan matmul(chain = [32, 32], k = 64, tensor_cores = false, splittable = true, slabs = [ik4]) {splits = 1, mma = false, reg_m = 2, reg_n = 2, interleave = false, threads_m = 16, threads_n = 16, k_chunk = 32, stage = true, pad = 4, buffers = 2, copy = cp_async, unroll = 32} done ["tile-split-k", "tile-tensor-core", "tile-register-tile", "tile-map-2d", "tile-chunk-reduce"] {
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
            %c2 = arith.constant 2 : index
            %ir0 = arith.muli %it, %c2 : index
            %c1 = arith.constant 1 : index
            %ir1 = arith.addi %ir0, %c1 : index
            %jr0 = arith.muli %jt, %c2 : index
            %jr1 = arith.addi %jr0, %c1 : index
            %s, %s_1, %s_2, %s_3 = tile.for %ko = 0 to 64 step 32 bind(serial) iter(%acc = %zero, %acc_1 = %zero, %acc_2 = %zero, %acc_3 = %zero) -> (f32, f32, f32, f32) {
              %chunk, %chunk_1, %chunk_2, %chunk_3 = tile.for %ki = 0 to 32 bind(serial) iter(%acc_4 = %acc, %acc_5 = %acc_1, %acc_6 = %acc_2, %acc_7 = %acc_3) -> (f32, f32, f32, f32) {
                %k = arith.addi %ko, %ki : index
                %xv = loop.load %x[%ir0, %k] : memref<32x64xf32>
                %xv_1 = loop.load %x[%ir1, %k] : memref<32x64xf32>
                %yv = loop.load %y[%ir0, %jr0, %k] : memref<32x32x64xf32>
                %yv_1 = loop.load %y[%ir0, %jr1, %k] : memref<32x32x64xf32>
                %yv_2 = loop.load %y[%ir1, %jr0, %k] : memref<32x32x64xf32>
                %yv_3 = loop.load %y[%ir1, %jr1, %k] : memref<32x32x64xf32>
                %p = arith.mulf %xv, %yv : f32
                %p_1 = arith.mulf %xv, %yv_1 : f32
                %p_2 = arith.mulf %xv_1, %yv_2 : f32
                %p_3 = arith.mulf %xv_1, %yv_3 : f32
                %n = arith.addf %acc_4, %p : f32
                %n_1 = arith.addf %acc_5, %p_1 : f32
                %n_2 = arith.addf %acc_6, %p_2 : f32
                %n_3 = arith.addf %acc_7, %p_3 : f32
                tile.yield %n, %n_1, %n_2, %n_3 : f32, f32, f32, f32
              }
              tile.yield %chunk, %chunk_1, %chunk_2, %chunk_3 : f32, f32, f32, f32
            }
            loop.store %s, %out[%ir0, %jr0] : memref<32x32xf32>
            loop.store %s_1, %out[%ir0, %jr1] : memref<32x32xf32>
            loop.store %s_2, %out[%ir1, %jr0] : memref<32x32xf32>
            loop.store %s_3, %out[%ir1, %jr1] : memref<32x32xf32>
          }
        }
      }
    }
  }
  func.func @main(%x: memref<32x64xf32>, %y: memref<32x32x64xf32>) -> memref<32x32xf32> {
    %out = memref.alloc() : memref<32x32xf32>
    tile.launch @negative_no_reuse(%x, %y, %out) : memref<32x64xf32>, memref<32x32x64xf32>, memref<32x32xf32>
    func.return %out : memref<32x32xf32>
  }
}

// -----

// K in chunks, but the plan does not stage them (stage = false): the step is recorded, the loads
// stay global. The option stages them, and the plan's later knobs are re-planned around it
// (padding, two buffers, cp.async).
// CHECK-LABEL: tile.kernel @negative_stage_off(
// CHECK-SAME:      done ["tile-split-k", "tile-tensor-core", "tile-register-tile", "tile-map-2d", "tile-chunk-reduce", "tile-stage-chunks"] {
// CHECK-NOT:     tile.stage
// CHECK:                 loop.load %x[
// CHECK-NOT:     tile.stage
// OPT-LABEL:   tile.kernel @negative_stage_off(
// OPT-SAME:        k_chunk = 32, stage = true, pad = 4, buffers = 2, copy = cp_async,
// OPT-SAME:        done ["tile-split-k", "tile-tensor-core", "tile-register-tile", "tile-map-2d", "tile-chunk-reduce", "tile-stage-chunks"] {
// OPT:               tile.stage %x[{{.*}}] [16, 32]
// OPT-NEXT:          tile.stage %w[{{.*}}] [32, 16]

builtin.module {
  tile.kernel @negative_stage_off(%x: memref<64x96xf32>, %w: memref<96x80xf32>, %out: memref<64x80xf32>) grid(5, 4, 1) block(16, 16, 1) plan matmul(chain = [64, 80], k = 96, tensor_cores = false, splittable = true, slabs = [ik4, kj4]) {splits = 1, mma = false, reg_m = 1, reg_n = 1, interleave = false, threads_m = 16, threads_n = 16, k_chunk = 32, stage = false, pad = 0, buffers = 1, copy = sync, unroll = 32} done ["tile-split-k", "tile-tensor-core", "tile-register-tile", "tile-map-2d", "tile-chunk-reduce"] {
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
            %s = tile.for %ko = 0 to 96 step 32 bind(serial) iter(%acc = %zero) -> f32 {
              %chunk = tile.for %ki = 0 to 32 bind(serial) iter(%acc_1 = %acc) -> f32 {
                %k = arith.addi %ko, %ki : index
                %xv = loop.load %x[%it, %k] : memref<64x96xf32>
                %wv = loop.load %w[%k, %jt] : memref<96x80xf32>
                %p = arith.mulf %xv, %wv : f32
                %n = arith.addf %acc_1, %p : f32
                tile.yield %n : f32
              }
              tile.yield %chunk : f32
            }
            loop.store %s, %out[%it, %jt] : memref<64x80xf32>
          }
        }
      }
    }
  }
  func.func @main(%x: memref<64x96xf32>, %w: memref<96x80xf32>) -> memref<64x80xf32> {
    %out = memref.alloc() : memref<64x80xf32>
    tile.launch @negative_stage_off(%x, %w, %out) : memref<64x96xf32>, memref<96x80xf32>, memref<64x80xf32>
    func.return %out : memref<64x80xf32>
  }
}

// -----

// No K chunks (k_chunk = 0): nothing to stage; the option cannot stage without chunks.
// CHECK-LABEL: tile.kernel @negative_no_chunks(
// CHECK-SAME:      k_chunk = 0, stage = false,
// CHECK-SAME:      done ["tile-split-k", "tile-tensor-core", "tile-register-tile", "tile-map-2d", "tile-chunk-reduce", "tile-stage-chunks"] {
// CHECK-NOT:     tile.stage
// OPT: tile-stage-chunks{{[{].*}}}: kernel @negative_no_chunks: knob stage: staging needs K chunks (k_chunk > 0)

builtin.module {
  tile.kernel @negative_no_chunks(%x: memref<16x64xf32>, %w: memref<64x16xf32>, %out: memref<16x16xf32>) grid(1, 1, 1) block(16, 16, 1) plan matmul(chain = [16, 16], k = 64, tensor_cores = false, splittable = true, slabs = [ik4, kj4]) {splits = 1, mma = false, reg_m = 1, reg_n = 1, interleave = false, threads_m = 16, threads_n = 16, k_chunk = 0, stage = false, pad = 0, buffers = 1, copy = sync, unroll = 32} done ["tile-split-k", "tile-tensor-core", "tile-register-tile", "tile-map-2d", "tile-chunk-reduce"] {
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
            %s = tile.for %k = 0 to 64 bind(serial) iter(%acc = %zero) -> f32 {
              %xv = loop.load %x[%it, %k] : memref<16x64xf32>
              %wv = loop.load %w[%k, %jt] : memref<64x16xf32>
              %p = arith.mulf %xv, %wv : f32
              %n = arith.addf %acc, %p : f32
              tile.yield %n : f32
            }
            loop.store %s, %out[%it, %jt] : memref<16x16xf32>
          }
        }
      }
    }
  }
  func.func @main(%x: memref<16x64xf32>, %w: memref<64x16xf32>) -> memref<16x16xf32> {
    %out = memref.alloc() : memref<16x16xf32>
    tile.launch @negative_no_chunks(%x, %w, %out) : memref<16x64xf32>, memref<64x16xf32>, memref<16x16xf32>
    func.return %out : memref<16x16xf32>
  }
}

// -----

// A row reduction: its row_reduce plan stages with tile-stage-inputs, not this pass; left alone
// (not marked done), with the option too.
// CHECK-LABEL: tile.kernel @negative_rms_norm(
// CHECK-SAME:      plan row_reduce(rows = [32], extent = 2048)
// CHECK-NOT:       done
// CHECK-SAME:      {
// CHECK-NOT:     tile.stage
// OPT-LABEL:   tile.kernel @negative_rms_norm(
// OPT-SAME:        plan row_reduce(rows = [32], extent = 2048)
// OPT-NOT:         done
// OPT-SAME:        {
// OPT-NOT:       tile.stage

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

// Staged already: no second stage, with the option (the same decision) too.
// CHECK-LABEL: tile.kernel @negative_done(
// CHECK-SAME:      done ["tile-split-k", "tile-tensor-core", "tile-register-tile", "tile-map-2d", "tile-chunk-reduce", "tile-stage-chunks"] {
// CHECK-COUNT-2:     tile.stage
// CHECK-NOT:         tile.stage
// OPT-LABEL:   tile.kernel @negative_done(
// OPT-COUNT-2:       tile.stage
// OPT-NOT:           tile.stage

builtin.module {
  tile.kernel @negative_done(%x: memref<16x64xf32>, %w: memref<64x16xf32>, %out: memref<16x16xf32>) grid(1, 1, 1) block(16, 16, 1) plan matmul(chain = [16, 16], k = 64, tensor_cores = false, splittable = true, slabs = [ik4, kj4]) {splits = 1, mma = false, reg_m = 1, reg_n = 1, interleave = false, threads_m = 16, threads_n = 16, k_chunk = 8, stage = true, pad = 4, buffers = 2, copy = cp_async, unroll = 32} done ["tile-split-k", "tile-tensor-core", "tile-register-tile", "tile-map-2d", "tile-chunk-reduce", "tile-stage-chunks"] {
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
              %xs = tile.stage %x[%2, %ko] [16, 8] into shared copy(sync) buffers(1) pad(0) : memref<16x64xf32> -> memref<16x8xf32, 3 : i64>
              %ws = tile.stage %w[%ko, %3] [8, 16] into shared copy(sync) buffers(1) pad(0) : memref<64x16xf32> -> memref<8x16xf32, 3 : i64>
              %chunk = tile.for %ki = 0 to 8 bind(serial) iter(%acc_1 = %acc) -> f32 {
                %xv = loop.load %xs[%ty, %ki] : memref<16x8xf32, 3 : i64>
                %wv = loop.load %ws[%ki, %tx] : memref<8x16xf32, 3 : i64>
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
