// RUN: deplo-opt %s --split-input-file -p loop-flatten-reductions | filecheck %s

// BatchNorm's statistic over (0, 2, 3): three nested reduce loops become one of 8 * 4 * 4
// iterations; the load splits the flat index again, the outer index the major one.
// CHECK-LABEL: loop.kernel @mean(
// CHECK:         loop.for %a0 = 0 to 16 free {
// CHECK-NEXT:      %{{.*}} = loop.for %r2 = 0 to 128 reduce iter(%acc = %zero) -> f32 {
// CHECK-NEXT:        %{{.*}} = loop.load %x[%r2, %a0] map (d0, d1) -> ((d0 floordiv 16), d1, ((d0 floordiv 4) mod 4), (d0 mod 4)) : memref<8x16x4x4xf32>
// CHECK-NEXT:        %{{.*}} = arith.addf %acc, %{{.*}} : f32
// CHECK-NEXT:        loop.yield
// CHECK-NEXT:      }
// CHECK-NOT:     reduce
builtin.module {
  loop.kernel @mean(%x: memref<8x16x4x4xf32>, %out: memref<16xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    loop.for %a0 = 0 to 16 free {
      %s = loop.for %r0 = 0 to 8 reduce iter(%acc = %zero) -> f32 {
        %t = loop.for %r1 = 0 to 4 reduce iter(%acc_1 = %acc) -> f32 {
          %u = loop.for %r2 = 0 to 4 reduce iter(%acc_2 = %acc_1) -> f32 {
            %v = loop.load %x[%r0, %a0, %r1, %r2] : memref<8x16x4x4xf32>
            %n = arith.addf %acc_2, %v : f32
            loop.yield %n : f32
          }
          loop.yield %u : f32
        }
        loop.yield %t : f32
      }
      loop.store %s, %out[%a0] : memref<16xf32>
    }
  }
}

// -----

// Two accumulators carried through the nest (a max and a sum) flatten together.
// CHECK-LABEL: loop.kernel @two(
// CHECK:         %{{.*}}, %{{.*}} = loop.for %r1 = 0 to 24 reduce iter(%m = %ninf, %s = %zero) -> (f32, f32) {
// CHECK-NEXT:      %{{.*}} = loop.load %x[%r1] map (d0) -> ((d0 floordiv 8), (d0 mod 8)) : memref<3x8xf32>
builtin.module {
  loop.kernel @two(%x: memref<3x8xf32>, %out: memref<2xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    %ninf = arith.constant 0xff800000 : f32
    %a, %b = loop.for %r0 = 0 to 3 reduce iter(%m0 = %ninf, %s0 = %zero) -> (f32, f32) {
      %c, %d = loop.for %r1 = 0 to 8 reduce iter(%m = %m0, %s = %s0) -> (f32, f32) {
        %v = loop.load %x[%r0, %r1] : memref<3x8xf32>
        %m2 = arith.maximumf %m, %v : f32
        %s2 = arith.addf %s, %v : f32
        loop.yield %m2, %s2 : f32, f32
      }
      loop.yield %c, %d : f32, f32
    }
    %i0 = arith.constant 0 : index
    %i1 = arith.constant 1 : index
    loop.store %a, %out[%i0] : memref<2xf32>
    loop.store %b, %out[%i1] : memref<2xf32>
  }
}

// -----

// Left alone: the inner index is used as a value (argmax's position), not only as an index;
// the outer loop does more than run the inner one; the inner loop starts from its own init.
// CHECK-LABEL: loop.kernel @kept(
// CHECK-COUNT-2: reduce
// CHECK-LABEL: loop.kernel @busy(
// CHECK-COUNT-2: reduce
// CHECK-LABEL: loop.kernel @fresh(
// CHECK-COUNT-2: reduce
builtin.module {
  loop.kernel @kept(%x: memref<3x8xf32>, %out: memref<1xi64>) {
    %c0 = arith.constant 0 : i64
    %a = loop.for %r0 = 0 to 3 reduce iter(%i0 = %c0) -> i64 {
      %b = loop.for %r1 = 0 to 8 reduce iter(%i = %i0) -> i64 {
        %p = arith.index_cast %r1 : index to i64
        %n = arith.addi %i, %p : i64
        loop.yield %n : i64
      }
      loop.yield %b : i64
    }
    %z = arith.constant 0 : index
    loop.store %a, %out[%z] : memref<1xi64>
  }
  loop.kernel @busy(%x: memref<3x8xf32>, %out: memref<1xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    %a = loop.for %r0 = 0 to 3 reduce iter(%s0 = %zero) -> f32 {
      %b = loop.for %r1 = 0 to 8 reduce iter(%s = %s0) -> f32 {
        %v = loop.load %x[%r0, %r1] : memref<3x8xf32>
        %n = arith.addf %s, %v : f32
        loop.yield %n : f32
      }
      %b2 = arith.mulf %b, %b : f32
      loop.yield %b2 : f32
    }
    %z = arith.constant 0 : index
    loop.store %a, %out[%z] : memref<1xf32>
  }
  loop.kernel @fresh(%x: memref<3x8xf32>, %out: memref<1xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    %a = loop.for %r0 = 0 to 3 reduce iter(%s0 = %zero) -> f32 {
      %b = loop.for %r1 = 0 to 8 reduce iter(%s = %zero) -> f32 {
        %v = loop.load %x[%r0, %r1] : memref<3x8xf32>
        %n = arith.addf %s, %v : f32
        loop.yield %n : f32
      }
      %t = arith.addf %s0, %b : f32
      loop.yield %t : f32
    }
    %z = arith.constant 0 : index
    loop.store %a, %out[%z] : memref<1xf32>
  }
}

// -----

// A row written over two dims after its reduction (instance_norm's [H, W]) is one free loop
// (the block's threads then stride all of it): the load that read `h * 6 + w` reads the flat
// index, the store splits it. The kernel's outer free loop (the grid's) stays.
// CHECK-LABEL: loop.kernel @norm(
// CHECK:         loop.for %n = 0 to 2 free {
// CHECK:           loop.for %w = 0 to 24 free {
// CHECK-NEXT:        %{{.*}} = loop.load %x[%n, %w] : memref<2x24xf32>
// CHECK:             loop.store %{{.*}}, %out[%n, %w] map (d0, d1) -> (d0, (d1 floordiv 6), (d1 mod 6)) : memref<2x4x6xf32>

builtin.module {
  loop.kernel @norm(%x: memref<2x24xf32>, %out: memref<2x4x6xf32>) {
    %zero = arith.constant 0.0 : f32
    loop.for %n = 0 to 2 free {
      %s = loop.for %r = 0 to 24 reduce iter(%a = %zero) -> f32 {
        %v = loop.load %x[%n, %r] : memref<2x24xf32>
        %a2 = arith.addf %a, %v : f32
        loop.yield %a2 : f32
      }
      loop.for %h = 0 to 4 free {
        loop.for %w = 0 to 6 free {
          %v = loop.load %x[%n, %h, %w] map (d0, d1, d2) -> (d0, ((d1 * 6) + d2)) : memref<2x24xf32>
          %y = arith.subf %v, %s : f32
          loop.store %y, %out[%n, %h, %w] : memref<2x4x6xf32>
        }
      }
    }
  }
}
