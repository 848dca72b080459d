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

// -----

// An element type no level takes (xDSL cannot print an f80 constant; the runtimes have no such
// type): refused where it appears, not a traceback in the first pass.
// CHECK: input.mlir:[[# @LINE + 1]]:1
func.func @f80(%x: tensor<4xf80>) -> tensor<4xf80> {
  %y = torch.relu %x : (tensor<4xf80>) -> tensor<4xf80>
  func.return %y : tensor<4xf80>
}
// CHECK: func.func: element type f80 of tensor<4xf80> is not one deplo takes (f32, f16, bf16, f64, i1, i8, i16, i32, i64)

// -----

// A dynamic dim: every level has static shapes (loop bounds, buffer sizes), refused where it
// appears rather than as a loop bound of -2^63 after tir-to-loop.
// CHECK: input.mlir:[[# @LINE + 1]]:1
func.func @dynamic(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %y = torch.relu %x : (tensor<?x4xf32>) -> tensor<?x4xf32>
  func.return %y : tensor<?x4xf32>
}
// CHECK: func.func: tensor<?x4xf32> has a dynamic dim (deplo compiles static shapes)

// -----

// 65 dims: past PyTorch's 64, and each dim is a loop of tir-to-loop's nest (1000 of them were
// a RecursionError there).
// CHECK: input.mlir:[[# @LINE + 1]]:1
func.func @rank65(%x: tensor<1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x3xf32>) -> tensor<1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x3xf32> {
  %y = tir.elementwise exp(%x) : tensor<1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x3xf32>
  func.return %y : tensor<1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x3xf32>
}
// CHECK: func.func: 65 dims; deplo takes at most 64, as PyTorch (each is a loop of the nest)

// -----

// A value never defined: at its first use (xDSL reports the end of the file).
// CHECK: input.mlir:[[# @LINE + 2]]:28
func.func @undefined(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = tir.elementwise exp(%nope) : tensor<4xf32>
  func.return %y : tensor<4xf32>
}
// CHECK: %nope is used but never defined

// -----

// An input of 2^31 elements or more (a buffer): refused where it appears, not as a loop
// bound tir-to-loop's verifier refuses with no location. (A value inside may be that large: a
// broadcast fusion never stores.)
// CHECK: input.mlir:[[# @LINE + 1]]:1
func.func @huge(%x: tensor<3000000000xf32>) -> tensor<3000000000xf32> {
  %y = tir.elementwise exp(%x) : tensor<3000000000xf32>
  func.return %y : tensor<3000000000xf32>
}
// CHECK: func.func: input tensor<3000000000xf32> has 2^31 elements or more (the kernels index with CUDA C's int)

// -----

// A semi-affine map (xDSL 0.74 does not implement d0 * d0): a located error.
// CHECK: input.mlir:[[# @LINE + 2]]:3
func.func @semi_affine(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = tir.index_map %x (d0) -> (d0 * d0) : tensor<4xf32> -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
// CHECK: Multiplication with non-constant (semi-affine) is not supported

// -----

// A fraction for an integer tir.full is refused where it is written (not truncated to 0).
// CHECK: input.mlir:[[# @LINE + 2]]:17
func.func @int_full_fraction() -> tensor<2xi64> {
  %y = tir.full 0.5 : tensor<2xi64>
  func.return %y : tensor<2xi64>
}
// CHECK: expected an integer value for i64, got 0.5
