// RUN: deplo-opt %s | deplo-opt | filecheck %s
// RUN: deplo-opt %s --print-op-generic | deplo-opt | filecheck %s

// CHECK-LABEL: cuda.kernel @all_ops(%x: !cuda.ptr<f32, const, restrict>, %y: !cuda.ptr<f32, restrict>, %n: i32, %h: !cuda.ptr<f16>) launch_bounds(256) {
// CHECK-NEXT:    %t = cuda.special threadIdx.x
// CHECK-NEXT:    %b = cuda.special blockIdx.y
// CHECK-NEXT:    %c0 = cuda.constant 0 : i32
// CHECK-NEXT:    %c1 = cuda.constant 1 : i32
// CHECK-NEXT:    %big = cuda.constant 4294967295 : ui32
// CHECK-NEXT:    %zero = cuda.constant 0.000000e+00 : f32
// CHECK-NEXT:    %half = cuda.constant 1.500000e+00 : f16
// CHECK-NEXT:    %yes = cuda.constant true
// CHECK-NEXT:    %l = cuda.cast %t : i32 to i64
// CHECK-NEXT:    %v = cuda.load %x[%t] : !cuda.ptr<f32, const, restrict>
// CHECK-NEXT:    %w = cuda.load %x[%l] : !cuda.ptr<f32, const, restrict>, i64
// CHECK-NEXT:    %s = cuda.binary add %v, %w : f32
// CHECK-NEXT:    %lt = cuda.compare lt %t, %n : i32
// CHECK-NEXT:    %ng = cuda.unary neg %s : f32
// CHECK-NEXT:    %m = cuda.select %lt, %s, %ng : f32
// CHECK-NEXT:    %f = cuda.cast %t : i32 to f32
// CHECK-NEXT:    %hf = cuda.cast %half : f16 to f32
// CHECK-NEXT:    %e = cuda.call "expf"(%m) : (f32) -> f32
// CHECK-NEXT:    cuda.call "kc_cp_async_commit"() : () -> ()
// CHECK-NEXT:    %buf = cuda.shared : !cuda.array<256xf32>
// CHECK-NEXT:    %dyn = cuda.shared dynamic(1024) : !cuda.array<64xf16>
// CHECK-NEXT:    %p = cuda.address %buf[%t] : !cuda.array<256xf32>
// CHECK-NEXT:    %q = cuda.address %x[%t] : !cuda.ptr<f32, const, restrict>
// CHECK-NEXT:    cuda.call "kc_cp_async16"(%p, %q) : (!cuda.ptr<f32>, !cuda.ptr<f32, const>) -> ()
// CHECK-NEXT:    cuda.store %e, %buf[%t] : !cuda.array<256xf32>
// CHECK-NEXT:    cuda.syncthreads
// CHECK-NEXT:    %sx = cuda.shfl xor %e, %c1 width 32 : f32
// CHECK-NEXT:    %sd = cuda.shfl down %e, %c1 width 16 mask 65535 : f32
// CHECK-NEXT:    %r = cuda.for %i = %t to %n step %c1 iter(%acc = %zero) -> (f32) : i32 {
// CHECK-NEXT:      %xi = cuda.load %x[%i] : !cuda.ptr<f32, const, restrict>
// CHECK-NEXT:      %nx = cuda.binary add %acc, %xi : f32
// CHECK-NEXT:      cuda.yield %nx : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    cuda.for %j = %c0 to %n step %c1 : i32 {
// CHECK-NEXT:      cuda.store %r, %y[%j] : !cuda.ptr<f32, restrict>
// CHECK-NEXT:    }
// CHECK-NEXT:    %o = cuda.if %lt -> (f32) {
// CHECK-NEXT:      cuda.yield %r : f32
// CHECK-NEXT:    } else {
// CHECK-NEXT:      cuda.yield %zero : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    cuda.if %yes {
// CHECK-NEXT:      cuda.store %o, %y[%b] : !cuda.ptr<f32, restrict>
// CHECK-NEXT:    }
// CHECK-NEXT:  }
// CHECK-LABEL: func.func @main
// CHECK:         cuda.launch @all_ops(%x, %out, %n, %h) grid(4, 2, 1) block(128, 2, 1) smem(1024) : memref<256xf32>, memref<256xf32>, index, memref<8xf16>
cuda.kernel @all_ops(%x: !cuda.ptr<f32, const, restrict>, %y: !cuda.ptr<f32, restrict>, %n: i32, %h: !cuda.ptr<f16>) launch_bounds(256) {
  %t = cuda.special threadIdx.x
  %b = cuda.special blockIdx.y
  %c0 = cuda.constant 0 : i32
  %c1 = cuda.constant 1 : i32
  %big = cuda.constant 4294967295 : ui32
  %zero = cuda.constant 0.0 : f32
  %half = cuda.constant 1.5 : f16
  %yes = cuda.constant true
  %l = cuda.cast %t : i32 to i64
  %v = cuda.load %x[%t] : !cuda.ptr<f32, const, restrict>
  %w = cuda.load %x[%l] : !cuda.ptr<f32, const, restrict>, i64
  %s = cuda.binary add %v, %w : f32
  %lt = cuda.compare lt %t, %n : i32
  %ng = cuda.unary neg %s : f32
  %m = cuda.select %lt, %s, %ng : f32
  %f = cuda.cast %t : i32 to f32
  %hf = cuda.cast %half : f16 to f32
  %e = cuda.call "expf"(%m) : (f32) -> f32
  cuda.call "kc_cp_async_commit"() : () -> ()
  %buf = cuda.shared : !cuda.array<256xf32>
  %dyn = cuda.shared dynamic(1024) : !cuda.array<64xf16>
  %p = cuda.address %buf[%t] : !cuda.array<256xf32>
  %q = cuda.address %x[%t] : !cuda.ptr<f32, const, restrict>
  cuda.call "kc_cp_async16"(%p, %q) : (!cuda.ptr<f32>, !cuda.ptr<f32, const>) -> ()
  cuda.store %e, %buf[%t] : !cuda.array<256xf32>
  cuda.syncthreads
  %sx = cuda.shfl xor %e, %c1 width 32 : f32
  %sd = cuda.shfl down %e, %c1 width 16 mask 65535 : f32
  %r = cuda.for %i = %t to %n step %c1 iter(%acc = %zero) -> (f32) : i32 {
    %xi = cuda.load %x[%i] : !cuda.ptr<f32, const, restrict>
    %nx = cuda.binary add %acc, %xi : f32
    cuda.yield %nx : f32
  }
  cuda.for %j = %c0 to %n step %c1 : i32 {
    cuda.store %r, %y[%j] : !cuda.ptr<f32, restrict>
  }
  %o = cuda.if %lt -> (f32) {
    cuda.yield %r : f32
  } else {
    cuda.yield %zero : f32
  }
  cuda.if %yes {
    cuda.store %o, %y[%b] : !cuda.ptr<f32, restrict>
  }
}
func.func @main(%x: memref<256xf32>, %n: index, %h: memref<8xf16>) -> memref<256xf32> {
  %out = memref.alloc() : memref<256xf32>
  cuda.launch @all_ops(%x, %out, %n, %h) grid(4, 2, 1) block(128, 2, 1) smem(1024) : memref<256xf32>, memref<256xf32>, index, memref<8xf16>
  func.return %out : memref<256xf32>
}
