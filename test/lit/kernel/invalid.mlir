// RUN: deplo-opt %s --verify-diagnostics --split-input-file | filecheck %s

// CHECK: grid: expected 3 sizes, got 2
kernel.func @k(%x: memref<4xf32>) grid(1, 1) block(1, 1, 1) {
}

// -----
// CHECK: block: expected sizes in [1, 64], got 65
kernel.func @k(%x: memref<4xf32>) grid(1, 1, 1) block(1, 1, 65) {
}

// -----
// CHECK: expected at most 1024 threads per block, got 2048
kernel.func @k(%x: memref<4xf32>) grid(1, 1, 1) block(1024, 2, 1) {
}

// -----
// CHECK: argument #0: expected a static shape, got memref<?xf32>
kernel.func @k(%x: memref<?xf32>) grid(1, 1, 1) block(1, 1, 1) {
}

// -----
// CHECK: argument #0: expected the identity layout, got strided<[2]>
kernel.func @k(%x: memref<4xf32, strided<[2]>>) grid(1, 1, 1) block(1, 1, 1) {
}

// -----
// CHECK: argument #0: expected a global memref, got memory space 3 : i64
kernel.func @k(%x: memref<4xf32, 3 : i64>) grid(1, 1, 1) block(1, 1, 1) {
}

// -----
// CHECK: argument #0: expected a memref or a scalar, got tensor<4xf32>
kernel.func @k(%x: tensor<4xf32>) grid(1, 1, 1) block(1, 1, 1) {
}

// -----
// CHECK: expected an integer, float or index element type, got complex<f32>
kernel.func @k(%x: memref<4xcomplex<f32>>) grid(1, 1, 1) block(1, 1, 1) {
}

// -----
// CHECK: expected at most 232448 bytes of shared memory, got 262144
kernel.func @k(%x: memref<4xf32>) grid(1, 1, 1) block(1, 1, 1) {
  %a = kernel.shared : memref<32768xf32, 3 : i64>
  %b = kernel.shared : memref<32768xf32, 3 : i64>
}

// -----
// CHECK: 'kernel.thread_id' expected inside a kernel.func, got none around it
func.func @f() {
  %t = kernel.thread_id x
  func.return
}

// -----
// CHECK: 'kernel.barrier' expected inside a kernel.func, got none around it
func.func @f() {
  kernel.barrier
  func.return
}

// -----
// A barrier only some threads reach never completes: under a branch on the thread id, or in a
// loop whose trip count differs between threads (through a load at the thread's index).
// CHECK: kernel.barrier: every thread of the block must reach it, but it is under an scf.if that depends on the thread id
kernel.func @k(%x: memref<64xf32>) grid(1, 1, 1) block(64, 1, 1) {
  %t = kernel.thread_id x
  %c0 = arith.constant 0 : index
  %p = arith.cmpi eq, %t, %c0 : index
  scf.if %p {
    kernel.barrier
  }
}

// -----
// CHECK: kernel.barrier: every thread of the block must reach it, but it is under an scf.for that depends on the thread id
kernel.func @k(%x: memref<64xindex>) grid(1, 1, 1) block(64, 1, 1) {
  %t = kernel.thread_id x
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.load %x[%t] : memref<64xindex>
  %true = arith.constant true
  scf.for %i = %c0 to %n step %c1 {
    scf.if %true {
      kernel.barrier
    }
  }
}

// -----
// CHECK: kernel.shared: expected memory space 3 : i64, got none
kernel.func @k(%x: memref<4xf32>) grid(1, 1, 1) block(1, 1, 1) {
  %b = kernel.shared : memref<4xf32>
}

// -----
// CHECK: expected width a power of two <= 32, got 12
kernel.func @k(%v: f32) grid(1, 1, 1) block(32, 1, 1) {
  %s = kernel.shuffle xor %v, 1 width 12 : f32
}

// -----
// CHECK: expected offset in [0, 16), got 16
kernel.func @k(%v: f32) grid(1, 1, 1) block(32, 1, 1) {
  %s = kernel.shuffle down %v, 16 width 16 : f32
}

// -----
// CHECK: expected a non-zero 32-bit lane mask, got 0
kernel.func @k(%v: f32) grid(1, 1, 1) block(32, 1, 1) {
  %s = kernel.shuffle xor %v, 1 width 32 mask 0 : f32
}

// -----
// CHECK: expected a 32- or 64-bit integer, got i16
kernel.func @k(%v: i16) grid(1, 1, 1) block(32, 1, 1) {
  %s = kernel.shuffle xor %v, 1 width 32 : i16
}

// -----
// CHECK: expected the destination in shared memory, got memref<4xf32>
kernel.func @k(%x: memref<4xf32>, %y: memref<4xf32>, %i: index) grid(1, 1, 1) block(1, 1, 1) {
  kernel.cp_async %x[%i] to %y[%i] bytes 16 : memref<4xf32> to memref<4xf32>
}

// -----
// CHECK: expected the source in global memory, got memref<4xf32, 3 : i64>
kernel.func @k(%i: index) grid(1, 1, 1) block(1, 1, 1) {
  %a = kernel.shared : memref<4xf32, 3 : i64>
  kernel.cp_async %a[%i] to %a[%i] bytes 16 : memref<4xf32, 3 : i64> to memref<4xf32, 3 : i64>
}

// -----
// CHECK: expected equal element types, got f32 and i32
kernel.func @k(%x: memref<4xf32>, %i: index) grid(1, 1, 1) block(1, 1, 1) {
  %a = kernel.shared : memref<4xi32, 3 : i64>
  kernel.cp_async %x[%i] to %a[%i] bytes 16 : memref<4xf32> to memref<4xi32, 3 : i64>
}

// -----
// CHECK: expected bytes in (4, 16), got 8
kernel.func @k(%x: memref<4xf32>, %i: index) grid(1, 1, 1) block(1, 1, 1) {
  %a = kernel.shared : memref<4xf32, 3 : i64>
  kernel.cp_async %x[%i] to %a[%i] bytes 8 : memref<4xf32> to memref<4xf32, 3 : i64>
}

// -----
// CHECK: expected bytes a multiple of the element size, got 4
kernel.func @k(%x: memref<4xf64>, %i: index) grid(1, 1, 1) block(1, 1, 1) {
  %a = kernel.shared : memref<4xf64, 3 : i64>
  kernel.cp_async %x[%i] to %a[%i] bytes 4 : memref<4xf64> to memref<4xf64, 3 : i64>
}

// -----
// CHECK: source: expected 2 indices, got 1
kernel.func @k(%x: memref<4x4xf32>, %i: index) grid(1, 1, 1) block(1, 1, 1) {
  %a = kernel.shared : memref<4xf32, 3 : i64>
  kernel.cp_async %x[%i] to %a[%i] bytes 16 : memref<4x4xf32> to memref<4xf32, 3 : i64>
}

// -----
// CHECK: expected pending groups in [0, 7], got 9
kernel.func @k() grid(1, 1, 1) block(1, 1, 1) {
  kernel.cp_async_wait 9
}

// -----
// CHECK: expected kernel.launch in host code, got it inside a kernel.func
kernel.func @k() grid(1, 1, 1) block(1, 1, 1) {
  kernel.launch @k()
}

// -----
// CHECK: expected @nope to be a kernel.func, got nothing
func.func @main() {
  kernel.launch @nope()
  func.return
}

// -----
// CHECK: @k: expected argument types (memref<4xf32>), got (memref<8xf32>)
kernel.func @k(%x: memref<4xf32>) grid(1, 1, 1) block(1, 1, 1) {
}
func.func @main(%y: memref<8xf32>) {
  kernel.launch @k(%y) : memref<8xf32>
  func.return
}

// -----
// CHECK: kernel.vector_load: expected 2 or more values of type f32 making 16, 8, 4 bytes, got 3 of ['f32', 'f32', 'f32']
kernel.func @k(%x: memref<16xf32>) grid(1, 1, 1) block(1, 1, 1) {
  %c0 = arith.constant 0 : index
  %a, %b, %c = kernel.vector_load %x[%c0] : memref<16xf32> -> f32, f32, f32
}

// -----
// CHECK: kernel.vector_store: expected 2 or more values of type f32 making 16, 8, 4 bytes, got 1 of ['f32']
kernel.func @k(%x: memref<16xf32>) grid(1, 1, 1) block(1, 1, 1) {
  %c0 = arith.constant 0 : index
  %v = arith.constant 0.000000e+00 : f32
  kernel.vector_store %v to %x[%c0] : f32 to memref<16xf32>
}

// -----
// CHECK: kernel.vector_store: expected the innermost dim of memref<6xf32> to be a multiple of 4 (aligned rows)
kernel.func @k(%x: memref<6xf32>) grid(1, 1, 1) block(1, 1, 1) {
  %c0 = arith.constant 0 : index
  %v = arith.constant 0.000000e+00 : f32
  kernel.vector_store %v, %v, %v, %v to %x[%c0] : f32, f32, f32, f32 to memref<6xf32>
}

// -----
// CHECK: kernel.ldmatrix: expected a shared memref of 16-bit elements, got memref<16x16xf16>
kernel.func @k(%x: memref<16x16xf16>) grid(1, 1, 1) block(32, 1, 1) {
  %c0 = arith.constant 0 : index
  %r0, %r1 = kernel.ldmatrix %x[%c0, %c0] : memref<16x16xf16> -> i32, i32
}

// -----
// CHECK: kernel.mma: expected type f16 or bf16, got f32
kernel.func @k() grid(1, 1, 1) block(32, 1, 1) {
  %i = arith.constant 0 : i32
  %z = arith.constant 0.000000e+00 : f32
  %d0, %d1, %d2, %d3 = kernel.mma f32 %i, %i, %i, %i, %i, %i, %z, %z, %z, %z
}

// -----
// CHECK: argument #0: memref<65536x65536xf32> has 2^31 elements or more (CUDA C indexes with int)
kernel.func @k(%x: memref<65536x65536xf32>) grid(1, 1, 1) block(1, 1, 1) {
}

// -----
// CHECK: expected grid(6, 1, 1): the blocks of its parts, got grid(4, 1, 1)
kernel.func @k(%x: memref<4xf32>) grid(4, 1, 1) block(32, 1, 1) {
  kernel.part "p" grid(2, 2, 1) {
  }
  kernel.part "p" grid(2, 1, 1) {
  }
}

// -----
// CHECK: expected a body of kernel.parts only, or none
kernel.func @k(%x: memref<4xf32>) grid(2, 1, 1) block(32, 1, 1) {
  kernel.part "p" grid(2, 1, 1) {
  }
  kernel.barrier
}

// -----
// CHECK: expected kernel.part directly in a kernel.func
kernel.func @k(%x: memref<4xf32>) grid(2, 1, 1) block(32, 1, 1) {
  kernel.part "p" grid(2, 1, 1) {
    kernel.part "p" grid(2, 1, 1) {
    }
  }
}

// -----
// CHECK: grid: expected sizes in [1, 2147483647], got 0
kernel.func @k(%x: memref<4xf32>) grid(1, 1, 1) block(32, 1, 1) {
  kernel.part "p" grid(0, 1, 1) {
  }
}
