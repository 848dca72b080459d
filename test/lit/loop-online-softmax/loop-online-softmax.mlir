// RUN: deplo-opt %s --split-input-file -p loop-online-softmax | filecheck %s
// RUN: deplo-opt %s --split-input-file -p "loop-online-softmax{min-extent=4}" | filecheck %s --check-prefix=SHORT

// A long softmax row: max and sum of exp become one pass with a running max m and a running
// sum l rescaled by exp(m - m_new). m starts at the lowest finite float: a leading -inf (a
// mask) adds exp(-inf - lowest) = 0, where exp(-inf + inf) would be NaN.
// CHECK-LABEL: loop.kernel @long_row(
// CHECK:         %[[LOW:.*]] = arith.constant -3.40282347e+38 : f32
// CHECK:         %[[M:.*]], %[[L:.*]] = loop.for %[[S:.*]] = 0 to 2048 reduce iter(%[[A:.*]] = %[[LOW]], %[[B:.*]] = %{{.*}}) -> (f32, f32) {
// CHECK-NEXT:      %[[X:.*]] = loop.load %x[%{{.*}}, %[[S]]]
// CHECK-NEXT:      %[[MN:.*]] = arith.maximumf %[[A]], %[[X]] : f32
// CHECK-NEXT:      %[[D:.*]] = arith.subf %[[X]], %[[MN]] : f32
// CHECK-NEXT:      %[[P:.*]] = math.exp %[[D]] : f32
// CHECK-NEXT:      %[[DA:.*]] = arith.subf %[[A]], %[[MN]] : f32
// CHECK-NEXT:      %[[ALPHA:.*]] = math.exp %[[DA]] : f32
// CHECK-NEXT:      %[[LA:.*]] = arith.mulf %[[B]], %[[ALPHA]] : f32
// CHECK-NEXT:      %[[LN:.*]] = arith.addf %[[LA]], %[[P]] : f32
// CHECK-NEXT:      loop.yield %[[MN]], %[[LN]] : f32, f32
// CHECK:         loop.for %{{.*}} = 0 to 2048 free {
// CHECK:           arith.subf %{{.*}}, %[[M]] : f32
// CHECK:           arith.divf %{{.*}}, %[[L]] : f32
loop.kernel @long_row(%x: memref<2x2048xf32>, %out: memref<2x2048xf32>) {
  %ninf = arith.constant 0xff800000 : f32
  %z = arith.constant 0.0 : f32
  loop.for %i = 0 to 2 free {
    %m = loop.for %r = 0 to 2048 reduce iter(%a = %ninf) -> f32 {
      %v = loop.load %x[%i, %r] : memref<2x2048xf32>
      %n = arith.maximumf %a, %v : f32
      loop.yield %n : f32
    }
    %l = loop.for %q = 0 to 2048 reduce iter(%b = %z) -> f32 {
      %w = loop.load %x[%i, %q] : memref<2x2048xf32>
      %d = arith.subf %w, %m : f32
      %e = math.exp %d : f32
      %s = arith.addf %b, %e : f32
      loop.yield %s : f32
    }
    loop.for %j = 0 to 2048 free {
      %y = loop.load %x[%i, %j] : memref<2x2048xf32>
      %dy = arith.subf %y, %m : f32
      %ey = math.exp %dy : f32
      %p = arith.divf %ey, %l : f32
      loop.store %p, %out[%i, %j] : memref<2x2048xf32>
    }
  }
}

// -----

// Attention: the weighted sum over the same key axis is carried in the same pass (flash): a
// private output row, rescaled by alpha and accumulated, divided by l at the end. The scores
// are now read once per key, whatever the row length.
// CHECK-LABEL: loop.kernel @attention(
// CHECK:         loop.for %[[I:.*]] = 0 to 3 free {
// CHECK-NEXT:      %[[LOW:.*]] = arith.constant -3.40282347e+38 : f32
// CHECK-NEXT:      %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[ACC:.*]] = loop.private : memref<4xf32>
// CHECK-NEXT:      loop.for %[[J0:.*]] = 0 to 4 free {
// CHECK-NEXT:        loop.store %[[ZERO]], %[[ACC]][%[[J0]]] : memref<4xf32>
// CHECK:           %{{.*}}, %[[L:.*]] = loop.for %[[S:.*]] = 0 to 5 reduce iter(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (f32, f32) {
// CHECK:             %[[P:.*]] = math.exp
// CHECK:             %[[ALPHA:.*]] = math.exp
// CHECK:             loop.for %[[J1:.*]] = 0 to 4 free {
// CHECK-NEXT:          %[[V:.*]] = loop.load %v[%[[S]], %[[J1]]] : memref<5x4xf32>
// CHECK-NEXT:          %[[OLD:.*]] = loop.load %[[ACC]][%[[J1]]] : memref<4xf32>
// CHECK-NEXT:          %[[PV:.*]] = arith.mulf %[[P]], %[[V]] : f32
// CHECK-NEXT:          %[[SC:.*]] = arith.mulf %[[OLD]], %[[ALPHA]] : f32
// CHECK-NEXT:          %[[NEW:.*]] = arith.addf %[[SC]], %[[PV]] : f32
// CHECK-NEXT:          loop.store %[[NEW]], %[[ACC]][%[[J1]]] : memref<4xf32>
// CHECK:           loop.for %[[J2:.*]] = 0 to 4 free {
// CHECK-NEXT:        %[[O:.*]] = loop.load %[[ACC]][%[[J2]]] : memref<4xf32>
// CHECK-NEXT:        %[[R:.*]] = arith.divf %[[O]], %[[L]] : f32
// CHECK-NEXT:        loop.store %[[R]], %out[%[[I]], %[[J2]]] : memref<3x4xf32>
loop.kernel @attention(%scores: memref<3x5xf32>, %v: memref<5x4xf32>, %out: memref<3x4xf32>) {
  %ninf = arith.constant 0xff800000 : f32
  %z = arith.constant 0.0 : f32
  loop.for %i = 0 to 3 free {
    %m = loop.for %r = 0 to 5 reduce iter(%a = %ninf) -> f32 {
      %x = loop.load %scores[%i, %r] : memref<3x5xf32>
      %n = arith.maximumf %a, %x : f32
      loop.yield %n : f32
    }
    %l = loop.for %q = 0 to 5 reduce iter(%b = %z) -> f32 {
      %x2 = loop.load %scores[%i, %q] : memref<3x5xf32>
      %d = arith.subf %x2, %m : f32
      %e = math.exp %d : f32
      %s = arith.addf %b, %e : f32
      loop.yield %s : f32
    }
    loop.for %j = 0 to 4 free {
      %o = loop.for %t = 0 to 5 reduce iter(%c = %z) -> f32 {
        %x3 = loop.load %scores[%i, %t] : memref<3x5xf32>
        %d3 = arith.subf %x3, %m : f32
        %e3 = math.exp %d3 : f32
        %p = arith.divf %e3, %l : f32
        %vv = loop.load %v[%t, %j] : memref<5x4xf32>
        %pv = arith.mulf %p, %vv : f32
        %c2 = arith.addf %c, %pv : f32
        loop.yield %c2 : f32
      }
      loop.store %o, %out[%i, %j] : memref<3x4xf32>
    }
  }
}

// -----

// Attention's safe softmax (a row its mask hides whole is 0): the exps subtract the max clamped
// to the lowest float (the pv loop's own copy of the clamp too) and divide by the sum clamped
// to 1. The running max starts at the lowest float, so it is the clamped max; the clamps of m
// go, the clamp of l moves beside the final division.
// CHECK-LABEL: loop.kernel @safe_attention(
// CHECK:           %[[M:.*]], %[[L:.*]] = loop.for %[[S:.*]] = 0 to 5 reduce iter(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (f32, f32) {
// CHECK:             loop.yield %{{.*}}, %{{.*}} : f32, f32
// CHECK-NOT:       arith.maximumf %[[M]],
// CHECK:           loop.for %[[J2:.*]] = 0 to 4 free {
// CHECK-NEXT:        %[[O:.*]] = loop.load %{{.*}}[%[[J2]]] : memref<4xf32>
// CHECK-NEXT:        %[[LS:.*]] = arith.maximumf %[[L]], %{{.*}} : f32
// CHECK-NEXT:        %[[R:.*]] = arith.divf %[[O]], %[[LS]] : f32
// CHECK-NEXT:        loop.store %[[R]], %out[%{{.*}}, %[[J2]]] : memref<3x4xf32>
loop.kernel @safe_attention(%scores: memref<3x5xf32>, %v: memref<5x4xf32>, %out: memref<3x4xf32>) {
  %ninf = arith.constant 0xff800000 : f32
  %low = arith.constant -3.40282347e+38 : f32
  %one = arith.constant 1.0 : f32
  %z = arith.constant 0.0 : f32
  loop.for %i = 0 to 3 free {
    %m = loop.for %r = 0 to 5 reduce iter(%a = %ninf) -> f32 {
      %x = loop.load %scores[%i, %r] : memref<3x5xf32>
      %n = arith.maximumf %a, %x : f32
      loop.yield %n : f32
    }
    %ms = arith.maximumf %m, %low : f32
    %l = loop.for %q = 0 to 5 reduce iter(%b = %z) -> f32 {
      %x2 = loop.load %scores[%i, %q] : memref<3x5xf32>
      %d = arith.subf %x2, %ms : f32
      %e = math.exp %d : f32
      %s = arith.addf %b, %e : f32
      loop.yield %s : f32
    }
    %ls = arith.maximumf %l, %one : f32
    %ms2 = arith.maximumf %m, %low : f32
    loop.for %j = 0 to 4 free {
      %o = loop.for %t = 0 to 5 reduce iter(%c = %z) -> f32 {
        %x3 = loop.load %scores[%i, %t] : memref<3x5xf32>
        %d3 = arith.subf %x3, %ms2 : f32
        %e3 = math.exp %d3 : f32
        %p = arith.divf %e3, %ls : f32
        %vv = loop.load %v[%t, %j] : memref<5x4xf32>
        %pv = arith.mulf %p, %vv : f32
        %c2 = arith.addf %c, %pv : f32
        loop.yield %c2 : f32
      }
      loop.store %o, %out[%i, %j] : memref<3x4xf32>
    }
  }
}

// -----

// The same row where the program launches it on its own input scores: nothing will bring a
// q·k into the loop, so the weighted sum stays a matmul (only the softmax goes online).
// CHECK-LABEL: loop.kernel @weights_from_input(
// CHECK-NOT:     loop.private
// CHECK:         loop.for %{{.*}} = 0 to 4 free {
// CHECK-NEXT:      loop.for %{{.*}} = 0 to 5 reduce
// CHECK-LABEL: func.func @main
// SHORT-LABEL: loop.kernel @weights_from_input(
// SHORT-NOT:     loop.private
// SHORT:         loop.for %{{.*}} = 0 to 5 reduce iter(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (f32, f32) {
// SHORT:         loop.for %{{.*}} = 0 to 4 free {
// SHORT-NEXT:      loop.for %{{.*}} = 0 to 5 reduce
// SHORT-LABEL: func.func @main
builtin.module {
  loop.kernel @weights_from_input(%scores: memref<3x5xf32>, %v: memref<5x4xf32>, %out: memref<3x4xf32>) {
    %ninf = arith.constant 0xff800000 : f32
    %z = arith.constant 0.0 : f32
    loop.for %i = 0 to 3 free {
      %m = loop.for %r = 0 to 5 reduce iter(%a = %ninf) -> f32 {
        %x = loop.load %scores[%i, %r] : memref<3x5xf32>
        %n = arith.maximumf %a, %x : f32
        loop.yield %n : f32
      }
      %l = loop.for %q = 0 to 5 reduce iter(%b = %z) -> f32 {
        %x2 = loop.load %scores[%i, %q] : memref<3x5xf32>
        %d = arith.subf %x2, %m : f32
        %e = math.exp %d : f32
        %s = arith.addf %b, %e : f32
        loop.yield %s : f32
      }
      loop.for %j = 0 to 4 free {
        %o = loop.for %t = 0 to 5 reduce iter(%c = %z) -> f32 {
          %x3 = loop.load %scores[%i, %t] : memref<3x5xf32>
          %d3 = arith.subf %x3, %m : f32
          %e3 = math.exp %d3 : f32
          %p = arith.divf %e3, %l : f32
          %vv = loop.load %v[%t, %j] : memref<5x4xf32>
          %pv = arith.mulf %p, %vv : f32
          %c2 = arith.addf %c, %pv : f32
          loop.yield %c2 : f32
        }
        loop.store %o, %out[%i, %j] : memref<3x4xf32>
      }
    }
  }
  func.func @main(%s: memref<3x5xf32>, %v: memref<5x4xf32>) -> memref<3x4xf32> {
    %out = memref.alloc() : memref<3x4xf32>
    loop.launch @weights_from_input(%s, %v, %out) : memref<3x5xf32>, memref<5x4xf32>, memref<3x4xf32>
    func.return %out : memref<3x4xf32>
  }
}

// -----

// bf16 eager attention rounds each probability to bf16 and back before P·V
// (`softmax(..., dtype=float32).to(bf16)`): the flash loop keeps it in float32.
// CHECK-LABEL: loop.kernel @attention_rounded_probs(
// CHECK:         loop.private : memref<4xf32>
// CHECK:         loop.for %[[S:.*]] = 0 to 5 reduce iter
// CHECK-NOT:       arith.truncf
// CHECK:           %[[V:.*]] = loop.load %v[%[[S]], %{{.*}}] : memref<5x4xbf16>
// CHECK-NEXT:      %[[VF:.*]] = arith.extf %[[V]] : bf16 to f32
// CHECK:         arith.divf
// CHECK-NEXT:    arith.truncf %{{.*}} : f32 to bf16
loop.kernel @attention_rounded_probs(%scores: memref<3x5xf32>, %v: memref<5x4xbf16>, %out: memref<3x4xbf16>) {
  %ninf = arith.constant 0xff800000 : f32
  %z = arith.constant 0.0 : f32
  loop.for %i = 0 to 3 free {
    %m = loop.for %r = 0 to 5 reduce iter(%a = %ninf) -> f32 {
      %x = loop.load %scores[%i, %r] : memref<3x5xf32>
      %n = arith.maximumf %a, %x : f32
      loop.yield %n : f32
    }
    %l = loop.for %q = 0 to 5 reduce iter(%b = %z) -> f32 {
      %x2 = loop.load %scores[%i, %q] : memref<3x5xf32>
      %d = arith.subf %x2, %m : f32
      %e = math.exp %d : f32
      %s = arith.addf %b, %e : f32
      loop.yield %s : f32
    }
    loop.for %j = 0 to 4 free {
      %o = loop.for %t = 0 to 5 reduce iter(%c = %z) -> f32 {
        %x3 = loop.load %scores[%i, %t] : memref<3x5xf32>
        %d3 = arith.subf %x3, %m : f32
        %e3 = math.exp %d3 : f32
        %p = arith.divf %e3, %l : f32
        %pb = arith.truncf %p : f32 to bf16
        %pf = arith.extf %pb : bf16 to f32
        %vv = loop.load %v[%t, %j] : memref<5x4xbf16>
        %vf = arith.extf %vv : bf16 to f32
        %pv = arith.mulf %pf, %vf : f32
        %c2 = arith.addf %c, %pv : f32
        loop.yield %c2 : f32
      }
      %ob = arith.truncf %o : f32 to bf16
      loop.store %ob, %out[%i, %j] : memref<3x4xbf16>
    }
  }
}

// -----

// negative_short_row: a short row keeps its two passes (both stay plain reductions that
// tile-cooperative-reduce can split between threads) unless min-extent says otherwise.
// CHECK-LABEL: loop.kernel @negative_short_row(
// CHECK:         loop.for %{{.*}} = 0 to 8 reduce iter(%{{.*}} = %{{.*}}) -> f32 {
// CHECK:         loop.for %{{.*}} = 0 to 8 reduce iter(%{{.*}} = %{{.*}}) -> f32 {
// SHORT-LABEL: loop.kernel @negative_short_row(
// SHORT:         loop.for %{{.*}} = 0 to 8 reduce iter(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (f32, f32) {
loop.kernel @negative_short_row(%x: memref<8xf32>, %out: memref<1xf32>) {
  %ninf = arith.constant 0xff800000 : f32
  %z = arith.constant 0.0 : f32
  loop.for %i = 0 to 1 free {
    %m = loop.for %r = 0 to 8 reduce iter(%a = %ninf) -> f32 {
      %v = loop.load %x[%r] : memref<8xf32>
      %n = arith.maximumf %a, %v : f32
      loop.yield %n : f32
    }
    %l = loop.for %q = 0 to 8 reduce iter(%b = %z) -> f32 {
      %w = loop.load %x[%q] : memref<8xf32>
      %d = arith.subf %w, %m : f32
      %e = math.exp %d : f32
      %s = arith.addf %b, %e : f32
      loop.yield %s : f32
    }
    loop.store %l, %out[%i] : memref<1xf32>
  }
}

// -----

// negative_other_score: the sum is over exp of something else than the max was taken of.
// CHECK-LABEL: loop.kernel @negative_other_score(
// CHECK:         loop.for %{{.*}} = 0 to 2048 reduce iter(%{{.*}} = %{{.*}}) -> f32 {
// CHECK:         loop.for %{{.*}} = 0 to 2048 reduce iter(%{{.*}} = %{{.*}}) -> f32 {
loop.kernel @negative_other_score(%x: memref<2048xf32>, %y: memref<2048xf32>, %out: memref<1xf32>) {
  %ninf = arith.constant 0xff800000 : f32
  %z = arith.constant 0.0 : f32
  loop.for %i = 0 to 1 free {
    %m = loop.for %r = 0 to 2048 reduce iter(%a = %ninf) -> f32 {
      %v = loop.load %x[%r] : memref<2048xf32>
      %n = arith.maximumf %a, %v : f32
      loop.yield %n : f32
    }
    %l = loop.for %q = 0 to 2048 reduce iter(%b = %z) -> f32 {
      %w = loop.load %y[%q] : memref<2048xf32>
      %d = arith.subf %w, %m : f32
      %e = math.exp %d : f32
      %s = arith.addf %b, %e : f32
      loop.yield %s : f32
    }
    loop.store %l, %out[%i] : memref<1xf32>
  }
}
