// RUN: deplo-opt %s --split-input-file -p loop-narrow-buffers | filecheck %s

// silu(gate) * up in bf16 feeding a linear: the producer stored the product widened to f32 (the
// matmul's cast, fused forward). The intermediate holds bf16; the matmul widens what it loads,
// so its product is a plain product of two bf16 loads again.
// CHECK-LABEL: loop.kernel @p(%x: memref<4x8xbf16>, %t: memref<4x8xbf16>) {
// CHECK:           %[[V:.*]] = arith.mulf %{{.*}}, %{{.*}} : bf16
// CHECK-NOT:       arith.extf
// CHECK-NEXT:      loop.store %[[V]], %t[%i, %k] : memref<4x8xbf16>
// CHECK-LABEL: loop.kernel @c(%t: memref<4x8xbf16>, %w: memref<2x8xbf16>, %out: memref<4x2xf32>) {
// CHECK:             %[[A:.*]] = loop.load %t[%i, %j, %k] map (d0, d1, d2) -> (d0, d2) : memref<4x8xbf16>
// CHECK-NEXT:        %[[AW:.*]] = arith.extf %[[A]] : bf16 to f32
// CHECK:             arith.mulf %[[AW]], %{{.*}} : f32
// CHECK-LABEL: func.func @main(
// CHECK-NEXT:    %t = memref.alloc() : memref<4x8xbf16>
// CHECK-NEXT:    loop.launch @p(%x, %t) : memref<4x8xbf16>, memref<4x8xbf16>
// CHECK-NEXT:    %out = memref.alloc() : memref<4x2xf32>
// CHECK-NEXT:    loop.launch @c(%t, %w, %out) : memref<4x8xbf16>, memref<2x8xbf16>, memref<4x2xf32>
builtin.module {
  loop.kernel @p(%x: memref<4x8xbf16>, %t: memref<4x8xf32>) {
    loop.for %i = 0 to 4 free {
      loop.for %k = 0 to 8 free {
        %v = loop.load %x[%i, %k] : memref<4x8xbf16>
        %sq = arith.mulf %v, %v : bf16
        %w = arith.extf %sq : bf16 to f32
        loop.store %w, %t[%i, %k] : memref<4x8xf32>
      }
    }
  }
  loop.kernel @c(%t: memref<4x8xf32>, %w: memref<2x8xbf16>, %out: memref<4x2xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    loop.for %i = 0 to 4 free {
      loop.for %j = 0 to 2 free {
        %s = loop.for %k = 0 to 8 reduce iter(%acc = %zero) -> f32 {
          %a = loop.load %t[%i, %j, %k] map (d0, d1, d2) -> (d0, d2) : memref<4x8xf32>
          %b = loop.load %w[%j, %k] : memref<2x8xbf16>
          %bw = arith.extf %b : bf16 to f32
          %p = arith.mulf %a, %bw : f32
          %n = arith.addf %acc, %p : f32
          loop.yield %n : f32
        }
        loop.store %s, %out[%i, %j] : memref<4x2xf32>
      }
    }
  }
  func.func @main(%x: memref<4x8xbf16>, %w: memref<2x8xbf16>) -> memref<4x2xf32> {
    %t = memref.alloc() : memref<4x8xf32>
    loop.launch @p(%x, %t) : memref<4x8xbf16>, memref<4x8xf32>
    %out = memref.alloc() : memref<4x2xf32>
    loop.launch @c(%t, %w, %out) : memref<4x8xf32>, memref<2x8xbf16>, memref<4x2xf32>
    func.return %out : memref<4x2xf32>
  }
}

// -----

// Left alone: the buffer the function returns (its type is the program's), a buffer one kernel
// also stores un-widened, and stores of two different narrow types.
// CHECK-LABEL: loop.kernel @q(
// CHECK-SAME:      %r: memref<4xf32>, %mixed: memref<4xf32>, %two: memref<4xf32>
// CHECK-COUNT-2:   arith.extf
// CHECK-LABEL: func.func @main(
// CHECK:         memref.alloc() : memref<4xf32>
// CHECK:         memref.alloc() : memref<4xf32>
// CHECK:         memref.alloc() : memref<4xf32>
builtin.module {
  loop.kernel @q(%x: memref<4xbf16>, %y: memref<4xf16>, %z: memref<4xf32>, %r: memref<4xf32>, %mixed: memref<4xf32>, %two: memref<4xf32>) {
    loop.for %i = 0 to 4 free {
      %a = loop.load %x[%i] : memref<4xbf16>
      %b = loop.load %y[%i] : memref<4xf16>
      %c = loop.load %z[%i] : memref<4xf32>
      %aw = arith.extf %a : bf16 to f32
      %bw = arith.extf %b : f16 to f32
      loop.store %aw, %r[%i] : memref<4xf32>
      loop.store %aw, %mixed[%i] : memref<4xf32>
      loop.store %c, %mixed[%i] : memref<4xf32>
      loop.store %aw, %two[%i] : memref<4xf32>
      loop.store %bw, %two[%i] : memref<4xf32>
    }
  }
  func.func @main(%x: memref<4xbf16>, %y: memref<4xf16>, %z: memref<4xf32>) -> memref<4xf32> {
    %r = memref.alloc() : memref<4xf32>
    %mixed = memref.alloc() : memref<4xf32>
    %two = memref.alloc() : memref<4xf32>
    loop.launch @q(%x, %y, %z, %r, %mixed, %two) : memref<4xbf16>, memref<4xf16>, memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<4xf32>
    func.return %r : memref<4xf32>
  }
}
