// RUN: deplo-opt %s --split-input-file -p loop-collapse-dims | filecheck %s

// Attention's output [1, 4, 2, 8] (seq, heads, head dim) read as [1, 4, 16] by the o
// projection: the buffer takes the merged shape; the reader's split index is a plain one again,
// the writer's (h, d) is h * 8 + d.
// CHECK-LABEL: loop.kernel @attn(%x: memref<1x4x2x8xf32>, %t: memref<1x4x16xf32>) {
// CHECK:           loop.store %{{.*}}, %t[%b, %s, %h, %d] map (d0, d1, d2, d3) -> (d0, d1, ((d2 * 8) + d3)) : memref<1x4x16xf32>
// CHECK-LABEL: loop.kernel @o(%t: memref<1x4x16xf32>, %w: memref<16x16xf32>, %out: memref<1x4x16xf32>) {
// CHECK:             loop.load %t[%a0, %a1, %a2, %r0] map (d0, d1, d2, d3) -> (0, d1, d3) : memref<1x4x16xf32>
// CHECK-LABEL: func.func @main(
// CHECK-NEXT:    %t = memref.alloc() : memref<1x4x16xf32>
// CHECK-NEXT:    loop.launch @attn(%x, %t) : memref<1x4x2x8xf32>, memref<1x4x16xf32>
builtin.module {
  loop.kernel @attn(%x: memref<1x4x2x8xf32>, %t: memref<1x4x2x8xf32>) {
    loop.for %b = 0 to 1 free {
      loop.for %s = 0 to 4 free {
        loop.for %h = 0 to 2 free {
          loop.for %d = 0 to 8 free {
            %v = loop.load %x[%b, %s, %h, %d] : memref<1x4x2x8xf32>
            loop.store %v, %t[%b, %s, %h, %d] : memref<1x4x2x8xf32>
          }
        }
      }
    }
  }
  loop.kernel @o(%t: memref<1x4x2x8xf32>, %w: memref<16x16xf32>, %out: memref<1x4x16xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    loop.for %a0 = 0 to 1 free {
      loop.for %a1 = 0 to 4 free {
        loop.for %a2 = 0 to 16 free {
          %acc = loop.for %r0 = 0 to 16 reduce iter(%c = %zero) -> f32 {
            %a = loop.load %t[%a0, %a1, %a2, %r0] map (d0, d1, d2, d3) -> (0, d1, (d3 floordiv 8), (d3 mod 8)) : memref<1x4x2x8xf32>
            %b = loop.load %w[%a2, %r0] : memref<16x16xf32>
            %p = arith.mulf %a, %b : f32
            %n = arith.addf %c, %p : f32
            loop.yield %n : f32
          }
          loop.store %acc, %out[%a0, %a1, %a2] : memref<1x4x16xf32>
        }
      }
    }
  }
  func.func @main(%x: memref<1x4x2x8xf32>, %w: memref<16x16xf32>) -> memref<1x4x16xf32> {
    %t = memref.alloc() : memref<1x4x2x8xf32>
    loop.launch @attn(%x, %t) : memref<1x4x2x8xf32>, memref<1x4x2x8xf32>
    %out = memref.alloc() : memref<1x4x16xf32>
    loop.launch @o(%t, %w, %out) : memref<1x4x2x8xf32>, memref<16x16xf32>, memref<1x4x16xf32>
    func.return %out : memref<1x4x16xf32>
  }
}

// -----

// Left alone: nothing splits an index (a plain 4-D read), and a program input read through a
// reshape (its type is the program's).
// CHECK-LABEL: loop.kernel @plain(
// CHECK-SAME:      %t: memref<2x8xf32>
// CHECK-LABEL: func.func @main(
// CHECK:         memref.alloc() : memref<2x8xf32>
builtin.module {
  loop.kernel @plain(%x: memref<16xf32>, %t: memref<2x8xf32>, %out: memref<2x8xf32>) {
    loop.for %i = 0 to 2 free {
      loop.for %j = 0 to 8 free {
        %v = loop.load %x[%i, %j] map (d0, d1) -> (((d0 * 8) + d1)) : memref<16xf32>
        loop.store %v, %t[%i, %j] : memref<2x8xf32>
        %u = loop.load %t[%i, %j] : memref<2x8xf32>
        loop.store %u, %out[%i, %j] : memref<2x8xf32>
      }
    }
  }
  func.func @main(%x: memref<16xf32>) -> memref<2x8xf32> {
    %t = memref.alloc() : memref<2x8xf32>
    %out = memref.alloc() : memref<2x8xf32>
    loop.launch @plain(%x, %t, %out) : memref<16xf32>, memref<2x8xf32>, memref<2x8xf32>
    func.return %out : memref<2x8xf32>
  }
}

// -----

// A conv's weight, a program input [4, 2, 3, 3], read as [4, 18] (K = channel, kh, kw): the
// kernel's argument alone takes the merged shape (kh, kw first: ((k floordiv 3) mod 3, k mod 3)
// is k mod 9; then (k floordiv 9, k mod 9) is k); the launch passes the input as it is. The
// input's window read stays as it was: no access splits one index across two of its dims.
// CHECK-LABEL: loop.kernel @conv(%x: memref<1x2x5x5xf32>, %w: memref<4x18xf32>, %out: memref<1x4x3x3xf32>)
// CHECK:         loop.load %w[%o, %k] : memref<4x18xf32>
// CHECK:         loop.load %x[%p, %q, %k] map (d0, d1, d2) -> (0, (d2 floordiv 9), (d0 + ((d2 floordiv 3) mod 3)), (d1 + (d2 mod 3))) : memref<1x2x5x5xf32>
// CHECK-LABEL: func.func @main
// CHECK:         loop.launch @conv(%x, %w, %out) : memref<1x2x5x5xf32>, memref<4x2x3x3xf32>, memref<1x4x3x3xf32>

builtin.module {
  loop.kernel @conv(%x: memref<1x2x5x5xf32>, %w: memref<4x2x3x3xf32>, %out: memref<1x4x3x3xf32>) {
    %0 = arith.constant 0.000000e+00 : f32
    loop.for %o = 0 to 4 free {
      loop.for %p = 0 to 3 free {
        loop.for %q = 0 to 3 free {
          %1 = loop.for %k = 0 to 18 reduce iter(%acc = %0) -> f32 {
            %2 = loop.load %w[%o, %k] map (d0, d1) -> (d0, (d1 floordiv 9), ((d1 floordiv 3) mod 3), (d1 mod 3)) : memref<4x2x3x3xf32>
            %3 = loop.load %x[%p, %q, %k] map (d0, d1, d2) -> (0, (d2 floordiv 9), (d0 + ((d2 floordiv 3) mod 3)), (d1 + (d2 mod 3))) : memref<1x2x5x5xf32>
            %4 = arith.mulf %2, %3 : f32
            %5 = arith.addf %acc, %4 : f32
            loop.yield %5 : f32
          }
          loop.store %1, %out[%o, %p, %q] map (d0, d1, d2) -> (0, d0, d1, d2) : memref<1x4x3x3xf32>
        }
      }
    }
  }
  func.func @main(%x: memref<1x2x5x5xf32>, %w: memref<4x2x3x3xf32>) -> memref<1x4x3x3xf32> {
    %out = memref.alloc() : memref<1x4x3x3xf32>
    loop.launch @conv(%x, %w, %out) : memref<1x2x5x5xf32>, memref<4x2x3x3xf32>, memref<1x4x3x3xf32>
    func.return %out : memref<1x4x3x3xf32>
  }
}

// -----

// x.repeat_interleave(3, 0).flatten() of a [4, 3] input: the row is (i floordiv 3) floordiv 3,
// not a (floordiv, mod) pair over the two dims (that would be i mod 9: another element, past
// the buffer's rows), so the input keeps its shape.
// CHECK-LABEL: loop.kernel @repeat(%x: memref<4x3xf32>, %out: memref<36xf32>)
// CHECK:         loop.load %x[%i] map (d0) -> (((d0 floordiv 3) floordiv 3), (d0 mod 3)) : memref<4x3xf32>

builtin.module {
  loop.kernel @repeat(%x: memref<4x3xf32>, %out: memref<36xf32>) {
    loop.for %i = 0 to 36 free {
      %0 = loop.load %x[%i] map (d0) -> (((d0 floordiv 3) floordiv 3), (d0 mod 3)) : memref<4x3xf32>
      loop.store %0, %out[%i] : memref<36xf32>
    }
  }
  func.func @main(%x: memref<4x3xf32>) -> memref<36xf32> {
    %out = memref.alloc() : memref<36xf32>
    loop.launch @repeat(%x, %out) : memref<4x3xf32>, memref<36xf32>
    func.return %out : memref<36xf32>
  }
}

// -----

// A 1x1 conv's weight [O, C, 1, 1], read at (o, c, 0, 0): the kernel's argument drops the
// trailing unit dims, a plain [O, C] (a fragment load's [rows, K]); the launch passes it as it is.
// CHECK-LABEL: loop.kernel @conv1x1(%x: memref<2x8x16xf16>, %w: memref<16x8xf16>, %out: memref<2x16x16xf32>) {
// CHECK:             loop.load %w[%o, %k] : memref<16x8xf16>
// CHECK-LABEL: func.func @main(
// CHECK:         loop.launch @conv1x1(%x, %w, %y) : memref<2x8x16xf16>, memref<16x8x1x1xf16>, memref<2x16x16xf32>
builtin.module {
  loop.kernel @conv1x1(%x: memref<2x8x16xf16>, %w: memref<16x8x1x1xf16>, %out: memref<2x16x16xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    loop.for %n = 0 to 2 free {
      loop.for %o = 0 to 16 free {
        loop.for %s = 0 to 16 free {
          %acc = loop.for %k = 0 to 8 reduce iter(%c = %zero) -> f32 {
            %a = loop.load %x[%n, %k, %s] : memref<2x8x16xf16>
            %b = loop.load %w[%o, %k] map (d0, d1) -> (d0, d1, 0, 0) : memref<16x8x1x1xf16>
            %fa = arith.extf %a : f16 to f32
            %fb = arith.extf %b : f16 to f32
            %p = arith.mulf %fa, %fb : f32
            %m = arith.addf %c, %p : f32
            loop.yield %m : f32
          }
          loop.store %acc, %out[%n, %o, %s] : memref<2x16x16xf32>
        }
      }
    }
  }
  func.func @main(%x: memref<2x8x16xf16>, %w: memref<16x8x1x1xf16>) -> memref<2x16x16xf32> {
    %y = memref.alloc() : memref<2x16x16xf32>
    loop.launch @conv1x1(%x, %w, %y) : memref<2x8x16xf16>, memref<16x8x1x1xf16>, memref<2x16x16xf32>
    func.return %y : memref<2x16x16xf32>
  }
}
