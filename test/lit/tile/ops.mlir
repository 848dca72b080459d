// RUN: deplo-opt %s | deplo-opt | filecheck %s
// RUN: deplo-opt %s --print-op-generic | deplo-opt | filecheck %s

// CHECK-LABEL: tile.kernel @rms_norm(%x: memref<1x32x2048xf32>, %w: memref<2048xf32>, %out: memref<1x32x2048xf32>) grid(32, 1, 1) block(256, 1, 1) schedule ["tile-map-grid{max-dims=3 leave-innermost=true}", "tile-cooperative-reduce{threads=256 min-extent=64}"] {
// CHECK:         tile.for %a0 = 0 to 1 bind(serial) {
// CHECK:           tile.for %a1 = 0 to 32 bind(block.x) {
// CHECK:             %xs = tile.stage %x[%a0, %a1, 0] [1, 1, 2048] into shared copy(cp_async) buffers(1) pad(0) : memref<1x32x2048xf32> -> memref<2048xf32, 3 : i64>
// CHECK:             tile.for %t = 0 to 256 bind(thread.x) {
// CHECK:               %p = tile.for %a2 = %t to 2048 step 256 bind(serial) iter(%acc = %zero) -> f32 {
// CHECK:                 %v = loop.load %xs[%a2] : memref<2048xf32, 3 : i64>
// CHECK:                 tile.yield %s : f32
// CHECK:               %ss = tile.combine add %p over thread.x : f32
// CHECK:               tile.for %a3 = %t to 2048 step 256 bind(serial) {
// CHECK-NEXT:            loop.store %ss, %out[%a0, %a1, %a3] : memref<1x32x2048xf32>
// CHECK-LABEL: tile.kernel @short_forms(%x: memref<64x64xf32>) grid(4, 2, 1) block(8, 8, 1) schedule [] {
// CHECK:         tile.for %i = 0 to 4 bind(block.x) {
// CHECK:           tile.for %j = 0 to 2 bind(block.y) {
// CHECK:             %xs = tile.stage %x[0, 0] [16, 32] into shared copy(sync) buffers(2) pad(1) : memref<64x64xf32> -> memref<16x33xf32, 3 : i64>
// CHECK:             tile.for %ty = 0 to 8 bind(thread.y) {
// CHECK:               tile.for %tx = 0 to 8 bind(thread.x) {
// CHECK:                 %m, %n = tile.for %k = 0 to 4 bind(unroll) iter(%a = %zero, %b = %zero) -> (f32, f32) {
// CHECK:                 %mx = tile.combine max %m over thread.x : f32
// CHECK-LABEL: func.func @main
// CHECK:         tile.launch @rms_norm(%x, %w, %out) : memref<1x32x2048xf32>, memref<2048xf32>, memref<1x32x2048xf32>
builtin.module {
  tile.kernel @rms_norm(%x: memref<1x32x2048xf32>, %w: memref<2048xf32>, %out: memref<1x32x2048xf32>) grid(32) block(256) schedule ["tile-map-grid{max-dims=3 leave-innermost=true}", "tile-cooperative-reduce{threads=256 min-extent=64}"] {
    %zero = arith.constant 0.000000e+00 : f32
    tile.for %a0 = 0 to 1 bind(serial) {
      tile.for %a1 = 0 to 32 bind(block.x) {
        %xs = tile.stage %x[%a0, %a1, 0] [1, 1, 2048] into shared copy(cp_async) : memref<1x32x2048xf32> -> memref<2048xf32, 3 : i64>
        tile.for %t = 0 to 256 bind(thread.x) {
          %p = tile.for %a2 = %t to 2048 step 256 bind(serial) iter(%acc = %zero) -> f32 {
            %v = loop.load %xs[%a2] : memref<2048xf32, 3 : i64>
            %s = arith.addf %acc, %v : f32
            tile.yield %s : f32
          }
          %ss = tile.combine add %p over thread.x : f32
          tile.for %a3 = %t to 2048 step 256 bind(serial) {
            loop.store %ss, %out[%a0, %a1, %a3] : memref<1x32x2048xf32>
          }
        }
      }
    }
  }
  tile.kernel @short_forms(%x: memref<64x64xf32>) grid(4, 2) block(8, 8) {
    %zero = arith.constant 0.000000e+00 : f32
    tile.for %i = 0 to 4 bind(block.x) {
      tile.for %j = 0 to 2 bind(block.y) {
        %xs = tile.stage %x[0, 0] [16, 32] into shared buffers(2) pad(1) : memref<64x64xf32> -> memref<16x33xf32, 3 : i64>
        tile.for %ty = 0 to 8 bind(thread.y) {
          tile.for %tx = 0 to 8 bind(thread.x) {
            %m, %n = tile.for %k = 0 to 4 bind(unroll) iter(%a = %zero, %b = %zero) -> (f32, f32) {
              tile.yield %a, %b : f32, f32
            }
            %mx = tile.combine max %m over thread.x : f32
          }
        }
      }
    }
  }
  func.func @main(%x: memref<1x32x2048xf32>, %w: memref<2048xf32>) -> memref<1x32x2048xf32> {
    %out = memref.alloc() : memref<1x32x2048xf32>
    tile.launch @rms_norm(%x, %w, %out) : memref<1x32x2048xf32>, memref<2048xf32>, memref<1x32x2048xf32>
    func.return %out : memref<1x32x2048xf32>
  }
}
