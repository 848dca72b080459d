// RUN: deplo-opt %s --split-input-file -p loop-merge-reductions | filecheck %s

// Two copies of one row statistic (fusion hoists one per load that reads it): computed once.
// CHECK-LABEL: loop.kernel @same(%x: memref<4x8xf32>, %out: memref<4xf32>) {
// CHECK:         %[[S:.*]] = loop.for %{{.*}} = 0 to 8 reduce
// CHECK-NOT:     loop.for
// CHECK:         arith.mulf %[[S]], %[[S]] : f32
loop.kernel @same(%x: memref<4x8xf32>, %out: memref<4xf32>) {
  %z = arith.constant 0.0 : f32
  %z2 = arith.constant 0.0 : f32
  loop.for %i = 0 to 4 free {
    %s1 = loop.for %r = 0 to 8 reduce iter(%a = %z) -> f32 {
      %v = loop.load %x[%i, %r] : memref<4x8xf32>
      %n = arith.addf %a, %v : f32
      loop.yield %n : f32
    }
    %s2 = loop.for %q = 0 to 8 reduce iter(%b = %z2) -> f32 {
      %w = loop.load %x[%i, %q] : memref<4x8xf32>
      %m = arith.addf %b, %w : f32
      loop.yield %m : f32
    }
    %p = arith.mulf %s1, %s2 : f32
    loop.store %p, %out[%i] : memref<4xf32>
  }
}

// -----

// Two independent K loops over one range (gate and up): one loop, two accumulators.
// CHECK-LABEL: loop.kernel @gate_up(
// CHECK:         %[[G:.*]], %[[U:.*]] = loop.for %[[K:.*]] = 0 to 8 reduce iter(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (f32, f32) {
// CHECK:           loop.load %wg[%{{.*}}, %[[K]]]
// CHECK:           loop.load %wu[%{{.*}}, %[[K]]]
// CHECK:           loop.yield %{{.*}}, %{{.*}} : f32, f32
// CHECK:         arith.mulf %[[G]], %[[U]] : f32
loop.kernel @gate_up(%x: memref<8xf32>, %wg: memref<6x8xf32>, %wu: memref<6x8xf32>, %out: memref<6xf32>) {
  %z = arith.constant 0.0 : f32
  loop.for %j = 0 to 6 free {
    %g = loop.for %k = 0 to 8 reduce iter(%a = %z) -> f32 {
      %xv = loop.load %x[%k] : memref<8xf32>
      %wv = loop.load %wg[%j, %k] : memref<6x8xf32>
      %p = arith.mulf %xv, %wv : f32
      %n = arith.addf %a, %p : f32
      loop.yield %n : f32
    }
    %u = loop.for %k2 = 0 to 8 reduce iter(%b = %z) -> f32 {
      %xv2 = loop.load %x[%k2] : memref<8xf32>
      %uv = loop.load %wu[%j, %k2] : memref<6x8xf32>
      %p2 = arith.mulf %xv2, %uv : f32
      %n2 = arith.addf %b, %p2 : f32
      loop.yield %n2 : f32
    }
    %r = arith.mulf %g, %u : f32
    loop.store %r, %out[%j] : memref<6xf32>
  }
}

// -----

// negative_dependent: the sum uses the max (softmax): two loops, left for loop-online-softmax.
// CHECK-LABEL: loop.kernel @negative_dependent(
// CHECK:         %[[M:.*]] = loop.for %{{.*}} = 0 to 8 reduce iter(%{{.*}} = %{{.*}}) -> f32 {
// CHECK:         loop.for %{{.*}} = 0 to 8 reduce iter(%{{.*}} = %{{.*}}) -> f32 {
// CHECK:           arith.subf %{{.*}}, %[[M]] : f32
loop.kernel @negative_dependent(%x: memref<8xf32>, %out: memref<1xf32>) {
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

// negative_different_range: loops over different extents stay apart.
// CHECK-LABEL: loop.kernel @negative_different_range(
// CHECK:         loop.for %{{.*}} = 0 to 8 reduce iter(%{{.*}} = %{{.*}}) -> f32 {
// CHECK:         loop.for %{{.*}} = 0 to 4 reduce iter(%{{.*}} = %{{.*}}) -> f32 {
loop.kernel @negative_different_range(%x: memref<8xf32>, %out: memref<1xf32>) {
  %z = arith.constant 0.0 : f32
  loop.for %i = 0 to 1 free {
    %s1 = loop.for %r = 0 to 8 reduce iter(%a = %z) -> f32 {
      %v = loop.load %x[%r] : memref<8xf32>
      %n = arith.addf %a, %v : f32
      loop.yield %n : f32
    }
    %s2 = loop.for %q = 0 to 4 reduce iter(%b = %z) -> f32 {
      %w = loop.load %x[%q] : memref<8xf32>
      %m = arith.addf %b, %w : f32
      loop.yield %m : f32
    }
    %p = arith.mulf %s1, %s2 : f32
    loop.store %p, %out[%i] : memref<1xf32>
  }
}
