// RUN: deplo-opt %s -p to-cuda -t cuda | filecheck %s

// Two kernels at different points of their plans (`-p loop-to-tile,tile-plan,tile-map-grid,
// tile-map-threads`: the pointwise exp is mapped, the matmul is not): each goes on from its own
// last step, so the matmul gets its whole plan, not the exp's remaining steps alone.

// CHECK: // launch matmul({{.*}}): grid(1, 1, 1) block(16, 16, 1)
// CHECK: // launch exp_k({{.*}}): grid(64, 1, 1) block(64, 1, 1)

builtin.module {
  tile.kernel @matmul(%x0: memref<64x128xf32>, %x1: memref<128x64xf32>, %out: memref<64x64xf32>) grid(1, 1, 1) block(1, 1, 1) key "d8ede44cfce3b9ee" plan matmul(chain = [64, 64], k = 128, tensor_cores = false, splittable = true, slabs = [ik4, kj4]) {splits = 1, split_sum = kernel, mma = false, reg_m = 4, reg_n = 4, interleave = false, transpose = true, threads_m = 16, threads_n = 16, k_chunk = 32, stage = true, pad = 4, buffers = 2, copy = cp_async, unroll = 32} attributes {origin = ["matmul: aten.matmul at the expression"]} {
    %0 = arith.constant 0.000000e+00 : f32
    tile.for %a0 = 0 to 64 bind(serial) {
      tile.for %a1 = 0 to 64 bind(serial) {
        %1 = tile.for %r0 = 0 to 128 bind(serial) iter(%acc = %0) -> f32 {
          %2 = loop.load %x0[%a0, %a1, %r0] map (d0, d1, d2) -> (d0, d2) : memref<64x128xf32>
          %3 = loop.load %x1[%a0, %a1, %r0] map (d0, d1, d2) -> (d2, d1) : memref<128x64xf32>
          %4 = arith.mulf %2, %3 : f32
          %5 = arith.addf %acc, %4 : f32
          tile.yield %5 : f32
        }
        loop.store %1, %out[%a0, %a1] : memref<64x64xf32>
      }
    }
  }
  tile.kernel @exp(%x2: memref<64x64xf32>, %out: memref<64x64xf32>) grid(64, 1, 1) block(64, 1, 1) key "14f3a962527ed82d" plan pointwise(chain = [64, 64], leaf = true) {grid_dims = 3, leave_innermost = true, chunk = 0, tile_rows = 0, threads = 256, stage_inputs = reused, copy = sync, unroll = 32} done ["tile-map-grid", "tile-map-threads"] attributes {origin = ["exp: aten.exp at the expression"]} {
    tile.for %a0 = 0 to 64 bind(block.x) {
      tile.for %a1 = 0 to 64 bind(thread.x) {
        %0 = loop.load %x2[%a0, %a1] : memref<64x64xf32>
        %1 = math.exp %0 : f32
        loop.store %1, %out[%a0, %a1] : memref<64x64xf32>
      }
    }
  }
  func.func @main(%x0: memref<64x128xf32>, %x1: memref<128x64xf32>, %x2: memref<64x64xf32>) -> (memref<64x64xf32>, memref<64x64xf32>) {
    %matmul = memref.alloc() : memref<64x64xf32>
    tile.launch @matmul(%x0, %x1, %matmul) : memref<64x128xf32>, memref<128x64xf32>, memref<64x64xf32>
    %exp = memref.alloc() : memref<64x64xf32>
    tile.launch @exp(%x2, %exp) : memref<64x64xf32>, memref<64x64xf32>
    func.return %matmul, %exp : memref<64x64xf32>, memref<64x64xf32>
  }
}

