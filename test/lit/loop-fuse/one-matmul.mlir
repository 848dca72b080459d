// RUN: deplo-opt %s -p tir-to-loop,loop-fuse | filecheck %s

// silu(x @ wg) * (x @ wu) in bf16: one matmul a kernel. The gate matmul takes the silu-mul
// epilogue and reads `up`, which the up matmul writes: two plain products (tensor cores),
// not one K loop carrying two accumulators.
// CHECK-LABEL: loop.kernel @linear(%x2: memref<1x32x64xbf16>, %x3: memref<48x64xbf16>, %out: memref<1x32x48xbf16>) {
// CHECK:           loop.for %r0 = 0 to 64 reduce iter(%acc = %{{.*}}) -> f32 {
// CHECK-LABEL: loop.kernel @mul_silu_linear(%x0: memref<1x32x64xbf16>, %x1: memref<48x64xbf16>, %linear: memref<1x32x48xbf16>, %out: memref<1x32x48xbf16>) {
// CHECK:           loop.for %r0 = 0 to 64 reduce iter(%acc = %{{.*}}) -> f32 {
// CHECK-NOT:       reduce
// CHECK:           math.exp
// CHECK:           loop.load %linear[
// CHECK-LABEL: func.func @main(
// CHECK:         loop.launch @linear(
// CHECK:         loop.launch @mul_silu_linear(
builtin.module {
  func.func @main(%x0: tensor<1x32x64xbf16>, %x1: tensor<48x64xbf16>, %x2: tensor<1x32x64xbf16>, %x3: tensor<48x64xbf16>) -> tensor<1x32x48xbf16> {
    %linear = tir.cast %x0 : tensor<1x32x64xbf16> -> tensor<1x32x64xf32>
    %linear_1 = tir.cast %x1 : tensor<48x64xbf16> -> tensor<48x64xf32>
    %linear_2 = tir.index_map %linear (d0, d1, d2, d3) -> (d0, d1, d3) : tensor<1x32x64xf32> -> tensor<1x32x48x64xf32>
    %linear_3 = tir.index_map %linear_1 (d0, d1, d2, d3) -> (d2, d3) : tensor<48x64xf32> -> tensor<1x32x48x64xf32>
    %linear_4 = tir.elementwise mul(%linear_2, %linear_3) : tensor<1x32x48x64xf32>
    %linear_5 = tir.reduce add %linear_4 [3] : tensor<1x32x48x64xf32> -> tensor<1x32x48xf32>
    %linear_6 = tir.cast %linear_5 : tensor<1x32x48xf32> -> tensor<1x32x48xbf16>
    %silu = tir.elementwise silu(%linear_6) : tensor<1x32x48xbf16>
    %linear_7 = tir.cast %x2 : tensor<1x32x64xbf16> -> tensor<1x32x64xf32>
    %linear_8 = tir.cast %x3 : tensor<48x64xbf16> -> tensor<48x64xf32>
    %linear_9 = tir.index_map %linear_7 (d0, d1, d2, d3) -> (d0, d1, d3) : tensor<1x32x64xf32> -> tensor<1x32x48x64xf32>
    %linear_10 = tir.index_map %linear_8 (d0, d1, d2, d3) -> (d2, d3) : tensor<48x64xf32> -> tensor<1x32x48x64xf32>
    %linear_11 = tir.elementwise mul(%linear_9, %linear_10) : tensor<1x32x48x64xf32>
    %linear_12 = tir.reduce add %linear_11 [3] : tensor<1x32x48x64xf32> -> tensor<1x32x48xf32>
    %linear_13 = tir.cast %linear_12 : tensor<1x32x48xf32> -> tensor<1x32x48xbf16>
    %mul = tir.elementwise mul(%silu, %linear_13) : tensor<1x32x48xbf16>
    func.return %mul : tensor<1x32x48xbf16>
  }
}
