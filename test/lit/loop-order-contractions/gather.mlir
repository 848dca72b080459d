// RUN: deplo-opt %s --split-input-file -p loop-order-contractions | filecheck %s
// RUN: deplo-opt %s --split-input-file -p loop-order-contractions | deplo-opt --split-input-file | filecheck %s

// An implicit GEMM: an f16 conv's im2col inlined into its K loop (loop-fuse,
// `fusion_rules.im2col`), B the window of the input with its padding selected away. B along j
// is a gather, no plain slab (tile-tensor-core stages it by index math), so every loop not
// read with i (the image, the output row) folds into j: N = images x rows x columns, whole
// tiles of it. The row and the column also feed the padding's masks as values: their digits
// of the folded index are computed at the top of its loop.
// CHECK-LABEL: loop.kernel @conv(
// CHECK:         loop.for %a1 = 0 to 8 free {
// CHECK-NEXT:      loop.for %a0_a2_a3 = 0 to 256 free {
// CHECK-NEXT:        %[[C16:.*]] = arith.constant 16 : index
// CHECK-NEXT:        %[[Q:.*]] = arith.floordivsi %a0_a2_a3, %[[C16]] : index
// CHECK-NEXT:        %[[C16b:.*]] = arith.constant 16 : index
// CHECK-NEXT:        %[[H:.*]] = arith.remsi %[[Q]], %[[C16b]] : index
// CHECK-NEXT:        %[[C16c:.*]] = arith.constant 16 : index
// CHECK-NEXT:        %[[W:.*]] = arith.remsi %a0_a2_a3, %[[C16c]] : index
// CHECK-NEXT:        loop.for %r0 = 0 to 36 reduce
// CHECK:               arith.index_cast %[[H]] : index to i64
// CHECK:               arith.index_cast %[[W]] : index to i64
// CHECK:               loop.load %x0[%a0_a2_a3, %r0] map (d0, d1) -> ((d0 floordiv 256), (d1 floordiv 9), (((((d1 floordiv 3) mod 3) + ((d0 floordiv 16) mod 16)) + 15) mod 16), ((((d1 mod 3) + (d0 mod 16)) + 15) mod 16))
// CHECK:             loop.store %{{.*}}, %out[%a0_a2_a3, %a1] map (d0, d1) -> ((d0 floordiv 256), d1, ((d0 floordiv 16) mod 16), (d0 mod 16))

builtin.module {
  loop.kernel @conv(%x0: memref<1x4x16x16xf16>, %x1: memref<8x4x3x3xf16>, %out: memref<1x8x16x16xf16>) {
    %0 = arith.constant 0.000000e+00 : f16
    %1 = arith.constant 16 : i64
    %2 = arith.constant 0 : i64
    %3 = arith.constant -1 : i64
    %4 = arith.constant 0.000000e+00 : f32
    loop.for %a0 = 0 to 1 free {
      loop.for %a1 = 0 to 8 free {
        loop.for %a2 = 0 to 16 free {
          loop.for %a3 = 0 to 16 free {
            %5 = loop.for %r0 = 0 to 36 reduce iter(%acc = %4) -> f32 {
              %6 = arith.constant 3 : index
              %7 = arith.floordivsi %r0, %6 : index
              %8 = arith.constant 3 : index
              %9 = arith.remsi %7, %8 : index
              %10 = arith.index_cast %9 : index to i64
              %11 = arith.addi %10, %3 : i64
              %12 = arith.index_cast %a2 : index to i64
              %13 = arith.addi %11, %12 : i64
              %14 = arith.cmpi sge, %13, %2 : i64
              %15 = arith.cmpi slt, %13, %1 : i64
              %16 = arith.andi %14, %15 : i1
              %17 = arith.constant 3 : index
              %18 = arith.remsi %r0, %17 : index
              %19 = arith.index_cast %18 : index to i64
              %20 = arith.addi %19, %3 : i64
              %21 = arith.index_cast %a3 : index to i64
              %22 = arith.addi %20, %21 : i64
              %23 = arith.cmpi sge, %22, %2 : i64
              %24 = arith.cmpi slt, %22, %1 : i64
              %25 = arith.andi %23, %24 : i1
              %26 = arith.andi %16, %25 : i1
              %27 = loop.load %x0[%a0, %r0, %a2, %a3] map (d0, d1, d2, d3) -> (d0, (d1 floordiv 9), (((((d1 floordiv 3) mod 3) + d2) + 15) mod 16), ((((d1 mod 3) + d3) + 15) mod 16)) : memref<1x4x16x16xf16>
              %28 = arith.select %26, %27, %0 : f16
              %29 = arith.extf %28 : f16 to f32
              %30 = loop.load %x1[%a1, %r0] map (d0, d1) -> (d0, (d1 floordiv 9), ((d1 floordiv 3) mod 3), (d1 mod 3)) : memref<8x4x3x3xf16>
              %31 = arith.extf %30 : f16 to f32
              %32 = arith.mulf %29, %31 : f32
              %33 = arith.addf %acc, %32 : f32
              loop.yield %33 : f32
            }
            %34 = arith.truncf %5 : f32 to f16
            loop.store %34, %out[%a0, %a1, %a2, %a3] : memref<1x8x16x16xf16>
          }
        }
      }
    }
  }
  func.func @main(%x0: memref<1x4x16x16xf16>, %x1: memref<8x4x3x3xf16>) -> memref<1x8x16x16xf16> {
    %conv = memref.alloc() : memref<1x8x16x16xf16>
    loop.launch @conv(%x0, %x1, %conv) : memref<1x4x16x16xf16>, memref<8x4x3x3xf16>, memref<1x8x16x16xf16>
    func.return %conv : memref<1x8x16x16xf16>
  }
}


// -----

// A row of 20 columns (more than FOLD_GATHERED): the weight's loop moves next to the columns,
// the image and the row stay batch loops (block.z), nothing folds.
// CHECK-LABEL: loop.kernel @conv(
// CHECK:         loop.for %a0 = 0 to 1 free {
// CHECK-NEXT:      loop.for %a2 = 0 to 20 free {
// CHECK-NEXT:        loop.for %a1 = 0 to 8 free {
// CHECK-NEXT:          loop.for %a3 = 0 to 20 free {
// CHECK-NEXT:            loop.for %r0 = 0 to 36 reduce
// CHECK:                 loop.store %{{.*}}, %out[%a0, %a1, %a2, %a3] : memref<1x8x20x20xf16>
builtin.module {
  loop.kernel @conv(%x0: memref<1x4x20x20xf16>, %x1: memref<8x4x3x3xf16>, %out: memref<1x8x20x20xf16>) {
    %0 = arith.constant 0.000000e+00 : f16
    %1 = arith.constant 20 : i64
    %2 = arith.constant 0 : i64
    %3 = arith.constant -1 : i64
    %4 = arith.constant 0.000000e+00 : f32
    loop.for %a0 = 0 to 1 free {
      loop.for %a1 = 0 to 8 free {
        loop.for %a2 = 0 to 20 free {
          loop.for %a3 = 0 to 20 free {
            %5 = loop.for %r0 = 0 to 36 reduce iter(%acc = %4) -> f32 {
              %6 = arith.constant 3 : index
              %7 = arith.floordivsi %r0, %6 : index
              %8 = arith.constant 3 : index
              %9 = arith.remsi %7, %8 : index
              %10 = arith.index_cast %9 : index to i64
              %11 = arith.addi %10, %3 : i64
              %12 = arith.index_cast %a2 : index to i64
              %13 = arith.addi %11, %12 : i64
              %14 = arith.cmpi sge, %13, %2 : i64
              %15 = arith.cmpi slt, %13, %1 : i64
              %16 = arith.andi %14, %15 : i1
              %17 = arith.constant 3 : index
              %18 = arith.remsi %r0, %17 : index
              %19 = arith.index_cast %18 : index to i64
              %20 = arith.addi %19, %3 : i64
              %21 = arith.index_cast %a3 : index to i64
              %22 = arith.addi %20, %21 : i64
              %23 = arith.cmpi sge, %22, %2 : i64
              %24 = arith.cmpi slt, %22, %1 : i64
              %25 = arith.andi %23, %24 : i1
              %26 = arith.andi %16, %25 : i1
              %27 = loop.load %x0[%a0, %r0, %a2, %a3] map (d0, d1, d2, d3) -> (d0, (d1 floordiv 9), (((((d1 floordiv 3) mod 3) + d2) + 19) mod 20), ((((d1 mod 3) + d3) + 19) mod 20)) : memref<1x4x20x20xf16>
              %28 = arith.select %26, %27, %0 : f16
              %29 = arith.extf %28 : f16 to f32
              %30 = loop.load %x1[%a1, %r0] map (d0, d1) -> (d0, (d1 floordiv 9), ((d1 floordiv 3) mod 3), (d1 mod 3)) : memref<8x4x3x3xf16>
              %31 = arith.extf %30 : f16 to f32
              %32 = arith.mulf %29, %31 : f32
              %33 = arith.addf %acc, %32 : f32
              loop.yield %33 : f32
            }
            %34 = arith.truncf %5 : f32 to f16
            loop.store %34, %out[%a0, %a1, %a2, %a3] : memref<1x8x20x20xf16>
          }
        }
      }
    }
  }
  func.func @main(%x0: memref<1x4x20x20xf16>, %x1: memref<8x4x3x3xf16>) -> memref<1x8x20x20xf16> {
    %conv = memref.alloc() : memref<1x8x20x20xf16>
    loop.launch @conv(%x0, %x1, %conv) : memref<1x4x20x20xf16>, memref<8x4x3x3xf16>, memref<1x8x20x20xf16>
    func.return %conv : memref<1x8x20x20xf16>
  }
}


// -----

// A grouped f16 conv (its input padded by a kernel of its own, read through the window; the
// weight at `g * 8 + o`): no implicit GEMM (tile-tensor-core takes no such product), so its
// rows of 16 columns do not fold: the group splits off as a batch, the rest keep their order.
// CHECK-LABEL: loop.kernel @conv_12(
// CHECK:         loop.for %a0 = 0 to 1 free {
// CHECK-NEXT:      loop.for %a1_group = 0 to 2 free {
// CHECK-NEXT:        loop.for %a2 = 0 to 16 free {
// CHECK-NEXT:          loop.for %a1_in = 0 to 8 free {
// CHECK-NEXT:            loop.for %a3 = 0 to 16 free {
// CHECK-NEXT:              loop.for %r0 = 0 to 36 reduce
builtin.module {
  loop.kernel @conv_6(%x0: memref<1x8x16x16xf16>, %out: memref<1x8x18x18xf16>) {
    %0 = arith.constant 0.000000e+00 : f16
    %1 = arith.constant 17 : index
    %2 = arith.constant 1 : index
    loop.for %a0 = 0 to 1 free {
      loop.for %a1 = 0 to 8 free {
        loop.for %a2 = 0 to 18 free {
          loop.for %a3 = 0 to 1 free {
            loop.store %0, %out[%a0, %a1, %a2, %a3] : memref<1x8x18x18xf16>
          }
        }
      }
    }
    loop.for %a0_1 = 0 to 1 free {
      loop.for %a1_1 = 0 to 8 free {
        loop.for %a2_1 = 0 to 18 free {
          loop.for %a3_1 = 0 to 16 free {
            %3 = loop.load %x0[%a0_1, %a1_1, %a2_1, %a3_1] map (d0, d1, d2, d3) -> (d0, d1, ((d2 + 15) mod 16), d3) : memref<1x8x16x16xf16>
            %4 = arith.cmpi ult, %a2_1, %1 : index
            %5 = arith.select %4, %3, %0 : f16
            %6 = arith.cmpi ult, %a2_1, %2 : index
            %7 = arith.select %6, %0, %5 : f16
            loop.store %7, %out[%a0_1, %a1_1, %a2_1, %a3_1] map (d0, d1, d2, d3) -> (d0, d1, d2, (d3 + 1)) : memref<1x8x18x18xf16>
          }
        }
      }
    }
    loop.for %a0_2 = 0 to 1 free {
      loop.for %a1_2 = 0 to 8 free {
        loop.for %a2_2 = 0 to 18 free {
          loop.for %a3_2 = 0 to 1 free {
            loop.store %0, %out[%a0_2, %a1_2, %a2_2, %a3_2] map (d0, d1, d2, d3) -> (d0, d1, d2, (d3 + 17)) : memref<1x8x18x18xf16>
          }
        }
      }
    }
  }
  loop.kernel @conv_12(%conv: memref<1x8x18x18xf16>, %x1: memref<16x4x3x3xf16>, %out: memref<1x16x16x16xf16>) {
    %0 = arith.constant 0.000000e+00 : f32
    loop.for %a0 = 0 to 1 free {
      loop.for %a1 = 0 to 16 free {
        loop.for %a2 = 0 to 16 free {
          loop.for %a3 = 0 to 16 free {
            %1 = loop.for %r0 = 0 to 36 reduce iter(%acc = %0) -> f32 {
              %2 = loop.load %conv[%a0, %a1, %r0, %a2, %a3] map (d0, d1, d2, d3, d4) -> (d0, (((d1 floordiv 8) * 4) + (d2 floordiv 9)), (d3 + ((d2 floordiv 3) mod 3)), (d4 + (d2 mod 3))) : memref<1x8x18x18xf16>
              %3 = arith.extf %2 : f16 to f32
              %4 = loop.load %x1[%a1, %r0] map (d0, d1) -> (d0, (d1 floordiv 9), ((d1 floordiv 3) mod 3), (d1 mod 3)) : memref<16x4x3x3xf16>
              %5 = arith.extf %4 : f16 to f32
              %6 = arith.mulf %3, %5 : f32
              %7 = arith.addf %acc, %6 : f32
              loop.yield %7 : f32
            }
            %8 = arith.truncf %1 : f32 to f16
            loop.store %8, %out[%a0, %a1, %a2, %a3] : memref<1x16x16x16xf16>
          }
        }
      }
    }
  }
  func.func @main(%x0: memref<1x8x16x16xf16>, %x1: memref<16x4x3x3xf16>) -> memref<1x16x16x16xf16> {
    %conv = memref.alloc() : memref<1x8x18x18xf16>
    loop.launch @conv_6(%x0, %conv) : memref<1x8x16x16xf16>, memref<1x8x18x18xf16>
    %conv_1 = memref.alloc() : memref<1x16x16x16xf16>
    loop.launch @conv_12(%conv, %x1, %conv_1) : memref<1x8x18x18xf16>, memref<16x4x3x3xf16>, memref<1x16x16x16xf16>
    func.return %conv_1 : memref<1x16x16x16xf16>
  }
}

