// RUN: deplo-opt %s --split-input-file -p loop-order-contractions | filecheck %s
// RUN: deplo-opt %s --split-input-file -p loop-order-contractions | deplo-opt --split-input-file | filecheck %s

// conv2d's im2col: over (h, w) the input is read along both, so (h, w) is no matmul's pair.
// `o` (the weight's loop) moves in next to `w`: (o, w) is one, the weight along o, the input
// along w; n and h keep their order outside. 6 x 128 outputs are too few to fold n and h
// into w (FOLD_OUTPUTS): as batches on block.z they keep more SMs busy.
// CHECK-LABEL: loop.kernel @conv(
// CHECK-NEXT:    %{{.*}} = arith.constant
// CHECK-NEXT:    loop.for %n = 0 to 2 free {
// CHECK-NEXT:      loop.for %h = 0 to 8 free {
// CHECK-NEXT:        loop.for %o = 0 to 6 free {
// CHECK-NEXT:          loop.for %w = 0 to 8 free {
// CHECK-NEXT:            loop.for %k = 0 to 36 reduce
// CHECK-NEXT:              loop.load %x[%n, %o, %h, %w, %k]
// CHECK-NEXT:              loop.load %wt[%n, %o, %h, %w, %k]
// CHECK:           loop.store %{{.*}}, %out[%n, %o, %h, %w]

builtin.module {
  loop.kernel @conv(%x: memref<2x4x10x10xf32>, %wt: memref<6x4x3x3xf32>, %out: memref<2x6x8x8xf32>) {
    %0 = arith.constant 0.000000e+00 : f32
    loop.for %n = 0 to 2 free {
      loop.for %o = 0 to 6 free {
        loop.for %h = 0 to 8 free {
          loop.for %w = 0 to 8 free {
            %1 = loop.for %k = 0 to 36 reduce iter(%acc = %0) -> f32 {
              %2 = loop.load %x[%n, %o, %h, %w, %k] map (d0, d1, d2, d3, d4) -> (d0, (d4 floordiv 9), (d2 + ((d4 floordiv 3) mod 3)), (d3 + (d4 mod 3))) : memref<2x4x10x10xf32>
              %3 = loop.load %wt[%n, %o, %h, %w, %k] map (d0, d1, d2, d3, d4) -> (d1, (d4 floordiv 9), ((d4 floordiv 3) mod 3), (d4 mod 3)) : memref<6x4x3x3xf32>
              %4 = arith.mulf %2, %3 : f32
              %5 = arith.addf %acc, %4 : f32
              loop.yield %5 : f32
            }
            loop.store %1, %out[%n, %o, %h, %w] : memref<2x6x8x8xf32>
          }
        }
      }
    }
  }
  func.func @main(%x: memref<2x4x10x10xf32>, %wt: memref<6x4x3x3xf32>) -> memref<2x6x8x8xf32> {
    %conv = memref.alloc() : memref<2x6x8x8xf32>
    loop.launch @conv(%x, %wt, %conv) : memref<2x4x10x10xf32>, memref<6x4x3x3xf32>, memref<2x6x8x8xf32>
    func.return %conv : memref<2x6x8x8xf32>
  }
}

// -----

// Left alone: a batched matmul (its pair is a product already) and a column sum (no loop makes
// one: every load is along both).
// CHECK-LABEL: loop.kernel @bmm(
// CHECK-NEXT:    %{{.*}} = arith.constant
// CHECK-NEXT:    loop.for %b = 0 to 4 free {
// CHECK-NEXT:      loop.for %i = 0 to 16 free {
// CHECK-NEXT:        loop.for %j = 0 to 8 free {
// CHECK-LABEL: loop.kernel @colsum(
// CHECK-NEXT:    %{{.*}} = arith.constant
// CHECK-NEXT:    loop.for %a = 0 to 4 free {
// CHECK-NEXT:      loop.for %c = 0 to 8 free {

builtin.module {
  loop.kernel @bmm(%x: memref<4x16x32xf32>, %y: memref<4x32x8xf32>, %out: memref<4x16x8xf32>) {
    %0 = arith.constant 0.000000e+00 : f32
    loop.for %b = 0 to 4 free {
      loop.for %i = 0 to 16 free {
        loop.for %j = 0 to 8 free {
          %1 = loop.for %k = 0 to 32 reduce iter(%acc = %0) -> f32 {
            %2 = loop.load %x[%b, %i, %k] : memref<4x16x32xf32>
            %3 = loop.load %y[%b, %k, %j] : memref<4x32x8xf32>
            %4 = arith.mulf %2, %3 : f32
            %5 = arith.addf %acc, %4 : f32
            loop.yield %5 : f32
          }
          loop.store %1, %out[%b, %i, %j] : memref<4x16x8xf32>
        }
      }
    }
  }
  loop.kernel @colsum(%x: memref<4x32x8xf32>, %out: memref<4x8xf32>) {
    %0 = arith.constant 0.000000e+00 : f32
    loop.for %a = 0 to 4 free {
      loop.for %c = 0 to 8 free {
        %1 = loop.for %r = 0 to 32 reduce iter(%acc = %0) -> f32 {
          %2 = loop.load %x[%a, %r, %c] : memref<4x32x8xf32>
          %3 = arith.addf %acc, %2 : f32
          loop.yield %3 : f32
        }
        loop.store %1, %out[%a, %c] : memref<4x8xf32>
      }
    }
  }
  func.func @main(%x: memref<4x16x32xf32>, %y: memref<4x32x8xf32>, %z: memref<4x32x8xf32>) -> memref<4x16x8xf32> {
    %bmm = memref.alloc() : memref<4x16x8xf32>
    loop.launch @bmm(%x, %y, %bmm) : memref<4x16x32xf32>, memref<4x32x8xf32>, memref<4x16x8xf32>
    %colsum = memref.alloc() : memref<4x8xf32>
    loop.launch @colsum(%z, %colsum) : memref<4x32x8xf32>, memref<4x8xf32>
    func.return %bmm : memref<4x16x8xf32>
  }
}

// -----

// A row of 64 (a block tile's width) is wide enough: the loops only move, n and h outside.
// CHECK-LABEL: loop.kernel @wide(
// CHECK-NEXT:    %{{.*}} = arith.constant
// CHECK-NEXT:    loop.for %n = 0 to 2 free {
// CHECK-NEXT:      loop.for %h = 0 to 4 free {
// CHECK-NEXT:        loop.for %o = 0 to 6 free {
// CHECK-NEXT:          loop.for %w = 0 to 64 free {
// CHECK-NEXT:            loop.for %k = 0 to 36 reduce
// CHECK-NEXT:              loop.load %x[%n, %o, %h, %w, %k]
// CHECK-NEXT:              loop.load %wt[%n, %o, %h, %w, %k]
// CHECK:           loop.store %{{.*}}, %out[%n, %o, %h, %w]

builtin.module {
  loop.kernel @wide(%x: memref<2x4x6x66xf32>, %wt: memref<6x4x3x3xf32>, %out: memref<2x6x4x64xf32>) {
    %0 = arith.constant 0.000000e+00 : f32
    loop.for %n = 0 to 2 free {
      loop.for %o = 0 to 6 free {
        loop.for %h = 0 to 4 free {
          loop.for %w = 0 to 64 free {
            %1 = loop.for %k = 0 to 36 reduce iter(%acc = %0) -> f32 {
              %2 = loop.load %x[%n, %o, %h, %w, %k] map (d0, d1, d2, d3, d4) -> (d0, (d4 floordiv 9), (d2 + ((d4 floordiv 3) mod 3)), (d3 + (d4 mod 3))) : memref<2x4x6x66xf32>
              %3 = loop.load %wt[%n, %o, %h, %w, %k] map (d0, d1, d2, d3, d4) -> (d1, (d4 floordiv 9), ((d4 floordiv 3) mod 3), (d4 mod 3)) : memref<6x4x3x3xf32>
              %4 = arith.mulf %2, %3 : f32
              %5 = arith.addf %acc, %4 : f32
              loop.yield %5 : f32
            }
            loop.store %1, %out[%n, %o, %h, %w] : memref<2x6x4x64xf32>
          }
        }
      }
    }
  }
  func.func @main(%x: memref<2x4x6x66xf32>, %wt: memref<6x4x3x3xf32>) -> memref<2x6x4x64xf32> {
    %wide = memref.alloc() : memref<2x6x4x64xf32>
    loop.launch @wide(%x, %wt, %wide) : memref<2x4x6x66xf32>, memref<6x4x3x3xf32>, memref<2x6x4x64xf32>
    func.return %wide : memref<2x6x4x64xf32>
  }
}

// -----

// The same conv with 256 output channels and 4 images: w (8) is narrower than a block tile
// (64) and 256 x 4 x 32 x 8 outputs are many, so n and h, which no load reads with o, fold into
// it, one j of 4 x 32 x 8 = 1024 (the implicit GEMM's N), each its digit of j in every access
// (n = j floordiv 256, h = (j floordiv 8) mod 32, w = j mod 8).
// CHECK-LABEL: loop.kernel @fold(
// CHECK-NEXT:    %{{.*}} = arith.constant
// CHECK-NEXT:    loop.for %o = 0 to 256 free {
// CHECK-NEXT:      loop.for %n_h_w = 0 to 1024 free {
// CHECK-NEXT:        loop.for %k = 0 to 36 reduce
// CHECK-NEXT:          loop.load %x[%n_h_w, %o, %k] map (d0, d1, d2) -> ((d0 floordiv 256), (d2 floordiv 9), (((d0 floordiv 8) mod 32) + ((d2 floordiv 3) mod 3)), ((d0 mod 8) + (d2 mod 3)))
// CHECK-NEXT:          loop.load %wt[%n_h_w, %o, %k] map (d0, d1, d2) -> (d1, (d2 floordiv 9), ((d2 floordiv 3) mod 3), (d2 mod 3))
// CHECK:         loop.store %{{.*}}, %out[%n_h_w, %o] map (d0, d1) -> ((d0 floordiv 256), d1, ((d0 floordiv 8) mod 32), (d0 mod 8))

builtin.module {
  loop.kernel @fold(%x: memref<4x4x34x10xf32>, %wt: memref<256x4x3x3xf32>, %out: memref<4x256x32x8xf32>) {
    %0 = arith.constant 0.000000e+00 : f32
    loop.for %n = 0 to 4 free {
      loop.for %o = 0 to 256 free {
        loop.for %h = 0 to 32 free {
          loop.for %w = 0 to 8 free {
            %1 = loop.for %k = 0 to 36 reduce iter(%acc = %0) -> f32 {
              %2 = loop.load %x[%n, %o, %h, %w, %k] map (d0, d1, d2, d3, d4) -> (d0, (d4 floordiv 9), (d2 + ((d4 floordiv 3) mod 3)), (d3 + (d4 mod 3))) : memref<4x4x34x10xf32>
              %3 = loop.load %wt[%n, %o, %h, %w, %k] map (d0, d1, d2, d3, d4) -> (d1, (d4 floordiv 9), ((d4 floordiv 3) mod 3), (d4 mod 3)) : memref<256x4x3x3xf32>
              %4 = arith.mulf %2, %3 : f32
              %5 = arith.addf %acc, %4 : f32
              loop.yield %5 : f32
            }
            loop.store %1, %out[%n, %o, %h, %w] : memref<4x256x32x8xf32>
          }
        }
      }
    }
  }
  func.func @main(%x: memref<4x4x34x10xf32>, %wt: memref<256x4x3x3xf32>) -> memref<4x256x32x8xf32> {
    %fold = memref.alloc() : memref<4x256x32x8xf32>
    loop.launch @fold(%x, %wt, %fold) : memref<4x4x34x10xf32>, memref<256x4x3x3xf32>, memref<4x256x32x8xf32>
    func.return %fold : memref<4x256x32x8xf32>
  }
}

// -----

// A grouped conv (2 groups of 4 output channels, 2 input channels each): the input is read at
// channel (o floordiv 4) * 2 + k floordiv 9, along o and w both, so no order makes a product.
// o splits into (group, channel in group): `o floordiv 4` reads the group, o elsewhere is
// group * 4 + channel; then (channel, w) is the pair, the group a batch outside (too few
// outputs to fold n and h into w).
// CHECK-LABEL: loop.kernel @grouped(
// CHECK-NEXT:    %{{.*}} = arith.constant
// CHECK-NEXT:    loop.for %n = 0 to 2 free {
// CHECK-NEXT:      loop.for %o_group = 0 to 2 free {
// CHECK-NEXT:        loop.for %h = 0 to 4 free {
// CHECK-NEXT:          loop.for %o_in = 0 to 4 free {
// CHECK-NEXT:            loop.for %w = 0 to 4 free {
// CHECK-NEXT:              loop.for %k = 0 to 18 reduce
// CHECK-NEXT:                loop.load %x[%n, %o_group, %h, %w, %k, %o_in] map (d0, d1, d2, d3, d4, d5) -> (d0, ((d1 * 2) + (d4 floordiv 9)), (d2 + ((d4 floordiv 3) mod 3)), (d3 + (d4 mod 3)))
// CHECK-NEXT:                loop.load %wt[%n, %o_group, %h, %w, %k, %o_in] map (d0, d1, d2, d3, d4, d5) -> (((d1 * 4) + d5), (d4 floordiv 9), ((d4 floordiv 3) mod 3), (d4 mod 3))

builtin.module {
  loop.kernel @grouped(%x: memref<2x4x6x6xf32>, %wt: memref<8x2x3x3xf32>, %out: memref<2x8x4x4xf32>) {
    %0 = arith.constant 0.000000e+00 : f32
    loop.for %n = 0 to 2 free {
      loop.for %o = 0 to 8 free {
        loop.for %h = 0 to 4 free {
          loop.for %w = 0 to 4 free {
            %1 = loop.for %k = 0 to 18 reduce iter(%acc = %0) -> f32 {
              %2 = loop.load %x[%n, %o, %h, %w, %k] map (d0, d1, d2, d3, d4) -> (d0, (((d1 floordiv 4) * 2) + (d4 floordiv 9)), (d2 + ((d4 floordiv 3) mod 3)), (d3 + (d4 mod 3))) : memref<2x4x6x6xf32>
              %3 = loop.load %wt[%n, %o, %h, %w, %k] map (d0, d1, d2, d3, d4) -> (d1, (d4 floordiv 9), ((d4 floordiv 3) mod 3), (d4 mod 3)) : memref<8x2x3x3xf32>
              %4 = arith.mulf %2, %3 : f32
              %5 = arith.addf %acc, %4 : f32
              loop.yield %5 : f32
            }
            loop.store %1, %out[%n, %o, %h, %w] : memref<2x8x4x4xf32>
          }
        }
      }
    }
  }
  func.func @main(%x: memref<2x4x6x6xf32>, %wt: memref<8x2x3x3xf32>) -> memref<2x8x4x4xf32> {
    %grouped = memref.alloc() : memref<2x8x4x4xf32>
    loop.launch @grouped(%x, %wt, %grouped) : memref<2x4x6x6xf32>, memref<8x2x3x3xf32>, memref<2x8x4x4xf32>
    func.return %grouped : memref<2x8x4x4xf32>
  }
}

// -----

// A flash row written through a transpose (attention's output as [batch, query, head, d]): the
// nest came in (b, q, h) order. The keys' loads read b and h, not q: q moves innermost, where
// the attention planner takes the query rows it blocks.
// CHECK-LABEL: loop.kernel @flash(
// CHECK:         loop.for %b = 0 to 2 free {
// CHECK-NEXT:      loop.for %h = 0 to 3 free {
// CHECK-NEXT:        loop.for %q = 0 to 5 free {
// CHECK-NEXT:          %{{.*}} = loop.private : memref<4xf32>
// CHECK:                 loop.load %x0[%b, %h, %q, %r, %d] map (d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)
// CHECK:                 loop.load %x1[%b, %h, %q, %r, %d] map (d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)
// CHECK:           loop.store %{{.*}}, %out[%b, %q, %h, %k] : memref<2x5x3x4xf32>

builtin.module {
  loop.kernel @flash(%x0: memref<2x3x5x4xf32>, %x1: memref<2x3x5x4xf32>, %x2: memref<2x3x5x4xf32>, %out: memref<2x5x3x4xf32>) {
    %c0 = arith.constant 0.0 : f32
    %c1 = arith.constant 1.0 : f32
    %lo = arith.constant -3.40282347e+38 : f32
    loop.for %b = 0 to 2 free {
      loop.for %q = 0 to 5 free {
        loop.for %h = 0 to 3 free {
          %acc = loop.private : memref<4xf32>
          loop.for %z = 0 to 4 free {
            loop.store %c0, %acc[%z] : memref<4xf32>
          }
          %m, %l = loop.for %r = 0 to 5 reduce iter(%mi = %lo, %li = %c0) -> (f32, f32) {
            %s = loop.for %d = 0 to 4 reduce iter(%a = %c0) -> f32 {
              %qv = loop.load %x0[%b, %h, %q, %r, %d] map (d0, d1, d2, d3, d4) -> (d0, d1, d2, d4) : memref<2x3x5x4xf32>
              %kv = loop.load %x1[%b, %h, %q, %r, %d] map (d0, d1, d2, d3, d4) -> (d0, d1, d3, d4) : memref<2x3x5x4xf32>
              %p = arith.mulf %qv, %kv : f32
              %a2 = arith.addf %a, %p : f32
              loop.yield %a2 : f32
            }
            %mn = arith.maximumf %mi, %s : f32
            %t = arith.subf %s, %mn : f32
            %e = math.exp %t : f32
            %t2 = arith.subf %mi, %mn : f32
            %al = math.exp %t2 : f32
            %l2 = arith.mulf %li, %al : f32
            %l3 = arith.addf %l2, %e : f32
            loop.for %j = 0 to 4 free {
              %vv = loop.load %x2[%b, %h, %q, %j, %r] map (d0, d1, d2, d3, d4) -> (d0, d1, d4, d3) : memref<2x3x5x4xf32>
              %o = loop.load %acc[%j] : memref<4xf32>
              %w = arith.mulf %e, %vv : f32
              %o2 = arith.mulf %o, %al : f32
              %o3 = arith.addf %o2, %w : f32
              loop.store %o3, %acc[%j] : memref<4xf32>
            }
            loop.yield %mn, %l3 : f32, f32
          }
          %n = arith.maximumf %l, %c1 : f32
          loop.for %k = 0 to 4 free {
            %o = loop.load %acc[%k] : memref<4xf32>
            %y = arith.divf %o, %n : f32
            loop.store %y, %out[%b, %q, %h, %k] : memref<2x5x3x4xf32>
          }
        }
      }
    }
  }
}

// -----

// An f16 product (tensor cores): only the loops read after K's dim in the input fold into w
// (h: loop-collapse-dims then merges (h, w), and the input is a plain [K, h * w] slab per
// image); the image n stays a batch outside, whatever the output count.
// CHECK-LABEL: loop.kernel @conv16(
// CHECK-NEXT:    %{{.*}} = arith.constant
// CHECK-NEXT:    loop.for %n = 0 to 8 free {
// CHECK-NEXT:      loop.for %o = 0 to 64 free {
// CHECK-NEXT:        loop.for %h_w = 0 to 16 free {
// CHECK:               loop.load %x[%n, %o, %h_w, %k] map (d0, d1, d2, d3) -> (d0, d3, (d2 floordiv 4), (d2 mod 4)) : memref<8x32x4x4xf16>
builtin.module {
  loop.kernel @conv16(%x: memref<8x32x4x4xf16>, %wt: memref<64x32xf16>, %out: memref<8x64x4x4xf16>) {
    %0 = arith.constant 0.000000e+00 : f32
    loop.for %n = 0 to 8 free {
      loop.for %o = 0 to 64 free {
        loop.for %h = 0 to 4 free {
          loop.for %w = 0 to 4 free {
            %1 = loop.for %k = 0 to 32 reduce iter(%acc = %0) -> f32 {
              %2 = loop.load %x[%n, %o, %h, %w, %k] map (d0, d1, d2, d3, d4) -> (d0, d4, d2, d3) : memref<8x32x4x4xf16>
              %3 = loop.load %wt[%n, %o, %h, %w, %k] map (d0, d1, d2, d3, d4) -> (d1, d4) : memref<64x32xf16>
              %e2 = arith.extf %2 : f16 to f32
              %e3 = arith.extf %3 : f16 to f32
              %4 = arith.mulf %e2, %e3 : f32
              %5 = arith.addf %acc, %4 : f32
              loop.yield %5 : f32
            }
            %t = arith.truncf %1 : f32 to f16
            loop.store %t, %out[%n, %o, %h, %w] : memref<8x64x4x4xf16>
          }
        }
      }
    }
  }
}
