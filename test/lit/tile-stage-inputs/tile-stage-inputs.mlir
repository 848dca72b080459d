// RUN: deplo-opt %s --split-input-file -p loop-to-tile,tile-map-grid,tile-cooperative-reduce,tile-map-threads,tile-stage-inputs | filecheck %s
// RUN: deplo-opt %s --split-input-file -p "loop-to-tile,tile-map-grid,tile-cooperative-reduce,tile-map-threads,tile-stage-inputs{stage-inputs=all},tile-cp-async{copy=cp_async}" | filecheck %s --check-prefix=ALL

// The row of x is read twice per block (sum of squares, normalize): staged once, at block
// level, before the threads. w is read once per element and stays in global memory.
// CHECK-LABEL: tile.kernel @rms_norm({{.*}}) grid(32, 1, 1) block(256, 1, 1) key "{{.*}}" plan row_reduce({{.*}}) {{{.*}}stage_inputs = reused, copy = sync{{.*}}} done [{{.*}}"tile-stage-inputs"] {
// CHECK:         tile.for %a1 = 0 to 32 bind(block.x) {
// CHECK-NEXT:      %[[XS:.*]] = tile.stage %x[%a0, %a1, 0] [1, 1, 2048] into shared copy(sync) buffers(1) pad(0) : memref<1x32x2048xf32> -> memref<2048xf32, 3 : i64>
// CHECK-NEXT:      tile.for %t = 0 to 256 bind(thread.x) {
// CHECK:             %v = loop.load %[[XS]][%a2] : memref<2048xf32, 3 : i64>
// CHECK:             %v2 = loop.load %[[XS]][%a3] : memref<2048xf32, 3 : i64>
// CHECK-NEXT:        %wv = loop.load %w[%a3] : memref<2048xf32>
// ALL-LABEL:   tile.kernel @rms_norm
// ALL:             %[[XS:.*]] = tile.stage %x[%a0, %a1, 0] [1, 1, 2048] into shared copy(cp_async)
// ALL-NEXT:        %[[WS:.*]] = tile.stage %w[0] [2048] into shared copy(cp_async)
// ALL:               %wv = loop.load %[[WS]][%a3] : memref<2048xf32, 3 : i64>

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

// Every element of x, b and w is read by one load op: nothing staged by default.
// CHECK-LABEL: tile.kernel @relu_matmul
// CHECK-NOT:     tile.stage
// ALL-LABEL:   tile.kernel @relu_matmul
// ALL:           tile.for %a0 = 0 to 16 bind(block.x) {
// ALL-NEXT:        %[[XS:.*]] = tile.stage %x[%a0, 0] [1, 64] into shared copy(cp_async) buffers(1) pad(0) : memref<16x64xf32> -> memref<64xf32, 3 : i64>
// ALL-NEXT:        %[[BS:.*]] = tile.stage %b[0] [64] into shared
// ALL-NEXT:        %[[WS:.*]] = tile.stage %w[0, 0] [64, 16] into shared {{.*}} -> memref<64x16xf32, 3 : i64>
// ALL:               %xv = loop.load %[[XS]][%a2] : memref<64xf32, 3 : i64>
// ALL-NEXT:          %bv = loop.load %[[BS]][%a2] : memref<64xf32, 3 : i64>
// ALL:               %wv = loop.load %[[WS]][%a2, %a1] : memref<64x16xf32, 3 : i64>

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
