// RUN: deplo-opt %s --split-input-file -p torch-to-tir | filecheck %s

// A broadcast add: the bias becomes an index_map, the add one elementwise op.
// CHECK-LABEL: func.func @add_broadcast
// CHECK:         %[[B:.*]] = tir.index_map %b (d0, d1) -> (d1) : tensor<64xf32> -> tensor<16x64xf32>
// CHECK-NEXT:    %[[S:.*]] = tir.elementwise add(%x, %[[B]]) : tensor<16x64xf32>
// CHECK-NEXT:    func.return %[[S]]
// CHECK-NOT:     torch.
func.func @add_broadcast(%x: tensor<16x64xf32>, %b: tensor<64xf32>) -> tensor<16x64xf32> {
  %y = torch.add %x, %b : (tensor<16x64xf32>, tensor<64xf32>) -> tensor<16x64xf32>
  func.return %y : tensor<16x64xf32>
}

// -----

// Matmul: both operands index_mapped onto the (M, N, K) space, multiplied, reduced over K.
// CHECK-LABEL: func.func @matmul_relu
// CHECK:         %[[A:.*]] = tir.index_map %a (d0, d1, d2) -> (d0, d2) : tensor<16x64xf32> -> tensor<16x16x64xf32>
// CHECK-NEXT:    %[[W:.*]] = tir.index_map %w (d0, d1, d2) -> (d2, d1) : tensor<64x16xf32> -> tensor<16x16x64xf32>
// CHECK-NEXT:    %[[P:.*]] = tir.elementwise mul(%[[A]], %[[W]]) : tensor<16x16x64xf32>
// CHECK-NEXT:    %[[R:.*]] = tir.reduce add %[[P]] [2] : tensor<16x16x64xf32> -> tensor<16x16xf32>
// CHECK-NEXT:    %[[Z:.*]] = tir.full 0.000000e+00 : tensor<16x16xf32>
// CHECK-NEXT:    %{{.*}} = tir.elementwise max(%[[R]], %[[Z]]) : tensor<16x16xf32>
func.func @matmul_relu(%a: tensor<16x64xf32>, %w: tensor<64x16xf32>) -> tensor<16x16xf32> {
  %m = torch.matmul %a, %w : (tensor<16x64xf32>, tensor<64x16xf32>) -> tensor<16x16xf32>
  %r = torch.relu %m : (tensor<16x16xf32>) -> tensor<16x16xf32>
  func.return %r : tensor<16x16xf32>
}

// -----

// Matrix-vector: the vector's promoted unit dim is squeezed back out.
// CHECK-LABEL: func.func @matvec
// CHECK:         tir.index_map %v (d0, d1, d2) -> (d2) : tensor<8xf32> -> tensor<4x1x8xf32>
// CHECK:         tir.reduce add %{{.*}} [2] : tensor<4x1x8xf32> -> tensor<4x1xf32>
// CHECK:         tir.index_map %{{.*}} (d0) -> (d0, 0) : tensor<4x1xf32> -> tensor<4xf32>
func.func @matvec(%m: tensor<4x8xf32>, %v: tensor<8xf32>) -> tensor<4xf32> {
  %y = torch.matmul %m, %v : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

// RMSNorm: mean of squares over the normalized dims, rsqrt, broadcast back, times weight.
// Without eps, torch's float32 epsilon.
// CHECK-LABEL: func.func @rms_norm
// CHECK:         %[[SQ:.*]] = tir.elementwise mul(%x, %x) : tensor<2x3x8xf32>
// CHECK-NEXT:    %[[S:.*]] = tir.reduce add %[[SQ]] [2] : tensor<2x3x8xf32> -> tensor<2x3xf32>
// CHECK-NEXT:    %[[N:.*]] = tir.full 8.000000e+00 : tensor<2x3xf32>
// CHECK-NEXT:    %[[M:.*]] = tir.elementwise div(%[[S]], %[[N]]) : tensor<2x3xf32>
// CHECK-NEXT:    %[[E:.*]] = tir.full 1.1920929e-07 : tensor<2x3xf32>
// CHECK-NEXT:    %[[ME:.*]] = tir.elementwise add(%[[M]], %[[E]]) : tensor<2x3xf32>
// CHECK-NEXT:    %[[R:.*]] = tir.elementwise rsqrt(%[[ME]]) : tensor<2x3xf32>
// CHECK-NEXT:    %[[RB:.*]] = tir.index_map %[[R]] (d0, d1, d2) -> (d0, d1) : tensor<2x3xf32> -> tensor<2x3x8xf32>
// CHECK-NEXT:    %[[Y:.*]] = tir.elementwise mul(%x, %[[RB]]) : tensor<2x3x8xf32>
// CHECK-NEXT:    %[[WB:.*]] = tir.index_map %w (d0, d1, d2) -> (d2) : tensor<8xf32> -> tensor<2x3x8xf32>
// CHECK-NEXT:    tir.elementwise mul(%[[Y]], %[[WB]]) : tensor<2x3x8xf32>
func.func @rms_norm(%x: tensor<2x3x8xf32>, %w: tensor<8xf32>) -> tensor<2x3x8xf32> {
  %y = torch.rms_norm %x, %w {normalized_shape = array<i64: 8>} : (tensor<2x3x8xf32>, tensor<8xf32>) -> tensor<2x3x8xf32>
  func.return %y : tensor<2x3x8xf32>
}

// -----

// A scalar constant is a 0-d full, broadcast like any operand.
// CHECK-LABEL: func.func @scale
// CHECK:         %[[C:.*]] = tir.full 2.000000e+00 : tensor<f32>
// CHECK-NEXT:    %[[CB:.*]] = tir.index_map %[[C]] (d0) -> () : tensor<f32> -> tensor<4xf32>
// CHECK-NEXT:    tir.elementwise mul(%x, %[[CB]]) : tensor<4xf32>
func.func @scale(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = torch.constant {value = 2.0 : f32} : tensor<f32>
  %y = torch.mul %x, %c : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
