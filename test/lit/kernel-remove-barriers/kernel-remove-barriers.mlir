// RUN: deplo-opt %s --split-input-file -p kernel-remove-barriers | filecheck %s
// RUN: deplo-opt %s --split-input-file -p loop-to-tile,tile-register-tile,tile-map-2d,tile-chunk-reduce,tile-stage-chunks,tile-to-kernel,kernel-remove-barriers | filecheck %s --check-prefix=MM

// Before the first write of shared memory, after its last read, and the second of two
// back-to-back barriers: nothing to order. The one between the write and the read of another
// thread's element stays.
// CHECK-LABEL: kernel.func @transpose_row
// CHECK:         %v = memref.load %x[%t] : memref<64xf32>
// CHECK-NEXT:    memref.store %v, %buf[%t] : memref<64xf32, 3 : i64>
// CHECK-NEXT:    kernel.barrier
// CHECK-NEXT:    %c63 = arith.constant 63 : index
// CHECK-NOT:     kernel.barrier
// CHECK:         memref.store %w, %y[%t] : memref<64xf32>
// CHECK-NEXT:  }
builtin.module {
  kernel.func @transpose_row(%x: memref<64xf32>, %y: memref<64xf32>) grid(1, 1, 1) block(64, 1, 1) {
    %t = kernel.thread_id x
    %buf = kernel.shared : memref<64xf32, 3 : i64>
    %v = memref.load %x[%t] : memref<64xf32>
    kernel.barrier
    memref.store %v, %buf[%t] : memref<64xf32, 3 : i64>
    kernel.barrier
    kernel.barrier
    %c63 = arith.constant 63 : index
    %r = arith.subi %c63, %t : index
    %w = memref.load %buf[%r] : memref<64xf32, 3 : i64>
    memref.store %w, %y[%t] : memref<64xf32>
    kernel.barrier
  }
}

// -----

// Two buffers filled one after the other: the barrier between the two fills orders writes of
// %a before it with writes of %b after it, which do not conflict: removed.
// CHECK-LABEL: kernel.func @two_fills
// CHECK:         memref.store %v, %a[%t]
// CHECK-NEXT:    memref.store %v, %b[%t]
// CHECK-NEXT:    kernel.barrier
// CHECK-NOT:     kernel.barrier
builtin.module {
  kernel.func @two_fills(%x: memref<64xf32>, %y: memref<64xf32>) grid(1, 1, 1) block(64, 1, 1) {
    %t = kernel.thread_id x
    %a = kernel.shared : memref<64xf32, 3 : i64>
    %b = kernel.shared : memref<64xf32, 3 : i64>
    %v = memref.load %x[%t] : memref<64xf32>
    memref.store %v, %a[%t] : memref<64xf32, 3 : i64>
    kernel.barrier
    memref.store %v, %b[%t] : memref<64xf32, 3 : i64>
    kernel.barrier
    %c63 = arith.constant 63 : index
    %r = arith.subi %c63, %t : index
    %p = memref.load %a[%r] : memref<64xf32, 3 : i64>
    %q = memref.load %b[%r] : memref<64xf32, 3 : i64>
    %s = arith.addf %p, %q : f32
    memref.store %s, %y[%t] : memref<64xf32>
  }
}

// -----

// In a loop, the barrier before the refill orders it after the previous iteration's reads (around
// the back edge): both stay.
// CHECK-LABEL: kernel.func @negative_refill
// CHECK:         scf.for
// CHECK-NEXT:      memref.load %x
// CHECK-NEXT:      kernel.barrier
// CHECK-NEXT:      memref.store
// CHECK-NEXT:      kernel.barrier
builtin.module {
  kernel.func @negative_refill(%x: memref<4x64xf32>, %y: memref<4x64xf32>) grid(1, 1, 1) block(64, 1, 1) {
    %t = kernel.thread_id x
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c63 = arith.constant 63 : index
    %buf = kernel.shared : memref<64xf32, 3 : i64>
    scf.for %i = %c0 to %c4 step %c1 {
      %v = memref.load %x[%i, %t] : memref<4x64xf32>
      kernel.barrier
      memref.store %v, %buf[%t] : memref<64xf32, 3 : i64>
      kernel.barrier
      %r = arith.subi %c63, %t : index
      %w = memref.load %buf[%r] : memref<64xf32, 3 : i64>
      memref.store %w, %y[%i, %t] : memref<4x64xf32>
    }
  }
}

// -----

// The matmul's K-chunk loop: one barrier before the refill of the tiles (the previous chunk read
// them) and one after (this chunk reads them): both needed.
// MM-LABEL:    kernel.func @matmul
// MM:            scf.for %r0o
// MM:              kernel.barrier
// MM-NEXT:         scf.for %i = %lt
// MM:              scf.for %i_1 = %lt
// MM:              kernel.barrier
// MM-NEXT:         scf.for %r0i
// MM-NOT:          kernel.barrier
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
