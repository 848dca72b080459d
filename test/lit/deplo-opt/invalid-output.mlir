// RUN: not deplo-opt %s -p torch-to-tir 2>&1 | filecheck %s

// A pass whose output does not verify (torch.pow of integers by a tensor exponent verifies in
// Torch IR; Tensor IR's pow takes floats only): the error names the pass and the one op it is
// about, not the whole module in generic form.

// CHECK:      deplo-opt: error: the IR after torch-to-tir does not verify: tir.elementwise pow: expected floats, got tensor<4xi64>
// CHECK-NEXT:   at: %{{.*}} = "tir.elementwise"(%{{.*}}, %x) <{kind = #tir<ew pow>}>
// CHECK-NOT:  func.func
func.func @f(%x: tensor<4xi64>) -> tensor<4xi64> {
  %c = torch.constant {value = 2 : i64} : tensor<i64>
  %y = torch.pow %c, %x : (tensor<i64>, tensor<4xi64>) -> tensor<4xi64>
  func.return %y : tensor<4xi64>
}
