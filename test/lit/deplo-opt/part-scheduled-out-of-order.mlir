// RUN: not deplo-opt %s -p to-cuda 2>&1 | filecheck %s

// tile-unroll run by hand right after tile-plan: a named pipeline does not pass over the step
// that maps the kernel to threads (the kernel would stay serial under a plan that says
// otherwise); it says so in one line.

// CHECK: deplo-opt: error: tile-map-grid: kernel @softmax: runs after tile-unroll, which its row_reduce plan carries out later

builtin.module {
  tile.kernel @softmax(%x: memref<32x1000xf32>, %out: memref<32x1000xf32>) grid(1, 1, 1) block(1, 1, 1) key "c081616145e659bf" plan row_reduce(rows = [32], extent = 1000, contiguous = 4) {grid_dims = 1, threads = 256, vector = 4, stage_inputs = reused, copy = sync, unroll = 32} done ["tile-unroll"] attributes {origin = ["softmax: aten.softmax.int at the expression"]} {
    %0 = arith.constant 0xff800000 : f32
    %1 = arith.constant 0.000000e+00 : f32
    tile.for %a0 = 0 to 32 bind(serial) {
      %2 = tile.for %r0 = 0 to 1000 bind(serial) iter(%acc = %0) -> f32 {
        %3 = loop.load %x[%a0, %r0] : memref<32x1000xf32>
        %4 = arith.maximumf %acc, %3 : f32
        tile.yield %4 : f32
      }
      %5 = tile.for %r0_1 = 0 to 1000 bind(serial) iter(%acc_1 = %1) -> f32 {
        %6 = loop.load %x[%a0, %r0_1] : memref<32x1000xf32>
        %7 = arith.subf %6, %2 : f32
        %8 = math.exp %7 : f32
        %9 = arith.addf %acc_1, %8 : f32
        tile.yield %9 : f32
      }
      tile.for %a1 = 0 to 1000 bind(serial) {
        %10 = loop.load %x[%a0, %a1] : memref<32x1000xf32>
        %11 = arith.subf %10, %2 : f32
        %12 = math.exp %11 : f32
        %13 = arith.divf %12, %5 : f32
        loop.store %13, %out[%a0, %a1] : memref<32x1000xf32>
      }
    }
  }
  func.func @main(%x: memref<32x1000xf32>) -> memref<32x1000xf32> {
    %softmax = memref.alloc() : memref<32x1000xf32>
    tile.launch @softmax(%x, %softmax) : memref<32x1000xf32>, memref<32x1000xf32>
    func.return %softmax : memref<32x1000xf32>
  }
}

