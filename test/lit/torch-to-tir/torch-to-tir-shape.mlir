// RUN: deplo-opt %s --split-input-file -p torch-to-tir | filecheck %s

// A reshape only splits or merges the dims that change: each group of dims with equal products
// gets its own linear index.
// CHECK-LABEL: func.func @reshape_split_merge
// CHECK:         tir.index_map %x (d0, d1, d2, d3) -> (d0, d1, ((d2 * 16) + d3)) : tensor<2x7x64xf32> -> tensor<2x7x4x16xf32>
// CHECK:         tir.index_map %x (d0, d1) -> (d0, (d1 floordiv 64), (d1 mod 64)) : tensor<2x7x64xf32> -> tensor<2x448xf32>
// CHECK-NOT:     torch.
func.func @reshape_split_merge(%x: tensor<2x7x64xf32>) -> (tensor<2x7x4x16xf32>, tensor<2x448xf32>) {
  %a = torch.reshape %x : (tensor<2x7x64xf32>) -> tensor<2x7x4x16xf32>
  %b = torch.reshape %x : (tensor<2x7x64xf32>) -> tensor<2x448xf32>
  func.return %a, %b : tensor<2x7x4x16xf32>, tensor<2x448xf32>
}

// -----

// Unsqueeze and squeeze are reshapes by unit dims: constant 0 coordinates, no arithmetic.
// CHECK-LABEL: func.func @unit_dims
// CHECK:         %[[U:.*]] = tir.index_map %x (d0, d1, d2) -> (d0, d2) : tensor<3x5xf32> -> tensor<3x1x5xf32>
// CHECK:         tir.index_map %[[U]] (d0, d1) -> (d0, 0, d1) : tensor<3x1x5xf32> -> tensor<3x5xf32>
func.func @unit_dims(%x: tensor<3x5xf32>) -> tensor<3x5xf32> {
  %u = torch.unsqueeze %x {dim = 1 : i64} : (tensor<3x5xf32>) -> tensor<3x1x5xf32>
  %s = torch.squeeze %u {dims = array<i64: 1>} : (tensor<3x1x5xf32>) -> tensor<3x5xf32>
  func.return %s : tensor<3x5xf32>
}

// -----

// Permute and transpose read the input at permuted coordinates; expand reads size-1 dims at 0.
// CHECK-LABEL: func.func @permute_transpose_expand
// CHECK:         tir.index_map %x (d0, d1, d2) -> (d1, d2, d0) : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
// CHECK:         tir.index_map %x (d0, d1, d2) -> (d0, d2, d1) : tensor<2x3x4xf32> -> tensor<2x4x3xf32>
// CHECK:         tir.index_map %b (d0, d1, d2) -> (d1, 0) : tensor<3x1xf32> -> tensor<2x3x5xf32>
func.func @permute_transpose_expand(%x: tensor<2x3x4xf32>, %b: tensor<3x1xf32>) -> (tensor<4x2x3xf32>, tensor<2x4x3xf32>, tensor<2x3x5xf32>) {
  %p = torch.permute %x {dims = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %t = torch.transpose %x {dim0 = -1 : i64, dim1 = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
  %e = torch.expand %b : (tensor<3x1xf32>) -> tensor<2x3x5xf32>
  func.return %p, %t, %e : tensor<4x2x3xf32>, tensor<2x4x3xf32>, tensor<2x3x5xf32>
}

// -----

// Slice: start + step * d on its dim, negative and out-of-range bounds clamped as torch does
// (x[1:-1:2] on 7 elements starts at 1; x[-100:3] starts at 0). Select: a constant coordinate.
// CHECK-LABEL: func.func @slice_select
// CHECK:         tir.index_map %x (d0, d1) -> (d0, ((d1 * 2) + 1)) : tensor<4x7xf32> -> tensor<4x3xf32>
// CHECK:         tir.index_map %x (d0, d1) -> (d0, d1) : tensor<4x7xf32> -> tensor<4x3xf32>
// CHECK:         tir.index_map %x (d0) -> (3, d0) : tensor<4x7xf32> -> tensor<7xf32>
func.func @slice_select(%x: tensor<4x7xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>, tensor<7xf32>) {
  %a = torch.slice %x {dim = 1 : i64, start = 1 : i64, end = -1 : i64, step = 2 : i64} : (tensor<4x7xf32>) -> tensor<4x3xf32>
  %b = torch.slice %x {dim = -1 : i64, start = -100 : i64, end = 3 : i64, step = 1 : i64} : (tensor<4x7xf32>) -> tensor<4x3xf32>
  %c = torch.select %x {dim = 0 : i64, index = -1 : i64} : (tensor<4x7xf32>) -> tensor<7xf32>
  func.return %a, %b, %c : tensor<4x3xf32>, tensor<4x3xf32>, tensor<7xf32>
}

// -----

// CHECK-LABEL: func.func @cat
// CHECK:         tir.concat %a, %b, %a [1] : tensor<2x3xf32>, tensor<2x4xf32>, tensor<2x3xf32> -> tensor<2x10xf32>
func.func @cat(%a: tensor<2x3xf32>, %b: tensor<2x4xf32>) -> tensor<2x10xf32> {
  %c = torch.cat %a, %b, %a {dim = -1 : i64} : (tensor<2x3xf32>, tensor<2x4xf32>, tensor<2x3xf32>) -> tensor<2x10xf32>
  func.return %c : tensor<2x10xf32>
}

// -----

// Embedding and index are one gather: symbol k of the table map is index tensor k's value.
// With the indexed dims apart (x[i, :, j]), the broadcast index dims come first.
// CHECK-LABEL: func.func @gathers
// CHECK:         tir.gather %w (d0, d1, d2)[s0] -> (s0, d2) indices(%ids (d0, d1, d2) -> (d0, d1)) : tensor<10x4xf32>, tensor<2x3xi64> -> tensor<2x3x4xf32>
// torch.index wraps a negative index value by its dim's size first (x[-1]: the last).
// CHECK:         %[[NEG:.*]] = tir.compare lt(%ids, %{{.*}}) : tensor<2x3xi64> -> tensor<2x3xi1>
// CHECK:         tir.full 6 : tensor<2x3xi64>
// CHECK:         %[[UP:.*]] = tir.elementwise add(%ids, %{{.*}}) : tensor<2x3xi64>
// CHECK:         %[[IDS:.*]] = tir.select %[[NEG]], %[[UP]], %ids : tensor<2x3xi64>
// CHECK:         tir.gather %x (d0, d1, d2, d3)[s0] -> (d0, s0, d3) indices(%[[IDS]] (d0, d1, d2, d3) -> (d1, d2)) : tensor<5x6x7xf32>, tensor<2x3xi64> -> tensor<5x2x3x7xf32>
// CHECK:         tir.gather %x (d0, d1, d2)[s0, s1] -> (s0, d2, s1) indices(%{{.*}} (d0, d1, d2) -> (d0, 0), %{{.*}} (d0, d1, d2) -> (d1)) : tensor<5x6x7xf32>, tensor<2x1xi64>, tensor<3xi64> -> tensor<2x3x6xf32>
func.func @gathers(%w: tensor<10x4xf32>, %ids: tensor<2x3xi64>, %x: tensor<5x6x7xf32>, %i: tensor<2x1xi64>, %j: tensor<3xi64>) -> (tensor<2x3x4xf32>, tensor<5x2x3x7xf32>, tensor<2x3x6xf32>) {
  %e = torch.embedding %w, %ids : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
  %a = torch.index %x, %ids {dims = array<i64: 1>} : (tensor<5x6x7xf32>, tensor<2x3xi64>) -> tensor<5x2x3x7xf32>
  %b = torch.index %x, %i, %j {dims = array<i64: 0, 2>} : (tensor<5x6x7xf32>, tensor<2x1xi64>, tensor<3xi64>) -> tensor<2x3x6xf32>
  func.return %e, %a, %b : tensor<2x3x4xf32>, tensor<5x2x3x7xf32>, tensor<2x3x6xf32>
}

// -----

// CHECK-LABEL: func.func @creation
// CHECK:         tir.iota dim 0 start 2 step 3 : tensor<4xi64>
// CHECK:         tir.iota dim 0 start 5.000000e-01 step 2.500000e-01 : tensor<3xf32>
// CHECK:         tir.full 7 : tensor<2x3xi64>
func.func @creation() -> (tensor<4xi64>, tensor<3xf32>, tensor<2x3xi64>) {
  %a = torch.arange {start = 2.0 : f64, end = 12.0 : f64, step = 3.0 : f64} : tensor<4xi64>
  %b = torch.arange {start = 0.5 : f64, end = 1.25 : f64, step = 0.25 : f64} : tensor<3xf32>
  %c = torch.full {value = 7.0 : f64} : tensor<2x3xi64>
  func.return %a, %b, %c : tensor<4xi64>, tensor<3xf32>, tensor<2x3xi64>
}

// -----

// SDPA, causal with GQA (4 query heads on 2 kv heads): q kᵀ as a product over (B, H, L, S, E)
// with the kv head at h floordiv 2, the scale, the causal mask from two iotas (keep s <= l),
// a max-subtracted softmax over S, then the product with v reduced over S.
// CHECK-LABEL: func.func @sdpa_causal_gqa
// CHECK:         %[[Q:.*]] = tir.index_map %q (d0, d1, d2, d3, d4) -> (d0, d1, d2, d4) : tensor<1x4x7x16xf32> -> tensor<1x4x7x7x16xf32>
// CHECK-NEXT:    %[[K:.*]] = tir.index_map %k (d0, d1, d2, d3, d4) -> (d0, (d1 floordiv 2), d3, d4) : tensor<1x2x7x16xf32> -> tensor<1x4x7x7x16xf32>
// CHECK-NEXT:    %[[QK:.*]] = tir.elementwise mul(%[[Q]], %[[K]])
// CHECK-NEXT:    %[[S:.*]] = tir.reduce add %[[QK]] [4] : tensor<1x4x7x7x16xf32> -> tensor<1x4x7x7xf32>
// CHECK-NEXT:    %[[SC:.*]] = tir.full 2.500000e-01 : tensor<1x4x7x7xf32>
// CHECK-NEXT:    %[[SS:.*]] = tir.elementwise mul(%[[S]], %[[SC]])
// CHECK-NEXT:    %[[ROW:.*]] = tir.iota dim 0 start 0 step 1 : tensor<7x7xi64>
// CHECK-NEXT:    %[[COL:.*]] = tir.iota dim 1 start 0 step 1 : tensor<7x7xi64>
// CHECK-NEXT:    %[[KEEP:.*]] = tir.compare le(%[[COL]], %[[ROW]])
// CHECK-NEXT:    %[[KB:.*]] = tir.index_map %[[KEEP]] (d0, d1, d2, d3) -> (d2, d3) : tensor<7x7xi1> -> tensor<1x4x7x7xi1>
// CHECK-NEXT:    %[[LOW:.*]] = tir.full -3.40282347e+38 : tensor<1x4x7x7xf32>
// CHECK-NEXT:    %[[M:.*]] = tir.select %[[KB]], %[[SS]], %[[LOW]] : tensor<1x4x7x7xf32>
// CHECK-NEXT:    tir.reduce max %[[M]] [3]
// CHECK:         tir.elementwise exp
// CHECK:         tir.reduce add %{{.*}} [3]
// CHECK:         %[[P:.*]] = tir.elementwise div
// CHECK-NEXT:    %[[PE:.*]] = tir.index_map %[[P]] (d0, d1, d2, d3, d4) -> (d0, d1, d2, d4) : tensor<1x4x7x7xf32> -> tensor<1x4x7x16x7xf32>
// CHECK-NEXT:    %[[VE:.*]] = tir.index_map %v (d0, d1, d2, d3, d4) -> (d0, (d1 floordiv 2), d4, d3) : tensor<1x2x7x16xf32> -> tensor<1x4x7x16x7xf32>
// CHECK-NEXT:    %[[PV:.*]] = tir.elementwise mul(%[[PE]], %[[VE]])
// CHECK-NEXT:    tir.reduce add %[[PV]] [4] : tensor<1x4x7x16x7xf32> -> tensor<1x4x7x16xf32>
// CHECK-NOT:     torch.
func.func @sdpa_causal_gqa(%q: tensor<1x4x7x16xf32>, %k: tensor<1x2x7x16xf32>, %v: tensor<1x2x7x16xf32>) -> tensor<1x4x7x16xf32> {
  %y = torch.sdpa %q, %k, %v {is_causal, enable_gqa} : (tensor<1x4x7x16xf32>, tensor<1x2x7x16xf32>, tensor<1x2x7x16xf32>) -> tensor<1x4x7x16xf32>
  func.return %y : tensor<1x4x7x16xf32>
}

// -----

// bf16 SDPA: q, k, v extended to f32, both products and the softmax in f32, one rounding at
// the end; q's batch dims broadcast against k's and v's (q 2x1x3x8, k/v 3x5x8 -> 2x3x3x8).
// CHECK-LABEL: func.func @sdpa_bf16_broadcast
// CHECK:         %[[Q:.*]] = tir.cast %q : tensor<2x1x3x8xbf16> -> tensor<2x1x3x8xf32>
// CHECK-NEXT:    %[[K:.*]] = tir.cast %k : tensor<3x5x8xbf16> -> tensor<3x5x8xf32>
// CHECK-NEXT:    %[[V:.*]] = tir.cast %v : tensor<3x5x8xbf16> -> tensor<3x5x8xf32>
// CHECK-NEXT:    tir.index_map %[[Q]] (d0, d1, d2, d3, d4) -> (d0, 0, d2, d4) : tensor<2x1x3x8xf32> -> tensor<2x3x3x5x8xf32>
// CHECK-NEXT:    tir.index_map %[[K]] (d0, d1, d2, d3, d4) -> (d1, d3, d4) : tensor<3x5x8xf32> -> tensor<2x3x3x5x8xf32>
// CHECK:         tir.reduce add %{{.*}} [4] : tensor<2x3x3x5x8xf32> -> tensor<2x3x3x5xf32>
// CHECK:         tir.index_map %[[V]] (d0, d1, d2, d3, d4) -> (d1, d4, d3) : tensor<3x5x8xf32> -> tensor<2x3x3x8x5xf32>
// CHECK:         %[[O:.*]] = tir.reduce add %{{.*}} [4] : tensor<2x3x3x8x5xf32> -> tensor<2x3x3x8xf32>
// CHECK-NEXT:    tir.cast %[[O]] : tensor<2x3x3x8xf32> -> tensor<2x3x3x8xbf16>
func.func @sdpa_bf16_broadcast(%q: tensor<2x1x3x8xbf16>, %k: tensor<3x5x8xbf16>, %v: tensor<3x5x8xbf16>) -> tensor<2x3x3x8xbf16> {
  %y = torch.sdpa %q, %k, %v : (tensor<2x1x3x8xbf16>, tensor<3x5x8xbf16>, tensor<3x5x8xbf16>) -> tensor<2x3x3x8xbf16>
  func.return %y : tensor<2x3x3x8xbf16>
}

// -----

// A bool mask selects (masked scores become -inf, as PyTorch's); a float mask is added. The
// softmax is the safe one: its max clamped to the lowest float, its sum to at least 1, so a
// row masked whole is 0.
// CHECK-LABEL: func.func @sdpa_masks
// CHECK:         %[[MB:.*]] = tir.index_map %m (d0, d1, d2) -> (d1, d2) : tensor<5x7xi1> -> tensor<2x5x7xi1>
// CHECK-NEXT:    %[[NEG:.*]] = tir.full 0xff800000 : tensor<2x5x7xf32>
// CHECK-NEXT:    %[[S:.*]] = tir.select %[[MB]], %{{.*}}, %[[NEG]] : tensor<2x5x7xf32>
// CHECK-NEXT:    %[[MX:.*]] = tir.reduce max %[[S]] [2] : tensor<2x5x7xf32> -> tensor<2x5xf32>
// CHECK-NEXT:    %[[LOW:.*]] = tir.full -3.40282347e+38 : tensor<2x5xf32>
// CHECK-NEXT:    tir.elementwise max(%[[MX]], %[[LOW]]) : tensor<2x5xf32>
// CHECK:         %[[SUM:.*]] = tir.reduce add %{{.*}} [2] : tensor<2x5x7xf32> -> tensor<2x5xf32>
// CHECK-NEXT:    %[[ONE:.*]] = tir.full 1.000000e+00 : tensor<2x5xf32>
// CHECK-NEXT:    tir.elementwise max(%[[SUM]], %[[ONE]]) : tensor<2x5xf32>
// CHECK:         %[[AB:.*]] = tir.index_map %a (d0, d1, d2) -> (d0, 0, d2) : tensor<2x1x7xf32> -> tensor<2x5x7xf32>
// CHECK-NEXT:    tir.elementwise add(%{{.*}}, %[[AB]]) : tensor<2x5x7xf32>
func.func @sdpa_masks(%q: tensor<2x5x8xf32>, %k: tensor<2x7x8xf32>, %m: tensor<5x7xi1>, %a: tensor<2x1x7xf32>) -> (tensor<2x5x8xf32>, tensor<2x5x8xf32>) {
  %x = torch.sdpa %q, %k, %k, %m {scale = 0.5 : f64} : (tensor<2x5x8xf32>, tensor<2x7x8xf32>, tensor<2x7x8xf32>, tensor<5x7xi1>) -> tensor<2x5x8xf32>
  %y = torch.sdpa %q, %k, %k, %a : (tensor<2x5x8xf32>, tensor<2x7x8xf32>, tensor<2x7x8xf32>, tensor<2x1x7xf32>) -> tensor<2x5x8xf32>
  func.return %x, %y : tensor<2x5x8xf32>, tensor<2x5x8xf32>
}
