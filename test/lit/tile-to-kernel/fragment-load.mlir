// RUN: deplo-opt %s -p tile-to-kernel | filecheck %s
// RUN: deplo-opt %s -p tile-to-kernel,kernel-vectorize | filecheck %s --check-prefix=VEC

// A fragment read from global memory: where its tile provably stays inside the buffer (rows
// 16 b .. 16 b + 15 of 32, columns 0 .. 15 of 16), its loads need no mask, and all 8 are issued
// before the first pack_halves waits for one; kernel-vectorize then pairs each register's two
// halves into one 32-bit load.
// CHECK-LABEL: kernel.func @inside
// CHECK-NOT:     arith.select
// CHECK-COUNT-8: memref.load %x
// CHECK-NOT:     memref.load
// CHECK:         kernel.pack_halves
// CHECK-NOT:     arith.select
// VEC-LABEL:     kernel.func @inside
// VEC-COUNT-4:   kernel.vector_load %x[{{.*}}] : memref<32x16xbf16> -> bf16, bf16
// VEC-COUNT-2:   kernel.vector_load %y[{{.*}}] : memref<8x16xbf16> -> bf16, bf16
// VEC-NOT:       memref.load

// Rows 16 b .. 16 b + 15 of 24 may pass the end: the A fragment's are clamped and masked (zero
// past the end); its columns, and the B fragment at row 0, stay inside and are neither.
// CHECK-LABEL:   kernel.func @rows_past_the_end
// CHECK-NOT:     arith.cmpi ult, %{{.*}}, %c16
// CHECK-COUNT-8: arith.cmpi ult, %{{.*}}, %c24 : index
// CHECK-NOT:     arith.cmpi ult, %{{.*}}, %c16
// CHECK:         arith.select
// (A clamped row is the same for a register's two halves: they still pair.)
// VEC-LABEL:     kernel.func @rows_past_the_end
// VEC-COUNT-6:   kernel.vector_load %x
// VEC-NOT:       memref.load %x

builtin.module {
  tile.kernel @inside(%x: memref<32x16xbf16>, %y: memref<8x16xbf16>, %out: memref<32x8xf32>) grid(2) block(32) {
    %z = arith.constant 0.000000e+00 : f32
    %c0 = arith.constant 0 : index
    %c16 = arith.constant 16 : index
    tile.for %b = 0 to 2 bind(block.x) {
      tile.for %l = 0 to 32 bind(thread.x) {
        %r = arith.muli %b, %c16 : index
        %a0, %a1, %a2, %a3 = tile.fragment_load a %x[%r, %c0] lane(%l) : memref<32x16xbf16> -> i32, i32, i32, i32
        %n0, %n1 = tile.fragment_load b_nk %y[%c0, %c0] lane(%l) : memref<8x16xbf16> -> i32, i32
        %d0, %d1, %d2, %d3 = tile.mma bf16 %a0, %a1, %a2, %a3, %n0, %n1, %z, %z, %z, %z
        loop.store %d0, %out[%r, %l] : memref<32x8xf32>
      }
    }
  }
  tile.kernel @rows_past_the_end(%x: memref<24x16xbf16>, %out: memref<24x8xf32>) grid(2) block(32) {
    %z = arith.constant 0.000000e+00 : f32
    %c0 = arith.constant 0 : index
    %c16 = arith.constant 16 : index
    tile.for %b = 0 to 2 bind(block.x) {
      tile.for %l = 0 to 32 bind(thread.x) {
        %r = arith.muli %b, %c16 : index
        %a0, %a1, %a2, %a3 = tile.fragment_load a %x[%r, %c0] lane(%l) : memref<24x16xbf16> -> i32, i32, i32, i32
        %n0, %n1 = tile.fragment_load b_nk %x[%c0, %c0] lane(%l) : memref<24x16xbf16> -> i32, i32
        %d0, %d1, %d2, %d3 = tile.mma bf16 %a0, %a1, %a2, %a3, %n0, %n1, %z, %z, %z, %z
        loop.store %d0, %out[%c0, %l] : memref<24x8xf32>
      }
    }
  }
}
