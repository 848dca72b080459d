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
// CHECK-NEXT:    scf.for %i = %t to %n step %bd {
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
  scf.for %i = %t to %n step %bd {
    kernel.barrier
  }
}
func.func @main(%x: memref<32x256xf32>, %n: index) -> memref<32xf32> {
  %out = memref.alloc() : memref<32xf32>
  kernel.launch @all_ops(%x, %out, %n) : memref<32x256xf32>, memref<32xf32>, index
  func.return %out : memref<32xf32>
}
