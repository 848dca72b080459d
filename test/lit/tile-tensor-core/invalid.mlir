// RUN: deplo-opt %s --split-input-file --verify-diagnostics -p tile-tensor-core | filecheck %s
// RUN: deplo-opt %s --split-input-file --verify-diagnostics -p 'tile-tensor-core{frags-n=1}' | filecheck %s --check-prefix=OPT

// A plan's steps run in order: K was chunked first, which the plan does after tensor cores.
// CHECK: tile-tensor-core: kernel @runs_after_chunk_reduce: runs after tile-chunk-reduce, which its matmul plan carries out later
// OPT: tile-tensor-core: kernel @runs_after_chunk_reduce: runs after tile-chunk-reduce, which its matmul plan carries out later

builtin.module {
  tile.kernel @runs_after_chunk_reduce(%a: memref<16x32xf16>, %b: memref<32x32xf16>, %out: memref<16x32xf32>) grid(1, 1, 1) block(1, 1, 1) plan matmul(chain = [16, 32], k = 32, tensor_cores = true, splittable = true, slabs = [ik2, kj2]) {splits = 1, mma = true, warps_m = 1, warps_n = 1, frags_m = 1, frags_n = 1, k_chunk = 16, stage = true, pad = 8, buffers = 2, copy = cp_async, unroll = 32} done ["tile-split-k", "tile-chunk-reduce"] {
    %zero = arith.constant 0.000000e+00 : f32
    tile.for %i = 0 to 16 bind(serial) {
      tile.for %j = 0 to 32 bind(serial) {
        %s = tile.for %ko = 0 to 32 step 16 bind(serial) iter(%acc = %zero) -> f32 {
          %chunk = tile.for %ki = 0 to 16 bind(serial) iter(%acc_1 = %acc) -> f32 {
            %k = arith.addi %ko, %ki : index
            %av = loop.load %a[%i, %k] : memref<16x32xf16>
            %ae = arith.extf %av : f16 to f32
            %bv = loop.load %b[%k, %j] : memref<32x32xf16>
            %be = arith.extf %bv : f16 to f32
            %p = arith.mulf %ae, %be : f32
            %n = arith.addf %acc_1, %p : f32
            tile.yield %n : f32
          }
          tile.yield %chunk : f32
        }
        loop.store %s, %out[%i, %j] : memref<16x32xf32>
      }
    }
  }
  func.func @main(%a: memref<16x32xf16>, %b: memref<32x32xf16>) -> memref<16x32xf32> {
    %out = memref.alloc() : memref<16x32xf32>
    tile.launch @runs_after_chunk_reduce(%a, %b, %out) : memref<16x32xf16>, memref<32x32xf16>, memref<16x32xf32>
    func.return %out : memref<16x32xf32>
  }
}

// -----

// The plan's facts are trusted by the verifier (it sees only the plan); a hand-written plan that
// claims tensor cores for a product that is not a plain A * B (a scale inside the reduction) is
// caught by the pass, in one line.
// CHECK: tile-tensor-core: kernel @wrong_facts: expected a plain f16/bf16 product (its plan's facts say so)
// OPT: tile-tensor-core: kernel @wrong_facts: expected a plain f16/bf16 product (its plan's facts say so)

builtin.module {
  tile.kernel @wrong_facts(%a: memref<64x64xf16>, %b: memref<64x64xf16>, %out: memref<64x64xf32>) grid(1, 1, 1) block(1, 1, 1) plan matmul(chain = [64, 64], k = 64, tensor_cores = true, splittable = true, slabs = [ik2, kj2]) {splits = 1, mma = true, warps_m = 2, warps_n = 2, frags_m = 2, frags_n = 4, k_chunk = 32, stage = true, pad = 8, buffers = 2, copy = cp_async, unroll = 32} done ["tile-split-k"] {
    %zero = arith.constant 0.000000e+00 : f32
    %two = arith.constant 2.000000e+00 : f32
    tile.for %i = 0 to 64 bind(serial) {
      tile.for %j = 0 to 64 bind(serial) {
        %s = tile.for %k = 0 to 64 bind(serial) iter(%acc = %zero) -> f32 {
          %av = loop.load %a[%i, %k] : memref<64x64xf16>
          %ae = arith.extf %av : f16 to f32
          %bv = loop.load %b[%k, %j] : memref<64x64xf16>
          %be = arith.extf %bv : f16 to f32
          %p = arith.mulf %ae, %be : f32
          %q = arith.mulf %p, %two : f32
          %n = arith.addf %acc, %q : f32
          tile.yield %n : f32
        }
        loop.store %s, %out[%i, %j] : memref<64x64xf32>
      }
    }
  }
  func.func @main(%a: memref<64x64xf16>, %b: memref<64x64xf16>) -> memref<64x64xf32> {
    %out = memref.alloc() : memref<64x64xf32>
    tile.launch @wrong_facts(%a, %b, %out) : memref<64x64xf16>, memref<64x64xf16>, memref<64x64xf32>
    func.return %out : memref<64x64xf32>
  }
}

// -----

// On tensor cores already: the pass is a no-op, but an option that changes its fragments is an
// error (the mapping is done).
// CHECK-LABEL: tile.kernel @already_done(
// CHECK-SAME:      done ["tile-split-k", "tile-tensor-core"] {
// OPT: tile-tensor-core{{[{].*}}frags-n=1}: kernel @already_done: knob {{.*}}: tile-tensor-core has already carried out this plan

builtin.module {
  tile.kernel @already_done(%a: memref<16x32xf16>, %b: memref<32x32xf16>, %out: memref<16x32xf32>) grid(1, 1, 1) block(32, 2, 1) plan matmul(chain = [16, 32], k = 32, tensor_cores = true, splittable = true, slabs = [ik2, kj2]) {splits = 1, mma = true, warps_m = 1, warps_n = 2, frags_m = 1, frags_n = 2, k_chunk = 0, stage = false, pad = 0, buffers = 1, copy = sync, unroll = 32} done ["tile-split-k", "tile-tensor-core"] {
    %zero = arith.constant 0.000000e+00 : f32
    tile.for %i = 0 to 1 bind(block.y) {
      tile.for %j = 0 to 1 bind(block.x) {
        tile.for %w = 0 to 2 bind(thread.y) {
          tile.for %l = 0 to 32 bind(thread.x) {
            %c0 = arith.constant 0 : index
            %c2 = arith.constant 2 : index
            %0 = arith.remsi %w, %c2 : index
            %c16 = arith.constant 16 : index
            %1 = arith.muli %i, %c16 : index
            %2 = arith.muli %c0, %c16 : index
            %row0 = arith.addi %1, %2 : index
            %c32 = arith.constant 32 : index
            %3 = arith.muli %j, %c32 : index
            %4 = arith.muli %0, %c16 : index
            %col0 = arith.addi %3, %4 : index
            %c, %c_1, %c_2, %c_3, %c_4, %c_5, %c_6, %c_7 = tile.for %k = 0 to 32 step 16 bind(serial) iter(%acc = %zero, %acc_1 = %zero, %acc_2 = %zero, %acc_3 = %zero, %acc_4 = %zero, %acc_5 = %zero, %acc_6 = %zero, %acc_7 = %zero) -> (f32, f32, f32, f32, f32, f32, f32, f32) {
              %fa0, %fa0_1, %fa0_2, %fa0_3 = tile.fragment_load a %a[%row0, %k] lane(%l) : memref<16x32xf16> -> i32, i32, i32, i32
              %fb0, %fb0_1 = tile.fragment_load b_kn %b[%k, %col0] lane(%l) : memref<32x32xf16> -> i32, i32
              %c8 = arith.constant 8 : index
              %5 = arith.addi %col0, %c8 : index
              %fb1, %fb1_1 = tile.fragment_load b_kn %b[%k, %5] lane(%l) : memref<32x32xf16> -> i32, i32
              %d, %d_1, %d_2, %d_3 = tile.mma f16 %fa0, %fa0_1, %fa0_2, %fa0_3, %fb0, %fb0_1, %acc, %acc_1, %acc_2, %acc_3
              %d_4, %d_5, %d_6, %d_7 = tile.mma f16 %fa0, %fa0_1, %fa0_2, %fa0_3, %fb1, %fb1_1, %acc_4, %acc_5, %acc_6, %acc_7
              tile.yield %d, %d_1, %d_2, %d_3, %d_4, %d_5, %d_6, %d_7 : f32, f32, f32, f32, f32, f32, f32, f32
            }
            %c4 = arith.constant 4 : index
            %g = arith.divsi %l, %c4 : index
            %6 = arith.remsi %l, %c4 : index
            %t2 = arith.muli %6, %c2 : index
            %rg = arith.addi %row0, %g : index
            %cg = arith.addi %col0, %t2 : index
            %c1 = arith.constant 1 : index
            %7 = arith.addi %cg, %c1 : index
            %c8_1 = arith.constant 8 : index
            %8 = arith.addi %rg, %c8_1 : index
            %9 = arith.addi %cg, %c8_1 : index
            %c9 = arith.constant 9 : index
            %10 = arith.addi %cg, %c9 : index
            loop.store %c, %out[%rg, %cg] : memref<16x32xf32>
            loop.store %c_1, %out[%rg, %7] : memref<16x32xf32>
            loop.store %c_2, %out[%8, %cg] : memref<16x32xf32>
            loop.store %c_3, %out[%8, %7] : memref<16x32xf32>
            loop.store %c_4, %out[%rg, %9] : memref<16x32xf32>
            loop.store %c_5, %out[%rg, %10] : memref<16x32xf32>
            loop.store %c_6, %out[%8, %9] : memref<16x32xf32>
            loop.store %c_7, %out[%8, %10] : memref<16x32xf32>
          }
        }
      }
    }
  }
  func.func @main(%a: memref<16x32xf16>, %b: memref<32x32xf16>) -> memref<16x32xf32> {
    %out = memref.alloc() : memref<16x32xf32>
    tile.launch @already_done(%a, %b, %out) : memref<16x32xf16>, memref<32x32xf16>, memref<16x32xf32>
    func.return %out : memref<16x32xf32>
  }
}
