// RUN: deplo-opt %s -p tir-to-loop | filecheck %s

// sign: 1, -1 or 0 by two compares (NaN gives 0, as torch.sign); fmod as C's: the quotient
// truncated, an fma for x - t y in one rounding, then one step of |y| toward x's sign where the
// rounded quotient was one off, and a zero with x's sign; f32 in f64 (exact while the quotient
// is below 2^53).
// CHECK-LABEL: loop.kernel @sign
// CHECK:           %[[LT:.*]] = arith.cmpf olt, %[[V:.*]], %[[Z:.*]] : f32
// CHECK-NEXT:      %[[GT:.*]] = arith.cmpf ogt, %[[V]], %[[Z]] : f32
// CHECK-NEXT:      %[[NEG:.*]] = arith.select %[[LT]], %{{.*}}, %[[Z]] : f32
// CHECK-NEXT:      arith.select %[[GT]], %{{.*}}, %[[NEG]] : f32
// CHECK-LABEL: loop.kernel @fmod
// CHECK:           %[[WX:.*]] = arith.extf %[[X:.*]] : f32 to f64
// CHECK-NEXT:      %[[WY:.*]] = arith.extf %[[Y:.*]] : f32 to f64
// CHECK-NEXT:      %[[Q:.*]] = arith.divf %[[WX]], %[[WY]] : f64
// CHECK-NEXT:      %[[T:.*]] = math.trunc %[[Q]] : f64
// CHECK-NEXT:      %[[NT:.*]] = arith.negf %[[T]] : f64
// CHECK-NEXT:      %[[R:.*]] = math.fma %[[NT]], %[[WY]], %[[WX]] : f64
// CHECK:           %[[AY:.*]] = math.absf %[[WY]] : f64
// CHECK-NEXT:      %[[STEP:.*]] = math.copysign %[[AY]], %[[WX]] : f64
// CHECK:           arith.addf %[[R]], %[[STEP]] : f64
// CHECK:           arith.subf %{{.*}}, %[[STEP]] : f64
// CHECK:           math.copysign %{{.*}}, %[[WX]] : f64
// CHECK:           arith.truncf %{{.*}} : f64 to f32
// Integers: C's `%` and `/`. atan2: math.atan2.
// CHECK-LABEL: loop.kernel @ifmod
// CHECK:           arith.remsi %{{.*}}, %{{.*}} : i64
// CHECK-LABEL: loop.kernel @idiv
// CHECK:           arith.divsi %{{.*}}, %{{.*}} : i64
// CHECK-LABEL: loop.kernel @atan2
// CHECK:           math.atan2 %{{.*}}, %{{.*}} : f32
func.func @main(%x: tensor<4x3xf32>, %y: tensor<4x3xf32>, %i: tensor<4x3xi64>, %j: tensor<4x3xi64>) -> (tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xi64>, tensor<4x3xi64>, tensor<4x3xf32>) {
  %sign = tir.elementwise sign(%x) : tensor<4x3xf32>
  %fmod = tir.elementwise fmod(%x, %y) : tensor<4x3xf32>
  %ifmod = tir.elementwise fmod(%i, %j) : tensor<4x3xi64>
  %idiv = tir.elementwise div(%i, %j) : tensor<4x3xi64>
  %atan2 = tir.elementwise atan2(%x, %y) : tensor<4x3xf32>
  func.return %sign, %fmod, %ifmod, %idiv, %atan2 : tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xi64>, tensor<4x3xi64>, tensor<4x3xf32>
}


// Shifts as PyTorch: an amount out of [0, width) (one unsigned compare catches a negative one)
// is clamped before the shift, which C leaves undefined past the width; << then gives 0, >>
// shifts by width - 1 (the sign).
// CHECK-LABEL: loop.kernel @l(
// CHECK:         %[[S:.*]] = loop.load %s[%a0] : memref<8xi32>
// CHECK-NEXT:    %[[W:.*]] = arith.constant 32 : i32
// CHECK-NEXT:    %[[OUT:.*]] = arith.cmpi uge, %[[S]], %[[W]] : i32
// CHECK-NEXT:    %[[Z:.*]] = arith.constant 0 : i32
// CHECK-NEXT:    %[[AMT:.*]] = arith.select %[[OUT]], %[[Z]], %[[S]] : i32
// CHECK-NEXT:    %[[L:.*]] = arith.shli %{{.*}}, %[[AMT]] : i32
// CHECK-NEXT:    %[[Z2:.*]] = arith.constant 0 : i32
// CHECK-NEXT:    arith.select %[[OUT]], %[[Z2]], %[[L]] : i32
// CHECK-LABEL: loop.kernel @r(
// CHECK:         arith.cmpi uge
// CHECK-NEXT:    %[[TOP:.*]] = arith.constant 31 : i32
// CHECK-NEXT:    %[[AMT2:.*]] = arith.select %{{.*}}, %[[TOP]], %{{.*}} : i32
// CHECK-NEXT:    arith.shrsi %{{.*}}, %[[AMT2]] : i32
func.func @shifts(%x: tensor<8xi32>, %s: tensor<8xi32>) -> tensor<8xi32> {
  %l = tir.elementwise shl(%x, %s) : tensor<8xi32>
  %r = tir.elementwise shr(%l, %s) : tensor<8xi32>
  func.return %r : tensor<8xi32>
}
