// RUN: deplo-opt %s --split-input-file --verify-diagnostics | filecheck %s

func.func @arity(%a: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: tir.elementwise add: expected 2 operand(s), got 1
  %y = tir.elementwise add(%a) : tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

func.func @reduce_shape(%a: tensor<4x8xf32>) -> tensor<8xf32> {
  // CHECK: tir.reduce: reducing tensor<4x8xf32> over [1] gives shape [4], got tensor<8xf32>
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
