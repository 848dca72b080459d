// RUN: deplo-opt %s -p kernel-to-cuda --split-input-file --verify-diagnostics | filecheck %s

// A block reduction (RMSNorm of 8 rows of 1024): strided loop with an accumulator, warp shuffles,
// shared memory across the 8 warps, barrier, a broadcast, an elementwise epilogue.

// CHECK-LABEL: cuda.kernel @rms_norm(%x: !cuda.ptr<f32, const, restrict>, %w: !cuda.ptr<f32, const, restrict>, %out: !cuda.ptr<f32, restrict>) launch_bounds(256) {
// CHECK-DAG:     %[[C1024:.*]] = cuda.constant 1024 : i32
// CHECK-DAG:     %[[C256:.*]] = cuda.constant 256 : i32
// CHECK-DAG:     %[[ZERO:.*]] = cuda.constant 0.000000e+00 : f32
// CHECK:         %row = cuda.special blockIdx.x
// CHECK-NEXT:    %tid = cuda.special threadIdx.x
// CHECK-NEXT:    %partial = cuda.for %i = %tid to %[[C1024]] step %[[C256]] iter(%acc = %[[ZERO]]) -> (f32) : i32 {
// CHECK-NEXT:      %[[ROWSTRIDE:.*]] = cuda.constant 1024 : i32
// CHECK-NEXT:      %[[ROWOFF:.*]] = cuda.binary mul %row, %[[ROWSTRIDE]] : i32
// CHECK-NEXT:      %[[LIN:.*]] = cuda.binary add %[[ROWOFF]], %i : i32
// CHECK-NEXT:      %v = cuda.load %x[%[[LIN]]] : !cuda.ptr<f32, const, restrict>
// CHECK-NEXT:      %sq = cuda.binary mul %v, %v : f32
// CHECK-NEXT:      %next = cuda.binary add %acc, %sq : f32
// CHECK-NEXT:      cuda.yield %next : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[OFF16:.*]] = cuda.constant 16 : i32
// CHECK-NEXT:    %s16 = cuda.shfl xor %partial, %[[OFF16]] width 32 : f32
// CHECK:         %warp_sum = cuda.binary add %a2, %s1 : f32
// CHECK:         %lane = cuda.cast %{{.*}} : ui32 to i32
// CHECK:         %red = cuda.shared : !cuda.array<8xf32>
// CHECK-NEXT:    %first = cuda.compare eq %lane, %c0 : i32
// CHECK-NEXT:    cuda.if %first {
// CHECK-NEXT:      cuda.store %warp_sum, %red[%warp] : !cuda.array<8xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    cuda.syncthreads
// CHECK:         %has = cuda.compare lt %{{.*}}, %{{.*}} : ui32
// CHECK-NEXT:    %part = cuda.if %has -> (f32) {
// CHECK-NEXT:      %p = cuda.load %red[%lane] : !cuda.array<8xf32>
// CHECK-NEXT:      cuda.yield %p : f32
// CHECK-NEXT:    } else {
// CHECK-NEXT:      cuda.yield %zero : f32
// CHECK-NEXT:    }
// CHECK:         %total = cuda.shfl idx %sum8, %{{.*}} width 32 : f32
// CHECK:         %scale = cuda.call "rsqrtf"(%me) : (f32) -> f32
// CHECK-NEXT:    cuda.for %j = %tid to %c1024 step %c256 : i32 {
// CHECK:           cuda.store %y, %out[%{{.*}}] : !cuda.ptr<f32, restrict>
// CHECK-NEXT:    }
// CHECK-NEXT:  }
// CHECK-LABEL: func.func @main
// CHECK:         cuda.launch @rms_norm(%x, %w, %out) grid(8, 1, 1) block(256, 1, 1) smem(0) : memref<8x1024xf32>, memref<1024xf32>, memref<8x1024xf32>
kernel.func @rms_norm(%x: memref<8x1024xf32>, %w: memref<1024xf32>, %out: memref<8x1024xf32>) grid(8, 1, 1) block(256, 1, 1) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %c256 = arith.constant 256 : index
  %c1024 = arith.constant 1024 : index
  %zero = arith.constant 0.000000e+00 : f32
  %n = arith.constant 1.024000e+03 : f32
  %eps = arith.constant 9.99999997E-7 : f32
  %row = kernel.block_id x
  %tid = kernel.thread_id x
  %partial = scf.for %i = %tid to %c1024 step %c256 iter_args(%acc = %zero) -> (f32) {
    %v = memref.load %x[%row, %i] : memref<8x1024xf32>
    %sq = arith.mulf %v, %v : f32
    %next = arith.addf %acc, %sq : f32
    scf.yield %next : f32
  }
  %s16 = kernel.shuffle xor %partial, 16 width 32 : f32
  %a16 = arith.addf %partial, %s16 : f32
  %s8 = kernel.shuffle xor %a16, 8 width 32 : f32
  %a8 = arith.addf %a16, %s8 : f32
  %s4 = kernel.shuffle xor %a8, 4 width 32 : f32
  %a4 = arith.addf %a8, %s4 : f32
  %s2 = kernel.shuffle xor %a4, 2 width 32 : f32
  %a2 = arith.addf %a4, %s2 : f32
  %s1 = kernel.shuffle xor %a2, 1 width 32 : f32
  %warp_sum = arith.addf %a2, %s1 : f32
  %lane = arith.remui %tid, %c32 : index
  %warp = arith.divui %tid, %c32 : index
  %red = kernel.shared : memref<8xf32, 3 : i64>
  %first = arith.cmpi eq, %lane, %c0 : index
  scf.if %first {
    memref.store %warp_sum, %red[%warp] : memref<8xf32, 3 : i64>
  }
  kernel.barrier
  %has = arith.cmpi ult, %lane, %c8 : index
  %part = scf.if %has -> (f32) {
    %p = memref.load %red[%lane] : memref<8xf32, 3 : i64>
    scf.yield %p : f32
  } else {
    scf.yield %zero : f32
  }
  %t4 = kernel.shuffle xor %part, 4 width 8 : f32
  %b4 = arith.addf %part, %t4 : f32
  %t2 = kernel.shuffle xor %b4, 2 width 8 : f32
  %b2 = arith.addf %b4, %t2 : f32
  %t1 = kernel.shuffle xor %b2, 1 width 8 : f32
  %sum8 = arith.addf %b2, %t1 : f32
  %total = kernel.shuffle idx %sum8, 0 width 32 : f32
  %mean = arith.divf %total, %n : f32
  %me = arith.addf %mean, %eps : f32
  %scale = math.rsqrt %me : f32
  scf.for %j = %tid to %c1024 step %c256 {
    %v = memref.load %x[%row, %j] : memref<8x1024xf32>
    %wj = memref.load %w[%j] : memref<1024xf32>
    %xs = arith.mulf %v, %scale : f32
    %y = arith.mulf %xs, %wj : f32
    memref.store %y, %out[%row, %j] : memref<8x1024xf32>
  }
}
func.func @main(%x: memref<8x1024xf32>, %w: memref<1024xf32>) -> memref<8x1024xf32> {
  %out = memref.alloc() : memref<8x1024xf32>
  kernel.launch @rms_norm(%x, %w, %out) : memref<8x1024xf32>, memref<1024xf32>, memref<8x1024xf32>
  func.return %out : memref<8x1024xf32>
}

// -----
// Scalar forms: half arithmetic in float, unsigned and floor division, unordered compares,
// min/max, casts, cp.async, a loop with two accumulators.

// CHECK-LABEL: cuda.kernel @scalars(%h: !cuda.ptr<f16, restrict>, %x: !cuda.ptr<f32, const, restrict>, %n: i32) launch_bounds(64) {
// CHECK:         %hv = cuda.load %h[%t] : !cuda.ptr<f16, restrict>
// CHECK-NEXT:    %[[HF:.*]] = cuda.cast %hv : f16 to f32
// CHECK-NEXT:    %[[E:.*]] = cuda.call "expf"(%[[HF]]) : (f32) -> f32
// CHECK-NEXT:    %he = cuda.cast %[[E]] : f32 to f16
// CHECK:         %[[Q:.*]] = cuda.binary div %t, %n : i32
// CHECK:         %fd = cuda.select %{{.*}}, %{{.*}}, %[[Q]] : i32
// CHECK:         %[[LE:.*]] = cuda.compare le %xv, %xv : f32
// CHECK-NEXT:    %ugt = cuda.unary not %[[LE]] : i1
// CHECK:         %[[GT:.*]] = cuda.compare gt %t, %n : i32
// CHECK-NEXT:    %mx = cuda.select %[[GT]], %t, %n : i32
// CHECK:         %[[MGT:.*]] = cuda.compare gt %xv, %xv : f32
// CHECK-NEXT:    %[[NAN:.*]] = cuda.compare ne %xv, %xv : f32
// CHECK-NEXT:    %[[KEEP:.*]] = cuda.binary or %[[MGT]], %[[NAN]] : i1
// CHECK-NEXT:    %mf = cuda.select %[[KEEP]], %xv, %xv : f32
// CHECK:         %wide = cuda.cast %t : i32 to i64
// CHECK-NEXT:    %fl = cuda.cast %wide : i64 to f32
// CHECK:         %[[DST:.*]] = cuda.address %xs[%t] : !cuda.array<64xf32>
// CHECK:         %[[SRC:.*]] = cuda.address %x[%{{.*}}] : !cuda.ptr<f32, const, restrict>
// CHECK-NEXT:    cuda.call "kc_cp_async16"(%[[DST]], %[[SRC]]) : (!cuda.ptr<f32>, !cuda.ptr<f32, const>) -> ()
// CHECK-NEXT:    cuda.call "kc_cp_async_commit"() : () -> ()
// CHECK-NEXT:    %[[ZERO:.*]] = cuda.constant 0 : i32
// CHECK-NEXT:    cuda.call "kc_cp_async_wait"(%[[ZERO]]) : (i32) -> ()
// CHECK:         %a, %b = cuda.for %i = %c0 to %n step %c1 iter(%p = %xv, %q = %fl) -> (f32, f32) : i32 {
// CHECK-NEXT:      cuda.yield %q, %p : f32, f32
// CHECK-LABEL: func.func @main
// CHECK:         cuda.launch @scalars(%h, %x, %n) grid(1, 1, 1) block(64, 1, 1) smem(0) : memref<64xf16>, memref<2x64xf32>, index
kernel.func @scalars(%h: memref<64xf16>, %x: memref<2x64xf32>, %n: index) grid(1, 1, 1) block(64, 1, 1) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %t = kernel.thread_id x
  %hv = memref.load %h[%t] : memref<64xf16>
  %he = math.exp %hv : f16
  memref.store %he, %h[%t] : memref<64xf16>
  %fd = arith.floordivsi %t, %n : index
  %ud = arith.divui %t, %n : index
  %xv = memref.load %x[%c1, %t] : memref<2x64xf32>
  %ugt = arith.cmpf ugt, %xv, %xv : f32
  %mx = arith.maxsi %t, %n : index
  %mf = arith.maximumf %xv, %xv : f32
  %wide = arith.index_cast %t : index to i64
  %fl = arith.sitofp %wide : i64 to f32
  %xs = kernel.shared : memref<64xf32, 3 : i64>
  kernel.cp_async %x[%c1, %t] to %xs[%t] bytes 16 : memref<2x64xf32> to memref<64xf32, 3 : i64>
  kernel.cp_async_commit
  kernel.cp_async_wait 0
  %a, %b = scf.for %i = %c0 to %n step %c1 iter_args(%p = %xv, %q = %fl) -> (f32, f32) {
    scf.yield %q, %p : f32, f32
  }
}
func.func @main(%h: memref<64xf16>, %x: memref<2x64xf32>, %n: index) {
  kernel.launch @scalars(%h, %x, %n) : memref<64xf16>, memref<2x64xf32>, index
  func.return
}

// -----
// Unsigned forms of i8 and i16 read their operands as unsigned char / short (C promotes those
// to a non-negative int): division, shifts, compares, widening and uitofp see 255, not -1.

// CHECK-LABEL: cuda.kernel @narrow_unsigned(
// CHECK:         %[[Q:.*]] = cuda.cast %{{.*}} : f32 to ui8
// CHECK-NEXT:    %q = cuda.cast %[[Q]] : ui8 to i8
// CHECK-NEXT:    %[[QU:.*]] = cuda.cast %q : i8 to ui8
// CHECK-NEXT:    %f = cuda.cast %[[QU]] : ui8 to f32
// CHECK:         %[[QW:.*]] = cuda.cast %q : i8 to ui8
// CHECK-NEXT:    %w = cuda.cast %[[QW]] : ui8 to i64
// CHECK:         cuda.binary shr %{{.*}}, %{{.*}} : ui8
// CHECK:         %[[S:.*]] = cuda.cast %{{.*}} : i64 to i16
// CHECK:         cuda.binary div %{{.*}}, %{{.*}} : ui16
// CHECK:         cuda.compare lt %{{.*}}, %{{.*}} : ui8
kernel.func @narrow_unsigned(%x: memref<4xf32>, %y: memref<4xf32>) grid(1, 1, 1) block(4, 1, 1) {
  %t = kernel.thread_id x
  %v = memref.load %x[%t] : memref<4xf32>
  %q = arith.fptoui %v : f32 to i8
  %f = arith.uitofp %q : i8 to f32
  %w = arith.extui %q : i8 to i64
  %c5 = arith.constant 5 : i8
  %sh = arith.shrui %q, %c5 : i8
  %s = arith.trunci %w : i64 to i16
  %c7 = arith.constant 7 : i16
  %d = arith.divui %s, %c7 : i16
  %lt = arith.cmpi ult, %q, %c5 : i8
  %g = arith.uitofp %d : i16 to f32
  %h = arith.uitofp %sh : i8 to f32
  %sum = arith.addf %f, %g : f32
  %sum2 = arith.addf %sum, %h : f32
  %r = arith.select %lt, %sum2, %v : f32
  memref.store %r, %y[%t] : memref<4xf32>
}
func.func @main(%x: memref<4xf32>, %y: memref<4xf32>) {
  kernel.launch @narrow_unsigned(%x, %y) : memref<4xf32>, memref<4xf32>
  func.return
}

// -----
// Past 48 KB (what a kernel may declare statically) the shared buffers are parts of the dynamic
// shared memory, each at a 16-byte boundary (a 36-byte buffer takes 48), and the launch asks
// for their total: 48 + 32768 + 16384 = 49200 bytes.

// CHECK-LABEL: cuda.kernel @dynamic(
// CHECK:         %small = cuda.shared dynamic(0) : !cuda.array<9xf32>
// CHECK:         %big = cuda.shared dynamic(48) : !cuda.array<8192xf32>
// CHECK:         %half = cuda.shared dynamic(32816) : !cuda.array<8192xf16>
// CHECK:         cuda.launch @dynamic(%x) grid(1, 1, 1) block(32, 1, 1) smem(49200) : memref<32xf32>
kernel.func @dynamic(%x: memref<32xf32>) grid(1, 1, 1) block(32, 1, 1) {
  %t = kernel.thread_id x
  %small = kernel.shared : memref<9xf32, 3 : i64>
  %big = kernel.shared : memref<8192xf32, 3 : i64>
  %half = kernel.shared : memref<8192xf16, 3 : i64>
  %v = memref.load %x[%t] : memref<32xf32>
  memref.store %v, %big[%t] : memref<8192xf32, 3 : i64>
  memref.store %v, %small[%t] : memref<9xf32, 3 : i64>
}
func.func @main(%x: memref<32xf32>) {
  kernel.launch @dynamic(%x) : memref<32xf32>
  func.return
}

// -----
// An op without a C translation is an error that names it.

// CHECK: kernel-to-cuda: no C translation for 'math.ctpop' in @bad
kernel.func @bad(%x: memref<4xi32>) grid(1, 1, 1) block(4, 1, 1) {
  %t = kernel.thread_id x
  %v = memref.load %x[%t] : memref<4xi32>
  %p = math.ctpop %v : i32
  memref.store %p, %x[%t] : memref<4xi32>
}

// -----
// A kernel named like a C library function (`pow`) is renamed `pow_k` (here `pow_k1`: `pow_k`
// is taken), and so are its launches.

// CHECK-LABEL: cuda.kernel @pow_k1(%x: !cuda.ptr<f32, const, restrict>, %out: !cuda.ptr<f32, restrict>) launch_bounds(4) {
// CHECK:         cuda.call "powf"(%v, %v) : (f32, f32) -> f32
// CHECK-LABEL: cuda.kernel @pow_k(
// CHECK-LABEL: func.func @main
// CHECK:         cuda.launch @pow_k1(%x, %a) grid(1, 1, 1) block(4, 1, 1) smem(0)
// CHECK:         cuda.launch @pow_k(%a, %b) grid(1, 1, 1) block(4, 1, 1) smem(0)
kernel.func @pow(%x: memref<4xf32>, %out: memref<4xf32>) grid(1, 1, 1) block(4, 1, 1) {
  %t = kernel.thread_id x
  %v = memref.load %x[%t] : memref<4xf32>
  %p = math.powf %v, %v : f32
  memref.store %p, %out[%t] : memref<4xf32>
}
kernel.func @pow_k(%x: memref<4xf32>, %out: memref<4xf32>) grid(1, 1, 1) block(4, 1, 1) {
  %t = kernel.thread_id x
  %v = memref.load %x[%t] : memref<4xf32>
  memref.store %v, %out[%t] : memref<4xf32>
}
func.func @main(%x: memref<4xf32>) -> memref<4xf32> {
  %a = memref.alloc() : memref<4xf32>
  kernel.launch @pow(%x, %a) : memref<4xf32>, memref<4xf32>
  %b = memref.alloc() : memref<4xf32>
  kernel.launch @pow_k(%a, %b) : memref<4xf32>, memref<4xf32>
  func.return %b : memref<4xf32>
}

// -----
// A gather (embedding): the loaded i64 id, index_cast, indexes the bf16 table; bf16 computes in
// float (extf/truncf are casts through float), an i1 mask selects, iota-like sitofp of a thread id.

// CHECK-LABEL: cuda.kernel @gather(%w: !cuda.ptr<bf16, const, restrict>, %ids: !cuda.ptr<i64, const, restrict>, %m: !cuda.ptr<i1, const, restrict>, %out: !cuda.ptr<bf16, restrict>) launch_bounds(6) {
// CHECK:         %id = cuda.load %ids[%{{.*}}] : !cuda.ptr<i64, const, restrict>
// CHECK-NEXT:    %row = cuda.cast %id : i64 to i32
// CHECK-NEXT:    %[[C6:.*]] = cuda.constant 6 : i32
// CHECK-NEXT:    %[[ROW:.*]] = cuda.binary mul %row, %[[C6]] : i32
// CHECK-NEXT:    %[[LIN:.*]] = cuda.binary add %[[ROW]], %t : i32
// CHECK-NEXT:    %wv = cuda.load %w[%[[LIN]]] : !cuda.ptr<bf16, const, restrict>
// CHECK-NEXT:    %wf = cuda.cast %wv : bf16 to f32
// CHECK-NEXT:    %mv = cuda.load %m[%t] : !cuda.ptr<i1, const, restrict>
// CHECK-NEXT:    %mf = cuda.cast %mv : i1 to f32
// CHECK-NEXT:    %it = cuda.cast %t : i32 to f32
// CHECK-NEXT:    %s = cuda.binary add %wf, %it : f32
// CHECK-NEXT:    %e = cuda.call "erff"(%s) : (f32) -> f32
// CHECK-NEXT:    %y = cuda.select %mv, %e, %mf : f32
// CHECK-NEXT:    %yb = cuda.cast %y : f32 to bf16
// CHECK:         cuda.store %yb, %out[%{{.*}}] : !cuda.ptr<bf16, restrict>
kernel.func @gather(%w: memref<11x6xbf16>, %ids: memref<2x3xi64>, %m: memref<6xi1>, %out: memref<2x3x6xbf16>) grid(2, 3, 1) block(6, 1, 1) {
  %i = kernel.block_id x
  %j = kernel.block_id y
  %t = kernel.thread_id x
  %id = memref.load %ids[%i, %j] : memref<2x3xi64>
  %row = arith.index_cast %id : i64 to index
  %wv = memref.load %w[%row, %t] : memref<11x6xbf16>
  %wf = arith.extf %wv : bf16 to f32
  %mv = memref.load %m[%t] : memref<6xi1>
  %mf = arith.uitofp %mv : i1 to f32
  %tf = arith.index_cast %t : index to i32
  %it = arith.sitofp %tf : i32 to f32
  %s = arith.addf %wf, %it : f32
  %e = math.erf %s : f32
  %y = arith.select %mv, %e, %mf : f32
  %yb = arith.truncf %y : f32 to bf16
  memref.store %yb, %out[%i, %j, %t] : memref<2x3x6xbf16>
}

// -----

// A thread's own array (a loop.private buffer at loop level) is a local C array.
// CHECK-LABEL: cuda.kernel @private_row(
// CHECK:         %[[ACC:.*]] = cuda.local : !cuda.array<4xf32>
// CHECK:         cuda.store %{{.*}}, %[[ACC]][%{{.*}}] : !cuda.array<4xf32>
kernel.func @private_row(%out: memref<4xf32>) grid(1, 1, 1) block(4, 1, 1) {
  %t = kernel.thread_id x
  %acc = memref.alloca() : memref<4xf32>
  %z = arith.constant 1.000000e+00 : f32
  memref.store %z, %acc[%t] : memref<4xf32>
  %v = memref.load %acc[%t] : memref<4xf32>
  memref.store %v, %out[%t] : memref<4xf32>
}

// -----
// int32 / int64 data wraps on overflow, as aten's (signed overflow is undefined in C: a compiler
// folds (x + 1) < 0 away): add, sub and mul on unsigned operands; index arithmetic stays signed.

// CHECK-LABEL: cuda.kernel @wrapping(
// CHECK:         %[[A:.*]] = cuda.cast %{{.*}} : i32 to ui32
// CHECK:         cuda.binary add %[[A]], %{{.*}} : ui32
// CHECK:         cuda.binary mul %{{.*}}, %{{.*}} : ui64
// CHECK:         cuda.binary add %{{.*}}, %{{.*}} : i32
kernel.func @wrapping(%x: memref<4xi32>, %y: memref<4xi64>) grid(1, 1, 1) block(4, 1, 1) {
  %t = kernel.thread_id x
  %v = memref.load %x[%t] : memref<4xi32>
  %c1 = arith.constant 1 : i32
  %s = arith.addi %v, %c1 : i32
  %w = arith.extsi %s : i32 to i64
  %c3 = arith.constant 3 : i64
  %p = arith.muli %w, %c3 : i64
  memref.store %p, %y[%t] : memref<4xi64>
  %c2 = arith.constant 2 : index
  %i = arith.addi %t, %c2 : index
  %c4 = arith.constant 4 : index
  %j = arith.remui %i, %c4 : index
  %u = memref.load %x[%j] : memref<4xi32>
  memref.store %u, %x[%t] : memref<4xi32>
}
func.func @main(%x: memref<4xi32>, %y: memref<4xi64>) {
  kernel.launch @wrapping(%x, %y) : memref<4xi32>, memref<4xi64>
  func.return
}

// -----
// int32 / int64 data divided by -1: the least value over -1 traps in C (SIGFPE on x86) where
// aten gives itself and remainder 0; the divisor -1 is taken as 1 and the quotient negated in
// unsigned arithmetic. An index's division stays plain.

// CHECK-LABEL: cuda.kernel @divide(
// CHECK:         %[[M1:.*]] = cuda.compare eq %[[B:.*]], %{{.*}} : i64
// CHECK:         %[[SAFE:.*]] = cuda.select %[[M1]], %{{.*}}, %[[B]] : i64
// CHECK:         %[[Q:.*]] = cuda.binary div %[[A:.*]], %[[SAFE]] : i64
// CHECK:         %[[N:.*]] = cuda.binary sub %{{.*}}, %{{.*}} : ui64
// CHECK:         %[[NEG:.*]] = cuda.cast %[[N]] : ui64 to i64
// CHECK:         cuda.select %[[M1]], %[[NEG]], %[[Q]] : i64
// CHECK:         cuda.binary rem %{{.*}}, %{{.*}} : i64
// CHECK:         cuda.binary div %{{.*}}, %{{.*}} : i32
kernel.func @divide(%x: memref<4xi64>, %y: memref<4xi64>) grid(1, 1, 1) block(4, 1, 1) {
  %t = kernel.thread_id x
  %a = memref.load %x[%t] : memref<4xi64>
  %b = memref.load %y[%t] : memref<4xi64>
  %q = arith.divsi %a, %b : i64
  %r = arith.remsi %a, %b : i64
  %s = arith.addi %q, %r : i64
  %c2 = arith.constant 2 : index
  %i = arith.divsi %t, %c2 : index
  memref.store %s, %y[%i] : memref<4xi64>
}
func.func @main(%x: memref<4xi64>, %y: memref<4xi64>) {
  kernel.launch @divide(%x, %y) : memref<4xi64>, memref<4xi64>
  func.return
}
