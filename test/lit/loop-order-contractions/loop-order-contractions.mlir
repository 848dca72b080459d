// RUN: deplo-opt %s --split-input-file -p loop-order-contractions | filecheck %s
// RUN: deplo-opt %s --split-input-file -p loop-order-contractions | deplo-opt --split-input-file | filecheck %s

// conv2d's im2col: over (h, w) the input is read along both, so (h, w) is no matmul's pair.
// `o` (the weight's loop) moves in next to `w`: (o, w) is one, the weight along o, the input
// along w; n and h keep their order outside.
// CHECK-LABEL: loop.kernel @conv(
// CHECK-NEXT:    %{{.*}} = arith.constant
// CHECK-NEXT:    loop.for %n = 0 to 2 free {
// CHECK-NEXT:      loop.for %h = 0 to 8 free {
// CHECK-NEXT:        loop.for %o = 0 to 6 free {
// CHECK-NEXT:          loop.for %w = 0 to 8 free {
// CHECK-NEXT:            loop.for %k = 0 to 36 reduce
// CHECK-NEXT:              loop.load %x[%n, %o, %h, %w, %k]
// CHECK-NEXT:              loop.load %wt[%n, %o, %h, %w, %k]
// CHECK:           loop.store %{{.*}}, %out[%n, %o, %h, %w]

builtin.module {
  loop.kernel @conv(%x: memref<2x4x10x10xf32>, %wt: memref<6x4x3x3xf32>, %out: memref<2x6x8x8xf32>) {
    %0 = arith.constant 0.000000e+00 : f32
    loop.for %n = 0 to 2 free {
      loop.for %o = 0 to 6 free {
        loop.for %h = 0 to 8 free {
          loop.for %w = 0 to 8 free {
            %1 = loop.for %k = 0 to 36 reduce iter(%acc = %0) -> f32 {
              %2 = loop.load %x[%n, %o, %h, %w, %k] map (d0, d1, d2, d3, d4) -> (d0, (d4 floordiv 9), (d2 + ((d4 floordiv 3) mod 3)), (d3 + (d4 mod 3))) : memref<2x4x10x10xf32>
              %3 = loop.load %wt[%n, %o, %h, %w, %k] map (d0, d1, d2, d3, d4) -> (d1, (d4 floordiv 9), ((d4 floordiv 3) mod 3), (d4 mod 3)) : memref<6x4x3x3xf32>
              %4 = arith.mulf %2, %3 : f32
              %5 = arith.addf %acc, %4 : f32
              loop.yield %5 : f32
            }
            loop.store %1, %out[%n, %o, %h, %w] : memref<2x6x8x8xf32>
          }
        }
      }
    }
  }
  func.func @main(%x: memref<2x4x10x10xf32>, %wt: memref<6x4x3x3xf32>) -> memref<2x6x8x8xf32> {
    %conv = memref.alloc() : memref<2x6x8x8xf32>
    loop.launch @conv(%x, %wt, %conv) : memref<2x4x10x10xf32>, memref<6x4x3x3xf32>, memref<2x6x8x8xf32>
    func.return %conv : memref<2x6x8x8xf32>
  }
}

// -----

// Left alone: a batched matmul (its pair is a product already) and a column sum (no loop makes
// one: every load is along both).
// CHECK-LABEL: loop.kernel @bmm(
// CHECK-NEXT:    %{{.*}} = arith.constant
// CHECK-NEXT:    loop.for %b = 0 to 4 free {
// CHECK-NEXT:      loop.for %i = 0 to 16 free {
// CHECK-NEXT:        loop.for %j = 0 to 8 free {
// CHECK-LABEL: loop.kernel @colsum(
// CHECK-NEXT:    %{{.*}} = arith.constant
// CHECK-NEXT:    loop.for %a = 0 to 4 free {
// CHECK-NEXT:      loop.for %c = 0 to 8 free {

builtin.module {
  loop.kernel @bmm(%x: memref<4x16x32xf32>, %y: memref<4x32x8xf32>, %out: memref<4x16x8xf32>) {
    %0 = arith.constant 0.000000e+00 : f32
    loop.for %b = 0 to 4 free {
      loop.for %i = 0 to 16 free {
        loop.for %j = 0 to 8 free {
          %1 = loop.for %k = 0 to 32 reduce iter(%acc = %0) -> f32 {
            %2 = loop.load %x[%b, %i, %k] : memref<4x16x32xf32>
            %3 = loop.load %y[%b, %k, %j] : memref<4x32x8xf32>
            %4 = arith.mulf %2, %3 : f32
            %5 = arith.addf %acc, %4 : f32
            loop.yield %5 : f32
          }
          loop.store %1, %out[%b, %i, %j] : memref<4x16x8xf32>
        }
      }
    }
  }
  loop.kernel @colsum(%x: memref<4x32x8xf32>, %out: memref<4x8xf32>) {
    %0 = arith.constant 0.000000e+00 : f32
    loop.for %a = 0 to 4 free {
      loop.for %c = 0 to 8 free {
        %1 = loop.for %r = 0 to 32 reduce iter(%acc = %0) -> f32 {
          %2 = loop.load %x[%a, %r, %c] : memref<4x32x8xf32>
          %3 = arith.addf %acc, %2 : f32
          loop.yield %3 : f32
        }
        loop.store %1, %out[%a, %c] : memref<4x8xf32>
      }
    }
  }
  func.func @main(%x: memref<4x16x32xf32>, %y: memref<4x32x8xf32>, %z: memref<4x32x8xf32>) -> memref<4x16x8xf32> {
    %bmm = memref.alloc() : memref<4x16x8xf32>
    loop.launch @bmm(%x, %y, %bmm) : memref<4x16x32xf32>, memref<4x32x8xf32>, memref<4x16x8xf32>
    %colsum = memref.alloc() : memref<4x8xf32>
    loop.launch @colsum(%z, %colsum) : memref<4x32x8xf32>, memref<4x8xf32>
    func.return %bmm : memref<4x16x8xf32>
  }
}
