// RUN: deplo-opt %s --split-input-file -p loop-to-tile,tile-register-tile | filecheck %s
// RUN: deplo-opt %s --split-input-file -p "loop-to-tile,tile-register-tile{m=1 n=4}" | filecheck %s --check-prefix=ROW

// 64 x 80 outputs, K = 96: the heuristic gives each thread 4 x 4 outputs. The loops count tiles,
// the rows and columns of a tile are computed once, the reduce loop carries 16 accumulators and
// reads 4 + 4 values per step (the repeated loads are merged).
// CHECK-LABEL: tile.kernel @matmul({{.*}}) grid(1, 1, 1) block(1, 1, 1) schedule ["tile-register-tile{m=4 n=4}"] {
// CHECK:         tile.for %a0 = 0 to 16 bind(serial) {
// CHECK-NEXT:      tile.for %a1 = 0 to 20 bind(serial) {
// CHECK:             %[[R0:.*]] = arith.muli %a0, %c4 : index
// CHECK:             %[[R3:.*]] = arith.addi %[[R0]], %c3 : index
// CHECK:             %[[C0:.*]] = arith.muli %a1, %c4 : index
// CHECK:             %[[C3:.*]] = arith.addi %[[C0]], %c3 : index
// CHECK-NEXT:        %s, {{.*}} = tile.for %r0 = 0 to 96 bind(serial) iter(%acc = %zero, {{.*}}) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) {
// CHECK-COUNT-4:       loop.load %x0[
// CHECK-COUNT-4:       loop.load %x1[
// CHECK-COUNT-16:      arith.mulf
// CHECK-COUNT-16:      arith.addf
// CHECK-NEXT:          tile.yield
// CHECK:             loop.store %{{.*}}, %out[%[[R0]], %[[C0]]] : memref<64x80xf32>
// CHECK-COUNT-14:    loop.store
// CHECK-NEXT:        loop.store %{{.*}}, %out[%[[R3]], %[[C3]]] : memref<64x80xf32>
// ROW-LABEL:   tile.kernel @matmul({{.*}}) schedule ["tile-register-tile{m=1 n=4}"] {
// ROW:           tile.for %a0 = 0 to 64 bind(serial) {
// ROW-NEXT:        tile.for %a1 = 0 to 20 bind(serial) {
// ROW:               tile.for %r0 = 0 to 96 bind(serial) iter(%acc = %zero, %acc_1 = %zero, %acc_2 = %zero, %acc_3 = %zero)
// ROW-NEXT:            %a = loop.load %x0[%a0, %r0] : memref<64x96xf32>
// ROW-COUNT-4:         loop.load %x1[%r0,
// ROW-COUNT-4:       loop.store

builtin.module {
  loop.kernel @matmul(%x0: memref<64x96xf32>, %x1: memref<96x80xf32>, %out: memref<64x80xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    loop.for %a0 = 0 to 64 free {
      loop.for %a1 = 0 to 80 free {
        %s = loop.for %r0 = 0 to 96 reduce iter(%acc = %zero) -> f32 {
          %a = loop.load %x0[%a0, %r0] : memref<64x96xf32>
          %b = loop.load %x1[%r0, %a1] : memref<96x80xf32>
          %p = arith.mulf %a, %b : f32
          %n = arith.addf %acc, %p : f32
          loop.yield %n : f32
        }
        loop.store %s, %out[%a0, %a1] : memref<64x80xf32>
      }
    }
  }
}

// -----

// A linear layer with bias and residual, M = 37: 2 x 2 tiles (M, N < 64); the epilogue is
// replicated per output (the bias is read once per column); row 37 of the last tile is clamped
// to 36 for the loads and its stores are guarded.
// CHECK-LABEL: tile.kernel @add_linear({{.*}}) schedule ["tile-register-tile{m=2 n=2}"] {
// CHECK:         tile.for %a0 = 0 to 19 bind(serial) {
// CHECK:             %[[RAW:.*]] = arith.addi %{{.*}}, %c1 : index
// CHECK-NEXT:        %[[IN:.*]] = arith.cmpi ult, %[[RAW]], %c37 : index
// CHECK-NEXT:        %[[CL:.*]] = arith.minsi %[[RAW]], %c36 : index
// CHECK:             loop.load %x0[%[[CL]], %r0] : memref<37x64xf32>
// CHECK:             %bias = loop.load %x2[%a1r0] : memref<48xf32>
// CHECK-NEXT:        %bias_1 = loop.load %x2[%a1r1] : memref<48xf32>
// CHECK-NOT:         loop.load %x2
// CHECK:             loop.load %x3[%[[CL]], %a1r1] : memref<37x48xf32>
// CHECK:             scf.if %in {
// CHECK:             scf.if %[[IN]] {
// CHECK-NEXT:          loop.store %{{.*}}, %out[%[[CL]], %a1r0] : memref<37x48xf32>
// ROW-LABEL:   tile.kernel @add_linear({{.*}}) schedule ["tile-register-tile{m=1 n=4}"] {
// ROW:           tile.for %a1 = 0 to 12 bind(serial) {
// ROW-NOT:         scf.if

builtin.module {
  loop.kernel @add_linear(%x0: memref<37x64xf32>, %x1: memref<48x64xf32>, %x2: memref<48xf32>, %x3: memref<37x48xf32>, %out: memref<37x48xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    loop.for %a0 = 0 to 37 free {
      loop.for %a1 = 0 to 48 free {
        %s = loop.for %r0 = 0 to 64 reduce iter(%acc = %zero) -> f32 {
          %a = loop.load %x0[%a0, %r0] : memref<37x64xf32>
          %b = loop.load %x1[%a1, %r0] : memref<48x64xf32>
          %p = arith.mulf %a, %b : f32
          %n = arith.addf %acc, %p : f32
          loop.yield %n : f32
        }
        %bias = loop.load %x2[%a1] : memref<48xf32>
        %y = arith.addf %s, %bias : f32
        %res = loop.load %x3[%a0, %a1] : memref<37x48xf32>
        %z = arith.addf %y, %res : f32
        loop.store %z, %out[%a0, %a1] : memref<37x48xf32>
      }
    }
  }
}

// -----

// Too small for the heuristic (16 x 16 outputs): left to tile-map-grid and tile-map-threads. With
// explicit factors it applies.
// CHECK-LABEL: tile.kernel @negative_small({{.*}}) schedule [] {
// CHECK:         tile.for %a0 = 0 to 16 bind(serial) {
// CHECK-NEXT:      tile.for %a1 = 0 to 16 bind(serial) {
// ROW-LABEL:   tile.kernel @negative_small({{.*}}) schedule ["tile-register-tile{m=1 n=4}"] {

builtin.module {
  loop.kernel @negative_small(%x: memref<16x64xf32>, %w: memref<64x16xf32>, %out: memref<16x16xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    loop.for %a0 = 0 to 16 free {
      loop.for %a1 = 0 to 16 free {
        %s = loop.for %r0 = 0 to 64 reduce iter(%acc = %zero) -> f32 {
          %a = loop.load %x[%a0, %r0] : memref<16x64xf32>
          %b = loop.load %w[%r0, %a1] : memref<64x16xf32>
          %p = arith.mulf %a, %b : f32
          %n = arith.addf %acc, %p : f32
          loop.yield %n : f32
        }
        loop.store %s, %out[%a0, %a1] : memref<16x16xf32>
      }
    }
  }
}

// -----

// Not a contraction (the row's reduction is followed by a free loop, RMSNorm): no change.
// CHECK-LABEL: tile.kernel @negative_rms_norm({{.*}}) schedule [] {
// ROW-LABEL:   tile.kernel @negative_rms_norm({{.*}}) schedule [] {

builtin.module {
  loop.kernel @negative_rms_norm(%x: memref<32x2048xf32>, %out: memref<32x2048xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    loop.for %a0 = 0 to 32 free {
      %ss = loop.for %a1 = 0 to 2048 reduce iter(%acc = %zero) -> f32 {
        %v = loop.load %x[%a0, %a1] : memref<32x2048xf32>
        %sq = arith.mulf %v, %v : f32
        %s = arith.addf %acc, %sq : f32
        loop.yield %s : f32
      }
      loop.for %a2 = 0 to 2048 free {
        %v2 = loop.load %x[%a0, %a2] : memref<32x2048xf32>
        %y = arith.mulf %v2, %ss : f32
        loop.store %y, %out[%a0, %a2] : memref<32x2048xf32>
      }
    }
  }
}
