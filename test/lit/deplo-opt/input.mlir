// RUN: deplo-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

// Input that xDSL's parser or verifier accepts but no pass can take, or that it handles badly,
// is refused up front with file:line:col (tools/deplo_opt.py).

// CHECK: input.mlir:[[# @LINE + 2]]:3
func.func @use_before_def(%a: f32) -> f32 {
  %b = arith.addf %a, %c : f32
  %c = arith.addf %a, %a : f32
  func.return %b : f32
}
// CHECK-NEXT: arith.addf %a, %c : f32
// CHECK: arith.addf: operand 1 (%c) is used before its definition

// -----

// CHECK: input.mlir:[[# @LINE + 1]]:1
func.func @declaration(%a: f32) -> f32
// CHECK: func.func @declaration: expected a body (deplo takes no declarations)

// -----

// CHECK: input.mlir:[[# @LINE + 2]]:3
func.func @verifier_error_is_located(%a: tensor<4xf32>, %b: tensor<3xf32>) -> tensor<4xf32> {
  %y = torch.add %a, %b : (tensor<4xf32>, tensor<3xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
// CHECK: torch.add: shapes (4,) and (3,) do not broadcast

// -----

// xDSL 0.74's lexer backtracks exponentially on a string that does not end (28 characters: 16 s).
// CHECK: input.mlir:[[# @LINE + 1]]:23
%s = "test.op"() {s = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa} : () -> ()
// CHECK: string literal not closed on its line

// -----

// CHECK: input.mlir:[[# @LINE + 1]]:86
%n = "test.op"() {a = (((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((())))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))} : () -> ()
// CHECK: nested deeper than 64 levels

// -----

// CHECK: input.mlir:[[# @LINE + 2]]:3
func.func @literal_out_of_range() {
  %c = arith.constant 99999999999999999999999 : i64
  func.return
}
// CHECK: out of range
