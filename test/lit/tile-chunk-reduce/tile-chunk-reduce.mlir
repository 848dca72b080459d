// RUN: deplo-opt %s --split-input-file -p tile-chunk-reduce | filecheck %s
// RUN: deplo-opt %s --split-input-file --verify-diagnostics -p 'tile-chunk-reduce{k-chunk=8}' | filecheck %s --check-prefix=OPT
// RUN: not deplo-opt %s --split-input-file -p 'tile-chunk-reduce{k-chunk=96}' 2>&1 | filecheck %s --check-prefix=ERR

// K = 96 on 2-D blocks, chunks of 32 (the unit a stage copies), which divide K: no remainder.
// CHECK-LABEL: tile.kernel @matmul(
// CHECK-SAME:      k_chunk = 32,
// CHECK-SAME:      done ["tile-split-k", "tile-tensor-core", "tile-register-tile", "tile-map-2d", "tile-chunk-reduce"] {
// CHECK:                 %[[S:.*]] = tile.for
// CHECK-SAME:                %[[KO:.*]] = 0 to 96 step 32 bind(serial) iter(%acc = %zero) -> f32 {
// CHECK-NEXT:              %[[C:.*]] = tile.for
// CHECK-SAME:                  %[[KI:.*]] = 0 to 32 bind(serial) iter(
// CHECK-SAME:                  %[[ACC:.*]] = %acc) -> f32 {
// CHECK-NEXT:                %[[K:.*]] = arith.addi
// CHECK-SAME:                    %[[KO]], %[[KI]] : index
// CHECK-NEXT:                loop.load %x[%{{.*}}, %[[K]]] : memref<64x96xf32>
// CHECK-NEXT:                loop.load %w[%[[K]], %{{.*}}] : memref<96x80xf32>
// CHECK:                     arith.addf %[[ACC]],
// CHECK:                   tile.yield %[[C]] : f32
// CHECK-NEXT:            }
// CHECK-NEXT:            loop.store %[[S]], %out[
// The option sets the chunk (12 of 8 elements).
// OPT-LABEL:   tile.kernel @matmul(
// OPT-SAME:        k_chunk = 8,
// OPT:                   tile.for %{{.*}} = 0 to 96 step 8 bind(serial)
// OPT-NEXT:                tile.for %{{.*}} = 0 to 8 bind(serial)
// An illegal option names the pass, the option, the kernel and the knob.
// ERR: deplo-opt: error: tile-chunk-reduce{k-chunk=96}: kernel @matmul: knob k_chunk: 96: expected 0 or below K = 96
// ERR-NOT: error

builtin.module {
  tile.kernel @matmul(%x: memref<64x96xf32>, %w: memref<96x80xf32>, %out: memref<64x80xf32>) grid(5, 4, 1) block(16, 16, 1) plan matmul(chain = [64, 80], k = 96, tensor_cores = false, splittable = true, slabs = [ik4, kj4]) {splits = 1, mma = false, reg_m = 1, reg_n = 1, interleave = false, threads_m = 16, threads_n = 16, k_chunk = 32, stage = true, pad = 4, buffers = 2, copy = cp_async, unroll = 32} done ["tile-split-k", "tile-tensor-core", "tile-register-tile", "tile-map-2d"] {
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
    tile.launch @matmul(%x, %w, %out) : memref<64x96xf32>, memref<96x80xf32>, memref<64x80xf32>
    func.return %out : memref<64x80xf32>
  }
}

// -----

// K = 53 (< 64): chunks of 16; the 5 left over run in a peeled loop that starts from the
// chunks' result, so no chunk reads past K.
// CHECK-LABEL: tile.kernel @bmm(
// CHECK-SAME:      k_chunk = 16,
// CHECK-SAME:      done ["tile-split-k", "tile-tensor-core", "tile-register-tile", "tile-map-2d", "tile-chunk-reduce"] {
// CHECK:                   %[[MAIN:.*]] = tile.for
// CHECK-SAME:                  %{{.*}} = 0 to 48 step 16 bind(serial) iter(%acc = %zero) -> f32 {
// CHECK-NEXT:                tile.for %{{.*}} = 0 to 16 bind(serial)
// CHECK:                   %[[S:.*]] = tile.for
// CHECK-SAME:                  %[[K:.*]] = 48 to 53 bind(serial) iter(
// CHECK-SAME:                  %{{.*}} = %[[MAIN]]) -> f32 {
// CHECK-NEXT:                loop.load %x[%{{.*}}, %{{.*}}, %[[K]]]
// CHECK:                   scf.if
// CHECK-NEXT:                loop.store %[[S]], %out[
// OPT-LABEL:   tile.kernel @bmm(
// OPT:                     %[[MAIN:.*]] = tile.for
// OPT-SAME:                    %{{.*}} = 0 to 48 step 8 bind(serial)
// OPT:                     tile.for %{{.*}} = 48 to 53 bind(serial) iter(%{{.*}} = %[[MAIN]]) -> f32 {

builtin.module {
  tile.kernel @bmm(%x: memref<2x37x53xf32>, %w: memref<2x53x70xf32>, %out: memref<2x37x70xf32>) grid(5, 3, 2) block(16, 16, 1) plan matmul(chain = [2, 37, 70], k = 53, tensor_cores = false, splittable = true, slabs = [ik4, kj4]) {splits = 1, mma = false, reg_m = 1, reg_n = 1, interleave = false, threads_m = 16, threads_n = 16, k_chunk = 16, stage = true, pad = 4, buffers = 2, copy = cp_async, unroll = 32} done ["tile-split-k", "tile-tensor-core", "tile-register-tile", "tile-map-2d"] {
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
              %s = tile.for %k = 0 to 53 bind(serial) iter(%acc = %zero) -> f32 {
                %xv = loop.load %x[%bt, %itc, %k] : memref<2x37x53xf32>
                %wv = loop.load %w[%bt, %k, %jtc] : memref<2x53x70xf32>
                %p = arith.mulf %xv, %wv : f32
                %n = arith.addf %acc, %p : f32
                tile.yield %n : f32
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

// On tensor cores, K goes in steps of 16: chunks of 32 are two steps each.
// CHECK-LABEL: tile.kernel @matmul_mma(
// CHECK-SAME:      done ["tile-split-k", "tile-tensor-core", "tile-chunk-reduce"] {
// CHECK:                 tile.for %{{.*}} = 0 to 96 step 32 bind(serial) iter(%acc = %zero, %acc_1 = %zero, %acc_2 = %zero, %acc_3 = %zero) -> (f32, f32, f32, f32) {
// CHECK-NEXT:              tile.for %{{.*}} = 0 to 32 step 16 bind(serial)
// CHECK-NEXT:                %[[K:.*]] = arith.addi
// CHECK-NEXT:                tile.fragment_load a %a[%{{.*}}, %[[K]]]
// Chunks of 8 are not whole steps of 16: the option is illegal for this plan.
// OPT: tile-chunk-reduce{k-chunk=8}: kernel @matmul_mma: knob k_chunk: 8: expected 0 or a multiple of 16 below K = 96

builtin.module {
  tile.kernel @matmul_mma(%a: memref<64x96xf16>, %b: memref<96x80xf16>, %out: memref<64x80xf16>) grid(10, 4, 1) block(32, 1, 1) plan matmul(chain = [64, 80], k = 96, tensor_cores = true, splittable = true, slabs = [ik2, kj2]) {splits = 1, mma = true, warps_m = 1, warps_n = 1, frags_m = 1, frags_n = 1, k_chunk = 32, stage = true, pad = 8, buffers = 2, copy = cp_async, unroll = 32} done ["tile-split-k", "tile-tensor-core"] {
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
            %c, %c_1, %c_2, %c_3 = tile.for %k = 0 to 96 step 16 bind(serial) iter(%acc = %zero, %acc_1 = %zero, %acc_2 = %zero, %acc_3 = %zero) -> (f32, f32, f32, f32) {
              %fa0, %fa0_1, %fa0_2, %fa0_3 = tile.fragment_load a %a[%row0, %k] lane(%l) : memref<64x96xf16> -> i32, i32, i32, i32
              %fb0, %fb0_1 = tile.fragment_load b_kn %b[%k, %col0] lane(%l) : memref<96x80xf16> -> i32, i32
              %d, %d_1, %d_2, %d_3 = tile.mma f16 %fa0, %fa0_1, %fa0_2, %fa0_3, %fb0, %fb0_1, %acc, %acc_1, %acc_2, %acc_3
              tile.yield %d, %d_1, %d_2, %d_3 : f32, f32, f32, f32
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

// k_chunk = 0 (16 x 16 outputs: too few threads share a chunk to stage it): the step is
// recorded, K stays one loop. With the option, the chunks are there and the later knobs are
// re-planned around them (the chunks are staged, padded, double-buffered, cp.async).
// CHECK-LABEL: tile.kernel @negative_no_chunks(
// CHECK-SAME:      k_chunk = 0, stage = false,
// CHECK-SAME:      done ["tile-split-k", "tile-tensor-core", "tile-register-tile", "tile-map-2d", "tile-chunk-reduce"] {
// CHECK:                 tile.for %{{.*}} = 0 to 64 bind(serial) iter
// CHECK-NOT:             tile.for
// OPT-LABEL:   tile.kernel @negative_no_chunks(
// OPT-SAME:        k_chunk = 8, stage = true, pad = 4, buffers = 2, copy = cp_async,
// OPT:                   tile.for %{{.*}} = 0 to 64 step 8 bind(serial)

builtin.module {
  tile.kernel @negative_no_chunks(%x: memref<16x64xf32>, %w: memref<64x16xf32>, %out: memref<16x16xf32>) grid(1, 1, 1) block(16, 16, 1) plan matmul(chain = [16, 16], k = 64, tensor_cores = false, splittable = true, slabs = [ik4, kj4]) {splits = 1, mma = false, reg_m = 1, reg_n = 1, interleave = false, threads_m = 16, threads_n = 16, k_chunk = 0, stage = false, pad = 0, buffers = 1, copy = sync, unroll = 32} done ["tile-split-k", "tile-tensor-core", "tile-register-tile", "tile-map-2d"] {
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

// A row reduction: its row_reduce plan has no K chunks; left alone (not marked done), with the
// option too.
// CHECK-LABEL: tile.kernel @negative_rms_norm(
// CHECK-SAME:      plan row_reduce(rows = [32], extent = 2048)
// CHECK-NOT:       done
// CHECK-SAME:      {
// CHECK:           tile.for %{{.*}} = 0 to 2048 bind(serial) iter
// OPT-LABEL:   tile.kernel @negative_rms_norm(
// OPT-SAME:        plan row_reduce(rows = [32], extent = 2048)
// OPT-NOT:         done
// OPT-SAME:        {
// OPT:             tile.for %{{.*}} = 0 to 2048 bind(serial) iter

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

// Chunked already (chunks of 8): no change, with the option (the same chunk) too.
// CHECK-LABEL: tile.kernel @negative_done(
// CHECK-SAME:      done ["tile-split-k", "tile-tensor-core", "tile-register-tile", "tile-map-2d", "tile-chunk-reduce"] {
// CHECK:                 tile.for %{{.*}} = 0 to 64 step 8 bind(serial)
// CHECK-NEXT:              tile.for %{{.*}} = 0 to 8 bind(serial)
// CHECK-NEXT:                arith.addi
// CHECK-NEXT:                loop.load
// OPT-LABEL:   tile.kernel @negative_done(
// OPT:                   tile.for %{{.*}} = 0 to 64 step 8 bind(serial)
// OPT-NEXT:                tile.for %{{.*}} = 0 to 8 bind(serial)
// OPT-NEXT:                  arith.addi
// OPT-NEXT:                  loop.load

builtin.module {
  tile.kernel @negative_done(%x: memref<16x64xf32>, %w: memref<64x16xf32>, %out: memref<16x16xf32>) grid(1, 1, 1) block(16, 16, 1) plan matmul(chain = [16, 16], k = 64, tensor_cores = false, splittable = true, slabs = [ik4, kj4]) {splits = 1, mma = false, reg_m = 1, reg_n = 1, interleave = false, threads_m = 16, threads_n = 16, k_chunk = 8, stage = true, pad = 4, buffers = 2, copy = cp_async, unroll = 32} done ["tile-split-k", "tile-tensor-core", "tile-register-tile", "tile-map-2d", "tile-chunk-reduce"] {
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
              %chunk = tile.for %ki = 0 to 8 bind(serial) iter(%acc_1 = %acc) -> f32 {
                %k = arith.addi %ko, %ki : index
                %xv = loop.load %x[%it, %k] : memref<16x64xf32>
                %wv = loop.load %w[%k, %jt] : memref<64x16xf32>
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
