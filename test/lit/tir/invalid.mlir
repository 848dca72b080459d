// RUN: deplo-opt %s --split-input-file --verify-diagnostics | filecheck %s

func.func @arity(%a: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: tir.elementwise add: expected 2 operand(s), got 1
  %y = tir.elementwise add(%a) : tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

func.func @reduce_shape(%a: tensor<4x8xf32>) -> tensor<8xf32> {
  // CHECK: tir.reduce: reducing tensor<4x8xf32> over [1] gives shape [4] of f32, got tensor<8xf32>
  %y = tir.reduce add %a [1] : tensor<4x8xf32> -> tensor<8xf32>
  func.return %y : tensor<8xf32>
}

// -----

func.func @reduce_dims(%a: tensor<4x8xf32>) -> tensor<4xf32> {
  // CHECK: tir.reduce: expected distinct sorted dims within rank 2, got [2]
  %y = tir.reduce add %a [2] : tensor<4x8xf32> -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

func.func @map_out_of_bounds(%a: tensor<64xf32>) -> tensor<16x64xf32> {
  // CHECK: tir.index_map: coordinate 0 ((d1 + 1)) ranges over [1, 64], outside [0, 63]
  %y = tir.index_map %a (i, j) -> (j + 1) : tensor<64xf32> -> tensor<16x64xf32>
  func.return %y : tensor<16x64xf32>
}

// -----

func.func @map_arity(%a: tensor<64xf32>) -> tensor<16x64xf32> {
  // CHECK: tir.index_map: map (d0) -> (d0) must take the 2 result coordinates
  %y = tir.index_map %a (i) -> (i) : tensor<64xf32> -> tensor<16x64xf32>
  func.return %y : tensor<16x64xf32>
}

// -----

func.func @logical_kind_on_floats(%a: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: tir.elementwise and: expected i1 or integers, got tensor<4xf32>
  %y = tir.elementwise and(%a, %a) : tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

func.func @number_kind_on_i1(%a: tensor<4xi1>) -> tensor<4xi1> {
  // CHECK: tir.elementwise add: expected numbers, got tensor<4xi1>
  %y = tir.elementwise add(%a, %a) : tensor<4xi1>
  func.return %y : tensor<4xi1>
}

// -----

func.func @compare_result(%a: tensor<4xf32>) -> tensor<8xi1> {
  // CHECK: tir.compare eq: expected tensor<4xi1>, got tensor<8xi1>
  %y = tir.compare eq(%a, %a) : tensor<4xf32> -> tensor<8xi1>
  func.return %y : tensor<8xi1>
}

// -----

func.func @compare_operands(%a: tensor<4xf32>, %b: tensor<4xf16>) -> tensor<4xi1> {
  // CHECK: tir.compare eq: expected the rhs of type tensor<4xf32>, got tensor<4xf16>
  %y = "tir.compare"(%a, %b) <{kind = #tir<cmp eq>}> : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xi1>
  func.return %y : tensor<4xi1>
}

// -----

func.func @select_condition(%c: tensor<4xf32>, %a: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: tir.select: expected a condition of type tensor<4xi1>, got tensor<4xf32>
  %y = "tir.select"(%c, %a, %a) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

func.func @select_operand(%c: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xf16>) -> tensor<4xf32> {
  // CHECK: tir.select: expected the rhs of type tensor<4xf32>, got tensor<4xf16>
  %y = "tir.select"(%c, %a, %b) : (tensor<4xi1>, tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

func.func @cast_shape(%a: tensor<4xf32>) -> tensor<8xf16> {
  // CHECK: tir.cast: expected a result of shape (4,), got tensor<8xf16>
  %y = tir.cast %a : tensor<4xf32> -> tensor<8xf16>
  func.return %y : tensor<8xf16>
}

// -----

func.func @cast_identity(%a: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: tir.cast: expected another element type than tensor<4xf32>, got tensor<4xf32>
  %y = tir.cast %a : tensor<4xf32> -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

func.func @cast_types(%a: tensor<4xf32>) -> tensor<4xindex> {
  // CHECK: tir.cast: expected element types in ['f32', 'f16', 'bf16', 'f64', 'i1', 'i8', 'i16', 'i32', 'i64'], got tensor<4xindex>
  %y = tir.cast %a : tensor<4xf32> -> tensor<4xindex>
  func.return %y : tensor<4xindex>
}

// -----

func.func @gather_symbols(%w: tensor<10x4xf32>, %ids: tensor<3xi64>) -> tensor<3x4xf32> {
  // CHECK: tir.gather: expected a map of the 2 result coordinates and one symbol per index tensor (1), got (d0, d1) -> (d0, d1)
  %y = tir.gather %w (d0, d1) -> (d0, d1) indices(%ids (d0, d1) -> (d0)) : tensor<10x4xf32>, tensor<3xi64> -> tensor<3x4xf32>
  func.return %y : tensor<3x4xf32>
}

// -----

func.func @gather_table_rank(%w: tensor<10x4xf32>, %ids: tensor<3xi64>) -> tensor<3x4xf32> {
  // CHECK: tir.gather: expected a map giving the 2 table coordinates, got (d0, d1)[s0] -> (s0)
  %y = tir.gather %w (d0, d1)[s0] -> (s0) indices(%ids (d0, d1) -> (d0)) : tensor<10x4xf32>, tensor<3xi64> -> tensor<3x4xf32>
  func.return %y : tensor<3x4xf32>
}

// -----

func.func @gather_element_type(%w: tensor<10x4xf32>, %ids: tensor<3xi64>) -> tensor<3x4xf16> {
  // CHECK: tir.gather: expected result element type f32, got f16
  %y = tir.gather %w (d0, d1)[s0] -> (s0, d1) indices(%ids (d0, d1) -> (d0)) : tensor<10x4xf32>, tensor<3xi64> -> tensor<3x4xf16>
  func.return %y : tensor<3x4xf16>
}

// -----

func.func @gather_float_index(%w: tensor<10x4xf32>, %ids: tensor<3xf32>) -> tensor<3x4xf32> {
  // CHECK: tir.gather: expected index 0 of integers, got tensor<3xf32>
  %y = tir.gather %w (d0, d1)[s0] -> (s0, d1) indices(%ids (d0, d1) -> (d0)) : tensor<10x4xf32>, tensor<3xf32> -> tensor<3x4xf32>
  func.return %y : tensor<3x4xf32>
}

// -----

func.func @gather_index_map(%w: tensor<10x4xf32>, %ids: tensor<3xi64>) -> tensor<3x4xf32> {
  // CHECK: tir.gather: expected index map 0 from the 2 result coordinates to the 1 coordinates of tensor<3xi64>, got (d0, d1) -> (d0, d1)
  %y = tir.gather %w (d0, d1)[s0] -> (s0, d1) indices(%ids (d0, d1) -> (d0, d1)) : tensor<10x4xf32>, tensor<3xi64> -> tensor<3x4xf32>
  func.return %y : tensor<3x4xf32>
}

// -----

func.func @gather_index_bounds(%w: tensor<10x4xf32>, %ids: tensor<3xi64>) -> tensor<3x4xf32> {
  // CHECK: tir.gather index 0: coordinate 0 (d1) ranges over [0, 3], outside [0, 2]
  %y = tir.gather %w (d0, d1)[s0] -> (s0, d1) indices(%ids (d0, d1) -> (d1)) : tensor<10x4xf32>, tensor<3xi64> -> tensor<3x4xf32>
  func.return %y : tensor<3x4xf32>
}

// -----

func.func @gather_mixed(%w: tensor<10x4xf32>, %ids: tensor<3xi64>) -> tensor<3x4xf32> {
  // CHECK: tir.gather: expected coordinate 0 to be an index value or free of index values, got (s0 + 1)
  %y = tir.gather %w (d0, d1)[s0] -> (s0 + 1, d1) indices(%ids (d0, d1) -> (d0)) : tensor<10x4xf32>, tensor<3xi64> -> tensor<3x4xf32>
  func.return %y : tensor<3x4xf32>
}

// -----

func.func @gather_bounds(%w: tensor<10x4xf32>, %ids: tensor<3xi64>) -> tensor<3x5xf32> {
  // CHECK: tir.gather: coordinate 1 (d1) ranges over [0, 4], outside [0, 3]
  %y = tir.gather %w (d0, d1)[s0] -> (s0, d1) indices(%ids (d0, d1) -> (d0)) : tensor<10x4xf32>, tensor<3xi64> -> tensor<3x5xf32>
  func.return %y : tensor<3x5xf32>
}

// -----

func.func @concat_one(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK: tir.concat: expected at least 2 inputs, got 1
  %y = tir.concat %a [1] : tensor<2x3xf32> -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -----

func.func @concat_dim(%a: tensor<2x3xf32>) -> tensor<2x6xf32> {
  // CHECK: tir.concat: expected a dim in [0, 1], got 2
  %y = tir.concat %a, %a [2] : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x6xf32>
  func.return %y : tensor<2x6xf32>
}

// -----

func.func @concat_other_dims(%a: tensor<2x3xf32>, %b: tensor<3x3xf32>) -> tensor<2x6xf32> {
  // CHECK: tir.concat: expected input 1 to match tensor<2x6xf32> outside dim 1, got tensor<3x3xf32>
  %y = tir.concat %a, %b [1] : tensor<2x3xf32>, tensor<3x3xf32> -> tensor<2x6xf32>
  func.return %y : tensor<2x6xf32>
}

// -----

func.func @concat_element_type(%a: tensor<2x3xf32>, %b: tensor<2x3xf16>) -> tensor<2x6xf32> {
  // CHECK: tir.concat: expected input 1 of element type f32, got tensor<2x3xf16>
  %y = tir.concat %a, %b [1] : tensor<2x3xf32>, tensor<2x3xf16> -> tensor<2x6xf32>
  func.return %y : tensor<2x6xf32>
}

// -----

func.func @concat_size(%a: tensor<2x3xf32>) -> tensor<2x7xf32> {
  // CHECK: tir.concat: expected result dim 1 of size 6, got 7
  %y = tir.concat %a, %a [1] : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x7xf32>
  func.return %y : tensor<2x7xf32>
}

// -----

func.func @iota_dim() -> tensor<7xi64> {
  // CHECK: tir.iota: expected a dim in [0, 0], got 1
  %y = tir.iota dim 1 start 0 step 1 : tensor<7xi64>
  func.return %y : tensor<7xi64>
}

// -----

func.func @iota_bool() -> tensor<7xi1> {
  // CHECK: tir.iota: expected a number element type, got i1
  %y = tir.iota dim 0 start 0 step 1 : tensor<7xi1>
  func.return %y : tensor<7xi1>
}

// -----

func.func @iota_start_type() -> tensor<7xf32> {
  // CHECK: tir.iota: expected start of type f32, got i64
  %y = "tir.iota"() <{dim = 0 : i64, start = 0 : i64, step = 1.0 : f32}> : () -> tensor<7xf32>
  func.return %y : tensor<7xf32>
}

// -----

func.func @argmax_type(%a: tensor<4x8xf32>) -> tensor<4xf32> {
  // CHECK: tir.reduce: reducing tensor<4x8xf32> over [1] gives shape [4] of i64, got tensor<4xf32>
  %y = tir.reduce argmax %a [1] : tensor<4x8xf32> -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

func.func @argmax_dims(%a: tensor<4x8xf32>) -> tensor<i64> {
  // CHECK: tir.reduce argmax: expected one dim, got [0, 1]
  %y = tir.reduce argmax %a [0, 1] : tensor<4x8xf32> -> tensor<i64>
  func.return %y : tensor<i64>
}

// -----

func.func @scan_dim(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK: tir.scan: expected a dim in [0, 1], got 2
  %y = tir.scan add %a [2] : tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}

// -----

func.func @scan_kind(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK: tir.scan: expected a value combiner, got argmin
  %y = tir.scan argmin %a [1] : tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}
