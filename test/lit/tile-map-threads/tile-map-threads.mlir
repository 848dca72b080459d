// RUN: deplo-opt %s --split-input-file -p "loop-to-tile,tile-plan{kind=pointwise},tile-map-grid,tile-map-threads" | filecheck %s
// RUN: deplo-opt %s --split-input-file -p "loop-to-tile,tile-plan{kind=pointwise},tile-map-grid,tile-map-threads{threads=64}" | filecheck %s --check-prefix=T64

// RMSNorm planned as pointwise (tile-plan{kind=pointwise}; its own plan is a row reduction, which
// tile-cooperative-reduce carries out): the free loop a3 is longer than the block, so it is
// strided over 256 threads. The reduction stays serial (every thread computes it).
// CHECK-LABEL: tile.kernel @rms_norm({{.*}}) grid(32, 1, 1) block(256, 1, 1) key "{{.*}}" plan pointwise(chain = [1, 32], leaf = false) {{.*}} done ["tile-map-grid", "tile-map-threads"] {
// CHECK:           %ss = tile.for %a2 = 0 to 2048 bind(serial)
// CHECK:           tile.for %[[T:.*]] = 0 to 256 bind(thread.x) {
// CHECK-NEXT:        tile.for %a3 = %[[T]] to 2048 step 256 bind(serial) {
// CHECK-NEXT:          %v2 = loop.load %x[%a0, %a1, %a3]
// T64-LABEL:   tile.kernel @rms_norm({{.*}}) grid(32, 1, 1) block(64, 1, 1)
// T64:             tile.for %[[T:.*]] = 0 to 64 bind(thread.x) {
// T64-NEXT:          tile.for %a3 = %[[T]] to 2048 step 64 bind(serial) {

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

// Shorter than the block: bound directly, the block rounded up to a warp.
// CHECK-LABEL: tile.kernel @relu_matmul({{.*}}) grid(16, 1, 1) block(32, 1, 1) key "{{.*}}" plan pointwise(chain = [16, 16], leaf = true) {{.*}} done ["tile-map-grid", "tile-map-threads"] {
// CHECK:         tile.for %a0 = 0 to 16 bind(block.x) {
// CHECK-NEXT:      tile.for %a1 = 0 to 16 bind(thread.x) {
// CHECK-NEXT:        %acc = tile.for %a2 = 0 to 64 bind(serial)
// T64-LABEL:   tile.kernel @relu_matmul({{.*}}) grid(16, 1, 1) block(32, 1, 1)

// No free loop to give to the threads: the step is done and binds nothing.
// CHECK-LABEL: tile.kernel @negative_no_free_loop({{.*}}) grid(1, 1, 1) block(1, 1, 1) key "{{.*}}" plan pointwise(chain = [], leaf = false) {{.*}} done ["tile-map-grid", "tile-map-threads"] {
// CHECK-NOT:     bind(thread

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
  loop.kernel @negative_no_free_loop(%x: memref<64xf32>, %out: memref<1xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    %s = loop.for %a0 = 0 to 64 reduce iter(%acc = %zero) -> f32 {
      %v = loop.load %x[%a0] : memref<64xf32>
      %n = arith.addf %acc, %v : f32
      loop.yield %n : f32
    }
    loop.store %s, %out[] map () -> (0) : memref<1xf32>
  }
  func.func @main(%x: memref<16x64xf32>, %b: memref<64xf32>, %w: memref<64x16xf32>) -> memref<16x16xf32> {
    %out = memref.alloc() : memref<16x16xf32>
    loop.launch @relu_matmul(%x, %b, %w, %out) : memref<16x64xf32>, memref<64xf32>, memref<64x16xf32>, memref<16x16xf32>
    func.return %out : memref<16x16xf32>
  }
}
