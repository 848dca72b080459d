// RUN: deplo-opt %s --split-input-file -p loop-to-tile | filecheck %s

// The trivial schedule: one block of one thread, every loop serial, accumulators kept; no plan
// yet (tile-plan, or the first tile pass, picks one).

// CHECK-LABEL: tile.kernel @rms_norm(%x: memref<1x32x2048xf32>, %w: memref<2048xf32>, %out: memref<1x32x2048xf32>) grid(1, 1, 1) block(1, 1, 1) {
// CHECK:         tile.for %a0 = 0 to 1 bind(serial) {
// CHECK-NEXT:      tile.for %a1 = 0 to 32 bind(serial) {
// CHECK-NEXT:        %ss = tile.for %a2 = 0 to 2048 bind(serial) iter(%acc = %zero) -> f32 {
// CHECK:               tile.yield %s : f32
// CHECK:             tile.for %a3 = 0 to 2048 bind(serial) {
// CHECK:               loop.store %o, %out[%a0, %a1, %a3] : memref<1x32x2048xf32>
// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %out = memref.alloc() : memref<1x32x2048xf32>
// CHECK-NEXT:    tile.launch @rms_norm(%x, %w, %out) : memref<1x32x2048xf32>, memref<2048xf32>, memref<1x32x2048xf32>
// CHECK-NOT:     loop.for

builtin.module {
  loop.kernel @rms_norm(%x: memref<1x32x2048xf32>, %w: memref<2048xf32>, %out: memref<1x32x2048xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    %n = arith.constant 2.048000e+03 : f32
    %eps = arith.constant 9.99999997e-07 : f32
    loop.for %a0 = 0 to 1 free {
      loop.for %a1 = 0 to 32 free {
        %ss = loop.for %a2 = 0 to 2048 reduce iter(%acc = %zero) -> f32 {
          %v = loop.load %x[%a0, %a1, %a2] : memref<1x32x2048xf32>
          %sq = arith.mulf %v, %v : f32
          %s = arith.addf %acc, %sq : f32
          loop.yield %s : f32
        }
        %mean = arith.divf %ss, %n : f32
        %me = arith.addf %mean, %eps : f32
        %r = math.rsqrt %me : f32
        loop.for %a3 = 0 to 2048 free {
          %v2 = loop.load %x[%a0, %a1, %a3] : memref<1x32x2048xf32>
          %wv = loop.load %w[%a3] : memref<2048xf32>
          %y = arith.mulf %v2, %r : f32
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

// -----

// CHECK-LABEL: tile.kernel @relu_matmul({{.*}}) grid(1, 1, 1) block(1, 1, 1) {
// CHECK:           %acc = tile.for %a2 = 0 to 64 bind(serial) iter(%s = %zero) -> f32 {
// CHECK:             %bv = loop.load %b[%a0, %a2] map (d0, d1) -> (d1) : memref<64xf32>
// CHECK:           %r = arith.maximumf %acc, %zero : f32
// CHECK:         tile.launch @relu_matmul(%x, %b, %w, %out)

builtin.module {
  loop.kernel @relu_matmul(%x: memref<16x64xf32>, %b: memref<64xf32>, %w: memref<64x16xf32>, %out: memref<16x16xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    loop.for %a0 = 0 to 16 free {
      loop.for %a1 = 0 to 16 free {
        %acc = loop.for %a2 = 0 to 64 reduce iter(%s = %zero) -> f32 {
          %xv = loop.load %x[%a0, %a2] : memref<16x64xf32>
          %bv = loop.load %b[%a0, %a2] map (d0, d1) -> (d1) : memref<64xf32>
          %xb = arith.addf %xv, %bv : f32
          %wv = loop.load %w[%a2, %a1] : memref<64x16xf32>
          %p = arith.mulf %xb, %wv : f32
          %n = arith.addf %s, %p : f32
          loop.yield %n : f32
        }
        %r = arith.maximumf %acc, %zero : f32
        loop.store %r, %out[%a0, %a1] : memref<16x16xf32>
      }
    }
  }
  func.func @main(%x: memref<16x64xf32>, %b: memref<64xf32>, %w: memref<64x16xf32>) -> memref<16x16xf32> {
    %out = memref.alloc() : memref<16x16xf32>
    loop.launch @relu_matmul(%x, %b, %w, %out) : memref<16x64xf32>, memref<64xf32>, memref<64x16xf32>, memref<16x16xf32>
    func.return %out : memref<16x16xf32>
  }
}
