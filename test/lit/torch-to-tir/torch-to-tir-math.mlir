// RUN: deplo-opt %s --split-input-file -p torch-to-tir | filecheck %s

// Linear: x and w index_mapped onto (lead..., N, K) — w read transposed, never copied — then
// multiplied, reduced over K, and the bias broadcast and added.
// CHECK-LABEL: func.func @linear
// CHECK:         %[[X:.*]] = tir.index_map %x (d0, d1, d2, d3) -> (d0, d1, d3) : tensor<2x4x5xf32> -> tensor<2x4x3x5xf32>
// CHECK-NEXT:    %[[W:.*]] = tir.index_map %w (d0, d1, d2, d3) -> (d2, d3) : tensor<3x5xf32> -> tensor<2x4x3x5xf32>
// CHECK-NEXT:    %[[P:.*]] = tir.elementwise mul(%[[X]], %[[W]]) : tensor<2x4x3x5xf32>
// CHECK-NEXT:    %[[R:.*]] = tir.reduce add %[[P]] [3] : tensor<2x4x3x5xf32> -> tensor<2x4x3xf32>
// CHECK-NEXT:    %[[B:.*]] = tir.index_map %b (d0, d1, d2) -> (d2) : tensor<3xf32> -> tensor<2x4x3xf32>
// CHECK-NEXT:    tir.elementwise add(%[[R]], %[[B]]) : tensor<2x4x3xf32>
// CHECK-NOT:     torch.
func.func @linear(%x: tensor<2x4x5xf32>, %w: tensor<3x5xf32>, %b: tensor<3xf32>) -> tensor<2x4x3xf32> {
  %y = torch.linear %x, %w, %b : (tensor<2x4x5xf32>, tensor<3x5xf32>, tensor<3xf32>) -> tensor<2x4x3xf32>
  func.return %y : tensor<2x4x3xf32>
}

// -----

// bf16 linear: operands and bias cast to f32 (products, sum and bias add in f32), one rounding.
// CHECK-LABEL: func.func @linear_bf16
// CHECK:         %[[X:.*]] = tir.cast %x : tensor<2x5xbf16> -> tensor<2x5xf32>
// CHECK-NEXT:    %[[W:.*]] = tir.cast %w : tensor<3x5xbf16> -> tensor<3x5xf32>
// CHECK-NEXT:    %[[B:.*]] = tir.cast %b : tensor<3xbf16> -> tensor<3xf32>
// CHECK:         %[[R:.*]] = tir.reduce add %{{.*}} [2] : tensor<2x3x5xf32> -> tensor<2x3xf32>
// CHECK:         %[[Y:.*]] = tir.elementwise add(%[[R]], %{{.*}}) : tensor<2x3xf32>
// CHECK-NEXT:    tir.cast %[[Y]] : tensor<2x3xf32> -> tensor<2x3xbf16>
func.func @linear_bf16(%x: tensor<2x5xbf16>, %w: tensor<3x5xbf16>, %b: tensor<3xbf16>) -> tensor<2x3xbf16> {
  %y = torch.linear %x, %w, %b : (tensor<2x5xbf16>, tensor<3x5xbf16>, tensor<3xbf16>) -> tensor<2x3xbf16>
  func.return %y : tensor<2x3xbf16>
}

// -----

// f16 sum accumulates in f32.
// CHECK-LABEL: func.func @sum_f16
// CHECK:         %[[XF:.*]] = tir.cast %x : tensor<4x6xf16> -> tensor<4x6xf32>
// CHECK-NEXT:    %[[S:.*]] = tir.reduce add %[[XF]] [1] : tensor<4x6xf32> -> tensor<4xf32>
// CHECK-NEXT:    tir.cast %[[S]] : tensor<4xf32> -> tensor<4xf16>
func.func @sum_f16(%x: tensor<4x6xf16>) -> tensor<4xf16> {
  %y = torch.sum %x {dim = array<i64: 1>} : (tensor<4x6xf16>) -> tensor<4xf16>
  func.return %y : tensor<4xf16>
}

// -----

// Mean with keepdim: sum, divide by the count, then an index_map re-inserts the unit dim.
// CHECK-LABEL: func.func @mean_keepdim
// CHECK:         %[[S:.*]] = tir.reduce add %x [1] : tensor<4x6xf32> -> tensor<4xf32>
// CHECK-NEXT:    %[[N:.*]] = tir.full 6.000000e+00 : tensor<4xf32>
// CHECK-NEXT:    %[[M:.*]] = tir.elementwise div(%[[S]], %[[N]]) : tensor<4xf32>
// CHECK-NEXT:    tir.index_map %[[M]] (d0, d1) -> (d0) : tensor<4xf32> -> tensor<4x1xf32>
func.func @mean_keepdim(%x: tensor<4x6xf32>) -> tensor<4x1xf32> {
  %y = torch.mean %x {dim = array<i64: 1>, keepdim} : (tensor<4x6xf32>) -> tensor<4x1xf32>
  func.return %y : tensor<4x1xf32>
}

// -----

// amax without keepdim is one reduce max.
// CHECK-LABEL: func.func @amax
// CHECK:         %[[R:.*]] = tir.reduce max %x [0, 2] : tensor<3x4x6xf32> -> tensor<4xf32>
// CHECK-NEXT:    func.return %[[R]]
func.func @amax(%x: tensor<3x4x6xf32>) -> tensor<4xf32> {
  %y = torch.amax %x {dim = array<i64: 0, 2>} : (tensor<3x4x6xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

// Softmax subtracts the row max; f16 is computed in f32 and rounded once, as torch does.
// CHECK-LABEL: func.func @softmax_f16
// CHECK:         %[[XF:.*]] = tir.cast %x : tensor<4x6xf16> -> tensor<4x6xf32>
// CHECK-NEXT:    %[[M:.*]] = tir.reduce max %[[XF]] [1] : tensor<4x6xf32> -> tensor<4xf32>
// CHECK-NEXT:    %[[MB:.*]] = tir.index_map %[[M]] (d0, d1) -> (d0) : tensor<4xf32> -> tensor<4x6xf32>
// CHECK-NEXT:    %[[D:.*]] = tir.elementwise sub(%[[XF]], %[[MB]]) : tensor<4x6xf32>
// CHECK-NEXT:    %[[E:.*]] = tir.elementwise exp(%[[D]]) : tensor<4x6xf32>
// CHECK-NEXT:    %[[S:.*]] = tir.reduce add %[[E]] [1] : tensor<4x6xf32> -> tensor<4xf32>
// CHECK-NEXT:    %[[SB:.*]] = tir.index_map %[[S]] (d0, d1) -> (d0) : tensor<4xf32> -> tensor<4x6xf32>
// CHECK-NEXT:    %[[Y:.*]] = tir.elementwise div(%[[E]], %[[SB]]) : tensor<4x6xf32>
// CHECK-NEXT:    tir.cast %[[Y]] : tensor<4x6xf32> -> tensor<4x6xf16>
func.func @softmax_f16(%x: tensor<4x6xf16>) -> tensor<4x6xf16> {
  %y = torch.softmax %x {dim = 1 : i64} : (tensor<4x6xf16>) -> tensor<4x6xf16>
  func.return %y : tensor<4x6xf16>
}

// -----

// LayerNorm: deviations from the row's first element (a large common offset rounds no mean),
// their mean, centered values, biased variance, rsqrt(var + eps), then weight and bias.
// CHECK-LABEL: func.func @layer_norm
// CHECK:         %[[X0:.*]] = tir.index_map %x (d0, d1) -> (d0, 0) : tensor<4x6xf32> -> tensor<4x6xf32>
// CHECK-NEXT:    %[[D:.*]] = tir.elementwise sub(%x, %[[X0]]) : tensor<4x6xf32>
// CHECK-NEXT:    %[[S:.*]] = tir.reduce add %[[D]] [1] : tensor<4x6xf32> -> tensor<4xf32>
// CHECK:         %[[MEAN:.*]] = tir.elementwise div(%[[S]], %{{.*}}) : tensor<4xf32>
// CHECK-NEXT:    %[[MB:.*]] = tir.index_map %[[MEAN]] (d0, d1) -> (d0)
// CHECK-NEXT:    %[[XC:.*]] = tir.elementwise sub(%[[D]], %[[MB]]) : tensor<4x6xf32>
// CHECK-NEXT:    %[[SQ:.*]] = tir.elementwise mul(%[[XC]], %[[XC]]) : tensor<4x6xf32>
// CHECK-NEXT:    tir.reduce add %[[SQ]] [1]
// CHECK:         tir.full 1.000000e-05 : tensor<4xf32>
// CHECK:         %[[R:.*]] = tir.elementwise rsqrt
// CHECK-NEXT:    %[[RB:.*]] = tir.index_map %[[R]] (d0, d1) -> (d0)
// CHECK-NEXT:    %[[Y:.*]] = tir.elementwise mul(%[[XC]], %[[RB]]) : tensor<4x6xf32>
// CHECK-NEXT:    %[[W:.*]] = tir.index_map %w (d0, d1) -> (d1) : tensor<6xf32> -> tensor<4x6xf32>
// CHECK-NEXT:    %[[YW:.*]] = tir.elementwise mul(%[[Y]], %[[W]]) : tensor<4x6xf32>
// CHECK-NEXT:    %[[B:.*]] = tir.index_map %b (d0, d1) -> (d1) : tensor<6xf32> -> tensor<4x6xf32>
// CHECK-NEXT:    tir.elementwise add(%[[YW]], %[[B]]) : tensor<4x6xf32>
func.func @layer_norm(%x: tensor<4x6xf32>, %w: tensor<6xf32>, %b: tensor<6xf32>) -> tensor<4x6xf32> {
  %y = torch.layer_norm %x, %w, %b {normalized_shape = array<i64: 6>, eps = 1.0e-05 : f64} : (tensor<4x6xf32>, tensor<6xf32>, tensor<6xf32>) -> tensor<4x6xf32>
  func.return %y : tensor<4x6xf32>
}

// -----

// GELU (exact): x * 0.5 * (1 + erf(x / sqrt(2))).
// CHECK-LABEL: func.func @gelu
// CHECK:         %[[ONE:.*]] = tir.full 1.000000e+00 : tensor<4xf32>
// CHECK-NEXT:    %[[HALF:.*]] = tir.full 5.000000e-01 : tensor<4xf32>
// CHECK-NEXT:    %[[K:.*]] = tir.full 0.707106769 : tensor<4xf32>
// CHECK-NEXT:    %[[XK:.*]] = tir.elementwise mul(%x, %[[K]]) : tensor<4xf32>
// CHECK-NEXT:    %[[E:.*]] = tir.elementwise erf(%[[XK]]) : tensor<4xf32>
// CHECK-NEXT:    %[[C:.*]] = tir.elementwise add(%[[ONE]], %[[E]]) : tensor<4xf32>
// CHECK-NEXT:    %[[XH:.*]] = tir.elementwise mul(%x, %[[HALF]]) : tensor<4xf32>
// CHECK-NEXT:    tir.elementwise mul(%[[XH]], %[[C]]) : tensor<4xf32>
func.func @gelu(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = torch.gelu %x : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

// GELU (tanh): tanh(sqrt(2/pi) * (x + 0.044715 x^3)).
// CHECK-LABEL: func.func @gelu_tanh
// CHECK:         tir.full 4.471500e-02 : tensor<4xf32>
// CHECK:         tir.full 0.797884583 : tensor<4xf32>
// CHECK:         tir.elementwise tanh
func.func @gelu_tanh(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = torch.gelu %x {approximate = "tanh"} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

// x ** 2 is x * x; any other exponent is a pow.
// CHECK-LABEL: func.func @pow
// CHECK:         %[[SQ:.*]] = tir.elementwise mul(%x, %x) : tensor<4xf32>
// CHECK:         %[[E:.*]] = tir.index_map %{{.*}} (d0) -> () : tensor<f32> -> tensor<4xf32>
// CHECK-NEXT:    tir.elementwise pow(%[[SQ]], %[[E]]) : tensor<4xf32>
func.func @pow(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = torch.constant {value = 2.0 : f32} : tensor<f32>
  %y = torch.pow %x, %c : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %e = torch.constant {value = 1.5 : f32} : tensor<f32>
  %z = torch.pow %y, %e : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  func.return %z : tensor<4xf32>
}

// -----

// The exponents aten takes without pow: 3 is x * x * x, -1 is 1 / x (0.5 and -0.5 are sqrt
// and rsqrt at import, where the dtype that decides it is known).
// CHECK-LABEL: func.func @pow_as_aten
// CHECK:         %[[SQ:.*]] = tir.elementwise mul(%x, %x) : tensor<4xf32>
// CHECK-NEXT:    %[[CUBE:.*]] = tir.elementwise mul(%[[SQ]], %x) : tensor<4xf32>
// CHECK:         tir.elementwise div(%{{.*}}, %[[CUBE]]) : tensor<4xf32>
// CHECK-NOT:     pow
func.func @pow_as_aten(%x: tensor<4xf32>) -> tensor<4xf32> {
  %three = torch.constant {value = 3.0 : f32} : tensor<f32>
  %c = torch.pow %x, %three : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %minus_one = torch.constant {value = -1.0 : f32} : tensor<f32>
  %i = torch.pow %c, %minus_one : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  func.return %i : tensor<4xf32>
}

// -----

// An integer tensor to a constant whole power multiplies by the exponent's bits (x^5 = x * (x^2)^2),
// wrapping as aten's; x^0 is ones.
// CHECK-LABEL: func.func @int_pow
// CHECK:         %[[X2:.*]] = tir.elementwise mul(%x, %x) : tensor<4xi32>
// CHECK-NEXT:    %[[X4:.*]] = tir.elementwise mul(%[[X2]], %[[X2]]) : tensor<4xi32>
// CHECK-NEXT:    %[[X5:.*]] = tir.elementwise mul(%x, %[[X4]]) : tensor<4xi32>
// CHECK:         tir.full 1 : tensor<4xi32>
// CHECK-NOT:     pow
func.func @int_pow(%x: tensor<4xi32>) -> tensor<4xi32> {
  %c = torch.constant {value = 5 : i32} : tensor<i32>
  %y = torch.pow %x, %c : (tensor<4xi32>, tensor<i32>) -> tensor<4xi32>
  %z = torch.constant {value = 0 : i32} : tensor<i32>
  %o = torch.pow %y, %z : (tensor<4xi32>, tensor<i32>) -> tensor<4xi32>
  %s = torch.add %y, %o : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  func.return %s : tensor<4xi32>
}

// -----

// A comparison broadcasts like an add and gives i1; where is a select of broadcast operands.
// CHECK-LABEL: func.func @where_lt
// CHECK:         %[[YB:.*]] = tir.index_map %y (d0, d1) -> (d1) : tensor<6xf32> -> tensor<4x6xf32>
// CHECK-NEXT:    %[[C:.*]] = tir.compare lt(%x, %[[YB]]) : tensor<4x6xf32> -> tensor<4x6xi1>
// CHECK-NEXT:    %[[YB2:.*]] = tir.index_map %y (d0, d1) -> (d1) : tensor<6xf32> -> tensor<4x6xf32>
// CHECK-NEXT:    %[[CN:.*]] = tir.compare ne(%x, %[[YB2]]) : tensor<4x6xf32> -> tensor<4x6xi1>
// CHECK-NEXT:    %[[A:.*]] = tir.elementwise and(%[[C]], %[[CN]]) : tensor<4x6xi1>
// CHECK-NEXT:    %[[RB:.*]] = tir.index_map %y (d0, d1) -> (d1) : tensor<6xf32> -> tensor<4x6xf32>
// CHECK-NEXT:    tir.select %[[A]], %x, %[[RB]] : tensor<4x6xf32>
func.func @where_lt(%x: tensor<4x6xf32>, %y: tensor<6xf32>) -> tensor<4x6xf32> {
  %c = torch.lt %x, %y : (tensor<4x6xf32>, tensor<6xf32>) -> tensor<4x6xi1>
  %n = torch.ne %x, %y : (tensor<4x6xf32>, tensor<6xf32>) -> tensor<4x6xi1>
  %a = torch.logical_and %c, %n : (tensor<4x6xi1>, tensor<4x6xi1>) -> tensor<4x6xi1>
  %r = torch.where %a, %x, %y : (tensor<4x6xi1>, tensor<4x6xf32>, tensor<6xf32>) -> tensor<4x6xf32>
  func.return %r : tensor<4x6xf32>
}

// -----

// A dtype conversion is one tir.cast.
// CHECK-LABEL: func.func @to
// CHECK:         %[[Y:.*]] = tir.cast %x : tensor<4xf32> -> tensor<4xbf16>
// CHECK-NEXT:    func.return %[[Y]]
func.func @to(%x: tensor<4xf32>) -> tensor<4xbf16> {
  %y = torch.to %x : (tensor<4xf32>) -> tensor<4xbf16>
  func.return %y : tensor<4xbf16>
}

// -----

// Dim 0 of a 0-d tensor is the tensor: sum, mean and cumsum are their input; argmax is 0.
// CHECK-LABEL: func.func @zero_d
// CHECK-NOT:     tir.reduce
// CHECK:         %[[I:.*]] = tir.full 0 : tensor<i64>
// CHECK-NEXT:    func.return %x, %x, %x, %[[I]]
func.func @zero_d(%x: tensor<f32>) -> (tensor<f32>, tensor<f32>, tensor<f32>, tensor<i64>) {
  %s = torch.sum %x {dim = array<i64: 0>, keepdim} : (tensor<f32>) -> tensor<f32>
  %m = torch.mean %x {dim = array<i64: 0>} : (tensor<f32>) -> tensor<f32>
  %c = torch.cumsum %x {dim = 0 : i64} : (tensor<f32>) -> tensor<f32>
  %a = torch.argmax %x {dim = 0 : i64} : (tensor<f32>) -> tensor<i64>
  func.return %s, %m, %c, %a : tensor<f32>, tensor<f32>, tensor<f32>, tensor<i64>
}

// -----

// Ops added with the decompositions work: a torch op named as a tir kind is that kind
// (floor, sign, fmod); prod is a reduce mul.
// CHECK-LABEL: func.func @rounding_fmod_prod
// CHECK:         tir.elementwise floor(%x) : tensor<4x3xf32>
// CHECK-NEXT:    tir.elementwise sign(%x) : tensor<4x3xf32>
// CHECK-NEXT:    tir.elementwise fmod(%x, %y) : tensor<4x3xf32>
// CHECK-NEXT:    tir.reduce mul %x [1] : tensor<4x3xf32> -> tensor<4xf32>
func.func @rounding_fmod_prod(%x: tensor<4x3xf32>, %y: tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4xf32>) {
  %f = torch.floor %x : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %s = torch.sign %x : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %m = torch.fmod %x, %y : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %p = torch.prod %x {dim = array<i64: 1>} : (tensor<4x3xf32>) -> tensor<4xf32>
  func.return %f, %s, %m, %p : tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4xf32>
}

// -----

// atan2 is the tir kind of its name; an integer fmod stays an fmod on integers (C's `%` below).
// CHECK-LABEL: func.func @atan2_int_fmod
// CHECK:         tir.elementwise atan2(%x, %y) : tensor<4x3xf32>
// CHECK-NEXT:    tir.elementwise fmod(%i, %j) : tensor<4x3xi64>
func.func @atan2_int_fmod(%x: tensor<4x3xf32>, %y: tensor<4x3xf32>, %i: tensor<4x3xi64>, %j: tensor<4x3xi64>) -> (tensor<4x3xf32>, tensor<4x3xi64>) {
  %a = torch.atan2 %x, %y : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %m = torch.fmod %i, %j : (tensor<4x3xi64>, tensor<4x3xi64>) -> tensor<4x3xi64>
  func.return %a, %m : tensor<4x3xf32>, tensor<4x3xi64>
}

// -----

// Bitwise ops on integers are tir elementwise kinds (and / or also take i1, xor and the shifts
// integers only), the operands broadcast like an add.
// CHECK-LABEL: func.func @bitwise
// CHECK:         %[[YB:.*]] = tir.index_map %y (d0, d1) -> (d1) : tensor<6xi64> -> tensor<4x6xi64>
// CHECK-NEXT:    %[[A:.*]] = tir.elementwise and(%x, %[[YB]]) : tensor<4x6xi64>
// CHECK:         %[[X:.*]] = tir.elementwise xor(%[[A]], %{{.*}}) : tensor<4x6xi64>
// CHECK:         %[[L:.*]] = tir.elementwise shl(%[[X]], %x) : tensor<4x6xi64>
// CHECK:         tir.elementwise shr(%[[L]], %x) : tensor<4x6xi64>
func.func @bitwise(%x: tensor<4x6xi64>, %y: tensor<6xi64>) -> tensor<4x6xi64> {
  %a = torch.bitwise_and %x, %y : (tensor<4x6xi64>, tensor<6xi64>) -> tensor<4x6xi64>
  %b = torch.bitwise_xor %a, %y : (tensor<4x6xi64>, tensor<6xi64>) -> tensor<4x6xi64>
  %c = torch.bitwise_left_shift %b, %x : (tensor<4x6xi64>, tensor<4x6xi64>) -> tensor<4x6xi64>
  %d = torch.bitwise_right_shift %c, %x : (tensor<4x6xi64>, tensor<4x6xi64>) -> tensor<4x6xi64>
  func.return %d : tensor<4x6xi64>
}
