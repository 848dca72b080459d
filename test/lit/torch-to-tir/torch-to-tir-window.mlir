// RUN: deplo-opt %s --split-input-file -p torch-to-tir | filecheck %s

// cumsum is a tir.scan; a bf16 input scans in f32, each prefix rounded once.
// CHECK-LABEL: func.func @cumsum_bf16
// CHECK:         %[[F:.*]] = tir.cast %x : tensor<4x5xbf16> -> tensor<4x5xf32>
// CHECK-NEXT:    %[[S:.*]] = tir.scan add %[[F]] [1] : tensor<4x5xf32>
// CHECK-NEXT:    tir.cast %[[S]] : tensor<4x5xf32> -> tensor<4x5xbf16>
func.func @cumsum_bf16(%x: tensor<4x5xbf16>) -> tensor<4x5xbf16> {
  %y = torch.cumsum %x {dim = -1 : i64} : (tensor<4x5xbf16>) -> tensor<4x5xbf16>
  func.return %y : tensor<4x5xbf16>
}

// -----

// cummax / cummin (aten.cummax's values) are scans with the max / min combiner; integers scan
// as they are.
// CHECK-LABEL: func.func @cummax_cummin
// CHECK:         tir.scan max %x [0] : tensor<4x5xf32>
// CHECK:         tir.scan min %i [1] : tensor<4x5xi64>
func.func @cummax_cummin(%x: tensor<4x5xf32>, %i: tensor<4x5xi64>) -> (tensor<4x5xf32>, tensor<4x5xi64>) {
  %y = torch.cummax %x {dim = 0 : i64} : (tensor<4x5xf32>) -> tensor<4x5xf32>
  %z = torch.cummin %i {dim = 1 : i64} : (tensor<4x5xi64>) -> tensor<4x5xi64>
  func.return %y, %z : tensor<4x5xf32>, tensor<4x5xi64>
}

// -----

// argmax is a tir.reduce argmax (i64); keepdim re-inserts the dim by an index map.
// CHECK-LABEL: func.func @argmax_keepdim
// CHECK:         %[[A:.*]] = tir.reduce argmax %x [1] : tensor<4x5xf32> -> tensor<4xi64>
// CHECK-NEXT:    tir.index_map %[[A]] (d0, d1) -> (d0) : tensor<4xi64> -> tensor<4x1xi64>
func.func @argmax_keepdim(%x: tensor<4x5xf32>) -> tensor<4x1xi64> {
  %y = torch.argmax %x {dim = 1 : i64, keepdim} : (tensor<4x5xf32>) -> tensor<4x1xi64>
  func.return %y : tensor<4x1xi64>
}

// -----

// gather: the index, read at the result's coordinates, is the coordinate along dim.
// CHECK-LABEL: func.func @gather
// CHECK:         tir.gather %x (d0, d1)[s0] -> (d0, s0) indices(%i (d0, d1) -> (d0, d1)) : tensor<4x5xf32>, tensor<3x2xi64> -> tensor<3x2xf32>
func.func @gather(%x: tensor<4x5xf32>, %i: tensor<3x2xi64>) -> tensor<3x2xf32> {
  %y = torch.gather %x, %i {dim = 1 : i64} : (tensor<4x5xf32>, tensor<3x2xi64>) -> tensor<3x2xf32>
  func.return %y : tensor<3x2xf32>
}

// -----

// conv: the input padded by concats of zeros, then im2col as index maps over (N, O, H', W', K)
// with K = (C / groups) * kh * kw split by floordiv/mod (the group from o), one sum over K.
// CHECK-LABEL: func.func @conv
// CHECK:         %[[P:.*]] = tir.concat %{{.*}}, %x, %{{.*}} [2] : tensor<2x4x1x9xf32>, tensor<2x4x9x9xf32>, tensor<2x4x1x9xf32> -> tensor<2x4x11x9xf32>
// CHECK-NEXT:    %[[X:.*]] = tir.index_map %[[P]] (d0, d1, d2, d3, d4) -> (d0, (((d1 floordiv 3) * 2) + (d4 floordiv 9)), ((d2 * 2) + ((d4 floordiv 3) mod 3)), (d3 + ((d4 mod 3) * 2))) : tensor<2x4x11x9xf32> -> tensor<2x6x5x5x18xf32>
// CHECK-NEXT:    %[[W:.*]] = tir.index_map %w (d0, d1, d2, d3, d4) -> (d1, (d4 floordiv 9), ((d4 floordiv 3) mod 3), (d4 mod 3)) : tensor<6x2x3x3xf32> -> tensor<2x6x5x5x18xf32>
// CHECK-NEXT:    %[[M:.*]] = tir.elementwise mul(%[[X]], %[[W]])
// CHECK-NEXT:    %[[S:.*]] = tir.reduce add %[[M]] [4] : tensor<2x6x5x5x18xf32> -> tensor<2x6x5x5xf32>
// CHECK-NEXT:    %[[B:.*]] = tir.index_map %b (d0, d1, d2, d3) -> (d1) : tensor<6xf32> -> tensor<2x6x5x5xf32>
// CHECK-NEXT:    tir.elementwise add(%[[S]], %[[B]])
func.func @conv(%x: tensor<2x4x9x9xf32>, %w: tensor<6x2x3x3xf32>, %b: tensor<6xf32>) -> tensor<2x6x5x5xf32> {
  %v = torch.conv %x, %w, %b {stride = array<i64: 2, 1>, padding = array<i64: 1, 0, 1, 0>, dilation = array<i64: 1, 2>, groups = 2 : i64} : (tensor<2x4x9x9xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>) -> tensor<2x6x5x5xf32>
  func.return %v : tensor<2x6x5x5xf32>
}

// -----

// max pooling pads with -inf and reduces each window (the last axis of an index map).
// CHECK-LABEL: func.func @max_pool
// CHECK:         tir.full 0xff800000 : tensor<2x4x1x9xf32>
// CHECK:         %[[P:.*]] = tir.concat %{{.*}}, %{{.*}}, %{{.*}} [3] : tensor<2x4x11x1xf32>, tensor<2x4x11x9xf32>, tensor<2x4x11x1xf32> -> tensor<2x4x11x11xf32>
// CHECK-NEXT:    %[[W:.*]] = tir.index_map %[[P]] (d0, d1, d2, d3, d4) -> (d0, d1, ((d2 * 2) + (d4 floordiv 3)), ((d3 * 2) + (d4 mod 3))) : tensor<2x4x11x11xf32> -> tensor<2x4x5x5x9xf32>
// CHECK-NEXT:    tir.reduce max %[[W]] [4] : tensor<2x4x5x5x9xf32> -> tensor<2x4x5x5xf32>
func.func @max_pool(%x: tensor<2x4x9x9xf32>) -> tensor<2x4x5x5xf32> {
  %p = torch.max_pool %x {kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>} : (tensor<2x4x9x9xf32>) -> tensor<2x4x5x5xf32>
  func.return %p : tensor<2x4x5x5xf32>
}

// -----

// avg pooling without count_include_pad: the window sum divided, per window dim, by the
// count min(start + k, size + pad, size) - max(start, 0) computed from an iota of the starts.
// CHECK-LABEL: func.func @avg_pool
// CHECK:         %[[SUM:.*]] = tir.reduce add %{{.*}} [4] : tensor<2x4x5x5x9xf32> -> tensor<2x4x5x5xf32>
// CHECK-NEXT:    %[[START:.*]] = tir.iota dim 0 start -1.000000e+00 step 2.000000e+00 : tensor<5xf32>
// CHECK:         %[[N:.*]] = tir.elementwise sub(%{{.*}}, %{{.*}}) : tensor<5xf32>
// CHECK-NEXT:    %[[NB:.*]] = tir.index_map %[[N]] (d0, d1, d2, d3) -> (d2) : tensor<5xf32> -> tensor<2x4x5x5xf32>
// CHECK-NEXT:    tir.elementwise div(%[[SUM]], %[[NB]])
// CHECK:         tir.index_map %{{.*}} (d0, d1, d2, d3) -> (d3) : tensor<5xf32> -> tensor<2x4x5x5xf32>
func.func @avg_pool(%x: tensor<2x4x9x9xf32>) -> tensor<2x4x5x5xf32> {
  %q = torch.avg_pool %x {kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>} : (tensor<2x4x9x9xf32>) -> tensor<2x4x5x5xf32>
  func.return %q : tensor<2x4x5x5xf32>
}

// -----

// An f16 conv with a window reads a written im2col tensor [N, C * kh * kw, H', W']: the input at
// a wrapped index, zero where the window falls in the padding (iota coordinates, no padded
// copy); the product reads it plainly, as tensor cores take it.
// CHECK-LABEL: func.func @conv_f16
// CHECK:         %[[COLS:.*]] = tir.index_map %x (d0, d1, d2, d3) -> (d0, (d1 floordiv 9), (((((d1 floordiv 3) mod 3) + (d2 * 2)) + 5) mod 6), ((((d1 mod 3) + d3) + 23) mod 24)) : tensor<2x4x6x24xf16> -> tensor<2x36x3x24xf16>
// CHECK:         %[[IN:.*]] = tir.elementwise and(%{{.*}}, %{{.*}}) : tensor<2x36x3x24xi1>
// CHECK:         %[[SEL:.*]] = tir.select %[[IN]], %[[COLS]], %{{.*}} : tensor<2x36x3x24xf16>
// CHECK-NEXT:    %[[F:.*]] = tir.cast %[[SEL]] : tensor<2x36x3x24xf16> -> tensor<2x36x3x24xf32>
// CHECK-NEXT:    tir.index_map %[[F]] (d0, d1, d2, d3, d4) -> (d0, d4, d2, d3) : tensor<2x36x3x24xf32> -> tensor<2x16x3x24x36xf32>
// CHECK-NOT:     tir.concat
func.func @conv_f16(%x: tensor<2x4x6x24xf16>, %w: tensor<16x4x3x3xf16>) -> tensor<2x16x3x24xf16> {
  %v = torch.conv %x, %w {stride = array<i64: 2, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x4x6x24xf16>, tensor<16x4x3x3xf16>) -> tensor<2x16x3x24xf16>
  func.return %v : tensor<2x16x3x24xf16>
}
