// RUN: deplo-opt %s --split-input-file -p loop-to-tile,tile-map-grid,tile-cooperative-reduce{vector=1},tile-map-threads,tile-stage-inputs,tile-to-kernel | filecheck %s
// RUN: deplo-opt %s --split-input-file -p "loop-to-tile,tile-map-grid,tile-cooperative-reduce{threads=32 vector=1},tile-stage-inputs,tile-cp-async{copy=cp_async},tile-to-kernel" | filecheck %s --check-prefix=ALT

// RMSNorm, default schedule (a0, of extent 1, is no loop): the staged row is copied by all
// threads, in 16-byte pieces of 4 elements (kernel-vectorize makes each one access), then a barrier; the
// combine is a shuffle tree, lane 0 of each of the 8 warps writes its partial (guarded, no
// barrier inside the guard), a barrier, then every thread adds the 8 partials.
// CHECK-LABEL: kernel.func @rms_norm({{.*}}) grid(32, 1, 1) block(256, 1, 1) {
// CHECK-DAG:     %[[BID:.*]] = kernel.block_id x
// CHECK-DAG:     %[[XS:.*]] = kernel.shared : memref<2048xf32, 3 : i64>
// CHECK-DAG:     %[[TID:.*]] = kernel.thread_id x
// CHECK-DAG:     %[[PART:.*]] = kernel.shared : memref<8xf32, 3 : i64>
// CHECK:         scf.for %[[I:.*]] = %[[TID]] to %c512 step %c256 {
// CHECK-NEXT:      %[[E:.*]] = arith.muli %[[I]], %c4 : index
// CHECK-NEXT:      %[[V:.*]] = memref.load %x[%c0, %[[BID]], %[[E]]] : memref<1x32x2048xf32>
// CHECK-NEXT:      memref.store %[[V]], %[[XS]][%[[E]]] : memref<2048xf32, 3 : i64>
// CHECK-COUNT-3:   memref.store %{{.*}}, %[[XS]]
// CHECK:         kernel.barrier
// CHECK-NEXT:    %[[P:.*]] = scf.for %a2 = %[[TID]] to %c2048 step %c256 iter_args(%acc = %zero) -> (f32) {
// CHECK-NEXT:      memref.load %[[XS]][%a2]
// CHECK:         %[[S16:.*]] = kernel.shuffle xor %[[P]], 16 width 32 : f32
// CHECK:         kernel.shuffle xor %{{.*}}, 1 width 32 : f32
// CHECK-NEXT:    %[[W:.*]] = arith.addf
// CHECK-NEXT:    %[[WARP:.*]] = arith.divsi %[[TID]], %c32 : index
// CHECK-NEXT:    %[[LANE:.*]] = arith.remsi %[[TID]], %c32 : index
// CHECK-NEXT:    %[[FIRST:.*]] = arith.cmpi eq, %[[LANE]], %c0 : index
// CHECK-NEXT:    scf.if %[[FIRST]] {
// CHECK-NEXT:      memref.store %[[W]], %[[PART]][%[[WARP]]]
// CHECK-NEXT:    }
// CHECK-NEXT:    kernel.barrier
// CHECK-COUNT-8: memref.load %[[PART]]
// CHECK:         %ss = arith.addf
// CHECK-NOT:     kernel.barrier
// CHECK:         scf.for %a3 = %[[TID]] to %c2048 step %c256 {
// CHECK:           memref.store %o, %out[%c0, %[[BID]], %a3]
// CHECK:       kernel.launch @rms_norm(%x, %w, %out)

// One warp: shuffles only. cp.async copies 16 bytes at a time, then commit, wait, barrier.
// ALT-LABEL:   kernel.func @rms_norm({{.*}}) grid(32, 1, 1) block(32, 1, 1) {
// ALT:           scf.for %[[I:.*]] = %{{.*}} to %c512 step %c32 {
// ALT-NEXT:        %[[E:.*]] = arith.muli %[[I]], %c4 : index
// ALT-NEXT:        kernel.cp_async %x[%c0, %{{.*}}, %[[E]]] to %{{.*}}[%[[E]]] bytes 16
// ALT:           kernel.cp_async_commit
// ALT-NEXT:      kernel.cp_async_wait 0
// ALT-NEXT:      kernel.barrier
// ALT:           kernel.shuffle xor %p, 16 width 32 : f32
// ALT-NOT:       kernel.barrier
// ALT:           %ss = arith.addf

builtin.module {
  loop.kernel @rms_norm(%x: memref<1x32x2048xf32>, %w: memref<2048xf32>, %out: memref<1x32x2048xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    %n = arith.constant 2.048000e+03 : f32
    %eps = arith.constant 9.99999997e-07 : f32
    loop.for %a0 = 0 to 1 free {
      loop.for %a1 = 0 to 32 free {
        %ss = loop.for %a2 = 0 to 2048 reduce iter(%acc = %zero) -> f32 {
          %v = loop.load %x[%a0, %a1, %a2] : memref<1x32x2048xf32>
          %sq = arith.mulf %v, %v : f32
          %s = arith.addf %acc, %sq : f32
          loop.yield %s : f32
        }
        %mean = arith.divf %ss, %n : f32
        %me = arith.addf %mean, %eps : f32
        %r = math.rsqrt %me : f32
        loop.for %a3 = 0 to 2048 free {
          %v2 = loop.load %x[%a0, %a1, %a3] : memref<1x32x2048xf32>
          %wv = loop.load %w[%a3] : memref<2048xf32>
          %y = arith.mulf %v2, %r : f32
          %o = arith.mulf %y, %wv : f32
          loop.store %o, %out[%a0, %a1, %a3] : memref<1x32x2048xf32>
        }
      }
    }
  }
  func.func @main(%x: memref<1x32x2048xf32>, %w: memref<2048xf32>) -> memref<1x32x2048xf32> {
    %out = memref.alloc() : memref<1x32x2048xf32>
    loop.launch @rms_norm(%x, %w, %out) : memref<1x32x2048xf32>, memref<2048xf32>, memref<1x32x2048xf32>
    func.return %out : memref<1x32x2048xf32>
  }
}

// -----

// relu((x + b) @ w): 16 columns on a warp, threads past 16 skip the body.
// CHECK-LABEL: kernel.func @relu_matmul({{.*}}) grid(16, 1, 1) block(32, 1, 1) {
// CHECK:         %[[IN:.*]] = arith.cmpi ult, %tid_x, %c16 : index
// CHECK-NEXT:    scf.if %[[IN]] {
// CHECK-NEXT:      %acc = scf.for %a2 = %c0 to %c64 step %c1 iter_args(%s = %zero) -> (f32) {
// CHECK-NEXT:        %xv = memref.load %x[%bid_x, %a2] : memref<16x64xf32>
// CHECK-NEXT:        %bv = memref.load %b[%a2] : memref<64xf32>
// CHECK:             %wv = memref.load %w[%a2, %tid_x] : memref<64x16xf32>
// CHECK:           memref.store %r, %out[%bid_x, %tid_x] : memref<16x16xf32>
// CHECK:       kernel.launch @relu_matmul

// Blocks only: one thread per block runs the serial loops.
// ALT-LABEL:   kernel.func @relu_matmul({{.*}}) grid(16, 1, 1) block(1, 1, 1) {
// ALT:           scf.for %a1 = %c0 to %c16 step %c1 {
// ALT-NEXT:        %acc = scf.for %a2 = %c0 to %c64 step %c1 iter_args(%s = %zero) -> (f32) {
// ALT:             memref.store %r, %out[%bid_x, %a1]

builtin.module {
  loop.kernel @relu_matmul(%x: memref<16x64xf32>, %b: memref<64xf32>, %w: memref<64x16xf32>, %out: memref<16x16xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    loop.for %a0 = 0 to 16 free {
      loop.for %a1 = 0 to 16 free {
        %acc = loop.for %a2 = 0 to 64 reduce iter(%s = %zero) -> f32 {
          %xv = loop.load %x[%a0, %a2] : memref<16x64xf32>
          %bv = loop.load %b[%a0, %a2] map (d0, d1) -> (d1) : memref<64xf32>
          %xb = arith.addf %xv, %bv : f32
          %wv = loop.load %w[%a2, %a1] : memref<64x16xf32>
          %p = arith.mulf %xb, %wv : f32
          %n = arith.addf %s, %p : f32
          loop.yield %n : f32
        }
        %r = arith.maximumf %acc, %zero : f32
        loop.store %r, %out[%a0, %a1] : memref<16x16xf32>
      }
    }
  }
  func.func @main(%x: memref<16x64xf32>, %b: memref<64xf32>, %w: memref<64x16xf32>) -> memref<16x16xf32> {
    %out = memref.alloc() : memref<16x16xf32>
    loop.launch @relu_matmul(%x, %b, %w, %out) : memref<16x64xf32>, memref<64xf32>, memref<64x16xf32>, memref<16x16xf32>
    func.return %out : memref<16x16xf32>
  }
}

// -----

// A loop.private buffer is each thread's own array (memref.alloca); every thread updates its
// copy, so its stores outside thread loops are not left to thread 0.
// CHECK-LABEL: kernel.func @carry(
// CHECK:         %[[ACC:.*]] = memref.alloca() : memref<4xf32>
// CHECK:         scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (f32) {
// CHECK:           scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NOT:         scf.if
// CHECK:             memref.store %{{.*}}, %[[ACC]][%[[J]]] : memref<4xf32>
builtin.module {
  loop.kernel @carry(%x: memref<3x5xf32>, %v: memref<5x4xf32>, %out: memref<3x4xf32>) {
    %z = arith.constant 0.000000e+00 : f32
    loop.for %i = 0 to 3 free {
      %acc = loop.private : memref<4xf32>
      loop.for %j = 0 to 4 free {
        loop.store %z, %acc[%j] : memref<4xf32>
      }
      %l = loop.for %s = 0 to 5 reduce iter(%b = %z) -> f32 {
        %p = loop.load %x[%i, %s] : memref<3x5xf32>
        loop.for %j1 = 0 to 4 free {
          %vv = loop.load %v[%s, %j1] : memref<5x4xf32>
          %o = loop.load %acc[%j1] : memref<4xf32>
          %pv = arith.mulf %p, %vv : f32
          %n = arith.addf %o, %pv : f32
          loop.store %n, %acc[%j1] : memref<4xf32>
        }
        %b2 = arith.addf %b, %p : f32
        loop.yield %b2 : f32
      }
      loop.for %j2 = 0 to 4 free {
        %o2 = loop.load %acc[%j2] : memref<4xf32>
        %r = arith.divf %o2, %l : f32
        loop.store %r, %out[%i, %j2] : memref<3x4xf32>
      }
    }
  }
  func.func @main(%x: memref<3x5xf32>, %v: memref<5x4xf32>) -> memref<3x4xf32> {
    %out = memref.alloc() : memref<3x4xf32>
    loop.launch @carry(%x, %v, %out) : memref<3x5xf32>, memref<5x4xf32>, memref<3x4xf32>
    func.return %out : memref<3x4xf32>
  }
}
