// RUN: deplo-opt %s --split-input-file -p loop-to-tile,tile-map-2d,tile-chunk-reduce | filecheck %s
// RUN: deplo-opt %s --split-input-file -p "loop-to-tile,tile-chunk-reduce{k=8}" | filecheck %s --check-prefix=K8

// K = 96 on 2-D blocks: chunks of 32 (K >= 64), which divide K: no remainder loop.
// CHECK-LABEL: tile.kernel @matmul({{.*}}) schedule ["tile-map-2d{threads-m=16 threads-n=16}", "tile-chunk-reduce{k=32}"] {
// CHECK:                 %s = tile.for %r0o = 0 to 96 step 32 bind(serial) iter(%acc = %zero) -> f32 {
// CHECK-NEXT:              %[[C:.*]] = tile.for %r0i = 0 to 32 bind(serial) iter(%acc_1 = %acc) -> f32 {
// CHECK-NEXT:                %r0 = arith.addi %r0o, %r0i : index
// CHECK-NEXT:                loop.load %x0[%a0t, %r0] : memref<64x96xf32>
// CHECK-NEXT:                loop.load %x1[%r0, %a1t] : memref<96x80xf32>
// CHECK:                   tile.yield %[[C]] : f32
// CHECK-NEXT:            }
// CHECK-NEXT:            loop.store %s, %out[%a0t, %a1t]
// With an explicit k, unmapped loops are chunked too.
// K8-LABEL:    tile.kernel @matmul({{.*}}) schedule ["tile-chunk-reduce{k=8}"] {
// K8:              %s = tile.for %r0o = 0 to 96 step 8 bind(serial)
// K8-NEXT:           tile.for %r0i = 0 to 8 bind(serial)

builtin.module {
  loop.kernel @matmul(%x0: memref<64x96xf32>, %x1: memref<96x80xf32>, %out: memref<64x80xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    loop.for %a0 = 0 to 64 free {
      loop.for %a1 = 0 to 80 free {
        %s = loop.for %r0 = 0 to 96 reduce iter(%acc = %zero) -> f32 {
          %a = loop.load %x0[%a0, %r0] : memref<64x96xf32>
          %b = loop.load %x1[%r0, %a1] : memref<96x80xf32>
          %p = arith.mulf %a, %b : f32
          %n = arith.addf %acc, %p : f32
          loop.yield %n : f32
        }
        loop.store %s, %out[%a0, %a1] : memref<64x80xf32>
      }
    }
  }
}

// -----

// K = 53 (< 64): chunks of 16; the 5 left over run in a peeled loop that starts from the
// chunks' result, so no chunk reads past K.
// CHECK-LABEL: tile.kernel @bmm({{.*}}) schedule ["tile-map-2d{threads-m=16 threads-n=16}", "tile-chunk-reduce{k=16}"] {
// CHECK:                   %[[MAIN:.*]] = tile.for %r0o = 0 to 48 step 16 bind(serial) iter(%acc = %zero) -> f32 {
// CHECK-NEXT:                tile.for %r0i = 0 to 16 bind(serial) iter(%acc_1 = %acc) -> f32 {
// CHECK:                   %s = tile.for %{{.*}} = 48 to 53 bind(serial) iter(%acc_2 = %[[MAIN]]) -> f32 {
// CHECK-NEXT:                loop.load %x0[%a0, %a1tc, %{{.*}}]
// K8-LABEL:    tile.kernel @bmm({{.*}}) schedule ["tile-chunk-reduce{k=8}"] {
// K8:                %[[MAIN:.*]] = tile.for %r0o = 0 to 48 step 8 bind(serial)
// K8:                %s = tile.for %{{.*}} = 48 to 53 bind(serial) iter(%acc_2 = %[[MAIN]]) -> f32 {

builtin.module {
  loop.kernel @bmm(%x0: memref<2x37x53xf32>, %x1: memref<2x53x70xf32>, %out: memref<2x37x70xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    loop.for %a0 = 0 to 2 free {
      loop.for %a1 = 0 to 37 free {
        loop.for %a2 = 0 to 70 free {
          %s = loop.for %r0 = 0 to 53 reduce iter(%acc = %zero) -> f32 {
            %a = loop.load %x0[%a0, %a1, %r0] : memref<2x37x53xf32>
            %b = loop.load %x1[%a0, %r0, %a2] : memref<2x53x70xf32>
            %p = arith.mulf %a, %b : f32
            %n = arith.addf %acc, %p : f32
            loop.yield %n : f32
          }
          loop.store %s, %out[%a0, %a1, %a2] : memref<2x37x70xf32>
        }
      }
    }
  }
}

// -----

// The heuristic chunks only contractions on 2-D blocks (a chunk is the unit of a stage): a small
// matmul that tile-map-2d leaves serial, and RMSNorm (not a contraction) are left alone; with an
// explicit k, RMSNorm is still not a contraction.
// CHECK-LABEL: tile.kernel @negative_serial({{.*}}) schedule [] {
// CHECK-LABEL: tile.kernel @negative_rms_norm({{.*}}) schedule [] {
// K8-LABEL:    tile.kernel @negative_serial({{.*}}) schedule ["tile-chunk-reduce{k=8}"] {
// K8-LABEL:    tile.kernel @negative_rms_norm({{.*}}) schedule [] {

builtin.module {
  loop.kernel @negative_serial(%x: memref<16x64xf32>, %w: memref<64x16xf32>, %out: memref<16x16xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    loop.for %a0 = 0 to 16 free {
      loop.for %a1 = 0 to 16 free {
        %s = loop.for %r0 = 0 to 64 reduce iter(%acc = %zero) -> f32 {
          %a = loop.load %x[%a0, %r0] : memref<16x64xf32>
          %b = loop.load %w[%r0, %a1] : memref<64x16xf32>
          %p = arith.mulf %a, %b : f32
          %n = arith.addf %acc, %p : f32
          loop.yield %n : f32
        }
        loop.store %s, %out[%a0, %a1] : memref<16x16xf32>
      }
    }
  }
  loop.kernel @negative_rms_norm(%x: memref<32x2048xf32>, %out: memref<32x2048xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    loop.for %a0 = 0 to 32 free {
      %ss = loop.for %a1 = 0 to 2048 reduce iter(%acc = %zero) -> f32 {
        %v = loop.load %x[%a0, %a1] : memref<32x2048xf32>
        %sq = arith.mulf %v, %v : f32
        %s = arith.addf %acc, %sq : f32
        loop.yield %s : f32
      }
      loop.for %a2 = 0 to 2048 free {
        %v2 = loop.load %x[%a0, %a2] : memref<32x2048xf32>
        %y = arith.mulf %v2, %ss : f32
        loop.store %y, %out[%a0, %a2] : memref<32x2048xf32>
      }
    }
  }
}
