// RUN: deplo-opt %s --split-input-file -p loop-to-tile,tile-map-grid,tile-cooperative-reduce | filecheck %s
// RUN: deplo-opt %s --split-input-file -p "loop-to-tile,tile-map-grid,tile-cooperative-reduce{threads=64}" | filecheck %s --check-prefix=T64
// RUN: deplo-opt %s --split-input-file -p "loop-to-tile,tile-map-grid,tile-cooperative-reduce{vector=1}" | filecheck %s --check-prefix=V1
// RUN: not deplo-opt %s --split-input-file -p "loop-to-tile,tile-map-grid,tile-cooperative-reduce{vector=3}" 2>&1 | filecheck %s --check-prefix=BAD
// BAD: deplo-opt: error: tile-cooperative-reduce{vector=3}: kernel @rms_norm: knob vector: expected 1 or a power of two up to 16 bytes of the row's elements (4 bytes each) dividing its 2048, got 3

// RMSNorm (DESIGN.md §3.1): the row is reduced by 256 threads, each a strided share, then
// combined; the normalize loop is strided over the same threads. The row's accesses walk its
// innermost dim (fact contiguous = 4 bytes), so a thread takes 4 neighbouring elements a step
// (vector = 4, one 16-byte access after kernel-vectorize): its share starts at 4 t and steps
// by 4 x 256; vector=1 strides single elements.
// CHECK-LABEL: tile.kernel @rms_norm({{.*}}) grid(32, 1, 1) block(256, 1, 1) key "{{.*}}" plan row_reduce(rows = [32], extent = 2048, contiguous = 4) {grid_dims = 1, threads = 256, vector = 4, {{.*}}} done ["tile-map-grid", "tile-cooperative-reduce"] {
// CHECK:         tile.for %a1 = 0 to 32 bind(block.x) {
// CHECK-NEXT:      tile.for %[[T:.*]] = 0 to 256 bind(thread.x) {
// CHECK:             %[[S:.*]] = arith.muli %[[T]], %{{.*}} : index
// CHECK-NEXT:        %[[P:.*]] = tile.for %a2 = %[[S]] to 2048 step 1024 bind(serial) iter(%{{.*}} = %zero) -> f32 {
// CHECK:               loop.load %x[%a0, %a1, %a2]
// CHECK:               %[[I3:.*]] = arith.addi %a2, %c3 : index
// CHECK-NEXT:          loop.load %x[%a0, %a1, %[[I3]]]
// CHECK:             %ss = tile.combine add %[[P]] over thread.x : f32
// CHECK-NEXT:        %mean = arith.divf %ss, %n : f32
// CHECK:             tile.for %a3 = %{{.*}} to 2048 step 1024 bind(serial) {
// CHECK:               loop.store %o, %out[%a0, %a1, %a3]
// CHECK:               loop.store %o_3, %out[%a0, %a1, %{{.*}}]
// V1-LABEL:    tile.kernel @rms_norm({{.*}}) grid(32, 1, 1) block(256, 1, 1) {{.*}} {grid_dims = 1, threads = 256, vector = 1, {{.*}}}
// V1:            tile.for %[[T:.*]] = 0 to 256 bind(thread.x) {
// V1-NEXT:         %[[P:.*]] = tile.for %a2 = %[[T]] to 2048 step 256 bind(serial) iter(%acc = %zero) -> f32 {
// V1:              tile.for %a3 = %[[T]] to 2048 step 256 bind(serial) {
// T64-LABEL:   tile.kernel @rms_norm({{.*}}) grid(32, 1, 1) block(64, 1, 1)
// T64:             %{{.*}} = tile.for %a2 = %{{.*}} to 2048 step 256 bind(serial)
// T64:             tile.for %a3 = %{{.*}} to 2048 step 256 bind(serial)

builtin.module {
  loop.kernel @rms_norm(%x: memref<1x32x2048xf32>, %w: memref<2048xf32>, %out: memref<1x32x2048xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    %n = arith.constant 2.048000e+03 : f32
    %eps = arith.constant 9.99999997e-07 : f32
    loop.for %a0 = 0 to 1 free {
      loop.for %a1 = 0 to 32 free {
        %ss = loop.for %a2 = 0 to 2048 reduce iter(%acc = %zero) -> f32 {
          %v = loop.load %x[%a0, %a1, %a2] : memref<1x32x2048xf32>
          %sq = arith.mulf %v, %v : f32
          %s = arith.addf %acc, %sq : f32
          loop.yield %s : f32
        }
        %mean = arith.divf %ss, %n : f32
        %me = arith.addf %mean, %eps : f32
        %r = math.rsqrt %me : f32
        loop.for %a3 = 0 to 2048 free {
          %v2 = loop.load %x[%a0, %a1, %a3] : memref<1x32x2048xf32>
          %wv = loop.load %w[%a3] : memref<2048xf32>
          %y = arith.mulf %v2, %r : f32
          %o = arith.mulf %y, %wv : f32
          loop.store %o, %out[%a0, %a1, %a3] : memref<1x32x2048xf32>
        }
      }
    }
  }
  func.func @main(%x: memref<1x32x2048xf32>, %w: memref<2048xf32>) -> memref<1x32x2048xf32> {
    %out = memref.alloc() : memref<1x32x2048xf32>
    loop.launch @rms_norm(%x, %w, %out) : memref<1x32x2048xf32>, memref<2048xf32>, memref<1x32x2048xf32>
    func.return %out : memref<1x32x2048xf32>
  }
}

// -----

// A non-identity init is folded in after the combine; T is the extent over V rounded up to a
// warp. V is the most neighbours a step that still fill a warp's lanes: 100 in steps of 2 (25
// steps of 4 would leave 7 lanes idle), 64 threads; single elements: 128.
// CHECK-LABEL: tile.kernel @row_sum_plus_one({{.*}}) grid(4, 1, 1) block(64, 1, 1) {{.*}} vector = 2,
// CHECK:         tile.for %[[T:.*]] = 0 to 64 bind(thread.x) {
// CHECK-NEXT:      %[[ID:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:           %[[P:.*]] = tile.for %a1 = %{{.*}} to 100 step 128 bind(serial) iter(%{{.*}} = %[[ID]]) -> f32 {
// CHECK:           %[[C:.*]] = tile.combine add %[[P]] over thread.x : f32
// CHECK-NEXT:      %s = arith.addf %one, %[[C]] : f32
// V1-LABEL:    tile.kernel @row_sum_plus_one({{.*}}) grid(4, 1, 1) block(128, 1, 1)
// V1:            tile.for %[[T:.*]] = 0 to 128 bind(thread.x) {
// V1-NEXT:         %[[ID:.*]] = arith.constant 0.000000e+00 : f32
// V1-NEXT:         %[[P:.*]] = tile.for %a1 = %[[T]] to 100 step 128 bind(serial) iter(%acc = %[[ID]]) -> f32 {
// T64-LABEL:   tile.kernel @row_sum_plus_one({{.*}}) grid(4, 1, 1) block(64, 1, 1)

// Too short a reduction for a block of threads (under 64): planned pointwise, a thread a row
// (one block of a warp for the 4 rows), so tile-cooperative-reduce has no step in its plan.
// CHECK-LABEL: tile.kernel @negative_short_reduce({{.*}}) grid(1, 1, 1) block(1, 1, 1) key "{{.*}}" plan pointwise(chain = [4], leaf = true) {{.*}}chunk = 32{{.*}}threads = 32{{.*}} done ["tile-map-grid"] {
// CHECK-NOT:     tile.combine

builtin.module {
  loop.kernel @row_sum_plus_one(%x: memref<4x100xf32>, %out: memref<4xf32>) {
    %one = arith.constant 1.000000e+00 : f32
    loop.for %a0 = 0 to 4 free {
      %s = loop.for %a1 = 0 to 100 reduce iter(%acc = %one) -> f32 {
        %v = loop.load %x[%a0, %a1] : memref<4x100xf32>
        %n = arith.addf %v, %acc : f32
        loop.yield %n : f32
      }
      loop.store %s, %out[%a0] : memref<4xf32>
    }
  }
  loop.kernel @negative_short_reduce(%x: memref<4x48xf32>, %out: memref<4xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    loop.for %a0 = 0 to 4 free {
      %s = loop.for %a1 = 0 to 48 reduce iter(%acc = %zero) -> f32 {
        %v = loop.load %x[%a0, %a1] : memref<4x48xf32>
        %n = arith.addf %acc, %v : f32
        loop.yield %n : f32
      }
      loop.store %s, %out[%a0] : memref<4xf32>
    }
  }
}

// -----

// The reduce loop is inside a free loop of the block: a pointwise plan (threads go to that loop
// instead), no cooperative step.
// CHECK-LABEL: tile.kernel @relu_matmul({{.*}}) grid(16, 1, 1) block(1, 1, 1) key "{{.*}}" plan pointwise(chain = [16, 16], leaf = true) {{.*}} done ["tile-map-grid"] {
// CHECK-NOT:     tile.combine

builtin.module {
  loop.kernel @relu_matmul(%x: memref<16x64xf32>, %b: memref<64xf32>, %w: memref<64x16xf32>, %out: memref<16x16xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    loop.for %a0 = 0 to 16 free {
      loop.for %a1 = 0 to 16 free {
        %acc = loop.for %a2 = 0 to 64 reduce iter(%s = %zero) -> f32 {
          %xv = loop.load %x[%a0, %a2] : memref<16x64xf32>
          %bv = loop.load %b[%a0, %a2] map (d0, d1) -> (d1) : memref<64xf32>
          %xb = arith.addf %xv, %bv : f32
          %wv = loop.load %w[%a2, %a1] : memref<64x16xf32>
          %p = arith.mulf %xb, %wv : f32
          %n = arith.addf %s, %p : f32
          loop.yield %n : f32
        }
        %r = arith.maximumf %acc, %zero : f32
        loop.store %r, %out[%a0, %a1] : memref<16x16xf32>
      }
    }
  }
  func.func @main(%x: memref<16x64xf32>, %b: memref<64xf32>, %w: memref<64x16xf32>) -> memref<16x16xf32> {
    %out = memref.alloc() : memref<16x16xf32>
    loop.launch @relu_matmul(%x, %b, %w, %out) : memref<16x64xf32>, memref<64xf32>, memref<64x16xf32>, memref<16x16xf32>
    func.return %out : memref<16x16xf32>
  }
}


// -----

// argmax: each thread its share's first largest (value, index); then the largest value over the
// block, and the least index of a share that holds it (or holds NaN, the largest).
// CHECK-LABEL: tile.kernel @argmax(
// CHECK:           %[[M:.*]], %[[I:.*]] = tile.for %r0 = %{{.*}} to 1000 step 1024 bind(serial) iter(%{{.*}} = %ninf, %{{.*}} = %zero) -> (f32, i64) {
// V1-LABEL:    tile.kernel @argmax(
// V1:              tile.for %r0 = %{{.*}} to 1000 step 256 bind(serial) iter(%acc = %ninf, %idx = %zero) -> (f32, i64) {
// CHECK:           %[[TOP:.*]] = tile.combine max %[[M]] over thread.x : f32
// CHECK-NEXT:      %[[EQ:.*]] = arith.cmpf oeq, %[[M]], %[[TOP]] : f32
// CHECK-NEXT:      %[[NAN:.*]] = arith.cmpf une, %[[M]], %[[M]] : f32
// CHECK-NEXT:      %[[HOLDS:.*]] = arith.ori %[[EQ]], %[[NAN]] : i1
// CHECK-NEXT:      %[[NEVER:.*]] = arith.constant 9223372036854775807 : i64
// CHECK-NEXT:      %[[MINE:.*]] = arith.select %[[HOLDS]], %[[I]], %[[NEVER]] : i64
// CHECK-NEXT:      %[[FIRST:.*]] = tile.combine min %[[MINE]] over thread.x : i64
// CHECK-NEXT:      loop.store %[[FIRST]], %out[%a0] : memref<8xi64>
builtin.module {
  loop.kernel @argmax(%x: memref<8x1000xf32>, %out: memref<8xi64>) {
    %ninf = arith.constant 0xff800000 : f32
    %zero = arith.constant 0 : i64
    loop.for %a0 = 0 to 8 free {
      %m, %i = loop.for %r0 = 0 to 1000 reduce iter(%acc = %ninf, %idx = %zero) -> (f32, i64) {
        %v = loop.load %x[%a0, %r0] : memref<8x1000xf32>
        %gt = arith.cmpf ogt, %v, %acc : f32
        %vnan = arith.cmpf une, %v, %v : f32
        %anum = arith.cmpf oeq, %acc, %acc : f32
        %newnan = arith.andi %vnan, %anum : i1
        %take = arith.ori %gt, %newnan : i1
        %pos = arith.index_cast %r0 : index to i64
        %m2 = arith.select %take, %v, %acc : f32
        %i2 = arith.select %take, %pos, %idx : i64
        loop.yield %m2, %i2 : f32, i64
      }
      loop.store %i, %out[%a0] : memref<8xi64>
    }
  }
  func.func @main(%x: memref<8x1000xf32>) -> memref<8xi64> {
    %out = memref.alloc() : memref<8xi64>
    loop.launch @argmax(%x, %out) : memref<8x1000xf32>, memref<8xi64>
    func.return %out : memref<8xi64>
  }
}
