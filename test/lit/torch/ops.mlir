// RUN: deplo-opt %s | deplo-opt | filecheck %s
// RUN: deplo-opt %s --print-op-generic | deplo-opt | filecheck %s

// CHECK-LABEL: func.func @main
// CHECK:   %c = torch.constant {value = 2.000000e+00 : f32} : tensor<f32>
// CHECK:   %y = torch.add %x, %b : (tensor<16x64xf32>, tensor<64xf32>) -> tensor<16x64xf32>
// CHECK:   %y2 = torch.mul %y, %c : (tensor<16x64xf32>, tensor<f32>) -> tensor<16x64xf32>
// CHECK:   %n = torch.rms_norm %y2, %g {normalized_shape = array<i64: 64>, eps = 1.000000e-06 : f64}
// CHECK:   %m = torch.matmul %n, %w : (tensor<16x64xf32>, tensor<64x16xf32>) -> tensor<16x16xf32>
// CHECK:   %v = torch.matmul %w, %g2 : (tensor<64x16xf32>, tensor<16xf32>) -> tensor<64xf32>
// CHECK:   %r = torch.relu %m : (tensor<16x16xf32>) -> tensor<16x16xf32>
// CHECK:   %s = torch.silu %r : (tensor<16x16xf32>) -> tensor<16x16xf32>
func.func @main(%x: tensor<16x64xf32>, %b: tensor<64xf32>, %w: tensor<64x16xf32>, %g: tensor<64xf32>, %g2: tensor<16xf32>) -> tensor<16x16xf32> {
  %c = torch.constant {value = 2.0 : f32} : tensor<f32>
  %y = torch.add %x, %b : (tensor<16x64xf32>, tensor<64xf32>) -> tensor<16x64xf32>
  %y2 = torch.mul %y, %c : (tensor<16x64xf32>, tensor<f32>) -> tensor<16x64xf32>
  %n = torch.rms_norm %y2, %g {normalized_shape = array<i64: 64>, eps = 1.0e-06 : f64} : (tensor<16x64xf32>, tensor<64xf32>) -> tensor<16x64xf32>
  %m = torch.matmul %n, %w : (tensor<16x64xf32>, tensor<64x16xf32>) -> tensor<16x16xf32>
  %v = torch.matmul %w, %g2 : (tensor<64x16xf32>, tensor<16xf32>) -> tensor<64xf32>
  %r = torch.relu %m : (tensor<16x16xf32>) -> tensor<16x16xf32>
  %s = torch.silu %r : (tensor<16x16xf32>) -> tensor<16x16xf32>
  func.return %s : tensor<16x16xf32>
}

// Views, data movement, creation and attention.
// CHECK-LABEL: func.func @shape_ops
// CHECK:   %r = torch.reshape %x : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
// CHECK:   %p = torch.permute %x {dims = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
// CHECK:   %t = torch.transpose %x {dim0 = 1 : i64, dim1 = -1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
// CHECK:   %e = torch.expand %w : (tensor<10x4xf32>) -> tensor<3x10x4xf32>
// CHECK:   %u = torch.unsqueeze %x {dim = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x1x3x4xf32>
// CHECK:   %s = torch.squeeze %u {dims = array<i64: 1>} : (tensor<2x1x3x4xf32>) -> tensor<2x3x4xf32>
// CHECK:   %sl = torch.slice %x {dim = 2 : i64, start = 1 : i64, end = 9223372036854775807 : i64, step = 2 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x2xf32>
// CHECK:   %se = torch.select %x {dim = 1 : i64, index = -1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
// CHECK:   %c = torch.cat %x, %y {dim = 2 : i64} : (tensor<2x3x4xf32>, tensor<2x3x5xf32>) -> tensor<2x3x9xf32>
// CHECK:   %em = torch.embedding %w, %ids : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
// CHECK:   %ix = torch.index %w, %ids {dims = array<i64: 0>} : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
// CHECK:   %ar = torch.arange {start = 0.000000e+00 : f64, end = 7.000000e+00 : f64, step = 1.000000e+00 : f64} : tensor<7xi64>
// CHECK:   %f = torch.full {value = 1.000000e+00 : f64} : tensor<2x3xf32>
// CHECK:   %a1 = torch.sdpa %q, %k, %k {is_causal, enable_gqa, scale = 2.500000e-01 : f64} : (tensor<1x4x7x16xf32>, tensor<1x2x7x16xf32>, tensor<1x2x7x16xf32>) -> tensor<1x4x7x16xf32>
// CHECK:   %a2 = torch.sdpa %q, %q, %q, %m : (tensor<1x4x7x16xf32>, tensor<1x4x7x16xf32>, tensor<1x4x7x16xf32>, tensor<7x7xi1>) -> tensor<1x4x7x16xf32>
func.func @shape_ops(%x: tensor<2x3x4xf32>, %y: tensor<2x3x5xf32>, %w: tensor<10x4xf32>, %ids: tensor<2x3xi64>, %q: tensor<1x4x7x16xf32>, %k: tensor<1x2x7x16xf32>, %m: tensor<7x7xi1>) -> tensor<2x3x9xf32> {
  %r = torch.reshape %x : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %p = torch.permute %x {dims = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %t = torch.transpose %x {dim0 = 1 : i64, dim1 = -1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
  %e = torch.expand %w : (tensor<10x4xf32>) -> tensor<3x10x4xf32>
  %u = torch.unsqueeze %x {dim = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x1x3x4xf32>
  %s = torch.squeeze %u {dims = array<i64: 1>} : (tensor<2x1x3x4xf32>) -> tensor<2x3x4xf32>
  %sl = torch.slice %x {dim = 2 : i64, start = 1 : i64, end = 9223372036854775807 : i64, step = 2 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x2xf32>
  %se = torch.select %x {dim = 1 : i64, index = -1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  %c = torch.cat %x, %y {dim = 2 : i64} : (tensor<2x3x4xf32>, tensor<2x3x5xf32>) -> tensor<2x3x9xf32>
  %em = torch.embedding %w, %ids : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
  %ix = torch.index %w, %ids {dims = array<i64: 0>} : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
  %ar = torch.arange {start = 0.0 : f64, end = 7.0 : f64, step = 1.0 : f64} : tensor<7xi64>
  %f = torch.full {value = 1.0 : f64} : tensor<2x3xf32>
  %a1 = torch.sdpa %q, %k, %k {is_causal, enable_gqa, scale = 0.25 : f64} : (tensor<1x4x7x16xf32>, tensor<1x2x7x16xf32>, tensor<1x2x7x16xf32>) -> tensor<1x4x7x16xf32>
  %a2 = torch.sdpa %q, %q, %q, %m : (tensor<1x4x7x16xf32>, tensor<1x4x7x16xf32>, tensor<1x4x7x16xf32>, tensor<7x7xi1>) -> tensor<1x4x7x16xf32>
  func.return %c : tensor<2x3x9xf32>
}

// The math ops: linear, gelu, reductions, softmax, layer_norm, conversion, comparisons, where.
// CHECK-LABEL: func.func @math
// CHECK:   %l = torch.linear %x, %w, %b : (tensor<4x5xf32>, tensor<3x5xf32>, tensor<3xf32>) -> tensor<4x3xf32>
// CHECK:   %l2 = torch.linear %x, %w : (tensor<4x5xf32>, tensor<3x5xf32>) -> tensor<4x3xf32>
// CHECK:   %g = torch.gelu %l {approximate = "tanh"} : (tensor<4x3xf32>) -> tensor<4x3xf32>
// CHECK:   %g2 = torch.gelu %l : (tensor<4x3xf32>) -> tensor<4x3xf32>
// CHECK:   %p = torch.pow %g, %g2 : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
// CHECK:   %c = torch.cos %p : (tensor<4x3xf32>) -> tensor<4x3xf32>
// CHECK:   %s = torch.sum %c {dim = array<i64: 1>, keepdim} : (tensor<4x3xf32>) -> tensor<4x1xf32>
// CHECK:   %m = torch.mean %c {dim = array<i64: 0, 1>} : (tensor<4x3xf32>) -> tensor<f32>
// CHECK:   %a = torch.amax %c {dim = array<i64: 0>} : (tensor<4x3xf32>) -> tensor<3xf32>
// CHECK:   %sm = torch.softmax %c {dim = 1 : i64} : (tensor<4x3xf32>) -> tensor<4x3xf32>
// CHECK:   %ln = torch.layer_norm %sm, %b, %b {normalized_shape = array<i64: 3>, eps = 1.000000e-05 : f64} : (tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
// CHECK:   %ln2 = torch.layer_norm %sm {normalized_shape = array<i64: 3>, eps = 1.000000e-05 : f64} : (tensor<4x3xf32>) -> tensor<4x3xf32>
// CHECK:   %h = torch.to %ln : (tensor<4x3xf32>) -> tensor<4x3xf16>
// CHECK:   %lt = torch.lt %ln, %a : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xi1>
// CHECK:   %ne = torch.ne %ln, %ln2 : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xi1>
// CHECK:   %and = torch.logical_and %lt, %ne : (tensor<4x3xi1>, tensor<4x3xi1>) -> tensor<4x3xi1>
// CHECK:   %y = torch.where %and, %ln, %m : (tensor<4x3xi1>, tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xf32>
func.func @math(%x: tensor<4x5xf32>, %w: tensor<3x5xf32>, %b: tensor<3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf16>) {
  %l = torch.linear %x, %w, %b : (tensor<4x5xf32>, tensor<3x5xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %l2 = torch.linear %x, %w : (tensor<4x5xf32>, tensor<3x5xf32>) -> tensor<4x3xf32>
  %g = torch.gelu %l {approximate = "tanh"} : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %g2 = torch.gelu %l : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %p = torch.pow %g, %g2 : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %c = torch.cos %p : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %s = torch.sum %c {dim = array<i64: 1>, keepdim} : (tensor<4x3xf32>) -> tensor<4x1xf32>
  %m = torch.mean %c {dim = array<i64: 0, 1>} : (tensor<4x3xf32>) -> tensor<f32>
  %a = torch.amax %c {dim = array<i64: 0>} : (tensor<4x3xf32>) -> tensor<3xf32>
  %sm = torch.softmax %c {dim = 1 : i64} : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %ln = torch.layer_norm %sm, %b, %b {normalized_shape = array<i64: 3>, eps = 1.0e-05 : f64} : (tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %ln2 = torch.layer_norm %sm {normalized_shape = array<i64: 3>, eps = 1.0e-05 : f64} : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %h = torch.to %ln : (tensor<4x3xf32>) -> tensor<4x3xf16>
  %lt = torch.lt %ln, %a : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xi1>
  %ne = torch.ne %ln, %ln2 : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xi1>
  %and = torch.logical_and %lt, %ne : (tensor<4x3xi1>, tensor<4x3xi1>) -> tensor<4x3xi1>
  %y = torch.where %and, %ln, %m : (tensor<4x3xi1>, tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xf32>
  func.return %y, %h : tensor<4x3xf32>, tensor<4x3xf16>
}

// Scans, arg-reductions, gather, convolution and pooling.
// CHECK-LABEL: func.func @window_ops
// CHECK:   %a = torch.abs %x : (tensor<2x4x9x9xf32>) -> tensor<2x4x9x9xf32>
// CHECK:   %c = torch.cumsum %x {dim = -1 : i64} : (tensor<2x4x9x9xf32>) -> tensor<2x4x9x9xf32>
// CHECK:   %i = torch.argmax %x {dim = 1 : i64, keepdim} : (tensor<2x4x9x9xf32>) -> tensor<2x1x9x9xi64>
// CHECK:   %g = torch.gather %x, %i {dim = 1 : i64} : (tensor<2x4x9x9xf32>, tensor<2x1x9x9xi64>) -> tensor<2x1x9x9xf32>
// CHECK:   %v = torch.conv %x, %w, %b {stride = array<i64: 2, 1>, padding = array<i64: 1, 0, 1, 0>, dilation = array<i64: 1, 2>, groups = 2 : i64} : (tensor<2x4x9x9xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>) -> tensor<2x6x5x5xf32>
// CHECK:   %p = torch.max_pool %x {kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 2>, dilation = array<i64: 1, 1>} : (tensor<2x4x9x9xf32>) -> tensor<2x4x5x5xf32>
// CHECK:   %q = torch.avg_pool %x {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, count_include_pad, divisor_override = 3 : i64} : (tensor<2x4x9x9xf32>) -> tensor<2x4x4x4xf32>
func.func @window_ops(%x: tensor<2x4x9x9xf32>, %w: tensor<6x2x3x3xf32>, %b: tensor<6xf32>) -> (tensor<2x1x9x9xf32>, tensor<2x6x5x5xf32>) {
  %a = torch.abs %x : (tensor<2x4x9x9xf32>) -> tensor<2x4x9x9xf32>
  %c = torch.cumsum %x {dim = -1 : i64} : (tensor<2x4x9x9xf32>) -> tensor<2x4x9x9xf32>
  %i = torch.argmax %x {dim = 1 : i64, keepdim} : (tensor<2x4x9x9xf32>) -> tensor<2x1x9x9xi64>
  %g = torch.gather %x, %i {dim = 1 : i64} : (tensor<2x4x9x9xf32>, tensor<2x1x9x9xi64>) -> tensor<2x1x9x9xf32>
  %v = torch.conv %x, %w, %b {stride = array<i64: 2, 1>, padding = array<i64: 1, 0, 1, 0>, dilation = array<i64: 1, 2>, groups = 2 : i64} : (tensor<2x4x9x9xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>) -> tensor<2x6x5x5xf32>
  %p = torch.max_pool %x {kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 2>, dilation = array<i64: 1, 1>} : (tensor<2x4x9x9xf32>) -> tensor<2x4x5x5xf32>
  %q = torch.avg_pool %x {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, count_include_pad, divisor_override = 3 : i64} : (tensor<2x4x9x9xf32>) -> tensor<2x4x4x4xf32>
  func.return %g, %v : tensor<2x1x9x9xf32>, tensor<2x6x5x5xf32>
}
