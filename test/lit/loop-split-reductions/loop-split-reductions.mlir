// RUN: deplo-opt %s --split-input-file -p loop-split-reductions | filecheck %s
// RUN: deplo-opt %s --split-input-file -p loop-split-reductions | deplo-opt --split-input-file | filecheck %s

// x.sum() * 2 over 40000 floats: 16 slices of 2500 (a power of two dividing 40000, at least
// 2048 a slice). @sum_part walks a slice a row from a zero partial and stores it; @sum starts
// from the init, adds the 16 partials and runs the epilogue; the host allocates the partials
// and launches both.
// CHECK-LABEL: loop.kernel @sum_part(%x: memref<40000xf32>, %out: memref<f32>, %part: memref<16xf32>)
// CHECK:         %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    loop.for %s = 0 to 16 free {
// CHECK-NEXT:      %[[P:.*]] = loop.for %r = 0 to 2500 reduce iter(%acc = %[[ZERO]]) -> f32 {
// CHECK-NEXT:        %[[V:.*]] = loop.load %x[%r, %s] map (d0, d1) -> (((d1 * 2500) + d0)) : memref<40000xf32>
// CHECK-NEXT:        %[[A:.*]] = arith.addf %acc, %[[V]] : f32
// CHECK-NEXT:        loop.yield %[[A]] : f32
// CHECK-NEXT:      }
// CHECK-NEXT:      loop.store %[[P]], %part[%s] : memref<16xf32>
// CHECK-NEXT:    }
// CHECK-NOT:     arith.mulf
// CHECK-LABEL: loop.kernel @sum(%x: memref<40000xf32>, %out: memref<f32>, %part: memref<16xf32>)
// CHECK:         %[[T:.*]] = loop.for %s = 0 to 16 reduce iter(%acc = %{{.*}}) -> f32 {
// CHECK-NEXT:      %[[Q:.*]] = loop.load %part[%s] : memref<16xf32>
// CHECK-NEXT:      %[[B:.*]] = arith.addf %acc, %[[Q]] : f32
// CHECK-NEXT:      loop.yield %[[B]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[M:.*]] = arith.mulf %[[T]], %{{.*}} : f32
// CHECK-NEXT:    loop.store %[[M]], %out[] : memref<f32>
// CHECK-LABEL: func.func @main
// CHECK:         %sum_part = memref.alloc() : memref<16xf32>
// CHECK-NEXT:    loop.launch @sum_part(%x, %sum, %sum_part)
// CHECK-NEXT:    loop.launch @sum(%x, %sum, %sum_part)

builtin.module {
  loop.kernel @sum(%x: memref<40000xf32>, %out: memref<f32>) {
    %0 = arith.constant 1.000000e+00 : f32
    %1 = arith.constant 2.000000e+00 : f32
    %2 = loop.for %r = 0 to 40000 reduce iter(%acc = %0) -> f32 {
      %3 = loop.load %x[%r] : memref<40000xf32>
      %4 = arith.addf %acc, %3 : f32
      loop.yield %4 : f32
    }
    %5 = arith.mulf %2, %1 : f32
    loop.store %5, %out[] : memref<f32>
  }
  func.func @main(%x: memref<40000xf32>) -> memref<f32> {
    %sum = memref.alloc() : memref<f32>
    loop.launch @sum(%x, %sum) : memref<40000xf32>, memref<f32>
    func.return %sum : memref<f32>
  }
}

// -----

// amax over the rows of [3, 65536]: 3 x 32 rows of partials (2048 each); max starts every
// slice from the init (it absorbs it).
// CHECK-LABEL: loop.kernel @amax_part(%x: memref<3x65536xf32>, %out: memref<3xf32>, %part: memref<3x32xf32>)
// CHECK:         %[[LOW:.*]] = arith.constant 0xff800000 : f32
// CHECK-NEXT:    loop.for %i = 0 to 3 free {
// CHECK-NEXT:      loop.for %s = 0 to 32 free {
// CHECK-NEXT:        loop.for %r = 0 to 2048 reduce iter(%acc = %[[LOW]]) -> f32 {
// CHECK-NEXT:          loop.load %x[%i, %r, %s] map (d0, d1, d2) -> (d0, ((d2 * 2048) + d1))
// CHECK-NEXT:          arith.maximumf %acc
// CHECK:           loop.store %{{.*}}, %part[%i, %s] : memref<3x32xf32>
// CHECK-LABEL: loop.kernel @amax(
// CHECK:           loop.for %s = 0 to 32 reduce iter(%acc = %[[LOW2:.*]]) -> f32 {
// CHECK-NEXT:        loop.load %part[%i, %s] : memref<3x32xf32>
// CHECK-NEXT:        arith.maximumf %acc

builtin.module {
  loop.kernel @amax(%x: memref<3x65536xf32>, %out: memref<3xf32>) {
    %0 = arith.constant 0xff800000 : f32
    loop.for %i = 0 to 3 free {
      %1 = loop.for %r = 0 to 65536 reduce iter(%acc = %0) -> f32 {
        %2 = loop.load %x[%i, %r] : memref<3x65536xf32>
        %3 = arith.maximumf %acc, %2 : f32
        loop.yield %3 : f32
      }
      loop.store %1, %out[%i] : memref<3xf32>
    }
  }
  func.func @main(%x: memref<3x65536xf32>) -> memref<3xf32> {
    %amax = memref.alloc() : memref<3xf32>
    loop.launch @amax(%x, %amax) : memref<3x65536xf32>, memref<3xf32>
    func.return %amax : memref<3xf32>
  }
}

// -----

// Left alone: 128 outputs fill the SMs already; 30011 (prime) has no slices; softmax's max
// then sum are two reduce loops.
// CHECK-LABEL: loop.kernel @many
// CHECK-NOT:   _part
// CHECK:       loop.for %r = 0 to 8192 reduce

builtin.module {
  loop.kernel @many(%x: memref<128x8192xf32>, %out: memref<128xf32>) {
    %0 = arith.constant 0.000000e+00 : f32
    loop.for %i = 0 to 128 free {
      %1 = loop.for %r = 0 to 8192 reduce iter(%acc = %0) -> f32 {
        %2 = loop.load %x[%i, %r] : memref<128x8192xf32>
        %3 = arith.addf %acc, %2 : f32
        loop.yield %3 : f32
      }
      loop.store %1, %out[%i] : memref<128xf32>
    }
  }
  loop.kernel @prime(%x: memref<30011xf32>, %out: memref<f32>) {
    %0 = arith.constant 0.000000e+00 : f32
    %1 = loop.for %r = 0 to 30011 reduce iter(%acc = %0) -> f32 {
      %2 = loop.load %x[%r] : memref<30011xf32>
      %3 = arith.addf %acc, %2 : f32
      loop.yield %3 : f32
    }
    loop.store %1, %out[] : memref<f32>
  }
  func.func @main(%x: memref<128x8192xf32>, %y: memref<30011xf32>) -> memref<128xf32> {
    %many = memref.alloc() : memref<128xf32>
    loop.launch @many(%x, %many) : memref<128x8192xf32>, memref<128xf32>
    %prime = memref.alloc() : memref<f32>
    loop.launch @prime(%y, %prime) : memref<30011xf32>, memref<f32>
    func.return %many : memref<128xf32>
  }
}

// -----

// Left alone: an epilogue over the row (RMSNorm's scaling) would stay one block's.
// CHECK-LABEL: loop.kernel @rms
// CHECK-NOT:   _part

builtin.module {
  loop.kernel @rms(%x: memref<32768xf32>, %out: memref<32768xf32>) {
    %0 = arith.constant 0.000000e+00 : f32
    %1 = loop.for %r = 0 to 32768 reduce iter(%acc = %0) -> f32 {
      %2 = loop.load %x[%r] : memref<32768xf32>
      %3 = arith.mulf %2, %2 : f32
      %4 = arith.addf %acc, %3 : f32
      loop.yield %4 : f32
    }
    loop.for %d = 0 to 32768 free {
      %5 = loop.load %x[%d] : memref<32768xf32>
      %6 = arith.mulf %5, %1 : f32
      loop.store %6, %out[%d] : memref<32768xf32>
    }
  }
  func.func @main(%x: memref<32768xf32>) -> memref<32768xf32> {
    %rms = memref.alloc() : memref<32768xf32>
    loop.launch @rms(%x, %rms) : memref<32768xf32>, memref<32768xf32>
    func.return %rms : memref<32768xf32>
  }
}

// -----

// argmax: the partials are each slice's first extreme and its index, the slice's start plus
// the iv; the kernel reducing them runs the loop's own select on them, in slice order.
// CHECK-LABEL: loop.kernel @argmax_part(
// CHECK:         loop.for %s = 0 to 8 free {
// CHECK:           loop.for %r = 0 to 2048 reduce iter(%acc = %{{.*}}, %acc_1 = %{{.*}}) -> (f32, i64) {
// CHECK:             %[[G:.*]] = arith.addi %{{.*}}, %r : index
// CHECK:             arith.index_cast %[[G]] : index to i64
// CHECK:           loop.store %{{.*}}, %part[%s] : memref<8xf32>
// CHECK-NEXT:      loop.store %{{.*}}, %part_1[%s] : memref<8xi64>
// CHECK-LABEL: loop.kernel @argmax(
// CHECK:         loop.for %s = 0 to 8 reduce iter(%acc = %{{.*}}, %acc_1 = %{{.*}}) -> (f32, i64) {
// CHECK-NEXT:      %[[V:.*]] = loop.load %part[%s] : memref<8xf32>
// CHECK-NEXT:      %[[I:.*]] = loop.load %part_1[%s] : memref<8xi64>
// CHECK-NEXT:      %[[B:.*]] = arith.cmpf ogt, %[[V]], %acc : f32
// CHECK:           arith.select %{{.*}}, %[[I]], %acc_1 : i64

builtin.module {
  loop.kernel @argmax(%x: memref<16384xf32>, %out: memref<i64>) {
    %0 = arith.constant 0xff800000 : f32
    %1 = arith.constant 0 : i64
    %2, %3 = loop.for %r = 0 to 16384 reduce iter(%acc = %0, %acc_1 = %1) -> (f32, i64) {
      %4 = loop.load %x[%r] : memref<16384xf32>
      %5 = arith.cmpf ogt, %4, %acc : f32
      %6 = arith.cmpf une, %4, %4 : f32
      %7 = arith.cmpf oeq, %acc, %acc : f32
      %8 = arith.andi %6, %7 : i1
      %9 = arith.ori %5, %8 : i1
      %10 = arith.index_cast %r : index to i64
      %11 = arith.select %9, %4, %acc : f32
      %12 = arith.select %9, %10, %acc_1 : i64
      loop.yield %11, %12 : f32, i64
    }
    loop.store %3, %out[] : memref<i64>
  }
  func.func @main(%x: memref<16384xf32>) -> memref<i64> {
    %argmax = memref.alloc() : memref<i64>
    loop.launch @argmax(%x, %argmax) : memref<16384xf32>, memref<i64>
    func.return %argmax : memref<i64>
  }
}
