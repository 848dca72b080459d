// RUN: deplo-opt %s --split-input-file -p loop-to-tile,tile-plan | filecheck %s

// A conv1d as a matmul (out[b, o, j] = sum over (c, k) of w[o, c * 3 + k] * x[b, c, j + k]):
// its input is read along the columns at (c, j + k), which no slab covers, from global memory.
// Neighbouring lanes take neighbouring columns (interleave), so a warp's load of it reads
// neighbouring words, not words reg_n apart.
// CHECK: plan matmul(chain = [2, 32, 62], k = 96, tensor_cores = false, splittable = true, slabs = [ik4]) {{{.*}}interleave = true,

builtin.module {
  loop.kernel @conv(%x0: memref<2x32x64xf32>, %x1: memref<32x96xf32>, %out: memref<2x32x62xf32>) {
    %0 = arith.constant 0.000000e+00 : f32
    loop.for %a0 = 0 to 2 free {
      loop.for %a1 = 0 to 32 free {
        loop.for %a2 = 0 to 62 free {
          %1 = loop.for %r0 = 0 to 96 reduce iter(%acc = %0) -> f32 {
            %2 = loop.load %x0[%a0, %a1, %a2, %r0] map (d0, d1, d2, d3) -> (d0, (d3 floordiv 3), (d2 + (d3 mod 3))) : memref<2x32x64xf32>
            %3 = loop.load %x1[%a0, %a1, %a2, %r0] map (d0, d1, d2, d3) -> (d1, d3) : memref<32x96xf32>
            %4 = arith.mulf %2, %3 : f32
            %5 = arith.addf %acc, %4 : f32
            loop.yield %5 : f32
          }
          loop.store %1, %out[%a0, %a1, %a2] : memref<2x32x62xf32>
        }
      }
    }
  }
  func.func @main(%x0: memref<2x32x64xf32>, %x1: memref<32x32x3xf32>) -> memref<2x32x62xf32> {
    %conv = memref.alloc() : memref<2x32x62xf32>
    loop.launch @conv(%x0, %x1, %conv) : memref<2x32x64xf32>, memref<32x32x3xf32>, memref<2x32x62xf32>
    func.return %conv : memref<2x32x62xf32>
  }
}

// -----

// Stride 2: the input window steps 2 elements a column (fact column_step = 2); a thread's
// own run of columns then shares its sectors with no one either way: not interleaved.
// CHECK: plan matmul(chain = [2, 32, 64], k = 96, tensor_cores = false, splittable = true, slabs = [ik4], column_step = 2) {{{.*}}interleave = false,

builtin.module {
  loop.kernel @conv(%x0: memref<2x32x129xf32>, %x1: memref<32x96xf32>, %out: memref<2x32x64xf32>) {
    %0 = arith.constant 0.000000e+00 : f32
    loop.for %a0 = 0 to 2 free {
      loop.for %a1 = 0 to 32 free {
        loop.for %a2 = 0 to 64 free {
          %1 = loop.for %r0 = 0 to 96 reduce iter(%acc = %0) -> f32 {
            %2 = loop.load %x0[%a0, %a1, %a2, %r0] map (d0, d1, d2, d3) -> (d0, (d3 floordiv 3), ((d2 * 2) + (d3 mod 3))) : memref<2x32x129xf32>
            %3 = loop.load %x1[%a0, %a1, %a2, %r0] map (d0, d1, d2, d3) -> (d1, d3) : memref<32x96xf32>
            %4 = arith.mulf %2, %3 : f32
            %5 = arith.addf %acc, %4 : f32
            loop.yield %5 : f32
          }
          loop.store %1, %out[%a0, %a1, %a2] : memref<2x32x64xf32>
        }
      }
    }
  }
  func.func @main(%x0: memref<2x32x129xf32>, %x1: memref<32x32x3xf32>) -> memref<2x32x64xf32> {
    %conv = memref.alloc() : memref<2x32x64xf32>
    loop.launch @conv(%x0, %x1, %conv) : memref<2x32x129xf32>, memref<32x32x3xf32>, memref<2x32x64xf32>
    func.return %conv : memref<2x32x64xf32>
  }
}
