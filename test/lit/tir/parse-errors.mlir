// RUN: not deplo-opt %s 2>&1 | filecheck %s

// CHECK: hex literal 0x7f800000 does not fit the bits of bf16
func.func @f() -> tensor<2xbf16> {
  %b = tir.full 0x7F800000 : tensor<2xbf16>
  func.return %b : tensor<2xbf16>
}
