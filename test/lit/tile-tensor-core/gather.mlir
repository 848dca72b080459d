// RUN: deplo-opt %s -p tile-tensor-core | filecheck %s

// An implicit GEMM (an f16 conv1d's window inlined into its K loop, padding selected to zero;
// fact gather): B is no load but an expression of k and j, which tile-tensor-core copies into
// a tile.gather [K, N] beside the new K loop (its ops, the batch loops, k and j its
// arguments); B's fragments read it, to be staged chunk by chunk (tile-stage-chunks).
// CHECK-LABEL: tile.kernel @conv(
// CHECK:         %window = tile.gather {
// CHECK-NEXT:    ^bb0(%r0: index, %a0_a2_1: index):
// CHECK:           %[[X:.*]] = loop.load %x0[%a0_a2_1, %r0] map (d0, d1) -> ((d0 floordiv 64), (d1 floordiv 3), ((((d1 mod 3) + (d0 mod 64)) + 63) mod 64))
// CHECK:           %[[V:.*]] = arith.select %{{.*}}, %[[X]], %{{.*}} : f16
// CHECK-NEXT:      tile.yield %[[V]] : f16
// CHECK-NEXT:    } : memref<48x64xf16>
// CHECK-NEXT:    tile.for %r0_1 = 0 to 48 step 16 bind(serial)
// CHECK-NEXT:      tile.fragment_load a %x1[%row0, %r0_1] lane(%l)
// CHECK-NEXT:      tile.fragment_load b_kn %window[%r0_1, %col0] lane(%l) : memref<48x64xf16>
// CHECK-NEXT:      tile.mma f16

builtin.module {
  tile.kernel @conv(%x0: memref<1x16x64xf16>, %x1: memref<16x48xf16>, %out: memref<1x16x64xf16>) grid(1, 1, 1) block(1, 1, 1) key "43d36b9d2ff40a7f" plan matmul(chain = [16, 64], k = 48, tensor_cores = true, splittable = true, slabs = [ik2, kj2], gather = true) {splits = 1, split_sum = kernel, mma = true, warps_m = 1, warps_n = 1, frags_m = 1, frags_n = 1, k_chunk = 16, stage = true, pad = 0, buffers = 2, copy = cp_async, unroll = 32} done ["tile-split-k"] attributes {origin = ["conv1d: aten.conv1d at the expression"]} {
    %0 = arith.constant 3 : index
    %1 = arith.constant 64 : index
    %2 = arith.constant 0.000000e+00 : f16
    %3 = arith.constant 64 : i64
    %4 = arith.constant 0 : i64
    %5 = arith.constant -1 : i64
    %6 = arith.constant 0.000000e+00 : f32
    tile.for %a1 = 0 to 16 bind(serial) {
      tile.for %a0_a2 = 0 to 64 bind(serial) {
        %7 = arith.remsi %a0_a2, %1 : index
        %8 = arith.index_cast %7 : index to i64
        %9 = tile.for %r0 = 0 to 48 bind(serial) iter(%acc = %6) -> f32 {
          %10 = arith.remsi %r0, %0 : index
          %11 = arith.index_cast %10 : index to i64
          %12 = arith.addi %11, %5 : i64
          %13 = arith.addi %12, %8 : i64
          %14 = arith.cmpi sge, %13, %4 : i64
          %15 = arith.cmpi slt, %13, %3 : i64
          %16 = arith.andi %14, %15 : i1
          %17 = loop.load %x0[%a0_a2, %r0] map (d0, d1) -> ((d0 floordiv 64), (d1 floordiv 3), ((((d1 mod 3) + (d0 mod 64)) + 63) mod 64)) : memref<1x16x64xf16>
          %18 = arith.select %16, %17, %2 : f16
          %19 = arith.extf %18 : f16 to f32
          %20 = loop.load %x1[%a1, %r0] : memref<16x48xf16>
          %21 = arith.extf %20 : f16 to f32
          %22 = arith.mulf %19, %21 : f32
          %23 = arith.addf %acc, %22 : f32
          tile.yield %23 : f32
        }
        %24 = arith.truncf %9 : f32 to f16
        loop.store %24, %out[%a0_a2, %a1] map (d0, d1) -> ((d0 floordiv 64), d1, (d0 mod 64)) : memref<1x16x64xf16>
      }
    }
  }
  func.func @main(%x0: memref<1x16x64xf16>, %x1: memref<16x16x3xf16>) -> memref<1x16x64xf16> {
    %conv = memref.alloc() : memref<1x16x64xf16>
    tile.launch @conv(%x0, %x1, %conv) : memref<1x16x64xf16>, memref<16x16x3xf16>, memref<1x16x64xf16>
    func.return %conv : memref<1x16x64xf16>
  }
}

