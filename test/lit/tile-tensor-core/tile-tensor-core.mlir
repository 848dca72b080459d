// RUN: deplo-opt %s --split-input-file -p tile-tensor-core | filecheck %s
// RUN: deplo-opt %s --split-input-file --verify-diagnostics -p 'tile-tensor-core{warps-m=1 warps-n=2 frags-m=1 frags-n=2}' | filecheck %s --check-prefix=OPT
// RUN: not deplo-opt %s --split-input-file -p 'tile-tensor-core{frags-m=8}' 2>&1 | filecheck %s --check-prefix=ERR

// fp16 64 x 96 x 80, 2 x 2 warps of 2 x 4 fragments (64 x 64 per block: 1 x 2 blocks), lanes
// on thread.x. K in steps of 16: per step each warp loads 2 A and 4 B fragments and issues 8
// mma; then each lane stores its 32 accumulator elements at rows row0 + l / 4 (+ 8 / + 16) and
// columns col0 + 2 (l % 4) (+ 1 / + 8 ...); the 80 columns pass the second block's 64: guarded.
// CHECK-LABEL: tile.kernel @matmul(
// CHECK-SAME:      grid(2, 1, 1) block(32, 4, 1)
// CHECK-SAME:      done ["tile-split-k", "tile-tensor-core"] {
// CHECK:         tile.for %[[BI:.*]] = 0 to 1 bind(block.y) {
// CHECK-NEXT:      tile.for %[[BJ:.*]] = 0 to 2 bind(block.x) {
// CHECK-NEXT:        tile.for %[[W:.*]] = 0 to 4 bind(thread.y) {
// CHECK-NEXT:          tile.for %[[L:.*]] = 0 to 32 bind(thread.x) {
// CHECK:                 %[[ROW0:.*]] = arith.addi
// CHECK:                 %[[COL0:.*]] = arith.addi
// CHECK:                 %[[C:[a-z0-9_]+]], {{.*}} = tile.for
// CHECK-SAME:              %[[K:[a-z0-9_]+]] = 0 to 96 step 16 bind(serial) iter(%{{.*}} = %zero, {{.*}}) -> (f32, {{.*}}) {
// CHECK-NEXT:              tile.fragment_load a %a[%[[ROW0]], %[[K]]] lane(%[[L]]) : memref<64x96xf16> -> i32, i32, i32, i32
// CHECK-COUNT-1:           tile.fragment_load a %a[
// CHECK-COUNT-4:           tile.fragment_load b_kn %b[%[[K]],
// CHECK-COUNT-8:           tile.mma f16
// CHECK-NOT:               tile.mma
// CHECK:                   tile.yield
// CHECK:                 %[[G:.*]] = arith.divsi
// CHECK-SAME:              %[[L]], %{{.*}} : index
// CHECK:                 %[[RG:.*]] = arith.addi
// CHECK-SAME:              %[[ROW0]], %[[G]] : index
// CHECK-NEXT:            %[[CG:.*]] = arith.addi
// CHECK-SAME:              %[[COL0]], %{{.*}} : index
// CHECK-NEXT:            %[[C80:.*]] = arith.constant 80 : index
// CHECK-NEXT:            %[[IN:.*]] = arith.cmpi
// CHECK-SAME:              ult, %[[CG]], %[[C80]] : index
// CHECK:                 %[[T:.*]] = arith.truncf
// CHECK-SAME:              %[[C]] : f32 to f16
// CHECK:                 scf.if %[[IN]] {
// CHECK-NEXT:              loop.store %[[T]], %out[%[[RG]], %{{.*}}] : memref<64x80xf16>
// The option sets the warps and fragments (16 x 32 per block: 3 x 4 blocks of 2 warps).
// OPT-LABEL:   tile.kernel @matmul(
// OPT-SAME:        grid(3, 4, 1) block(32, 2, 1)
// OPT-SAME:        {splits = 1, split_sum = kernel, mma = true, warps_m = 1, warps_n = 2, frags_m = 1, frags_n = 2,
// OPT-SAME:        done ["tile-split-k", "tile-tensor-core"]
// OPT:                   tile.for %{{.*}} = 0 to 96 step 16 bind(serial)
// OPT-COUNT-1:             tile.fragment_load a
// OPT-COUNT-2:             tile.fragment_load b_kn
// OPT-COUNT-2:             tile.mma f16
// OPT-NOT:                 tile.mma
// An illegal option names the pass, the option, the kernel and the knob.
// ERR: deplo-opt: error: tile-tensor-core{{[{].*}}frags-m=8}: kernel @matmul: knob frags_m: a block tile of 128 for 64 rows
// ERR-NOT: error

builtin.module {
  tile.kernel @matmul(%a: memref<64x96xf16>, %b: memref<96x80xf16>, %out: memref<64x80xf16>) grid(1, 1, 1) block(1, 1, 1) plan matmul(chain = [64, 80], k = 96, tensor_cores = true, splittable = true, slabs = [ik2, kj2]) {splits = 1, mma = true, warps_m = 2, warps_n = 2, frags_m = 2, frags_n = 4, k_chunk = 32, stage = true, pad = 8, buffers = 2, copy = cp_async, unroll = 32} done ["tile-split-k"] {
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
    tile.launch @matmul(%a, %b, %out) : memref<64x96xf16>, memref<96x80xf16>, memref<64x80xf16>
    func.return %out : memref<64x80xf16>
  }
}

// -----

// A bf16 linear layer (the weight is [N][K]: b_nk fragments) with a bias: the epilogue runs
// once per accumulator element; K = 53 is walked to 64, the fragments read zero past it. One
// warp of one fragment per block (16 x 8): 3 x 5 blocks; the 37 rows pass the last block's 48.
// CHECK-LABEL: tile.kernel @linear(
// CHECK-SAME:      grid(5, 3, 1) block(32, 1, 1)
// CHECK-SAME:      done ["tile-split-k", "tile-tensor-core"] {
// CHECK:             %[[C:[a-z0-9_]+]], %{{.*}}, %{{.*}}, %{{.*}} = tile.for
// CHECK-SAME:          %[[K:[a-z0-9_]+]] = 0 to 64 step 16 bind(serial)
// CHECK-NEXT:          tile.fragment_load a %a[%{{.*}}, %[[K]]] lane(%[[L:.*]]) : memref<37x53xbf16>
// CHECK-NEXT:          tile.fragment_load b_nk %b[%{{.*}}, %[[K]]] lane(%[[L]]) : memref<40x53xbf16>
// CHECK-NEXT:          tile.mma bf16
// CHECK:             %[[RG:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK-NEXT:        %[[CG:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK-NEXT:        %[[C37:.*]] = arith.constant 37 : index
// CHECK-NEXT:        %[[IN:.*]] = arith.cmpi
// CHECK-SAME:          ult, %[[RG]], %[[C37]] : index
// CHECK:             %[[BV:.*]] = loop.load
// CHECK-SAME:          %bias[%[[CG]]] : memref<40xbf16>
// CHECK:             %[[BE:.*]] = arith.extf
// CHECK-SAME:          %[[BV]] : bf16 to f32
// CHECK:             %[[Y:.*]] = arith.addf
// CHECK-SAME:          %[[C]], %[[BE]] : f32
// CHECK:             %[[T:.*]] = arith.truncf
// CHECK-SAME:          %[[Y]] : f32 to bf16
// CHECK:             scf.if %[[IN]] {
// CHECK-NEXT:          loop.store %[[T]], %out[%{{.*}}, %[[CG]]] : memref<37x40xbf16>
// OPT-LABEL:   tile.kernel @linear(
// OPT-SAME:        grid(2, 3, 1) block(32, 2, 1)
// OPT-COUNT-2:         tile.mma bf16

builtin.module {
  tile.kernel @linear(%a: memref<37x53xbf16>, %b: memref<40x53xbf16>, %bias: memref<40xbf16>, %out: memref<37x40xbf16>) grid(1, 1, 1) block(1, 1, 1) plan matmul(chain = [37, 40], k = 53, tensor_cores = true, splittable = true, slabs = [ik2, jk2]) {splits = 1, mma = true, warps_m = 1, warps_n = 1, frags_m = 1, frags_n = 1, k_chunk = 32, stage = true, pad = 8, buffers = 2, copy = cp_async, unroll = 32} done ["tile-split-k"] {
    %zero = arith.constant 0.000000e+00 : f32
    tile.for %i = 0 to 37 bind(serial) {
      tile.for %j = 0 to 40 bind(serial) {
        %s = tile.for %k = 0 to 53 bind(serial) iter(%acc = %zero) -> f32 {
          %av = loop.load %a[%i, %k] : memref<37x53xbf16>
          %ae = arith.extf %av : bf16 to f32
          %bk = loop.load %b[%j, %k] : memref<40x53xbf16>
          %be = arith.extf %bk : bf16 to f32
          %p = arith.mulf %ae, %be : f32
          %n = arith.addf %acc, %p : f32
          tile.yield %n : f32
        }
        %bv = loop.load %bias[%j] : memref<40xbf16>
        %be2 = arith.extf %bv : bf16 to f32
        %y = arith.addf %s, %be2 : f32
        %t = arith.truncf %y : f32 to bf16
        loop.store %t, %out[%i, %j] : memref<37x40xbf16>
      }
    }
  }
  func.func @main(%a: memref<37x53xbf16>, %b: memref<40x53xbf16>, %bias: memref<40xbf16>) -> memref<37x40xbf16> {
    %out = memref.alloc() : memref<37x40xbf16>
    tile.launch @linear(%a, %b, %bias, %out) : memref<37x53xbf16>, memref<40x53xbf16>, memref<40xbf16>, memref<37x40xbf16>
    func.return %out : memref<37x40xbf16>
  }
}

// -----

// An fp32 matmul: its plan runs on threads (mma = false), so the pass only records the step.
// The option's warps imply tensor cores, which this kernel cannot have.
// CHECK-LABEL: tile.kernel @negative_mma_off(
// CHECK-SAME:      grid(1, 1, 1) block(1, 1, 1)
// CHECK-SAME:      done ["tile-split-k", "tile-tensor-core"] {
// CHECK-NEXT:      %zero = arith.constant
// CHECK-NEXT:      tile.for %i = 0 to 64 bind(serial) {
// CHECK-NEXT:        tile.for %j = 0 to 64 bind(serial) {
// CHECK-NEXT:          %s = tile.for %k = 0 to 64 bind(serial) iter(%acc = %zero) -> f32 {
// CHECK-NOT:   tile.mma
// OPT: tile-tensor-core{{[{].*}}warps-m=1 warps-n=2 frags-m=1 frags-n=2}: kernel @negative_mma_off: knob mma: tensor cores need a plain product of f16 or bf16 inputs (acc + A * B, fp32 accumulation); this kernel has none

builtin.module {
  tile.kernel @negative_mma_off(%a: memref<64x64xf32>, %b: memref<64x64xf32>, %out: memref<64x64xf32>) grid(1, 1, 1) block(1, 1, 1) plan matmul(chain = [64, 64], k = 64, tensor_cores = false, splittable = true, slabs = [ik4, kj4]) {splits = 1, mma = false, reg_m = 4, reg_n = 4, interleave = false, threads_m = 8, threads_n = 8, k_chunk = 32, stage = true, pad = 4, buffers = 2, copy = cp_async, unroll = 32} done ["tile-split-k"] {
    %zero = arith.constant 0.000000e+00 : f32
    tile.for %i = 0 to 64 bind(serial) {
      tile.for %j = 0 to 64 bind(serial) {
        %s = tile.for %k = 0 to 64 bind(serial) iter(%acc = %zero) -> f32 {
          %av = loop.load %a[%i, %k] : memref<64x64xf32>
          %bv = loop.load %b[%k, %j] : memref<64x64xf32>
          %p = arith.mulf %av, %bv : f32
          %n = arith.addf %acc, %p : f32
          tile.yield %n : f32
        }
        loop.store %s, %out[%i, %j] : memref<64x64xf32>
      }
    }
  }
  func.func @main(%a: memref<64x64xf32>, %b: memref<64x64xf32>) -> memref<64x64xf32> {
    %out = memref.alloc() : memref<64x64xf32>
    tile.launch @negative_mma_off(%a, %b, %out) : memref<64x64xf32>, memref<64x64xf32>, memref<64x64xf32>
    func.return %out : memref<64x64xf32>
  }
}

// -----

// The fp16 matmul of @matmul with a pointwise plan: not a step of its plan, left alone (not
// marked done), with the option too.
// CHECK-LABEL: tile.kernel @negative_pointwise(
// CHECK-SAME:      grid(1, 1, 1) block(1, 1, 1) plan pointwise(chain = [64, 80], leaf = true)
// CHECK-NOT:       done
// CHECK-SAME:      {
// CHECK-NOT:   tile.mma
// OPT-LABEL:   tile.kernel @negative_pointwise(
// OPT-SAME:        grid(1, 1, 1) block(1, 1, 1) plan pointwise(chain = [64, 80], leaf = true)
// OPT-NOT:         done
// OPT-NOT:     tile.mma

builtin.module {
  tile.kernel @negative_pointwise(%a: memref<64x96xf16>, %b: memref<96x80xf16>, %out: memref<64x80xf16>) grid(1, 1, 1) block(1, 1, 1) plan pointwise(chain = [64, 80], leaf = true) {grid_dims = 3, leave_innermost = true, chunk = 0, threads = 256, stage_inputs = reused, copy = sync, unroll = 32} {
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
    tile.launch @negative_pointwise(%a, %b, %out) : memref<64x96xf16>, memref<96x80xf16>, memref<64x80xf16>
    func.return %out : memref<64x80xf16>
  }
}

// -----

// On tensor cores already (done lists tile-tensor-core): no change, and the option, the same
// as the plan's knobs, is accepted.
// CHECK-LABEL: tile.kernel @negative_done(
// CHECK-SAME:      grid(1, 1, 1) block(32, 2, 1)
// CHECK-SAME:      done ["tile-split-k", "tile-tensor-core"] {
// CHECK-NEXT:      %zero = arith.constant
// CHECK-NEXT:      tile.for %i = 0 to 1 bind(block.y) {
// CHECK-NEXT:        tile.for %j = 0 to 1 bind(block.x) {
// CHECK-NEXT:          tile.for %w = 0 to 2 bind(thread.y) {
// CHECK-NEXT:            tile.for %l = 0 to 32 bind(thread.x) {
// CHECK-NOT:               tile.for %{{.*}} bind(thread
// CHECK-COUNT-2:           tile.mma f16
// CHECK-NOT:               tile.mma
// OPT-LABEL:   tile.kernel @negative_done(
// OPT-SAME:        grid(1, 1, 1) block(32, 2, 1)
// OPT-COUNT-2:             tile.mma f16
// OPT-NOT:                 tile.mma

builtin.module {
  tile.kernel @negative_done(%a: memref<16x32xf16>, %b: memref<32x32xf16>, %out: memref<16x32xf32>) grid(1, 1, 1) block(32, 2, 1) plan matmul(chain = [16, 32], k = 32, tensor_cores = true, splittable = true, slabs = [ik2, kj2]) {splits = 1, split_sum = kernel, mma = true, warps_m = 1, warps_n = 2, frags_m = 1, frags_n = 2, k_chunk = 0, stage = false, pad = 0, buffers = 1, copy = sync, unroll = 32} done ["tile-split-k", "tile-tensor-core"] {
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
    tile.launch @negative_done(%a, %b, %out) : memref<16x32xf16>, memref<32x32xf16>, memref<16x32xf32>
    func.return %out : memref<16x32xf32>
  }
}

// -----

// `x.t() @ y`: A stored [k][m] (a_km fragments: the A operand's 16 x 16 tile at [k0][m0], read
// with ldmatrix .trans at kernel level); B [k][n]. One warp of 1 x 1 fragments, 3 x 2 blocks.
// CHECK-LABEL: tile.kernel @tn(
// CHECK-SAME:      grid(2, 3, 1) block(32, 1, 1)
// CHECK:             %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} = tile.for
// CHECK-SAME:          %[[K:[a-z0-9_]+]] = 0 to 48 step 16 bind(serial)
// CHECK-NEXT:          tile.fragment_load a_km %a[%[[K]], %{{.*}}] lane(%[[L:.*]]) : memref<40x48xf16> -> i32, i32, i32, i32
// CHECK-NEXT:          tile.fragment_load b_kn %b[%[[K]], %{{.*}}] lane(%[[L]]) : memref<40x16xf16> -> i32, i32
// CHECK-NEXT:          tile.mma f16

builtin.module {
  tile.kernel @tn(%a: memref<40x48xf16>, %b: memref<40x16xf16>, %out: memref<48x16xf16>) grid(1, 1, 1) block(1, 1, 1) plan matmul(chain = [48, 16], k = 40, tensor_cores = true, splittable = true, slabs = [ki2, kj2]) {splits = 1, mma = true, warps_m = 1, warps_n = 1, frags_m = 1, frags_n = 1, k_chunk = 32, stage = true, pad = 8, buffers = 1, copy = sync, unroll = 32} done ["tile-split-k"] {
    %zero = arith.constant 0.000000e+00 : f32
    tile.for %i = 0 to 48 bind(serial) {
      tile.for %j = 0 to 16 bind(serial) {
        %s = tile.for %k = 0 to 40 bind(serial) iter(%acc = %zero) -> f32 {
          %av = loop.load %a[%k, %i] : memref<40x48xf16>
          %ae = arith.extf %av : f16 to f32
          %bv = loop.load %b[%k, %j] : memref<40x16xf16>
          %be = arith.extf %bv : f16 to f32
          %p = arith.mulf %ae, %be : f32
          %n = arith.addf %acc, %p : f32
          tile.yield %n : f32
        }
        %t = arith.truncf %s : f32 to f16
        loop.store %t, %out[%i, %j] : memref<48x16xf16>
      }
    }
  }
  func.func @main(%a: memref<40x48xf16>, %b: memref<40x16xf16>) -> memref<48x16xf16> {
    %out = memref.alloc() : memref<48x16xf16>
    tile.launch @tn(%a, %b, %out) : memref<40x48xf16>, memref<40x16xf16>, memref<48x16xf16>
    func.return %out : memref<48x16xf16>
  }
}
