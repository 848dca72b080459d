// RUN: deplo-opt %s -p tile-to-kernel | filecheck %s

// A combine with `stride` 2 over groups of 8 lanes adds lanes 2 apart only (offsets 4 and 2,
// not 1): lanes l, l + 2, l + 4, l + 6 get their sum, the odd and even lanes apart.
// CHECK:      %v = memref.load %x[%tid_x] : memref<8xf32>
// CHECK-NEXT: %[[A:.*]] = kernel.shuffle xor %v, 4 width 8 mask 255 : f32
// CHECK-NEXT: %[[B:.*]] = arith.addf %v, %[[A]] : f32
// CHECK-NEXT: %[[C:.*]] = kernel.shuffle xor %[[B]], 2 width 8 mask 255 : f32
// CHECK-NEXT: %s = arith.addf %[[B]], %[[C]] : f32
// CHECK-NEXT: memref.store %s, %out[%tid_x] : memref<8xf32>

builtin.module {
  tile.kernel @k(%x: memref<8xf32>, %out: memref<8xf32>) grid(1) block(8) {
    tile.for %t = 0 to 8 bind(thread.x) {
      %v = loop.load %x[%t] : memref<8xf32>
      %s = tile.combine add %v over thread.x lanes 8 stride 2 : f32
      loop.store %s, %out[%t] : memref<8xf32>
    }
  }
}
