// RUN: deplo-opt %s --split-input-file -p loop-to-tile,tile-map-grid | filecheck %s
// RUN: deplo-opt %s --split-input-file -p "loop-to-tile,tile-map-grid{leave-innermost=false}" | filecheck %s --check-prefix=ALL

// RMSNorm: the chain is a0, a1 (a1 holds two loops); a0 has extent 1 and stays serial.
// CHECK-LABEL: tile.kernel @rms_norm({{.*}}) grid(32, 1, 1) block(1, 1, 1) key "{{.*}}" plan row_reduce(rows = [32], extent = 2048, contiguous = 4) {grid_dims = 1, {{.*}}} done ["tile-map-grid"] {
// CHECK:         tile.for %a0 = 0 to 1 bind(serial) {
// CHECK-NEXT:      tile.for %a1 = 0 to 32 bind(block.x) {
// CHECK-NEXT:        %ss = tile.for %a2 = 0 to 2048 bind(serial) iter(%acc = %zero) -> f32 {
// CHECK:             tile.for %a3 = 0 to 2048 bind(serial) {
// ALL-LABEL:   tile.kernel @rms_norm({{.*}}) grid(32, 1, 1) block(1, 1, 1) key "{{.*}}" plan pointwise(chain = [1, 32], leaf = false) {grid_dims = 3, leave_innermost = false, {{.*}}} done ["tile-map-grid"] {

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

// relu((x + b) @ w): a1 holds no free loop, so it is left for the threads; unless told not to.
// CHECK-LABEL: tile.kernel @relu_matmul({{.*}}) grid(16, 1, 1) block(1, 1, 1)
// CHECK:         tile.for %a0 = 0 to 16 bind(block.x) {
// CHECK-NEXT:      tile.for %a1 = 0 to 16 bind(serial) {
// ALL-LABEL:   tile.kernel @relu_matmul({{.*}}) grid(16, 16, 1) block(1, 1, 1)
// ALL:           tile.for %a0 = 0 to 16 bind(block.y) {
// ALL-NEXT:        tile.for %a1 = 0 to 16 bind(block.x) {
// ALL-NEXT:          %acc = tile.for %a2 = 0 to 64 bind(serial)

// Two sibling nests: no loop encloses everything.
// CHECK-LABEL: tile.kernel @negative_siblings({{.*}}) grid(1, 1, 1) block(1, 1, 1) key "{{.*}}" plan pointwise(chain = [], leaf = false) {{.*}} done ["tile-map-grid"] {
// CHECK-NOT:     bind(block
// ALL-LABEL:   tile.kernel @negative_siblings({{.*}}) grid(1, 1, 1) block(1, 1, 1) key "{{.*}}" plan pointwise(chain = [], leaf = false) {{.*}} done ["tile-map-grid"] {

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
  loop.kernel @negative_siblings(%x: memref<8xf32>, %out: memref<8xf32>) {
    loop.for %i = 0 to 8 free {
      %v = loop.load %x[%i] : memref<8xf32>
      loop.store %v, %out[%i] : memref<8xf32>
    }
    loop.for %j = 0 to 8 free {
      %v = loop.load %x[%j] : memref<8xf32>
      loop.store %v, %out[%j] : memref<8xf32>
    }
  }
  func.func @main(%x: memref<16x64xf32>, %b: memref<64xf32>, %w: memref<64x16xf32>) -> memref<16x16xf32> {
    %out = memref.alloc() : memref<16x16xf32>
    loop.launch @relu_matmul(%x, %b, %w, %out) : memref<16x64xf32>, memref<64xf32>, memref<64x16xf32>, memref<16x16xf32>
    func.return %out : memref<16x16xf32>
  }
}
