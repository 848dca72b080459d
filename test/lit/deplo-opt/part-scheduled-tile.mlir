// RUN: deplo-opt %s -p to-kernel | filecheck %s

// Tile IR that has run tile-plan but none of the steps its plan names (`-p loop-to-tile,tile-plan`):
// a named pipeline runs the tile passes again, each carrying out what the kernel's plan has not
// done (none is recorded as `done`), so the kernel gets its 16 x 16 threads and register tile —
// not the serial one-thread schedule of loop-to-tile.

// CHECK:      kernel.func @matmul({{.*}}) grid(1, 1, 1) block(16, 16, 1)
// CHECK:        %tid_y = kernel.thread_id y
// CHECK:        kernel.shared

builtin.module {
  tile.kernel @matmul(%x0: memref<64x96xf32>, %x1: memref<96x32xf32>, %out: memref<64x32xf32>) grid(1, 1, 1) block(1, 1, 1) key "482e022a1f7b61f7" plan matmul(chain = [64, 32], k = 96, tensor_cores = false, splittable = true, slabs = [ik4, kj4]) {splits = 1, split_sum = kernel, mma = false, reg_m = 4, reg_n = 2, interleave = false, transpose = true, threads_m = 16, threads_n = 16, k_chunk = 32, stage = true, pad = 4, buffers = 2, copy = cp_async, unroll = 32} attributes {origin = ["matmul: aten.matmul at the expression"]} {
    %0 = arith.constant 0.000000e+00 : f32
    tile.for %a0 = 0 to 64 bind(serial) {
      tile.for %a1 = 0 to 32 bind(serial) {
        %1 = tile.for %r0 = 0 to 96 bind(serial) iter(%acc = %0) -> f32 {
          %2 = loop.load %x0[%a0, %a1, %r0] map (d0, d1, d2) -> (d0, d2) : memref<64x96xf32>
          %3 = loop.load %x1[%a0, %a1, %r0] map (d0, d1, d2) -> (d2, d1) : memref<96x32xf32>
          %4 = arith.mulf %2, %3 : f32
          %5 = arith.addf %acc, %4 : f32
          tile.yield %5 : f32
        }
        loop.store %1, %out[%a0, %a1] : memref<64x32xf32>
      }
    }
  }
  func.func @main(%x0: memref<64x96xf32>, %x1: memref<96x32xf32>) -> memref<64x32xf32> {
    %matmul = memref.alloc() : memref<64x32xf32>
    tile.launch @matmul(%x0, %x1, %matmul) : memref<64x96xf32>, memref<96x32xf32>, memref<64x32xf32>
    func.return %matmul : memref<64x32xf32>
  }
}

