// RUN: deplo-opt %s --verify-diagnostics --split-input-file | filecheck %s

// CHECK: !cuda.ptr: expected a C scalar element type, got index
cuda.kernel @k(%x: !cuda.ptr<index>) launch_bounds(1) {
}

// -----
// CHECK: !cuda.array: expected a positive size and a C scalar, got 0xf32
cuda.kernel @k() launch_bounds(1) {
  %a = cuda.shared : !cuda.array<0xf32>
}

// -----
// CHECK: expected launch bounds in [1, 1024], got 2048
cuda.kernel @k() launch_bounds(2048) {
}

// -----
// CHECK: parameter #0: expected a !cuda.ptr or a C scalar, got index
cuda.kernel @k(%n: index) launch_bounds(1) {
}

// -----
// CHECK: expected result type i32, got i64
cuda.kernel @k() launch_bounds(1) {
  %c = "cuda.constant"() <{value = 1 : i32}> : () -> i64
}

// -----
// CHECK: 'cuda.constant': expected a C scalar type, got index
cuda.kernel @k() launch_bounds(1) {
  %c = cuda.constant 1 : index
}

// -----
// CHECK: 'cuda.special' expected inside a cuda.kernel, got none around it
func.func @f() {
  %t = cuda.special threadIdx.x
  func.return
}

// -----
// CHECK: 'cuda.binary': expected a non-half type (compute in float), got f16
cuda.kernel @k(%a: f16) launch_bounds(1) {
  %s = cuda.binary add %a, %a : f16
}

// -----
// CHECK: 'rem': expected an integer type, got f32
cuda.kernel @k(%a: f32) launch_bounds(1) {
  %s = cuda.binary rem %a, %a : f32
}

// -----
// CHECK: 'cuda.compare': expected a C scalar type, got i24
cuda.kernel @k(%a: i24) launch_bounds(1) {
  %c = cuda.compare lt %a, %a : i24
}

// -----
// CHECK: 'not': expected an integer type, got f32
cuda.kernel @k(%a: f32) launch_bounds(1) {
  %n = cuda.unary not %a : f32
}

// -----
// CHECK: expected a half type to convert from or to f32, got f16 to i32
cuda.kernel @k(%a: f16) launch_bounds(1) {
  %n = cuda.cast %a : f16 to i32
}

// -----
// CHECK: expected a C function name, got 'exp f'
cuda.kernel @k(%a: f32) launch_bounds(1) {
  %e = cuda.call "exp f"(%a) : (f32) -> f32
}

// -----
// CHECK: expected an i32 or i64 index, got i16
cuda.kernel @k(%x: !cuda.ptr<f32>, %i: i16) launch_bounds(1) {
  %v = cuda.load %x[%i] : !cuda.ptr<f32>, i16
}

// -----
// CHECK: expected result type f32, got i32
cuda.kernel @k(%x: !cuda.ptr<f32>, %i: i32) launch_bounds(1) {
  %v = "cuda.load"(%x, %i) : (!cuda.ptr<f32>, i32) -> i32
}

// -----
// CHECK: expected a non-const pointer to store to, got !cuda.ptr<f32, const>
cuda.kernel @k(%x: !cuda.ptr<f32, const>, %i: i32, %v: f32) launch_bounds(1) {
  cuda.store %v, %x[%i] : !cuda.ptr<f32, const>
}

// -----
// CHECK: expected a value of type f32, got i32
cuda.kernel @k(%x: !cuda.ptr<f32>, %i: i32) launch_bounds(1) {
  "cuda.store"(%i, %x, %i) : (i32, !cuda.ptr<f32>, i32) -> ()
}

// -----
// CHECK: expected a dynamic offset aligned to 16 bytes, got 12
cuda.kernel @k() launch_bounds(1) {
  %a = cuda.shared dynamic(12) : !cuda.array<4xf32>
}

// -----
// CHECK: 'cuda.shared' expected inside a cuda.kernel, got none around it
func.func @f() {
  %a = cuda.shared : !cuda.array<4xf32>
  func.return
}

// -----
// CHECK: expected width a power of two <= 32, got 3
cuda.kernel @k(%v: f32, %o: i32) launch_bounds(32) {
  %s = cuda.shfl xor %v, %o width 3 : f32
}

// -----
// CHECK: expected a non-zero 32-bit lane mask, got 4294967296
cuda.kernel @k(%v: f32, %o: i32) launch_bounds(32) {
  %s = cuda.shfl xor %v, %o width 32 mask 4294967296 : f32
}

// -----
// CHECK: expected an i32 or i64 induction variable of the bounds' type i16, got i16
cuda.kernel @k(%n: i16) launch_bounds(1) {
  cuda.for %i = %n to %n step %n : i16 {
  }
}

// -----
// CHECK: expected loop-carried types (f32) on block arguments and results
cuda.kernel @k(%n: i32, %z: f32) launch_bounds(1) {
  %r = "cuda.for"(%n, %n, %n, %z) ({
  ^bb0(%i: i32, %acc: i32):
    "cuda.yield"(%z) : (f32) -> ()
  }) : (i32, i32, i32, f32) -> f32
}

// -----
// CHECK: 'cuda.for': expected cuda.yield of (f32), got (i32)
cuda.kernel @k(%n: i32, %z: f32) launch_bounds(1) {
  %r = cuda.for %i = %n to %n step %n iter(%acc = %z) -> (f32) : i32 {
    cuda.yield %i : i32
  }
}

// -----
// CHECK: expected an else region for 1 result(s), got none
cuda.kernel @k(%c: i1, %z: f32) launch_bounds(1) {
  %r = cuda.if %c -> (f32) {
    cuda.yield %z : f32
  }
}

// -----
// CHECK: expected @nope to be a cuda.kernel, got nothing
func.func @main() {
  cuda.launch @nope() grid(1, 1, 1) block(1, 1, 1) smem(0)
  func.return
}

// -----
// CHECK: expected 3 positive grid and block sizes, got (0, 1, 1) and (1, 1, 1)
cuda.kernel @k() launch_bounds(1) {
}
func.func @main() {
  cuda.launch @k() grid(0, 1, 1) block(1, 1, 1) smem(0)
  func.return
}

// -----
// CHECK: @k: expected at most 128 threads (launch bounds), got 256
cuda.kernel @k() launch_bounds(128) {
}
func.func @main() {
  cuda.launch @k() grid(1, 1, 1) block(256, 1, 1) smem(0)
  func.return
}

// -----
// CHECK: expected smem >= 0, got -1
cuda.kernel @k() launch_bounds(1) {
}
func.func @main() {
  cuda.launch @k() grid(1, 1, 1) block(1, 1, 1) smem(-1)
  func.return
}

// -----
// CHECK: @k: expected 1 arguments, got 0
cuda.kernel @k(%x: !cuda.ptr<f32>) launch_bounds(1) {
}
func.func @main() {
  cuda.launch @k() grid(1, 1, 1) block(1, 1, 1) smem(0)
  func.return
}

// -----
// CHECK: @k: expected argument #0 to match !cuda.ptr<f32>, got memref<4xf16>
cuda.kernel @k(%x: !cuda.ptr<f32>) launch_bounds(1) {
}
func.func @main(%a: memref<4xf16>) {
  cuda.launch @k(%a) grid(1, 1, 1) block(1, 1, 1) smem(0) : memref<4xf16>
  func.return
}
