// RUN: deplo-opt %s -p tile-cp-async | filecheck %s

// cp.async copies bytes: the stage of a tile.gather (an implicit GEMM's window, computed by
// index math, zero in the padding) keeps its plain copy, while the weight's chunk beside it
// goes asynchronous.
// CHECK-LABEL: tile.kernel @conv(
// CHECK:         tile.stage %x1[{{.*}}] [16, 16] into shared copy(cp_async) buffers(2)
// CHECK-NEXT:    tile.stage %window[{{.*}}] [16, 8] into shared copy(sync) buffers(2)

builtin.module {
  tile.kernel @conv(%x0: memref<1x16x64xf16>, %x1: memref<16x48xf16>, %out: memref<1x16x64xf16>) grid(8, 1, 1) block(32, 1, 1) key "43d36b9d2ff40a7f" plan matmul(chain = [16, 64], k = 48, tensor_cores = true, splittable = true, slabs = [ik2, kj2], gather = true) {splits = 1, split_sum = kernel, mma = true, warps_m = 1, warps_n = 1, frags_m = 1, frags_n = 1, k_chunk = 16, stage = true, pad = 0, buffers = 2, copy = cp_async, unroll = 32} done ["tile-split-k", "tile-tensor-core", "tile-chunk-reduce", "tile-stage-chunks", "tile-pad-shared", "tile-double-buffer"] attributes {origin = ["conv1d: aten.conv1d at the expression"]} {
    %0 = arith.constant 3 : index
    %1 = arith.constant 64 : index
    %2 = arith.constant 0.000000e+00 : f16
    %3 = arith.constant 64 : i64
    %4 = arith.constant 0 : i64
    %5 = arith.constant -1 : i64
    %6 = arith.constant 0.000000e+00 : f32
    tile.for %a1 = 0 to 1 bind(block.y) {
      tile.for %a0_a2 = 0 to 8 bind(block.x) {
        tile.for %w = 0 to 1 bind(thread.y) {
          tile.for %l = 0 to 32 bind(thread.x) {
            %c0 = arith.constant 0 : index
            %c16 = arith.constant 16 : index
            %7 = arith.muli %a1, %c16 : index
            %8 = arith.muli %c0, %c16 : index
            %row0 = arith.addi %7, %8 : index
            %c8 = arith.constant 8 : index
            %9 = arith.muli %a0_a2, %c8 : index
            %10 = arith.muli %c0, %c8 : index
            %col0 = arith.addi %9, %10 : index
            %window = tile.gather {
            ^bb0(%r0: index, %a0_a2_1: index):
              %11 = arith.constant 3 : index
              %12 = arith.remsi %r0, %11 : index
              %13 = arith.index_cast %12 : index to i64
              %14 = arith.constant -1 : i64
              %15 = arith.addi %13, %14 : i64
              %16 = arith.constant 64 : index
              %17 = arith.remsi %a0_a2_1, %16 : index
              %18 = arith.index_cast %17 : index to i64
              %19 = arith.addi %15, %18 : i64
              %20 = arith.constant 0 : i64
              %21 = arith.cmpi sge, %19, %20 : i64
              %22 = arith.constant 64 : i64
              %23 = arith.cmpi slt, %19, %22 : i64
              %24 = arith.andi %21, %23 : i1
              %25 = loop.load %x0[%a0_a2_1, %r0] map (d0, d1) -> ((d0 floordiv 64), (d1 floordiv 3), ((((d1 mod 3) + (d0 mod 64)) + 63) mod 64)) : memref<1x16x64xf16>
              %26 = arith.constant 0.000000e+00 : f16
              %27 = arith.select %24, %25, %26 : f16
              tile.yield %27 : f16
            } : memref<48x64xf16>
            %c, %c_1, %c_2, %c_3 = tile.for %r0o = 0 to 48 step 16 bind(serial) iter(%acc = %6, %acc_1 = %6, %acc_2 = %6, %acc_3 = %6) -> (f32, f32, f32, f32) {
              %c16_1 = arith.constant 16 : index
              %28 = arith.muli %a1, %c16_1 : index
              %c8_1 = arith.constant 8 : index
              %29 = arith.muli %a0_a2, %c8_1 : index
              %x1s = tile.stage %x1[%28, %r0o] [16, 16] into shared copy(sync) buffers(2) pad(0) : memref<16x48xf16> -> memref<16x16xf16, 3 : i64>
              %windows = tile.stage %window[%r0o, %29] [16, 8] into shared copy(sync) buffers(2) pad(0) : memref<48x64xf16> -> memref<16x8xf16, 3 : i64>
              %chunk, %chunk_1, %chunk_2, %chunk_3 = tile.for %r0i = 0 to 16 step 16 bind(serial) iter(%acc_4 = %acc, %acc_5 = %acc_1, %acc_6 = %acc_2, %acc_7 = %acc_3) -> (f32, f32, f32, f32) {
                %c0_1 = arith.constant 0 : index
                %fa0, %fa0_1, %fa0_2, %fa0_3 = tile.fragment_load a %x1s[%c0_1, %r0i] lane(%l) : memref<16x16xf16, 3 : i64> -> i32, i32, i32, i32
                %c0_2 = arith.constant 0 : index
                %fb0, %fb0_1 = tile.fragment_load b_kn %windows[%r0i, %c0_2] lane(%l) : memref<16x8xf16, 3 : i64> -> i32, i32
                %d, %d_1, %d_2, %d_3 = tile.mma f16 %fa0, %fa0_1, %fa0_2, %fa0_3, %fb0, %fb0_1, %acc_4, %acc_5, %acc_6, %acc_7
                tile.yield %d, %d_1, %d_2, %d_3 : f32, f32, f32, f32
              }
              tile.yield %chunk, %chunk_1, %chunk_2, %chunk_3 : f32, f32, f32, f32
            }
            %c4 = arith.constant 4 : index
            %g = arith.divsi %l, %c4 : index
            %30 = arith.remsi %l, %c4 : index
            %c2 = arith.constant 2 : index
            %t2 = arith.muli %30, %c2 : index
            %rg = arith.addi %row0, %g : index
            %cg = arith.addi %col0, %t2 : index
            %c1 = arith.constant 1 : index
            %31 = arith.addi %cg, %c1 : index
            %32 = arith.addi %rg, %c8 : index
            %33 = arith.remsi %cg, %1 : index
            %34 = arith.remsi %31, %1 : index
            %35 = arith.index_cast %33 : index to i64
            %36 = arith.index_cast %34 : index to i64
            %37 = arith.truncf %c : f32 to f16
            %38 = arith.truncf %c_1 : f32 to f16
            %39 = arith.truncf %c_2 : f32 to f16
            %40 = arith.truncf %c_3 : f32 to f16
            loop.store %37, %out[%cg, %rg] map (d0, d1) -> ((d0 floordiv 64), d1, (d0 mod 64)) : memref<1x16x64xf16>
            loop.store %38, %out[%31, %rg] map (d0, d1) -> ((d0 floordiv 64), d1, (d0 mod 64)) : memref<1x16x64xf16>
            loop.store %39, %out[%cg, %32] map (d0, d1) -> ((d0 floordiv 64), d1, (d0 mod 64)) : memref<1x16x64xf16>
            loop.store %40, %out[%31, %32] map (d0, d1) -> ((d0 floordiv 64), d1, (d0 mod 64)) : memref<1x16x64xf16>
          }
        }
      }
    }
  }
  func.func @main(%x0: memref<1x16x64xf16>, %x1: memref<16x16x3xf16>) -> memref<1x16x64xf16> {
    %conv = memref.alloc() : memref<1x16x64xf16>
    tile.launch @conv(%x0, %x1, %conv) : memref<1x16x64xf16>, memref<16x16x3xf16>, memref<1x16x64xf16>
    func.return %conv : memref<1x16x64xf16>
  }
}

