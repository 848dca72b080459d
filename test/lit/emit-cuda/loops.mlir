// RUN: deplo-opt %s -t cuda | filecheck %s

// A loop bound that is a select binds looser than `<`: it is parenthesized (causal attention's
// `min(kub, 128)`); a loop tile-unroll marked gets `#pragma unroll`.
// CHECK-LABEL: void __launch_bounds__(32) loops(
// CHECK:         for (int r = 0; r < ((kub < 128) ? kub : 128); r += 1) {
// CHECK:         #pragma unroll
// CHECK-NEXT:    for (int j = 0; j < 4; j += 1) {
cuda.kernel @loops(%x: !cuda.ptr<f32, restrict>, %kub: i32) launch_bounds(32) {
  %c0 = cuda.constant 0 : i32
  %c1 = cuda.constant 1 : i32
  %c4 = cuda.constant 4 : i32
  %c128 = cuda.constant 128 : i32
  %zero = cuda.constant 0.0 : f32
  %0 = cuda.compare lt %kub, %c128 : i32
  %1 = cuda.select %0, %kub, %c128 : i32
  cuda.for %r = %c0 to %1 step %c1 : i32 {
    cuda.store %zero, %x[%r] : !cuda.ptr<f32, restrict>
  }
  cuda.for %j = %c0 to %c4 step %c1 : i32 attributes {unroll} {
    cuda.store %zero, %x[%j] : !cuda.ptr<f32, restrict>
  }
}
