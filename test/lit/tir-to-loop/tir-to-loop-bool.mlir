// RUN: deplo-opt %s -p tir-to-loop | filecheck %s

// Bools order False < True (PyTorch's), where a signed i1 has true = -1: max over a row
// starts from false and is an `ori`, min starts from true and is an `andi`; a comparison of
// bools is unsigned.
// CHECK-LABEL: loop.kernel @any(%b: memref<3x4xi1>, %out: memref<3xi1>) {
// CHECK:         %[[FALSE:.*]] = arith.constant false
// CHECK:           %{{.*}} = loop.for %{{.*}} = 0 to 4 reduce iter(%[[ACC:.*]] = %[[FALSE]]) -> i1 {
// CHECK:             %{{.*}} = arith.ori %[[ACC]], %{{.*}} : i1
// CHECK-LABEL: loop.kernel @all(%b: memref<3x4xi1>, %out: memref<3xi1>) {
// CHECK:         %[[TRUE:.*]] = arith.constant true
// CHECK:           %{{.*}} = loop.for %{{.*}} = 0 to 4 reduce iter(%[[ACC:.*]] = %[[TRUE]]) -> i1 {
// CHECK:             %{{.*}} = arith.andi %[[ACC]], %{{.*}} : i1
// CHECK-LABEL: loop.kernel @gt(
// CHECK:         arith.cmpi ugt, %{{.*}}, %{{.*}} : i1
// CHECK-LABEL: loop.kernel @maximum(
// CHECK:         arith.ori %{{.*}}, %{{.*}} : i1
func.func @main(%b: tensor<3x4xi1>) -> (tensor<3xi1>, tensor<3xi1>, tensor<3x4xi1>, tensor<3x4xi1>) {
  %any = tir.reduce max %b [1] : tensor<3x4xi1> -> tensor<3xi1>
  %all = tir.reduce min %b [1] : tensor<3x4xi1> -> tensor<3xi1>
  %gt = tir.compare gt(%b, %b) : tensor<3x4xi1> -> tensor<3x4xi1>
  %maximum = tir.elementwise max(%b, %b) : tensor<3x4xi1>
  func.return %any, %all, %gt, %maximum : tensor<3xi1>, tensor<3xi1>, tensor<3x4xi1>, tensor<3x4xi1>
}
