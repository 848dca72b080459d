// RUN: deplo-opt %s -p loop-simplify | filecheck %s

// One copy of each constant at the top, repeated loads and ops CSE'd, row-invariant work hoisted
// out of the column loop.
// CHECK-LABEL: loop.kernel @k(%x: memref<4x8xf32>, %s: memref<4xf32>, %out: memref<4x8xf32>) {
// CHECK-NEXT:    %[[C:.*]] = arith.constant 8.000000e+00 : f32
// CHECK-NEXT:    loop.for %[[I:.*]] = 0 to 4 free {
// CHECK-NEXT:      %[[SV:.*]] = loop.load %s[%[[I]]] : memref<4xf32>
// CHECK-NEXT:      %[[M:.*]] = arith.divf %[[SV]], %[[C]] : f32
// CHECK-NEXT:      loop.for %[[J:.*]] = 0 to 8 free {
// CHECK-NEXT:        %[[V:.*]] = loop.load %x[%[[I]], %[[J]]] : memref<4x8xf32>
// CHECK-NEXT:        %[[SQ:.*]] = arith.mulf %[[V]], %[[V]] : f32
// CHECK-NEXT:        %[[Y:.*]] = arith.mulf %[[SQ]], %[[M]] : f32
// CHECK-NEXT:        loop.store %[[Y]], %out[%[[I]], %[[J]]] : memref<4x8xf32>
loop.kernel @k(%x: memref<4x8xf32>, %s: memref<4xf32>, %out: memref<4x8xf32>) {
  %c = arith.constant 8.0 : f32
  loop.for %i = 0 to 4 free {
    loop.for %j = 0 to 8 free {
      %c2 = arith.constant 8.0 : f32
      %v = loop.load %x[%i, %j] : memref<4x8xf32>
      %v2 = loop.load %x[%i, %j] : memref<4x8xf32>
      %sq = arith.mulf %v, %v2 : f32
      %sv = loop.load %s[%i] : memref<4xf32>
      %m = arith.divf %sv, %c2 : f32
      %y = arith.mulf %sq, %m : f32
      loop.store %y, %out[%i, %j] : memref<4x8xf32>
    }
  }
}
