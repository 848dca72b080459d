// RUN: deplo-opt %s --split-input-file --verify-diagnostics | filecheck %s

func.func @add_no_broadcast(%a: tensor<4x8xf32>, %b: tensor<3xf32>) -> tensor<4x8xf32> {
  // CHECK: torch.add: shapes (4, 8) and (3,) do not broadcast
  %y = torch.add %a, %b : (tensor<4x8xf32>, tensor<3xf32>) -> tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}

// -----

func.func @add_wrong_result(%a: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x9xf32> {
  // CHECK: torch.add: expected result shape (4, 8), got (4, 9)
  %y = torch.add %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x9xf32>
  func.return %y : tensor<4x9xf32>
}

// -----

func.func @mixed_dtypes(%a: tensor<4xf32>, %b: tensor<4xf16>) -> tensor<4xf32> {
  // CHECK: torch.mul: expected one element type, got ['f16', 'f32']
  %y = torch.mul %a, %b : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

func.func @matmul_inner(%a: tensor<4x8xf32>, %b: tensor<9x2xf32>) -> tensor<4x2xf32> {
  // CHECK: torch.matmul: shapes (4, 8) and (9, 2) cannot be multiplied
  %y = torch.matmul %a, %b : (tensor<4x8xf32>, tensor<9x2xf32>) -> tensor<4x2xf32>
  func.return %y : tensor<4x2xf32>
}

// -----

func.func @rms_norm_shape(%a: tensor<4x8xf32>, %w: tensor<8xf32>) -> tensor<4x8xf32> {
  // CHECK: torch.rms_norm: normalized_shape [16] must be the trailing dims of [4, 8]
  %y = torch.rms_norm %a, %w {normalized_shape = array<i64: 16>} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}

// -----

func.func @rms_norm_weight(%a: tensor<4x8xf32>, %w: tensor<4xf32>) -> tensor<4x8xf32> {
  // CHECK: torch.rms_norm: expected weight shape [8], got [4]
  %y = torch.rms_norm %a, %w {normalized_shape = array<i64: 8>} : (tensor<4x8xf32>, tensor<4xf32>) -> tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}

// -----

func.func @constant_rank() -> tensor<2xf32> {
  // CHECK: torch.constant: expected a 0-d tensor
  %c = torch.constant {value = 1.0 : f32} : tensor<2xf32>
  func.return %c : tensor<2xf32>
}

// -----

func.func @compare_result(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: torch.lt: expected an i1 result, got f32
  %y = torch.lt %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

func.func @bitwise_floats(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: torch.bitwise_xor: expected integer tensors, got tensor<4xf32>
  %y = torch.bitwise_xor %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

func.func @logical_operands(%a: tensor<4xf32>, %b: tensor<4xi1>) -> tensor<4xi1> {
  // CHECK: torch.logical_and: expected i1 operands and result, got tensor<4xf32>
  %y = torch.logical_and %a, %b : (tensor<4xf32>, tensor<4xi1>) -> tensor<4xi1>
  func.return %y : tensor<4xi1>
}

// -----

func.func @linear_weight(%x: tensor<4x5xf32>, %w: tensor<3x4xf32>) -> tensor<4x3xf32> {
  // CHECK: torch.linear: expected a weight of shape (N, 5), got (3, 4)
  %y = torch.linear %x, %w : (tensor<4x5xf32>, tensor<3x4xf32>) -> tensor<4x3xf32>
  func.return %y : tensor<4x3xf32>
}

// -----

func.func @linear_bias(%x: tensor<4x5xf32>, %w: tensor<3x5xf32>, %b: tensor<4xf32>) -> tensor<4x3xf32> {
  // CHECK: torch.linear: expected a bias broadcastable to (3,), got (4,)
  %y = torch.linear %x, %w, %b : (tensor<4x5xf32>, tensor<3x5xf32>, tensor<4xf32>) -> tensor<4x3xf32>
  func.return %y : tensor<4x3xf32>
}

// -----

func.func @gelu_approximate(%x: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: torch.gelu: expected approximate in ['none', 'tanh'], got 'erf'
  %y = torch.gelu %x {approximate = "erf"} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

func.func @sum_dims(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  // CHECK: torch.sum: expected distinct sorted dims within rank 2, got [2]
  %y = torch.sum %x {dim = array<i64: 2>} : (tensor<4x8xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

func.func @mean_keepdim(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  // CHECK: torch.mean: expected result shape (4, 1), got (4,)
  %y = torch.mean %x {dim = array<i64: 1>, keepdim} : (tensor<4x8xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

func.func @softmax_dim(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK: torch.softmax: expected dim in [-2, 1], got 2
  %y = torch.softmax %x {dim = 2 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}

// -----

func.func @layer_norm_affine(%x: tensor<4x8xf32>, %w: tensor<4xf32>) -> tensor<4x8xf32> {
  // CHECK: torch.layer_norm: expected weight and bias of shape [8], got [4]
  %y = torch.layer_norm %x, %w {normalized_shape = array<i64: 8>, eps = 1.0e-05 : f64} : (tensor<4x8xf32>, tensor<4xf32>) -> tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}

// -----

func.func @layer_norm_operands(%x: tensor<4x8xf32>, %w: tensor<8xf32>) -> tensor<4x8xf32> {
  // CHECK: torch.layer_norm: expected at most weight and bias, got 3 operands
  %y = torch.layer_norm %x, %w, %w, %w {normalized_shape = array<i64: 8>, eps = 1.0e-05 : f64} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}

// -----

func.func @to_shape(%x: tensor<4x8xf32>) -> tensor<8x4xf16> {
  // CHECK: torch.to: expected result shape (4, 8), got (8, 4)
  %y = torch.to %x : (tensor<4x8xf32>) -> tensor<8x4xf16>
  func.return %y : tensor<8x4xf16>
}

// -----

func.func @where_condition(%c: tensor<4xf32>, %a: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: torch.where: expected an i1 condition, got tensor<4xf32>
  %y = torch.where %c, %a, %a : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

func.func @where_broadcast(%c: tensor<3xi1>, %a: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: torch.where: shapes (3,), (4,) and (4,) do not broadcast
  %y = torch.where %c, %a, %a : (tensor<3xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

func.func @reshape_numel(%x: tensor<2x3xf32>) -> tensor<7xf32> {
  // CHECK: torch.reshape: expected a result of 6 elements, got 7 ((7,))
  %y = torch.reshape %x : (tensor<2x3xf32>) -> tensor<7xf32>
  func.return %y : tensor<7xf32>
}

// -----

func.func @permute_dims(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // CHECK: torch.permute: expected a permutation of the 2 dims, got [1, 1]
  %y = torch.permute %x {dims = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  func.return %y : tensor<3x2xf32>
}

// -----

func.func @permute_shape(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK: torch.permute: expected result shape (3, 2), got (2, 3)
  %y = torch.permute %x {dims = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -----

func.func @transpose_dim(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // CHECK: torch.transpose: expected dim1 in [-2, 1], got 2
  %y = torch.transpose %x {dim0 = 0 : i64, dim1 = 2 : i64} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  func.return %y : tensor<3x2xf32>
}

// -----

func.func @expand_shape(%x: tensor<3x2xf32>) -> tensor<3x4xf32> {
  // CHECK: torch.expand: expected a shape (3, 2) expands to, got (3, 4)
  %y = torch.expand %x : (tensor<3x2xf32>) -> tensor<3x4xf32>
  func.return %y : tensor<3x4xf32>
}

// -----

func.func @slice_step(%x: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: torch.slice: expected a positive step, got 0
  %y = torch.slice %x {dim = 0 : i64, start = 0 : i64, end = 4 : i64, step = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

func.func @slice_clamped(%x: tensor<5xf32>) -> tensor<5xf32> {
  // CHECK: torch.slice: expected result shape (2,), got (5,)
  %y = torch.slice %x {dim = 0 : i64, start = -2 : i64, end = 100 : i64, step = 1 : i64} : (tensor<5xf32>) -> tensor<5xf32>
  func.return %y : tensor<5xf32>
}

// -----

func.func @select_index(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  // CHECK: torch.select: expected index in [-3, 2], got 3
  %y = torch.select %x {dim = 1 : i64, index = 3 : i64} : (tensor<2x3xf32>) -> tensor<2xf32>
  func.return %y : tensor<2xf32>
}

// -----

func.func @cat_none() -> tensor<2xf32> {
  // CHECK: torch.cat: expected at least one input, got none
  %y = torch.cat {dim = 0 : i64} : () -> tensor<2xf32>
  func.return %y : tensor<2xf32>
}

// -----

func.func @cat_mismatch(%a: tensor<2x3xf32>, %b: tensor<3x3xf32>) -> tensor<2x6xf32> {
  // CHECK: torch.cat: expected input 1 to match (2, 3) outside dim 1, got (3, 3)
  %y = torch.cat %a, %b {dim = 1 : i64} : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x6xf32>
  func.return %y : tensor<2x6xf32>
}

// -----

func.func @embedding_ids(%w: tensor<10x4xf32>, %ids: tensor<3xf32>) -> tensor<3x4xf32> {
  // CHECK: torch.embedding: expected integer indices, got tensor<3xf32>
  %y = torch.embedding %w, %ids : (tensor<10x4xf32>, tensor<3xf32>) -> tensor<3x4xf32>
  func.return %y : tensor<3x4xf32>
}

// -----

func.func @embedding_weight(%w: tensor<10xf32>, %ids: tensor<3xi64>) -> tensor<3xf32> {
  // CHECK: torch.embedding: expected a 2-d weight, got tensor<10xf32>
  %y = torch.embedding %w, %ids : (tensor<10xf32>, tensor<3xi64>) -> tensor<3xf32>
  func.return %y : tensor<3xf32>
}

// -----

func.func @index_dims(%x: tensor<5x6xf32>, %i: tensor<3xi64>) -> tensor<5x3xf32> {
  // CHECK: torch.index: expected distinct sorted dims within rank 2, got [2]
  %y = torch.index %x, %i {dims = array<i64: 2>} : (tensor<5x6xf32>, tensor<3xi64>) -> tensor<5x3xf32>
  func.return %y : tensor<5x3xf32>
}

// -----

func.func @index_count(%x: tensor<5x6xf32>, %i: tensor<3xi64>) -> tensor<3xf32> {
  // CHECK: torch.index: expected one index tensor per dim (2), got 1
  %y = torch.index %x, %i {dims = array<i64: 0, 1>} : (tensor<5x6xf32>, tensor<3xi64>) -> tensor<3xf32>
  func.return %y : tensor<3xf32>
}

// -----

func.func @index_broadcast(%x: tensor<5x6xf32>, %i: tensor<3xi64>, %j: tensor<4xi64>) -> tensor<3xf32> {
  // CHECK: torch.index: index shapes [(3,), (4,)] do not broadcast
  %y = torch.index %x, %i, %j {dims = array<i64: 0, 1>} : (tensor<5x6xf32>, tensor<3xi64>, tensor<4xi64>) -> tensor<3xf32>
  func.return %y : tensor<3xf32>
}

// -----

func.func @index_apart(%x: tensor<5x6x7xf32>, %i: tensor<3xi64>) -> tensor<6x3xf32> {
  // CHECK: torch.index: expected result shape (3, 6), got (6, 3)
  %y = torch.index %x, %i, %i {dims = array<i64: 0, 2>} : (tensor<5x6x7xf32>, tensor<3xi64>, tensor<3xi64>) -> tensor<6x3xf32>
  func.return %y : tensor<6x3xf32>
}

// -----

func.func @arange_step() -> tensor<0xi64> {
  // CHECK: torch.arange: expected a nonzero step, got 0
  %y = torch.arange {start = 0.0 : f64, end = 7.0 : f64, step = 0.0 : f64} : tensor<0xi64>
  func.return %y : tensor<0xi64>
}

// -----

func.func @arange_length() -> tensor<7xf32> {
  // CHECK: torch.arange: expected result shape (4,), got (7,)
  %y = torch.arange {start = 0.0 : f64, end = 7.0 : f64, step = 2.0 : f64} : tensor<7xf32>
  func.return %y : tensor<7xf32>
}

// -----

func.func @full_int() -> tensor<2xi64> {
  // CHECK: torch.full: expected an integer value for i64, got 1.5
  %y = torch.full {value = 1.5 : f64} : tensor<2xi64>
  func.return %y : tensor<2xi64>
}

// -----

func.func @sdpa_rank(%q: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: torch.sdpa: expected q, k, v of rank >= 2, got (4,), (4,), (4,)
  %y = torch.sdpa %q, %q, %q : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

func.func @sdpa_ints(%q: tensor<2x4xi32>) -> tensor<2x4xi32> {
  // CHECK: torch.sdpa: expected floating-point q, k, v, got tensor<2x4xi32>
  %y = torch.sdpa %q, %q, %q : (tensor<2x4xi32>, tensor<2x4xi32>, tensor<2x4xi32>) -> tensor<2x4xi32>
  func.return %y : tensor<2x4xi32>
}

// -----

func.func @sdpa_kv(%q: tensor<2x7x16xf32>, %k: tensor<2x7x8xf32>) -> tensor<2x7x8xf32> {
  // CHECK: torch.sdpa: expected k (..., S, 16) and v (..., S, Ev), got (2, 7, 8) and (2, 7, 8)
  %y = torch.sdpa %q, %k, %k : (tensor<2x7x16xf32>, tensor<2x7x8xf32>, tensor<2x7x8xf32>) -> tensor<2x7x8xf32>
  func.return %y : tensor<2x7x8xf32>
}

// -----

func.func @sdpa_kv_batch(%q: tensor<2x7x16xf32>, %k: tensor<2x5x16xf32>, %v: tensor<3x5x16xf32>) -> tensor<2x7x16xf32> {
  // CHECK: torch.sdpa: batch dims of (2, 7, 16), (2, 5, 16) and (3, 5, 16) do not broadcast
  %y = torch.sdpa %q, %k, %v : (tensor<2x7x16xf32>, tensor<2x5x16xf32>, tensor<3x5x16xf32>) -> tensor<2x7x16xf32>
  func.return %y : tensor<2x7x16xf32>
}

// -----

func.func @sdpa_heads(%q: tensor<1x4x7x16xf32>, %k: tensor<1x2x7x16xf32>) -> tensor<1x4x7x16xf32> {
  // CHECK: torch.sdpa: batch dims of (1, 4, 7, 16), (1, 2, 7, 16) and (1, 2, 7, 16) do not broadcast
  %y = torch.sdpa %q, %k, %k : (tensor<1x4x7x16xf32>, tensor<1x2x7x16xf32>, tensor<1x2x7x16xf32>) -> tensor<1x4x7x16xf32>
  func.return %y : tensor<1x4x7x16xf32>
}

// -----

func.func @sdpa_gqa(%q: tensor<1x4x7x16xf32>, %k: tensor<1x3x7x16xf32>) -> tensor<1x4x7x16xf32> {
  // CHECK: torch.sdpa: batch dims of (1, 4, 7, 16), (1, 3, 7, 16) and (1, 3, 7, 16) do not broadcast (with enable_gqa, query heads (dim -3) must be a multiple of kv heads)
  %y = torch.sdpa %q, %k, %k {enable_gqa} : (tensor<1x4x7x16xf32>, tensor<1x3x7x16xf32>, tensor<1x3x7x16xf32>) -> tensor<1x4x7x16xf32>
  func.return %y : tensor<1x4x7x16xf32>
}

// -----

func.func @sdpa_both(%q: tensor<7x16xf32>, %m: tensor<7x7xi1>) -> tensor<7x16xf32> {
  // CHECK: torch.sdpa: expected is_causal or attn_mask, got both
  %y = torch.sdpa %q, %q, %q, %m {is_causal} : (tensor<7x16xf32>, tensor<7x16xf32>, tensor<7x16xf32>, tensor<7x7xi1>) -> tensor<7x16xf32>
  func.return %y : tensor<7x16xf32>
}

// -----

func.func @sdpa_mask_shape(%q: tensor<7x16xf32>, %m: tensor<7x5xi1>) -> tensor<7x16xf32> {
  // CHECK: torch.sdpa: expected an attn_mask broadcastable to (7, 7), got (7, 5)
  %y = torch.sdpa %q, %q, %q, %m : (tensor<7x16xf32>, tensor<7x16xf32>, tensor<7x16xf32>, tensor<7x5xi1>) -> tensor<7x16xf32>
  func.return %y : tensor<7x16xf32>
}

// -----

func.func @sdpa_mask_type(%q: tensor<7x16xf32>, %m: tensor<7x7xf16>) -> tensor<7x16xf32> {
  // CHECK: torch.sdpa: expected an attn_mask of i1 or f32, got tensor<7x7xf16>
  %y = torch.sdpa %q, %q, %q, %m : (tensor<7x16xf32>, tensor<7x16xf32>, tensor<7x16xf32>, tensor<7x7xf16>) -> tensor<7x16xf32>
  func.return %y : tensor<7x16xf32>
}

// -----

func.func @cumsum_dim(%x: tensor<4x5xf32>) -> tensor<4x5xf32> {
  // CHECK: torch.cumsum: expected dim in [-2, 1], got 2
  %y = torch.cumsum %x {dim = 2 : i64} : (tensor<4x5xf32>) -> tensor<4x5xf32>
  func.return %y : tensor<4x5xf32>
}

// -----

func.func @argmax_type(%x: tensor<4x5xf32>) -> tensor<4xf32> {
  // CHECK: torch.argmax: expected an i64 result, got tensor<4xf32>
  %y = torch.argmax %x {dim = 1 : i64} : (tensor<4x5xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

func.func @gather_index(%x: tensor<4x5xf32>, %i: tensor<5x2xi64>) -> tensor<5x2xf32> {
  // CHECK: torch.gather: expected an index of rank 2 no larger than (4, 5) off dim 1, got (5, 2)
  %y = torch.gather %x, %i {dim = 1 : i64} : (tensor<4x5xf32>, tensor<5x2xi64>) -> tensor<5x2xf32>
  func.return %y : tensor<5x2xf32>
}

// -----

func.func @conv_channels(%x: tensor<1x4x9x9xf32>, %w: tensor<6x3x3x3xf32>) -> tensor<1x6x7x7xf32> {
  // CHECK: torch.conv: expected x (N, C, ...) and w (O, C / 1, ...) of rank 4 with O a multiple of 1, got (1, 4, 9, 9) and (6, 3, 3, 3)
  %y = torch.conv %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x4x9x9xf32>, tensor<6x3x3x3xf32>) -> tensor<1x6x7x7xf32>
  func.return %y : tensor<1x6x7x7xf32>
}

// -----

func.func @conv_shape(%x: tensor<1x3x9x9xf32>, %w: tensor<6x3x3x3xf32>) -> tensor<1x6x9x9xf32> {
  // CHECK: torch.conv: expected result shape (1, 6, 7, 7), got (1, 6, 9, 9)
  %y = torch.conv %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x3x9x9xf32>, tensor<6x3x3x3xf32>) -> tensor<1x6x9x9xf32>
  func.return %y : tensor<1x6x9x9xf32>
}

// -----

func.func @pool_window(%x: tensor<1x3x9x9xf32>) -> tensor<1x3x4x4xf32> {
  // CHECK: torch.max_pool: expected stride, dilation, kernel and padding (lo, hi) for each of 2 window dims of (1, 3, 9, 9)
  %y = torch.max_pool %x {kernel = array<i64: 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>} : (tensor<1x3x9x9xf32>) -> tensor<1x3x4x4xf32>
  func.return %y : tensor<1x3x4x4xf32>
}
