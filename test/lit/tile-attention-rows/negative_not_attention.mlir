// RUN: deplo-opt %s --split-input-file -p loop-to-tile,tile-map-grid,tile-attention-rows | filecheck %s

// A plain row reduction (RMSNorm): no private accumulator, no reduce loop inside a serial
// accumulating loop. Not a flash row: its plan is a
// row reduction, which tile-attention-rows has no step in (tile-cooperative-reduce has).
// CHECK-LABEL: tile.kernel @rms_norm({{.*}}) grid(32, 1, 1) block(1, 1, 1) key "{{.*}}" plan row_reduce({{.*}}) {{.*}} done ["tile-map-grid"] {
// CHECK-NOT:   bind(thread.x)
// CHECK-NOT:   tile.combine

builtin.module {
  loop.kernel @rms_norm(%x: memref<1x32x2048xf32>, %w: memref<2048xf32>, %out: memref<1x32x2048xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    %n = arith.constant 2.048000e+03 : f32
    loop.for %a0 = 0 to 1 free {
      loop.for %a1 = 0 to 32 free {
        %ss = loop.for %a2 = 0 to 2048 reduce iter(%acc = %zero) -> f32 {
          %v = loop.load %x[%a0, %a1, %a2] : memref<1x32x2048xf32>
          %sq = arith.mulf %v, %v : f32
          %s = arith.addf %acc, %sq : f32
          loop.yield %s : f32
        }
        %mean = arith.divf %ss, %n : f32
        loop.for %a3 = 0 to 2048 free {
          %v2 = loop.load %x[%a0, %a1, %a3] : memref<1x32x2048xf32>
          %wv = loop.load %w[%a3] : memref<2048xf32>
          %y = arith.mulf %v2, %mean : f32
          %o = arith.mulf %y, %wv : f32
          loop.store %o, %out[%a0, %a1, %a3] : memref<1x32x2048xf32>
        }
      }
    }
  }
  func.func @main(%x: memref<1x32x2048xf32>, %w: memref<2048xf32>) -> memref<1x32x2048xf32> {
    %out = memref.alloc() : memref<1x32x2048xf32>
    loop.launch @rms_norm(%x, %w, %out) : memref<1x32x2048xf32>, memref<2048xf32>, memref<1x32x2048xf32>
    func.return %out : memref<1x32x2048xf32>
  }
}
