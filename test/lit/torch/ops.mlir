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
