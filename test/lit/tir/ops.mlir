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

// A map whose terms cancel is bounded by what is left (d0's range, not d0 + d1's plus -d1's).
// CHECK-LABEL: func.func @cancelling_map
// CHECK:   tir.index_map %x (d0, d1) -> (((d0 + d1) + (d1 * -1))) : tensor<8xf32> -> tensor<8x4xf32>
func.func @cancelling_map(%x: tensor<8xf32>) -> tensor<8x4xf32> {
  %y = tir.index_map %x (d0, d1) -> (d0 + d1 - d1) : tensor<8xf32> -> tensor<8x4xf32>
  func.return %y : tensor<8x4xf32>
}

// Comparisons, select, casts and the math kinds.
// CHECK-LABEL: func.func @compare_select_cast
// CHECK:   %c = tir.compare lt(%x, %y) : tensor<4x8xf32> -> tensor<4x8xi1>
// CHECK:   %n = tir.compare ne(%x, %y) : tensor<4x8xf32> -> tensor<4x8xi1>
// CHECK:   %a = tir.elementwise and(%c, %n) : tensor<4x8xi1>
// CHECK:   %p = tir.elementwise pow(%x, %y) : tensor<4x8xf32>
// CHECK:   %e = tir.elementwise erf(%p) : tensor<4x8xf32>
// CHECK:   %s = tir.select %a, %e, %y : tensor<4x8xf32>
// CHECK:   %h = tir.cast %s : tensor<4x8xf32> -> tensor<4x8xbf16>
// CHECK:   %f = tir.cast %a : tensor<4x8xi1> -> tensor<4x8xf16>
func.func @compare_select_cast(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> (tensor<4x8xbf16>, tensor<4x8xf16>) {
  %c = tir.compare lt(%x, %y) : tensor<4x8xf32> -> tensor<4x8xi1>
  %n = tir.compare ne(%x, %y) : tensor<4x8xf32> -> tensor<4x8xi1>
  %a = tir.elementwise and(%c, %n) : tensor<4x8xi1>
  %p = tir.elementwise pow(%x, %y) : tensor<4x8xf32>
  %e = tir.elementwise erf(%p) : tensor<4x8xf32>
  %s = tir.select %a, %e, %y : tensor<4x8xf32>
  %h = tir.cast %s : tensor<4x8xf32> -> tensor<4x8xbf16>
  %f = tir.cast %a : tensor<4x8xi1> -> tensor<4x8xf16>
  func.return %h, %f : tensor<4x8xbf16>, tensor<4x8xf16>
}

// Data movement and creation: gather (table coordinates from index tensors), concat, iota,
// integer and bool full.
// CHECK-LABEL: func.func @data_movement
// CHECK:   %g = tir.gather %w (d0, d1, d2)[s0] -> (s0, d2) indices(%ids (d0, d1, d2) -> (d0, d1)) : tensor<10x4xf32>, tensor<2x3xi64> -> tensor<2x3x4xf32>
// CHECK:   %h = tir.gather %x (d0, d1, d2)[s0, s1] -> (s1, d2, s0) indices(%i (d0, d1, d2) -> (d1), %j (d0, d1, d2) -> (d0, 0)) : tensor<5x6x7xf32>, tensor<3xi32>, tensor<2x1xi64> -> tensor<2x3x6xf32>
// CHECK:   %c = tir.concat %a, %b [1] : tensor<2x3xf32>, tensor<2x5xf32> -> tensor<2x8xf32>
// CHECK:   %p = tir.iota dim 0 start 0 step 1 : tensor<7xi64>
// CHECK:   %q = tir.iota dim 1 start 1.500000e+00 step -5.000000e-01 : tensor<2x7xf32>
// CHECK:   %f = tir.full 3 : tensor<2xi64>
// CHECK:   %t = tir.full true : tensor<2xi1>
func.func @data_movement(%w: tensor<10x4xf32>, %ids: tensor<2x3xi64>, %x: tensor<5x6x7xf32>, %i: tensor<3xi32>, %j: tensor<2x1xi64>, %a: tensor<2x3xf32>, %b: tensor<2x5xf32>) -> tensor<2x8xf32> {
  %g = tir.gather %w (d0, d1, d2)[s0] -> (s0, d2) indices(%ids (d0, d1, d2) -> (d0, d1)) : tensor<10x4xf32>, tensor<2x3xi64> -> tensor<2x3x4xf32>
  %h = tir.gather %x (d0, d1, d2)[s0, s1] -> (s1, d2, s0) indices(%i (d0, d1, d2) -> (d1), %j (d0, d1, d2) -> (d0, 0)) : tensor<5x6x7xf32>, tensor<3xi32>, tensor<2x1xi64> -> tensor<2x3x6xf32>
  %c = tir.concat %a, %b [1] : tensor<2x3xf32>, tensor<2x5xf32> -> tensor<2x8xf32>
  %p = tir.iota dim 0 start 0 step 1 : tensor<7xi64>
  %q = tir.iota dim 1 start 1.5 step -0.5 : tensor<2x7xf32>
  %f = tir.full 3 : tensor<2xi64>
  %t = tir.full true : tensor<2xi1>
  func.return %c : tensor<2x8xf32>
}

// Infinities and NaN print as their bit patterns (as MLIR does) and parse back.
// CHECK-LABEL: func.func @special_floats
// CHECK:   tir.full 0xff800000 : tensor<4xf32>
// CHECK:   tir.full 0x7f80 : tensor<2xbf16>
// CHECK:   tir.full 0x7fc00000 : tensor<4xf32>
func.func @special_floats() -> tensor<4xf32> {
  %a = tir.full 0xff800000 : tensor<4xf32>
  %b = tir.full 0x7f80 : tensor<2xbf16>
  %c = tir.full 0x7fc00000 : tensor<4xf32>
  func.return %a : tensor<4xf32>
}

// Scans and arg-reductions.
// CHECK-LABEL: func.func @scan_arg
// CHECK:   %c = tir.scan add %x [1] : tensor<4x8xf32>
// CHECK:   %p = tir.scan mul %x [0] : tensor<4x8xf32>
// CHECK:   %a = tir.reduce argmax %x [1] : tensor<4x8xf32> -> tensor<4xi64>
// CHECK:   %i = tir.cast %a : tensor<4xi64> -> tensor<4xf32>
func.func @scan_arg(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>) {
  %c = tir.scan add %x [1] : tensor<4x8xf32>
  %p = tir.scan mul %x [0] : tensor<4x8xf32>
  %a = tir.reduce argmax %x [1] : tensor<4x8xf32> -> tensor<4xi64>
  %i = tir.cast %a : tensor<4xi64> -> tensor<4xf32>
  func.return %c, %p, %i : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>
}

