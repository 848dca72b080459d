// RUN: deplo-opt %s --split-input-file -p "loop-to-tile,tile-register-tile{transpose=false},tile-map-2d{threads_m=16 threads_n=16},tile-chunk-reduce,tile-stage-chunks,tile-to-kernel,kernel-vectorize" | filecheck %s
// RUN: deplo-opt %s --split-input-file -p "loop-to-tile,tile-register-tile{transpose=false},tile-map-2d{threads_m=16 threads_n=16},tile-chunk-reduce,tile-stage-chunks,tile-cp-async,tile-to-kernel,kernel-vectorize" | filecheck %s --check-prefix=ASYNC
// RUN: deplo-opt %s --split-input-file -p "loop-to-tile,tile-register-tile{transpose=true},tile-map-2d{threads_m=16 threads_n=16},tile-chunk-reduce,tile-stage-chunks,tile-to-kernel,kernel-vectorize" | filecheck %s --check-prefix=TRANS

// The stage copies go by pieces of 4 fp32 (tile-to-kernel): each piece is one 128-bit load and
// one 128-bit store; the 4 columns of B a thread reads per K step are one 128-bit shared load;
// each row of the 4 x 4 register tile is stored with one 128-bit store (all under the guard of
// the thread's tile column: the pieces of one guard are in one block).
// CHECK-LABEL: kernel.func @matmul(
// CHECK:           scf.for %i = %lt to %c512 step %c256 {
// CHECK:             %[[A0:[0-9a-z_]+]], %[[A1:[0-9a-z_]+]], %[[A2:[0-9a-z_]+]], %[[A3:[0-9a-z_]+]] = kernel.vector_load %x0[%{{.*}}, %{{.*}}] : memref<64x96xf32> -> f32, f32, f32, f32
// CHECK-NEXT:        kernel.vector_store %[[A0]], %[[A1]], %[[A2]], %[[A3]] to %x0s[%{{.*}}, %{{.*}}] : f32, f32, f32, f32 to memref<64x32xf32, 3 : i64>
// CHECK-NOT:         memref.load %x0[
// CHECK:             scf.if
// CHECK-NEXT:          kernel.vector_load %x1[
// CHECK-NEXT:          kernel.vector_store {{.*}} to %x1s[
// CHECK:             } else {
// CHECK:               kernel.vector_store %[[Z:[0-9a-z_]+]], %[[Z]], %[[Z]], %[[Z]] to %x1s[
// CHECK:             %b, %b_1, %b_2, %b_3 = kernel.vector_load %x1s[%r0i, %{{.*}}] : memref<32x64xf32, 3 : i64> -> f32, f32, f32, f32
// CHECK:         scf.if %in {
// CHECK-NEXT:      kernel.vector_store %s, %s_1, %s_2, %s_3 to %out[%a0r0, %a1r0] : f32, f32, f32, f32 to memref<64x80xf32>
// CHECK-COUNT-3:   kernel.vector_store
// CHECK-NOT:       memref.store %{{.*}}, %out
// A stored k-major (`transpose`): its copy still loads 128 bits of a row of A, but stores them
// down a column of the [k][m] stage, element by element; the 4 rows of A a thread reads per K
// step are then one 128-bit shared load, like B's columns.
// TRANS-LABEL: kernel.func @matmul(
// TRANS:           %x0s = kernel.shared : memref<32x64xf32, 3 : i64>
// TRANS:           %[[T0:[0-9a-z_]+]], %[[T1:[0-9a-z_]+]], %{{.*}}, %{{.*}} = kernel.vector_load %x0[%{{.*}}, %{{.*}}] : memref<64x96xf32> -> f32, f32, f32, f32
// TRANS-NEXT:      memref.store %[[T0]], %x0s[%[[K0:[0-9a-z_]+]], %[[M:[0-9a-z_]+]]]
// TRANS:           memref.store %[[T1]], %x0s[%{{.*}}, %[[M]]]
// TRANS:           %a, %a_1, %a_2, %a_3 = kernel.vector_load %x0s[%r0i, %{{.*}}] : memref<32x64xf32, 3 : i64> -> f32, f32, f32, f32
// TRANS:           kernel.vector_load %x1s[%r0i, %{{.*}}]

// cp.async copies are already 16 bytes: only the shared reads and the stores are merged.
// ASYNC-LABEL: kernel.func @matmul(
// ASYNC:           kernel.cp_async %x0[{{.*}}] bytes 16
// ASYNC:           kernel.vector_load %x1s[
// ASYNC:         kernel.vector_store %s, %s_1, %s_2, %s_3 to %out[%a0r0, %a1r0]

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

// -----

// K = 53 and 70 columns: A's rows and the output rows are not multiples of 4 fp32, and the
// 70 columns leave the last tile's columns clamped (guards differ per column): nothing of x0
// or out is merged.
// CHECK-LABEL: kernel.func @bmm(
// CHECK-NOT:     kernel.vector_load %x0[
// CHECK-NOT:     kernel.vector_store {{.*}} to %out
// ASYNC-LABEL: kernel.func @bmm(
// ASYNC-NOT:     kernel.vector_store {{.*}} to %out

builtin.module {
  loop.kernel @bmm(%x0: memref<2x37x53xf32>, %x1: memref<2x53x70xf32>, %out: memref<2x37x70xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    loop.for %a0 = 0 to 2 free {
      loop.for %a1 = 0 to 37 free {
        loop.for %a2 = 0 to 70 free {
          %s = loop.for %r0 = 0 to 53 reduce iter(%acc = %zero) -> f32 {
            %a = loop.load %x0[%a0, %a1, %r0] : memref<2x37x53xf32>
            %b = loop.load %x1[%a0, %r0, %a2] : memref<2x53x70xf32>
            %p = arith.mulf %a, %b : f32
            %n = arith.addf %acc, %p : f32
            loop.yield %n : f32
          }
          loop.store %s, %out[%a0, %a1, %a2] : memref<2x37x70xf32>
        }
      }
    }
  }
}

// -----

// Four consecutive loads from element 1 on (not 16-byte aligned): no 128-bit load, but the
// 8-byte aligned pair in the middle is one 64-bit load; four stores with a barrier in the middle:
// no 128-bit store, a 64-bit one on each side of it. The aligned run of stores after them is one
// 128-bit store.
// CHECK-LABEL: kernel.func @negative_misaligned
// CHECK:         %a = memref.load %x[%c1]
// CHECK-NEXT:    %b, %c = kernel.vector_load %x[%c2] : memref<8xf32> -> f32, f32
// CHECK-NEXT:    %d = memref.load %x[%c4]
// CHECK-NEXT:    kernel.vector_store %a, %b to %buf[%c0] : f32, f32 to memref<8xf32, 3 : i64>
// CHECK-NEXT:    kernel.barrier
// CHECK-NEXT:    kernel.vector_store %c, %d to %buf[%c2] : f32, f32 to memref<8xf32, 3 : i64>
// CHECK-NEXT:    kernel.vector_store %a, %b, %c, %d to %y[%c0] : f32, f32, f32, f32 to memref<8xf32>
// ASYNC-LABEL: kernel.func @negative_misaligned
// ASYNC:         %a = memref.load %x[%c1]
// ASYNC-NEXT:    %b, %c = kernel.vector_load %x[%c2] : memref<8xf32> -> f32, f32
builtin.module {
  kernel.func @negative_misaligned(%x: memref<8xf32>, %y: memref<8xf32>) grid(1, 1, 1) block(1, 1, 1) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %buf = kernel.shared : memref<8xf32, 3 : i64>
    %a = memref.load %x[%c1] : memref<8xf32>
    %b = memref.load %x[%c2] : memref<8xf32>
    %c = memref.load %x[%c3] : memref<8xf32>
    %d = memref.load %x[%c4] : memref<8xf32>
    memref.store %a, %buf[%c0] : memref<8xf32, 3 : i64>
    memref.store %b, %buf[%c1] : memref<8xf32, 3 : i64>
    kernel.barrier
    memref.store %c, %buf[%c2] : memref<8xf32, 3 : i64>
    memref.store %d, %buf[%c3] : memref<8xf32, 3 : i64>
    memref.store %a, %y[%c0] : memref<8xf32>
    memref.store %b, %y[%c1] : memref<8xf32>
    memref.store %c, %y[%c2] : memref<8xf32>
    memref.store %d, %y[%c3] : memref<8xf32>
  }
}
