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
