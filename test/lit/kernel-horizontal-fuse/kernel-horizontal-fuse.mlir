// RUN: deplo-opt %s --split-input-file -p 'kernel-horizontal-fuse{model=false}' | filecheck %s
// RUN: deplo-opt %s --split-input-file -p 'kernel-horizontal-fuse{model=false},kernel-to-cuda' -t cuda | filecheck %s --check-prefix=CU
// RUN: deplo-opt %s --split-input-file -p kernel-horizontal-fuse | filecheck %s --check-prefix=MODEL

// Two projections of one input (q: 2 x 2 blocks, k: 2 blocks) and the add that reads q: q and
// k become one launch of 6 blocks (q's first); the add waits for it. Each part's shared buffer
// starts at offset 0 of dynamic shared memory; its block ids are its own.
// CHECK-LABEL: kernel.func @q_k(%x: memref<8x64xf32>, %wq: memref<64x64xf32>, %q: memref<8x64xf32>, %wk: memref<16x64xf32>, %k: memref<8x16xf32>) grid(6, 1, 1) block(64, 1, 1)
// CHECK-SAME:    origin = ["q: aten.linear in q", "k: aten.linear in k"]
// CHECK-NEXT:    kernel.part "q" grid(2, 2, 1) {
// CHECK:           kernel.block_id y
// CHECK:         kernel.part "k" grid(2, 1, 1) {
// CHECK-NOT:     kernel.func @q(
// CHECK-NOT:     kernel.func @k(
// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %q = memref.alloc() : memref<8x64xf32>
// CHECK-NEXT:    %k = memref.alloc() : memref<8x16xf32>
// CHECK-NEXT:    kernel.launch @q_k(%x, %wq, %q, %wk, %k)
// CHECK-NEXT:    %y = memref.alloc() : memref<8x64xf32>
// CHECK-NEXT:    kernel.launch @rope(%q, %y)
// CHECK-NEXT:    func.return %y, %k

// CU: // launch q_k({{.*}}): grid(6, 1, 1) block(64, 1, 1) smem 256
// CU:      extern __shared__ __align__(16) unsigned char kc_dyn_smem[];
// CU:      if ({{v[_0-9]*}} < 4) {
// CU:        const int bx = {{v[_0-9]*}} % 2;
// CU:        const int by = {{v[_0-9]*}} / 2;
// CU:        float* const s = reinterpret_cast<float*>(kc_dyn_smem + 0);
// CU:      if (([[B2:v[_0-9]*]] >= 4) & ([[B2]] < 6)) {
// CU:        const int bx_1 = {{v[_0-9]*}} - 4;
// CU:        float* const s_1 = reinterpret_cast<float*>(kc_dyn_smem + 0);
// CU:        const int row = (int)((unsigned int)bx_1 % 2u);

// With the model: q's 4 blocks and k's 2 are latency-bound launches, one launch is faster.
// MODEL-LABEL: kernel.func @q_k(
// MODEL: kernel.launch @q_k(
builtin.module {
  kernel.func @q(%x: memref<8x64xf32>, %w: memref<64x64xf32>, %out: memref<8x64xf32>) grid(2, 2, 1) block(64, 1, 1) attributes {origin = ["q: aten.linear in q"]} {
    %t = kernel.thread_id x
    %bx = kernel.block_id x
    %by = kernel.block_id y
    %s = kernel.shared : memref<64xf32, 3 : i64>
    %c0 = arith.constant 0 : index
    %v = memref.load %x[%bx, %t] : memref<8x64xf32>
    memref.store %v, %s[%t] : memref<64xf32, 3 : i64>
    kernel.barrier
    %a = memref.load %s[%c0] : memref<64xf32, 3 : i64>
    %b = memref.load %w[%t, %by] : memref<64x64xf32>
    %p = arith.mulf %a, %b : f32
    memref.store %p, %out[%bx, %t] : memref<8x64xf32>
  }
  kernel.func @k(%x: memref<8x64xf32>, %w: memref<16x64xf32>, %out: memref<8x16xf32>) grid(2, 1, 1) block(64, 1, 1) attributes {origin = ["k: aten.linear in k"]} {
    %t = kernel.thread_id x
    %bx = kernel.block_id x
    %s = kernel.shared : memref<64xf32, 3 : i64>
    %c0 = arith.constant 0 : index
    %v = memref.load %x[%bx, %t] : memref<8x64xf32>
    memref.store %v, %s[%t] : memref<64xf32, 3 : i64>
    kernel.barrier
    %c16 = arith.constant 16 : index
    %in = arith.cmpi ult, %t, %c16 : index
    %g = kernel.grid_dim x
    %row = arith.remui %bx, %g : index
    scf.if %in {
      %a = memref.load %s[%t] : memref<64xf32, 3 : i64>
      %b = memref.load %w[%t, %t] : memref<16x64xf32>
      %p = arith.mulf %a, %b : f32
      memref.store %p, %out[%row, %t] : memref<8x16xf32>
    }
  }
  kernel.func @rope(%q: memref<8x64xf32>, %y: memref<8x64xf32>) grid(8, 1, 1) block(64, 1, 1) {
    %t = kernel.thread_id x
    %bx = kernel.block_id x
    %v = memref.load %q[%bx, %t] : memref<8x64xf32>
    %r = arith.addf %v, %v : f32
    memref.store %r, %y[%bx, %t] : memref<8x64xf32>
  }
  func.func @main(%x: memref<8x64xf32>, %wq: memref<64x64xf32>, %wk: memref<16x64xf32>) -> (memref<8x64xf32>, memref<8x16xf32>) {
    %q = memref.alloc() : memref<8x64xf32>
    kernel.launch @q(%x, %wq, %q) : memref<8x64xf32>, memref<64x64xf32>, memref<8x64xf32>
    %y = memref.alloc() : memref<8x64xf32>
    kernel.launch @rope(%q, %y) : memref<8x64xf32>, memref<8x64xf32>
    %k = memref.alloc() : memref<8x16xf32>
    kernel.launch @k(%x, %wk, %k) : memref<8x64xf32>, memref<16x64xf32>, memref<8x16xf32>
    func.return %y, %k : memref<8x64xf32>, memref<8x16xf32>
  }
}

// -----

// What stays apart: a launch that reads another's output (@b after @a), block sizes that
// differ (@c), one kernel twice (its split-K arrival counters would be shared), and launches on
// either side of a func.call. Where a launch writes an argument,
// the arguments count as one buffer (a caller may pass one as both): @d writes %o, @e reads %p.
// CHECK-LABEL: func.func @apart
// CHECK:         kernel.launch @a(%x, %t1)
// CHECK-NEXT:    kernel.launch @b(%t1, %t2)
// CHECK-NEXT:    kernel.launch @c(%x, %t3)
// CHECK-NEXT:    kernel.launch @c(%x, %t4)
// CHECK-NEXT:    func.call @other()
// CHECK-NEXT:    kernel.launch @d(%x, %o)
// CHECK-NEXT:    kernel.launch @e(%p, %t2)
// A call's result may be what was passed to it: @d writes %t1, @e reads %r.
// CHECK:         %r = func.call @same(%t1)
// CHECK-NEXT:    kernel.launch @d(%x, %t1)
// CHECK-NEXT:    kernel.launch @e(%r, %t3)
builtin.module {
  kernel.func @a(%x: memref<64xf32>, %y: memref<64xf32>) grid(1, 1, 1) block(64, 1, 1) {
    %t = kernel.thread_id x
    %v = memref.load %x[%t] : memref<64xf32>
    memref.store %v, %y[%t] : memref<64xf32>
  }
  kernel.func @b(%x: memref<64xf32>, %y: memref<64xf32>) grid(1, 1, 1) block(64, 1, 1) {
    %t = kernel.thread_id x
    %v = memref.load %x[%t] : memref<64xf32>
    memref.store %v, %y[%t] : memref<64xf32>
  }
  kernel.func @c(%x: memref<64xf32>, %y: memref<64xf32>) grid(1, 1, 1) block(32, 2, 1) {
    %t = kernel.thread_id x
    %v = memref.load %x[%t] : memref<64xf32>
    memref.store %v, %y[%t] : memref<64xf32>
  }
  kernel.func @d(%x: memref<64xf32>, %y: memref<64xf32>) grid(1, 1, 1) block(64, 1, 1) {
    %t = kernel.thread_id x
    %v = memref.load %x[%t] : memref<64xf32>
    memref.store %v, %y[%t] : memref<64xf32>
  }
  kernel.func @e(%x: memref<64xf32>, %y: memref<64xf32>) grid(1, 1, 1) block(64, 1, 1) {
    %t = kernel.thread_id x
    %v = memref.load %x[%t] : memref<64xf32>
    memref.store %v, %y[%t] : memref<64xf32>
  }
  func.func @other() {
    func.return
  }
  func.func @same(%a: memref<64xf32>) -> memref<64xf32> {
    func.return %a : memref<64xf32>
  }
  func.func @apart(%x: memref<64xf32>, %o: memref<64xf32>, %p: memref<64xf32>) {
    %t1 = memref.alloc() : memref<64xf32>
    %t2 = memref.alloc() : memref<64xf32>
    %t3 = memref.alloc() : memref<64xf32>
    %t4 = memref.alloc() : memref<64xf32>
    kernel.launch @a(%x, %t1) : memref<64xf32>, memref<64xf32>
    kernel.launch @b(%t1, %t2) : memref<64xf32>, memref<64xf32>
    kernel.launch @c(%x, %t3) : memref<64xf32>, memref<64xf32>
    kernel.launch @c(%x, %t4) : memref<64xf32>, memref<64xf32>
    func.call @other() : () -> ()
    kernel.launch @d(%x, %o) : memref<64xf32>, memref<64xf32>
    kernel.launch @e(%p, %t2) : memref<64xf32>, memref<64xf32>
    %r = func.call @same(%t1) : (memref<64xf32>) -> memref<64xf32>
    kernel.launch @d(%x, %t1) : memref<64xf32>, memref<64xf32>
    kernel.launch @e(%r, %t3) : memref<64xf32>, memref<64xf32>
    func.return
  }
}

// -----

// The model refuses what would be slower: fused, @wide's 16384 blocks would each reserve
// @staged's 160 KB of shared memory (a block's is its largest part's), one block an SM: too few
// loads in flight for its 32 MB (the model: 28 us against 14 + 3.4 apart).
// MODEL-LABEL: func.func @occupancy
// MODEL-NEXT:    %y = memref.alloc()
// MODEL-NEXT:    %z = memref.alloc()
// MODEL-NEXT:    kernel.launch @wide(%x, %y)
// MODEL-NEXT:    kernel.launch @staged(%x, %z)
builtin.module {
  kernel.func @wide(%x: memref<4194304xf32>, %y: memref<4194304xf32>) grid(16384, 1, 1) block(256, 1, 1) {
    %t = kernel.thread_id x
    %b = kernel.block_id x
    %c256 = arith.constant 256 : index
    %o = arith.muli %b, %c256 : index
    %i = arith.addi %o, %t : index
    %v = memref.load %x[%i] : memref<4194304xf32>
    %e = math.exp %v : f32
    memref.store %e, %y[%i] : memref<4194304xf32>
  }
  kernel.func @staged(%x: memref<4194304xf32>, %z: memref<256xf32>) grid(1, 1, 1) block(256, 1, 1) {
    %t = kernel.thread_id x
    %s = kernel.shared : memref<40960xf32, 3 : i64>
    %v = memref.load %x[%t] : memref<4194304xf32>
    memref.store %v, %s[%t] : memref<40960xf32, 3 : i64>
    kernel.barrier
    %w = memref.load %s[%t] : memref<40960xf32, 3 : i64>
    memref.store %w, %z[%t] : memref<256xf32>
  }
  func.func @occupancy(%x: memref<4194304xf32>) -> (memref<4194304xf32>, memref<256xf32>) {
    %y = memref.alloc() : memref<4194304xf32>
    %z = memref.alloc() : memref<256xf32>
    kernel.launch @wide(%x, %y) : memref<4194304xf32>, memref<4194304xf32>
    kernel.launch @staged(%x, %z) : memref<4194304xf32>, memref<256xf32>
    func.return %y, %z : memref<4194304xf32>, memref<256xf32>
  }
}

// -----

// A kernel fused in one function and still launched alone in another stays; fused grids stop
// at 2^31 - 1 blocks (CUDA's grid.x).
// CHECK-LABEL: kernel.func @p2(
// CHECK:       kernel.func @p2_r2(
// CHECK:         kernel.part "p2" grid(1, 1, 1)
// CHECK:         kernel.part "r2" grid(1, 1, 1)
// CHECK-LABEL: func.func @alone
// CHECK-NEXT:    %c = memref.alloc()
// CHECK-NEXT:    kernel.launch @p2(%x, %c)
// CHECK-LABEL: func.func @huge
// CHECK:         kernel.launch @h1(%x, %a)
// CHECK-NEXT:    kernel.launch @h2(%x, %b)
builtin.module {
  kernel.func @p2(%x: memref<64xf32>, %y: memref<64xf32>) grid(1, 1, 1) block(64, 1, 1) {
    %t = kernel.thread_id x
    %v = memref.load %x[%t] : memref<64xf32>
    memref.store %v, %y[%t] : memref<64xf32>
  }
  kernel.func @r2(%x: memref<64xf32>, %y: memref<64xf32>) grid(1, 1, 1) block(64, 1, 1) {
    %t = kernel.thread_id x
    %v = memref.load %x[%t] : memref<64xf32>
    memref.store %v, %y[%t] : memref<64xf32>
  }
  kernel.func @h1(%x: memref<64xf32>, %y: memref<64xf32>) grid(2000000000, 1, 1) block(64, 1, 1) {
    %t = kernel.thread_id x
    %v = memref.load %x[%t] : memref<64xf32>
    memref.store %v, %y[%t] : memref<64xf32>
  }
  kernel.func @h2(%x: memref<64xf32>, %y: memref<64xf32>) grid(2000000000, 1, 1) block(64, 1, 1) {
    %t = kernel.thread_id x
    %v = memref.load %x[%t] : memref<64xf32>
    memref.store %v, %y[%t] : memref<64xf32>
  }
  func.func @both(%x: memref<64xf32>) -> (memref<64xf32>, memref<64xf32>) {
    %a = memref.alloc() : memref<64xf32>
    %b = memref.alloc() : memref<64xf32>
    kernel.launch @p2(%x, %a) : memref<64xf32>, memref<64xf32>
    kernel.launch @r2(%x, %b) : memref<64xf32>, memref<64xf32>
    func.return %a, %b : memref<64xf32>, memref<64xf32>
  }
  func.func @alone(%x: memref<64xf32>) -> memref<64xf32> {
    %c = memref.alloc() : memref<64xf32>
    kernel.launch @p2(%x, %c) : memref<64xf32>, memref<64xf32>
    func.return %c : memref<64xf32>
  }
  func.func @huge(%x: memref<64xf32>) -> (memref<64xf32>, memref<64xf32>) {
    %a = memref.alloc() : memref<64xf32>
    %b = memref.alloc() : memref<64xf32>
    kernel.launch @h1(%x, %a) : memref<64xf32>, memref<64xf32>
    kernel.launch @h2(%x, %b) : memref<64xf32>, memref<64xf32>
    func.return %a, %b : memref<64xf32>, memref<64xf32>
  }
}
