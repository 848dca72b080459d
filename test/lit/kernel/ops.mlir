// RUN: deplo-opt %s | deplo-opt | filecheck %s
// RUN: deplo-opt %s --print-op-generic | deplo-opt | filecheck %s

// CHECK-LABEL: kernel.func @all_ops(%x: memref<32x256xf32>, %out: memref<32xf32>, %n: index) grid(32, 1, 1) block(256, 1, 1) {
// CHECK-NEXT:    %t = kernel.thread_id x
// CHECK-NEXT:    %b = kernel.block_id x
// CHECK-NEXT:    %bd = kernel.block_dim y
// CHECK-NEXT:    %gd = kernel.grid_dim z
// CHECK-NEXT:    %v = memref.load %x[%b, %t] : memref<32x256xf32>
// CHECK-NEXT:    %s = kernel.shuffle xor %v, 16 width 32 : f32
// CHECK-NEXT:    %d = kernel.shuffle down %s, 1 width 8 : f32
// CHECK-NEXT:    %u = kernel.shuffle up %d, 2 width 32 : f32
// CHECK-NEXT:    %l = kernel.shuffle idx %u, 0 width 16 mask 65535 : f32
// CHECK-NEXT:    %buf = kernel.shared : memref<8xf32, 3 : i64>
// CHECK-NEXT:    %xs = kernel.shared : memref<2x256xf32, 3 : i64>
// CHECK-NEXT:    kernel.cp_async %x[%b, %t] to %xs[%b, %t] bytes 16 : memref<32x256xf32> to memref<2x256xf32, 3 : i64>
// CHECK-NEXT:    kernel.cp_async %x[%b, %t] to %xs[%b, %t] bytes 4 : memref<32x256xf32> to memref<2x256xf32, 3 : i64>
// CHECK-NEXT:    kernel.cp_async_commit
// CHECK-NEXT:    kernel.cp_async_wait 1
// CHECK-NEXT:    kernel.barrier
// CHECK-NEXT:    scf.for %i = %b to %n step %bd {
// CHECK-NEXT:      kernel.barrier
// CHECK-NEXT:    }
// CHECK-NEXT:  }
// CHECK-LABEL: func.func @main
// CHECK:         kernel.launch @all_ops(%x, %out, %n) : memref<32x256xf32>, memref<32xf32>, index
kernel.func @all_ops(%x: memref<32x256xf32>, %out: memref<32xf32>, %n: index) grid(32, 1, 1) block(256, 1, 1) {
  %t = kernel.thread_id x
  %b = kernel.block_id x
  %bd = kernel.block_dim y
  %gd = kernel.grid_dim z
  %v = memref.load %x[%b, %t] : memref<32x256xf32>
  %s = kernel.shuffle xor %v, 16 width 32 : f32
  %d = kernel.shuffle down %s, 1 width 8 : f32
  %u = kernel.shuffle up %d, 2 width 32 : f32
  %l = kernel.shuffle idx %u, 0 width 16 mask 65535 : f32
  %buf = kernel.shared : memref<8xf32, 3 : i64>
  %xs = kernel.shared : memref<2x256xf32, 3 : i64>
  kernel.cp_async %x[%b, %t] to %xs[%b, %t] bytes 16 : memref<32x256xf32> to memref<2x256xf32, 3 : i64>
  kernel.cp_async %x[%b, %t] to %xs[%b, %t] bytes 4 : memref<32x256xf32> to memref<2x256xf32, 3 : i64>
  kernel.cp_async_commit
  kernel.cp_async_wait 1
  kernel.barrier
  scf.for %i = %b to %n step %bd {
    kernel.barrier
  }
}
func.func @main(%x: memref<32x256xf32>, %n: index) -> memref<32xf32> {
  %out = memref.alloc() : memref<32xf32>
  kernel.launch @all_ops(%x, %out, %n) : memref<32x256xf32>, memref<32xf32>, index
  func.return %out : memref<32xf32>
}

// 128-bit accesses and tensor-core primitives.
// CHECK-LABEL: kernel.func @vector_and_mma
// CHECK:         %a, %b, %c, %d = kernel.vector_load %x[%c0, %c0] : memref<16x16xf32> -> f32, f32, f32, f32
// CHECK-NEXT:    kernel.vector_store %a, %b, %c, %d to %y[%c0, %c0] : f32, f32, f32, f32 to memref<16x16xf32>
// CHECK-NEXT:    %r0, %r1, %r2, %r3 = kernel.ldmatrix %hs[%c0, %c0] : memref<16x24xf16, 3 : i64> -> i32, i32, i32, i32
// CHECK-NEXT:    %q0, %q1 = kernel.ldmatrix %hs[%c0, %c0] trans : memref<16x24xf16, 3 : i64> -> i32, i32
// CHECK-NEXT:    %d0, %d1, %d2, %d3 = kernel.mma f16 %r0, %r1, %r2, %r3, %q0, %q1, %a, %b, %c, %d
// CHECK-NEXT:    %p = kernel.pack_halves %h, %h : f16
kernel.func @vector_and_mma(%x: memref<16x16xf32>, %y: memref<16x16xf32>, %g: memref<16xf16>) grid(1, 1, 1) block(32, 1, 1) {
  %c0 = arith.constant 0 : index
  %hs = kernel.shared : memref<16x24xf16, 3 : i64>
  %h = memref.load %g[%c0] : memref<16xf16>
  %a, %b, %c, %d = kernel.vector_load %x[%c0, %c0] : memref<16x16xf32> -> f32, f32, f32, f32
  kernel.vector_store %a, %b, %c, %d to %y[%c0, %c0] : f32, f32, f32, f32 to memref<16x16xf32>
  %r0, %r1, %r2, %r3 = kernel.ldmatrix %hs[%c0, %c0] : memref<16x24xf16, 3 : i64> -> i32, i32, i32, i32
  %q0, %q1 = kernel.ldmatrix %hs[%c0, %c0] trans : memref<16x24xf16, 3 : i64> -> i32, i32
  %d0, %d1, %d2, %d3 = kernel.mma f16 %r0, %r1, %r2, %r3, %q0, %q1, %a, %b, %c, %d
  %p = kernel.pack_halves %h, %h : f16
}

// A fused kernel: a part per kernel, its own grid.
// CHECK-LABEL: kernel.func @fused(%x: memref<64xf32>) grid(3, 1, 1) block(32, 1, 1) {
// CHECK-NEXT:    kernel.part "a" grid(1, 2, 1) {
// CHECK-NEXT:      %b = kernel.block_id y
// CHECK-NEXT:    }
// CHECK-NEXT:    kernel.part "b" grid(1, 1, 1) {
// CHECK-NEXT:      %n = kernel.grid_dim x
// CHECK-NEXT:    }
// CHECK-NEXT:  }
kernel.func @fused(%x: memref<64xf32>) grid(3, 1, 1) block(32, 1, 1) {
  kernel.part "a" grid(1, 2, 1) {
    %b = kernel.block_id y
  }
  kernel.part "b" grid(1, 1, 1) {
    %n = kernel.grid_dim x
  }
}
