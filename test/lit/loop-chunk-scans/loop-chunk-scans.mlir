// RUN: deplo-opt %s --split-input-file -p loop-chunk-scans | filecheck %s
// RUN: deplo-opt %s --split-input-file -p loop-chunk-scans | deplo-opt --split-input-file | filecheck %s

// cumsum(x) * 2 over one row of 16384: chunks of 32 (the divisor with the fewest loads,
// 16384 * 32 + 512^2), 512 of them. @cumsum_part sums each chunk unmasked from 0;
// @cumsum_offsets sums the partials of the chunks before each; @cumsum adds its chunk's offset
// to the masked sum within the chunk and runs the epilogue at s * 32 + a.
// CHECK-LABEL: loop.kernel @cumsum_part(%x: memref<16384xf32>, %out: memref<16384xf32>, %part: memref<512xf32>, %offs: memref<512xf32>)
// CHECK:         loop.for %s = 0 to 512 free {
// CHECK-NEXT:      %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[P:.*]] = loop.for %r = 0 to 32 reduce iter(%acc = %[[Z]]) -> f32 {
// CHECK-NEXT:        %[[V:.*]] = loop.load %x[%r, %s] map (d0, d1) -> (((d1 * 32) + d0)) : memref<16384xf32>
// CHECK-NEXT:        %[[A:.*]] = arith.addf %acc, %[[V]] : f32
// CHECK-NEXT:        loop.yield %[[A]] : f32
// CHECK-NEXT:      }
// CHECK-NEXT:      loop.store %[[P]], %part[%s] : memref<512xf32>
// CHECK-LABEL: loop.kernel @cumsum_offsets(
// CHECK:         loop.for %s = 0 to 512 free {
// CHECK:           %[[O:.*]] = loop.for %t = 0 to 512 reduce iter(%acc = %{{.*}}) -> f32 {
// CHECK-NEXT:        %[[Q:.*]] = loop.load %part[%t] : memref<512xf32>
// CHECK-NEXT:        %[[B:.*]] = arith.cmpi slt, %t, %s : index
// CHECK-NEXT:        %[[C:.*]] = arith.select %[[B]], %[[Q]], %{{.*}} : f32
// CHECK-NEXT:        arith.addf %acc, %[[C]] : f32
// CHECK:           loop.store %[[O]], %offs[%s] : memref<512xf32>
// CHECK-LABEL: loop.kernel @cumsum(
// CHECK:         loop.for %s = 0 to 512 free {
// CHECK-NEXT:      loop.for %a = 0 to 32 free {
// CHECK-NEXT:        %[[T:.*]] = loop.for %r = 0 to 32 reduce
// CHECK-NEXT:          loop.load %x[%r, %s] map (d0, d1) -> (((d1 * 32) + d0))
// CHECK-NEXT:          arith.cmpi sle, %r, %a : index
// CHECK:             %[[OFF:.*]] = loop.load %offs[%s] : memref<512xf32>
// CHECK-NEXT:        %[[SUM:.*]] = arith.addf %[[T]], %[[OFF]] : f32
// CHECK-NEXT:        %[[M:.*]] = arith.mulf %[[SUM]], %{{.*}} : f32
// CHECK-NEXT:        loop.store %[[M]], %out[%a, %s] map (d0, d1) -> (((d1 * 32) + d0))
// CHECK-LABEL: func.func @main
// CHECK:         loop.launch @cumsum_part(
// CHECK-NEXT:    loop.launch @cumsum_offsets(
// CHECK-NEXT:    loop.launch @cumsum(

builtin.module {
  loop.kernel @cumsum(%x: memref<16384xf32>, %out: memref<16384xf32>) {
    %0 = arith.constant 0.000000e+00 : f32
    %1 = arith.constant 2.000000e+00 : f32
    loop.for %a = 0 to 16384 free {
      %2 = loop.for %r = 0 to 16384 reduce iter(%acc = %0) -> f32 {
        %3 = loop.load %x[%r] : memref<16384xf32>
        %4 = arith.cmpi sle, %r, %a : index
        %5 = arith.select %4, %3, %0 : f32
        %6 = arith.addf %acc, %5 : f32
        loop.yield %6 : f32
      }
      %7 = arith.mulf %2, %1 : f32
      loop.store %7, %out[%a] : memref<16384xf32>
    }
  }
  func.func @main(%x: memref<16384xf32>) -> memref<16384xf32> {
    %cumsum = memref.alloc() : memref<16384xf32>
    loop.launch @cumsum(%x, %cumsum) : memref<16384xf32>, memref<16384xf32>
    func.return %cumsum : memref<16384xf32>
  }
}

// -----

// A cumprod: the same three kernels with products, each starting from 1.
// CHECK-LABEL: loop.kernel @cumprod_part(
// CHECK:         loop.for %s = 0 to 512 free {
// CHECK-NEXT:    %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:    %{{.*}} = loop.for %r = 0 to 32 reduce iter(%acc = %[[ONE]]) -> f32 {
// CHECK:           arith.mulf %acc, %{{.*}} : f32
// CHECK-LABEL: loop.kernel @cumprod_offsets(
// CHECK:         loop.for %s = 0 to 512 free {
// CHECK-NEXT:    %[[ONE2:.*]] = arith.constant 1.000000e+00 : f32
// CHECK:         arith.select %{{.*}}, %{{.*}}, %[[ONE2]] : f32
// CHECK-NEXT:    arith.mulf %acc, %{{.*}} : f32
// CHECK-LABEL: loop.kernel @cumprod(
// CHECK:         %[[OFF:.*]] = loop.load %offs[%s] : memref<512xf32>
// CHECK-NEXT:    arith.mulf %{{.*}}, %[[OFF]] : f32

builtin.module {
  loop.kernel @cumprod(%x: memref<16384xf32>, %out: memref<16384xf32>) {
    %0 = arith.constant 1.000000e+00 : f32
    loop.for %a = 0 to 16384 free {
      %2 = loop.for %r = 0 to 16384 reduce iter(%acc = %0) -> f32 {
        %3 = loop.load %x[%r] : memref<16384xf32>
        %4 = arith.cmpi sle, %r, %a : index
        %5 = arith.select %4, %3, %0 : f32
        %6 = arith.mulf %acc, %5 : f32
        loop.yield %6 : f32
      }
      loop.store %2, %out[%a] : memref<16384xf32>
    }
  }
  func.func @main(%x: memref<16384xf32>) -> memref<16384xf32> {
    %cumprod = memref.alloc() : memref<16384xf32>
    loop.launch @cumprod(%x, %cumprod) : memref<16384xf32>, memref<16384xf32>
    func.return %cumprod : memref<16384xf32>
  }
}

// -----

// A row with no divisor in [8, 256] (16411 = 512 x 32 + 27): 512 whole chunks of 32 and a tail
// of 27. The offsets hold one more entry (the tail's: every partial); @cumsum_tail sums within
// the tail from 16384 and adds offset 512.
// CHECK-LABEL: loop.kernel @cumsum_part(%x: memref<16411xf32>, %out: memref<16411xf32>, %part: memref<512xf32>, %offs: memref<513xf32>)
// CHECK-LABEL: loop.kernel @cumsum_offsets(
// CHECK:         loop.for %s = 0 to 513 free {
// CHECK:           loop.for %t = 0 to 512 reduce
// CHECK-LABEL: loop.kernel @cumsum(
// CHECK:         loop.for %s = 0 to 512 free {
// CHECK-LABEL: loop.kernel @cumsum_tail(
// CHECK:         %[[LAST:.*]] = arith.constant 512 : index
// CHECK:         loop.for %a = 0 to 27 free {
// CHECK-NEXT:      %[[T:.*]] = loop.for %r = 0 to 27 reduce
// CHECK-NEXT:        loop.load %x[%r] map (d0) -> ((d0 + 16384))
// CHECK-NEXT:        arith.cmpi sle, %r, %a : index
// CHECK:           %[[OFF:.*]] = loop.load %offs[%[[LAST]]] : memref<513xf32>
// CHECK-NEXT:      %[[SUM:.*]] = arith.addf %[[T]], %[[OFF]] : f32
// CHECK-NEXT:      loop.store %[[SUM]], %out[%a] map (d0) -> ((d0 + 16384))
// CHECK-LABEL: func.func @main
// CHECK:         loop.launch @cumsum_part(
// CHECK-NEXT:    loop.launch @cumsum_offsets(
// CHECK-NEXT:    loop.launch @cumsum(
// CHECK-NEXT:    loop.launch @cumsum_tail(

builtin.module {
  loop.kernel @cumsum(%x: memref<16411xf32>, %out: memref<16411xf32>) {
    %0 = arith.constant 0.000000e+00 : f32
    loop.for %a = 0 to 16411 free {
      %2 = loop.for %r = 0 to 16411 reduce iter(%acc = %0) -> f32 {
        %3 = loop.load %x[%r] : memref<16411xf32>
        %4 = arith.cmpi sle, %r, %a : index
        %5 = arith.select %4, %3, %0 : f32
        %6 = arith.addf %acc, %5 : f32
        loop.yield %6 : f32
      }
      loop.store %2, %out[%a] : memref<16411xf32>
    }
  }
  func.func @main(%x: memref<16411xf32>) -> memref<16411xf32> {
    %cumsum = memref.alloc() : memref<16411xf32>
    loop.launch @cumsum(%x, %cumsum) : memref<16411xf32>, memref<16411xf32>
    func.return %cumsum : memref<16411xf32>
  }
}

// -----

// Left alone: 4 rows of 4096 (4 x 4096^2 loads are fewer than MIN_LOADS), and a mask that
// is not `r <= a` (r < a: an exclusive sum is not what the pass rewrites).
// CHECK-LABEL: loop.kernel @short
// CHECK-NOT:   _part
// CHECK-LABEL: loop.kernel @exclusive
// CHECK-NOT:   _part

builtin.module {
  loop.kernel @short(%x: memref<4x4096xf32>, %out: memref<4x4096xf32>) {
    %0 = arith.constant 0.000000e+00 : f32
    loop.for %i = 0 to 4 free {
      loop.for %a = 0 to 4096 free {
        %2 = loop.for %r = 0 to 4096 reduce iter(%acc = %0) -> f32 {
          %3 = loop.load %x[%i, %r] : memref<4x4096xf32>
          %4 = arith.cmpi sle, %r, %a : index
          %5 = arith.select %4, %3, %0 : f32
          %6 = arith.addf %acc, %5 : f32
          loop.yield %6 : f32
        }
        loop.store %2, %out[%i, %a] : memref<4x4096xf32>
      }
    }
  }
  loop.kernel @exclusive(%x: memref<16384xf32>, %out: memref<16384xf32>) {
    %0 = arith.constant 0.000000e+00 : f32
    loop.for %a = 0 to 16384 free {
      %2 = loop.for %r = 0 to 16384 reduce iter(%acc = %0) -> f32 {
        %3 = loop.load %x[%r] : memref<16384xf32>
        %4 = arith.cmpi slt, %r, %a : index
        %5 = arith.select %4, %3, %0 : f32
        %6 = arith.addf %acc, %5 : f32
        loop.yield %6 : f32
      }
      loop.store %2, %out[%a] : memref<16384xf32>
    }
  }
  func.func @main(%x: memref<4x4096xf32>, %y: memref<16384xf32>) -> memref<4x4096xf32> {
    %short = memref.alloc() : memref<4x4096xf32>
    loop.launch @short(%x, %short) : memref<4x4096xf32>, memref<4x4096xf32>
    %exclusive = memref.alloc() : memref<16384xf32>
    loop.launch @exclusive(%y, %exclusive) : memref<16384xf32>, memref<16384xf32>
    func.return %short : memref<4x4096xf32>
  }
}

// -----

// A cumsum over the first dim of [16384, 2]: the position loop moves innermost (the columns
// outside it), then the row is chunked as above; the loads and stores keep their coordinates.
// CHECK-LABEL: loop.kernel @cumsum_rows_part(
// CHECK:         loop.for %a1 = 0 to 2 free {
// CHECK-NEXT:      loop.for %s = 0 to 512 free {
// CHECK:             loop.load %x[%r0, %a1, %s] map (d0, d1, d2) -> (((d2 * 32) + d0), d1) : memref<16384x2xf32>
// CHECK:           loop.store %{{.*}}, %part[%a1, %s] : memref<2x512xf32>
// CHECK-LABEL: loop.kernel @cumsum_rows(
// CHECK:         loop.for %a1 = 0 to 2 free {
// CHECK-NEXT:      loop.for %s = 0 to 512 free {
// CHECK-NEXT:        loop.for %a0 = 0 to 32 free {
// CHECK:               loop.store %{{.*}}, %out[%a0, %a1, %s] map (d0, d1, d2) -> (((d2 * 32) + d0), d1) : memref<16384x2xf32>
// A short one keeps its order and its form.
// CHECK-LABEL: loop.kernel @cumsum_short(
// CHECK-NEXT:    arith.constant
// CHECK-NEXT:    loop.for %a0 = 0 to 64 free {
// CHECK-NEXT:      loop.for %a1 = 0 to 2 free {
// CHECK-NEXT:        loop.for %r0 = 0 to 64 reduce

builtin.module {
  loop.kernel @cumsum_rows(%x: memref<16384x2xf32>, %out: memref<16384x2xf32>) {
    %0 = arith.constant 0.000000e+00 : f32
    loop.for %a0 = 0 to 16384 free {
      loop.for %a1 = 0 to 2 free {
        %1 = loop.for %r0 = 0 to 16384 reduce iter(%acc = %0) -> f32 {
          %2 = loop.load %x[%r0, %a1] : memref<16384x2xf32>
          %3 = arith.cmpi sle, %r0, %a0 : index
          %4 = arith.select %3, %2, %0 : f32
          %5 = arith.addf %acc, %4 : f32
          loop.yield %5 : f32
        }
        loop.store %1, %out[%a0, %a1] : memref<16384x2xf32>
      }
    }
  }
  loop.kernel @cumsum_short(%x: memref<64x2xf32>, %out: memref<64x2xf32>) {
    %0 = arith.constant 0.000000e+00 : f32
    loop.for %a0 = 0 to 64 free {
      loop.for %a1 = 0 to 2 free {
        %1 = loop.for %r0 = 0 to 64 reduce iter(%acc = %0) -> f32 {
          %2 = loop.load %x[%r0, %a1] : memref<64x2xf32>
          %3 = arith.cmpi sle, %r0, %a0 : index
          %4 = arith.select %3, %2, %0 : f32
          %5 = arith.addf %acc, %4 : f32
          loop.yield %5 : f32
        }
        loop.store %1, %out[%a0, %a1] : memref<64x2xf32>
      }
    }
  }
  func.func @main(%x: memref<16384x2xf32>, %y: memref<64x2xf32>) -> memref<16384x2xf32> {
    %c = memref.alloc() : memref<16384x2xf32>
    loop.launch @cumsum_rows(%x, %c) : memref<16384x2xf32>, memref<16384x2xf32>
    %d = memref.alloc() : memref<64x2xf32>
    loop.launch @cumsum_short(%y, %d) : memref<64x2xf32>, memref<64x2xf32>
    func.return %c : memref<16384x2xf32>
  }
}
