// RUN: deplo-opt %s | deplo-opt | filecheck %s
// RUN: deplo-opt %s --print-op-generic | deplo-opt | filecheck %s

// CHECK-LABEL: func.func @main
// CHECK:   %b = tir.index_map %bias (d0, d1) -> (d1) : tensor<64xf32> -> tensor<16x64xf32>
// CHECK:   %s = tir.elementwise add(%x, %b) : tensor<16x64xf32>
// CHECK:   %e = tir.elementwise exp(%s) : tensor<16x64xf32>
// CHECK:   %p = tir.index_map %e (d0, d1, d2) -> (d0, (d2 floordiv 4)) : tensor<16x64xf32> -> tensor<16x16x64xf32>
// CHECK:   %r = tir.reduce add %p [2] : tensor<16x16x64xf32> -> tensor<16x16xf32>
// CHECK:   %m = tir.reduce max %p [0, 2] : tensor<16x16x64xf32> -> tensor<16xf32>
// CHECK:   %z = tir.full 0.000000e+00 : tensor<16x16xf32>
// CHECK:   %n = tir.full -1.500000e+00 : tensor<16x16xf32>
// CHECK:   %o = tir.elementwise max(%r, %z) : tensor<16x16xf32>
func.func @main(%x: tensor<16x64xf32>, %bias: tensor<64xf32>) -> tensor<16x16xf32> {
  %b = tir.index_map %bias (i, j) -> (j) : tensor<64xf32> -> tensor<16x64xf32>
  %s = tir.elementwise add(%x, %b) : tensor<16x64xf32>
  %e = tir.elementwise exp(%s) : tensor<16x64xf32>
  %p = tir.index_map %e (i, j, k) -> (i, k floordiv 4) : tensor<16x64xf32> -> tensor<16x16x64xf32>
  %r = tir.reduce add %p [2] : tensor<16x16x64xf32> -> tensor<16x16xf32>
  %m = tir.reduce max %p [0, 2] : tensor<16x16x64xf32> -> tensor<16xf32>
  %z = tir.full 0.0 : tensor<16x16xf32>
  %n = tir.full -1.5 : tensor<16x16xf32>
  %o = tir.elementwise max(%r, %z) : tensor<16x16xf32>
  func.return %o : tensor<16x16xf32>
}
