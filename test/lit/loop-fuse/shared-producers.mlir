// RUN: deplo-opt %s -p loop-fuse | filecheck %s

// a = exp(x); b = a + sin(a); c = b * a; out = c + b: producers read by several later kernels
// of one chain. Each is inlined once into the last kernel — a later fusion that brings back a
// load of an element inlined before reuses it, and the copies one fusion makes are merged —
// not once per path to it (5 exps before; a binary search's lo/hi chain doubled per step).

// CHECK:           loop.kernel
// CHECK-NOT:       loop.kernel
// CHECK-COUNT-1:   math.exp
// CHECK-NOT:       math.exp
// CHECK-COUNT-1:   math.sin
// CHECK-NOT:       math.sin
// CHECK:           func.func @main

builtin.module {
  loop.kernel @exp(%xs: memref<8x16xf32>, %out: memref<8x16xf32>) {
    loop.for %a0 = 0 to 8 free {
      loop.for %a1 = 0 to 16 free {
        %0 = loop.load %xs[%a0, %a1] : memref<8x16xf32>
        %1 = math.exp %0 : f32
        loop.store %1, %out[%a0, %a1] : memref<8x16xf32>
      }
    }
  }
  loop.kernel @sin(%exp: memref<8x16xf32>, %out: memref<8x16xf32>) {
    loop.for %a0 = 0 to 8 free {
      loop.for %a1 = 0 to 16 free {
        %0 = loop.load %exp[%a0, %a1] : memref<8x16xf32>
        %1 = math.sin %0 : f32
        loop.store %1, %out[%a0, %a1] : memref<8x16xf32>
      }
    }
  }
  loop.kernel @add(%exp: memref<8x16xf32>, %sin: memref<8x16xf32>, %out: memref<8x16xf32>) {
    loop.for %a0 = 0 to 8 free {
      loop.for %a1 = 0 to 16 free {
        %0 = loop.load %exp[%a0, %a1] : memref<8x16xf32>
        %1 = loop.load %sin[%a0, %a1] : memref<8x16xf32>
        %2 = arith.addf %0, %1 : f32
        loop.store %2, %out[%a0, %a1] : memref<8x16xf32>
      }
    }
  }
  loop.kernel @mul(%add: memref<8x16xf32>, %exp: memref<8x16xf32>, %out: memref<8x16xf32>) {
    loop.for %a0 = 0 to 8 free {
      loop.for %a1 = 0 to 16 free {
        %0 = loop.load %add[%a0, %a1] : memref<8x16xf32>
        %1 = loop.load %exp[%a0, %a1] : memref<8x16xf32>
        %2 = arith.mulf %0, %1 : f32
        loop.store %2, %out[%a0, %a1] : memref<8x16xf32>
      }
    }
  }
  loop.kernel @add_1(%mul: memref<8x16xf32>, %add: memref<8x16xf32>, %out: memref<8x16xf32>) {
    loop.for %a0 = 0 to 8 free {
      loop.for %a1 = 0 to 16 free {
        %0 = loop.load %mul[%a0, %a1] : memref<8x16xf32>
        %1 = loop.load %add[%a0, %a1] : memref<8x16xf32>
        %2 = arith.addf %0, %1 : f32
        loop.store %2, %out[%a0, %a1] : memref<8x16xf32>
      }
    }
  }
  func.func @main(%xs: memref<8x16xf32>) -> memref<8x16xf32> {
    %exp = memref.alloc() : memref<8x16xf32>
    loop.launch @exp(%xs, %exp) : memref<8x16xf32>, memref<8x16xf32>
    %sin = memref.alloc() : memref<8x16xf32>
    loop.launch @sin(%exp, %sin) : memref<8x16xf32>, memref<8x16xf32>
    %add = memref.alloc() : memref<8x16xf32>
    loop.launch @add(%exp, %sin, %add) : memref<8x16xf32>, memref<8x16xf32>, memref<8x16xf32>
    %mul = memref.alloc() : memref<8x16xf32>
    loop.launch @mul(%add, %exp, %mul) : memref<8x16xf32>, memref<8x16xf32>, memref<8x16xf32>
    %add_1 = memref.alloc() : memref<8x16xf32>
    loop.launch @add_1(%mul, %add, %add_1) : memref<8x16xf32>, memref<8x16xf32>, memref<8x16xf32>
    func.return %add_1 : memref<8x16xf32>
  }
}

