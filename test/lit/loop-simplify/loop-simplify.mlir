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

// A copy of an intermediate nothing reads afterwards goes: the destination is the intermediate
// (a reshape of what fusion wrote transposed). A copy of an input stays (outputs are fresh
// buffers), and so does one whose source is read after it.
// CHECK-LABEL: func.func @copies(%in: memref<2x3xf32>) -> (memref<2x3xf32>, memref<2x3xf32>, memref<2x3xf32>) {
// CHECK-NEXT:    %[[T:.*]] = memref.alloc() : memref<2x3xf32>
// CHECK-NEXT:    loop.launch @make(%in, %[[T]])
// CHECK-NEXT:    %[[U:.*]] = memref.alloc() : memref<2x3xf32>
// CHECK-NEXT:    loop.launch @make(%in, %[[U]])
// CHECK-NEXT:    %[[V:.*]] = memref.alloc() : memref<2x3xf32>
// CHECK-NEXT:    loop.launch @copy(%[[U]], %[[V]])
// CHECK-NEXT:    %[[W:.*]] = memref.alloc() : memref<2x3xf32>
// CHECK-NEXT:    loop.launch @copy(%in, %[[W]])
// CHECK-NEXT:    loop.launch @make(%[[U]], %[[V]])
// CHECK-NEXT:    func.return %[[T]], %[[V]], %[[W]]
loop.kernel @make(%x: memref<2x3xf32>, %out: memref<2x3xf32>) {
  loop.for %i = 0 to 2 free {
    loop.for %j = 0 to 3 free {
      %v = loop.load %x[%i, %j] : memref<2x3xf32>
      %y = arith.mulf %v, %v : f32
      loop.store %y, %out[%i, %j] : memref<2x3xf32>
    }
  }
}
loop.kernel @copy(%x: memref<2x3xf32>, %out: memref<2x3xf32>) {
  loop.for %i = 0 to 2 free {
    loop.for %j = 0 to 3 free {
      %v = loop.load %x[%i, %j] : memref<2x3xf32>
      loop.store %v, %out[%i, %j] : memref<2x3xf32>
    }
  }
}
func.func @copies(%in: memref<2x3xf32>) -> (memref<2x3xf32>, memref<2x3xf32>, memref<2x3xf32>) {
  %t = memref.alloc() : memref<2x3xf32>
  loop.launch @make(%in, %t) : memref<2x3xf32>, memref<2x3xf32>
  %c = memref.alloc() : memref<2x3xf32>
  loop.launch @copy(%t, %c) : memref<2x3xf32>, memref<2x3xf32>
  %u = memref.alloc() : memref<2x3xf32>
  loop.launch @make(%in, %u) : memref<2x3xf32>, memref<2x3xf32>
  %v = memref.alloc() : memref<2x3xf32>
  loop.launch @copy(%u, %v) : memref<2x3xf32>, memref<2x3xf32>
  %w = memref.alloc() : memref<2x3xf32>
  loop.launch @copy(%in, %w) : memref<2x3xf32>, memref<2x3xf32>
  loop.launch @make(%u, %v) : memref<2x3xf32>, memref<2x3xf32>
  func.return %c, %v, %w : memref<2x3xf32>, memref<2x3xf32>, memref<2x3xf32>
}
