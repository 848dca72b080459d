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

// x.sum() over 40009 floats (prime): 16 slices of 2500 (the most of at least 2048 each), and
// the 9 elements past them reduced by @sum after the partials, from their total.
// CHECK-LABEL: loop.kernel @sum_part(%x: memref<40009xf32>, %out: memref<f32>, %part: memref<16xf32>)
// CHECK:           %{{.*}} = loop.for %r = 0 to 2500 reduce
// CHECK-NEXT:        loop.load %x[%r, %s] map (d0, d1) -> (((d1 * 2500) + d0)) : memref<40009xf32>
// CHECK-LABEL: loop.kernel @sum(%x: memref<40009xf32>, %out: memref<f32>, %part: memref<16xf32>)
// CHECK:         %[[T:.*]] = loop.for %s = 0 to 16 reduce iter(%acc = %{{.*}}) -> f32 {
// CHECK:         %[[U:.*]] = loop.for %r = 0 to 9 reduce iter(%acc_1 = %[[T]]) -> f32 {
// CHECK-NEXT:      %[[V:.*]] = loop.load %x[%r] map (d0) -> ((d0 + 40000)) : memref<40009xf32>
// CHECK-NEXT:      %[[A:.*]] = arith.addf %acc_1, %[[V]] : f32
// CHECK-NEXT:      loop.yield %[[A]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    loop.store %[[U]], %out[] : memref<f32>

builtin.module {
  loop.kernel @sum(%x: memref<40009xf32>, %out: memref<f32>) {
    %0 = arith.constant 0.000000e+00 : f32
    %2 = loop.for %r = 0 to 40009 reduce iter(%acc = %0) -> f32 {
      %3 = loop.load %x[%r] : memref<40009xf32>
      %4 = arith.addf %acc, %3 : f32
      loop.yield %4 : f32
    }
    loop.store %2, %out[] : memref<f32>
  }
  func.func @main(%x: memref<40009xf32>) -> memref<f32> {
    %sum = memref.alloc() : memref<f32>
    loop.launch @sum(%x, %sum) : memref<40009xf32>, memref<f32>
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

// An epilogue over the row (RMSNorm's scaling) runs a slice a block: the row's code goes under
// a free loop over the slices, each reducing the 16 partials and scaling its 2048 elements.
// CHECK-LABEL: loop.kernel @rms_part(
// CHECK:         loop.for %s = 0 to 16 free {
// CHECK-LABEL: loop.kernel @rms(
// CHECK-NEXT:    loop.for %s = 0 to 16 free {
// CHECK:           %[[T:.*]] = loop.for %s_1 = 0 to 16 reduce
// CHECK-NEXT:        loop.load %part[%s_1] : memref<16xf32>
// CHECK:           loop.for %d = 0 to 2048 free {
// CHECK-NEXT:        %[[X:.*]] = loop.load %x[%d, %s] map (d0, d1) -> (((d1 * 2048) + d0))
// CHECK-NEXT:        %[[Y:.*]] = arith.mulf %[[X]], %[[T]] : f32
// CHECK-NEXT:        loop.store %[[Y]], %out[%d, %s] map (d0, d1) -> (((d1 * 2048) + d0))

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
// CHECK:         loop.for %s = 0 to 128 free {
// CHECK:           loop.for %r = 0 to 2048 reduce iter(%acc = %{{.*}}, %acc_1 = %{{.*}}) -> (f32, i64) {
// CHECK:             %[[G:.*]] = arith.addi %{{.*}}, %r : index
// CHECK:             arith.index_cast %[[G]] : index to i64
// CHECK:           loop.store %{{.*}}, %part[%s] : memref<128xf32>
// CHECK-NEXT:      loop.store %{{.*}}, %part_1[%s] : memref<128xi64>
// CHECK-LABEL: loop.kernel @argmax(
// CHECK:         loop.for %s = 0 to 128 reduce iter(%acc = %{{.*}}, %acc_1 = %{{.*}}) -> (f32, i64) {
// CHECK-NEXT:      %[[V:.*]] = loop.load %part[%s] : memref<128xf32>
// CHECK-NEXT:      %[[I:.*]] = loop.load %part_1[%s] : memref<128xi64>
// CHECK-NEXT:      %[[B:.*]] = arith.cmpf ogt, %[[V]], %acc : f32
// CHECK:           arith.select %{{.*}}, %[[I]], %acc_1 : i64

builtin.module {
  loop.kernel @argmax(%x: memref<262144xf32>, %out: memref<i64>) {
    %0 = arith.constant 0xff800000 : f32
    %1 = arith.constant 0 : i64
    %2, %3 = loop.for %r = 0 to 262144 reduce iter(%acc = %0, %acc_1 = %1) -> (f32, i64) {
      %4 = loop.load %x[%r] : memref<262144xf32>
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
  func.func @main(%x: memref<262144xf32>) -> memref<i64> {
    %argmax = memref.alloc() : memref<i64>
    loop.launch @argmax(%x, %argmax) : memref<262144xf32>, memref<i64>
    func.return %argmax : memref<i64>
  }
}

// -----

// A row whose one block streams it faster than the split's second launch pays off (64 KB:
// one SM keeping 16 KB in flight reads it in about 1.6 us; a launch is 3.2): left alone.
// CHECK-LABEL: loop.kernel @argmax(
// CHECK-NOT:   _part

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

// -----

// logsumexp over two rows of 262144: a max, then a sum of exp(x - max), then a scalar epilogue.
// Fission first: @lse_1 computes the max and stores it (%red); @lse loads it instead. Then each
// splits: @lse_1_part / @lse_1 for the max, @lse_part / @lse for the sum.
// CHECK-LABEL: loop.kernel @lse_1_part(%x: memref<2x262144xf32>, %out: memref<2xf32>, %red: memref<2xf32>, %part: memref<2x128xf32>)
// CHECK:         loop.for %i = 0 to 2 free {
// CHECK-NEXT:      loop.for %s = 0 to 128 free {
// CHECK:             arith.maximumf
// CHECK:             loop.store %{{.*}}, %part[%i, %s] : memref<2x128xf32>
// CHECK-LABEL: loop.kernel @lse_1(
// CHECK:           loop.for %s = 0 to 128 reduce
// CHECK:           loop.store %{{.*}}, %red[%i] : memref<2xf32>
// CHECK-NOT:       math.log
// CHECK-LABEL: loop.kernel @lse_part(
// CHECK:           %[[M:.*]] = loop.load %red[%i] : memref<2xf32>
// CHECK:           loop.for %s = 0 to 128 free {
// CHECK:             arith.subf %{{.*}}, %[[M]] : f32
// CHECK:             math.exp
// CHECK-LABEL: loop.kernel @lse(
// CHECK:           loop.load %red[%i] : memref<2xf32>
// CHECK:           loop.for %s = 0 to 128 reduce
// CHECK:           math.log
// CHECK-LABEL: func.func @main
// CHECK:         loop.launch @lse_1_part(
// CHECK-NEXT:    loop.launch @lse_1(
// CHECK:         loop.launch @lse_part(
// CHECK-NEXT:    loop.launch @lse(

builtin.module {
  loop.kernel @lse(%x: memref<2x262144xf32>, %out: memref<2xf32>) {
    %0 = arith.constant 0xff800000 : f32
    %1 = arith.constant 0.000000e+00 : f32
    loop.for %i = 0 to 2 free {
      %2 = loop.for %r = 0 to 262144 reduce iter(%acc = %0) -> f32 {
        %3 = loop.load %x[%i, %r] : memref<2x262144xf32>
        %4 = arith.maximumf %acc, %3 : f32
        loop.yield %4 : f32
      }
      %5 = loop.for %r_1 = 0 to 262144 reduce iter(%acc_1 = %1) -> f32 {
        %6 = loop.load %x[%i, %r_1] : memref<2x262144xf32>
        %7 = arith.subf %6, %2 : f32
        %8 = math.exp %7 : f32
        %9 = arith.addf %acc_1, %8 : f32
        loop.yield %9 : f32
      }
      %10 = math.log %5 : f32
      %11 = arith.addf %10, %2 : f32
      loop.store %11, %out[%i] : memref<2xf32>
    }
  }
  func.func @main(%x: memref<2x262144xf32>) -> memref<2xf32> {
    %lse = memref.alloc() : memref<2xf32>
    loop.launch @lse(%x, %lse) : memref<2x262144xf32>, memref<2xf32>
    func.return %lse : memref<2xf32>
  }
}

// -----

// A softmax row after loop-online-softmax: the (m, l) pair's partials are each slice's; the
// kernel reducing them takes the max and rescales each slice's l by exp(m_s - m'); the
// normalization loop runs a slice a block.
// CHECK-LABEL: loop.kernel @softmax_part(
// CHECK:         loop.for %s = 0 to 16 free {
// CHECK:           loop.store %{{.*}}, %part[%s] : memref<16xf32>
// CHECK-NEXT:      loop.store %{{.*}}, %part_1[%s] : memref<16xf32>
// CHECK-LABEL: loop.kernel @softmax(
// CHECK-NEXT:    loop.for %s = 0 to 16 free {
// CHECK:           %{{.*}}, %[[L:.*]] = loop.for %s_1 = 0 to 16 reduce iter(%m = %{{.*}}, %l = %{{.*}}) -> (f32, f32) {
// CHECK-NEXT:        %[[MS:.*]] = loop.load %part[%s_1] : memref<16xf32>
// CHECK-NEXT:        %[[LS:.*]] = loop.load %part_1[%s_1] : memref<16xf32>
// CHECK-NEXT:        %[[MN:.*]] = arith.maximumf %m, %[[MS]] : f32
// CHECK-NEXT:        %[[DA:.*]] = arith.subf %m, %[[MN]] : f32
// CHECK-NEXT:        %[[DB:.*]] = arith.subf %[[MS]], %[[MN]] : f32
// CHECK-NEXT:        %[[EA:.*]] = math.exp %[[DA]] : f32
// CHECK-NEXT:        %[[EB:.*]] = math.exp %[[DB]] : f32
// CHECK-NEXT:        %[[PA:.*]] = arith.mulf %l, %[[EA]] : f32
// CHECK-NEXT:        %[[PB:.*]] = arith.mulf %[[LS]], %[[EB]] : f32
// CHECK-NEXT:        %[[T:.*]] = arith.addf %[[PA]], %[[PB]] : f32
// CHECK-NEXT:        loop.yield %[[MN]], %[[T]] : f32, f32
// CHECK:           loop.for %j = 0 to 2048 free {
// CHECK:             arith.divf %{{.*}}, %[[L]] : f32
// CHECK:             loop.store %{{.*}}, %out[%j, %s] map (d0, d1) -> (((d1 * 2048) + d0))

builtin.module {
  loop.kernel @softmax(%x: memref<32768xf32>, %out: memref<32768xf32>) {
    %0 = arith.constant -3.40282347e+38 : f32
    %1 = arith.constant 0.000000e+00 : f32
    %2, %3 = loop.for %r = 0 to 32768 reduce iter(%m = %0, %l = %1) -> (f32, f32) {
      %4 = loop.load %x[%r] : memref<32768xf32>
      %m_new = arith.maximumf %m, %4 : f32
      %5 = arith.subf %4, %m_new : f32
      %6 = math.exp %5 : f32
      %7 = arith.subf %m, %m_new : f32
      %alpha = math.exp %7 : f32
      %8 = arith.mulf %l, %alpha : f32
      %9 = arith.addf %8, %6 : f32
      loop.yield %m_new, %9 : f32, f32
    }
    loop.for %j = 0 to 32768 free {
      %10 = loop.load %x[%j] : memref<32768xf32>
      %11 = arith.subf %10, %2 : f32
      %12 = math.exp %11 : f32
      %13 = arith.divf %12, %3 : f32
      loop.store %13, %out[%j] : memref<32768xf32>
    }
  }
  func.func @main(%x: memref<32768xf32>) -> memref<32768xf32> {
    %softmax = memref.alloc() : memref<32768xf32>
    loop.launch @softmax(%x, %softmax) : memref<32768xf32>, memref<32768xf32>
    func.return %softmax : memref<32768xf32>
  }
}

// -----

// Fission beside a kernel already named @k_1 (the pipeline's names end in numbers too): the
// argmax stage takes @k_1_1, not a second @k_1. Its (value, index) results are stored and
// loaded by the later stage as two buffers.
// CHECK-LABEL: loop.kernel @k_1_1_part(
// CHECK-LABEL: loop.kernel @k_1_1(
// CHECK:         loop.store %{{.*}}, %red[%i] : memref<2xf32>
// CHECK-NEXT:    loop.store %{{.*}}, %red_1[%i] : memref<2xi64>
// CHECK-LABEL: loop.kernel @k_part(
// CHECK-LABEL: loop.kernel @k(
// CHECK-LABEL: loop.kernel @k_1(%y
// CHECK-LABEL: func.func @main
// CHECK:         loop.launch @k_1_1_part(
// CHECK-NEXT:    loop.launch @k_1_1(
// CHECK:         loop.launch @k_part(
// CHECK-NEXT:    loop.launch @k(
// CHECK:         loop.launch @k_1(

builtin.module {
  loop.kernel @k(%x: memref<2x262144xf32>, %out: memref<2xf32>) {
    %0 = arith.constant 0xff800000 : f32
    %1 = arith.constant 0 : i64
    %z = arith.constant 0.000000e+00 : f32
    loop.for %i = 0 to 2 free {
      %2, %3 = loop.for %r = 0 to 262144 reduce iter(%acc = %0, %acc_1 = %1) -> (f32, i64) {
        %4 = loop.load %x[%i, %r] : memref<2x262144xf32>
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
      %f = arith.sitofp %3 : i64 to f32
      %13 = loop.for %r_1 = 0 to 262144 reduce iter(%a = %z) -> f32 {
        %14 = loop.load %x[%i, %r_1] : memref<2x262144xf32>
        %15 = arith.subf %14, %2 : f32
        %16 = arith.mulf %15, %f : f32
        %17 = arith.addf %a, %16 : f32
        loop.yield %17 : f32
      }
      loop.store %13, %out[%i] : memref<2xf32>
    }
  }
  loop.kernel @k_1(%y: memref<2xf32>, %o2: memref<2xf32>) {
    loop.for %i = 0 to 2 free {
      %v = loop.load %y[%i] : memref<2xf32>
      %w = arith.addf %v, %v : f32
      loop.store %w, %o2[%i] : memref<2xf32>
    }
  }
  func.func @main(%x: memref<2x262144xf32>) -> memref<2xf32> {
    %o = memref.alloc() : memref<2xf32>
    loop.launch @k(%x, %o) : memref<2x262144xf32>, memref<2xf32>
    %o2 = memref.alloc() : memref<2xf32>
    loop.launch @k_1(%o, %o2) : memref<2xf32>, memref<2xf32>
    func.return %o2 : memref<2xf32>
  }
}

// -----

// Left alone: the epilogue's second loop reads what its first wrote, elsewhere in the row
// (reversed): a slice's block would read another slice's stores.
// CHECK-LABEL: loop.kernel @k(
// CHECK-NOT:   _part

builtin.module {
  loop.kernel @k(%x: memref<2x65536xf32>, %out: memref<2x65536xf32>, %tmp: memref<2x65536xf32>) {
    %0 = arith.constant 0.000000e+00 : f32
    loop.for %i = 0 to 2 free {
      %1 = loop.for %r = 0 to 65536 reduce iter(%acc = %0) -> f32 {
        %2 = loop.load %x[%i, %r] : memref<2x65536xf32>
        %3 = arith.addf %acc, %2 : f32
        loop.yield %3 : f32
      }
      loop.for %d = 0 to 65536 free {
        %5 = loop.load %x[%i, %d] : memref<2x65536xf32>
        %6 = arith.mulf %5, %1 : f32
        loop.store %6, %tmp[%i, %d] : memref<2x65536xf32>
      }
      loop.for %e = 0 to 65536 free {
        %7 = loop.load %tmp[%i, %e] map (d0, d1) -> (d0, (65535 - d1)) : memref<2x65536xf32>
        loop.store %7, %out[%i, %e] : memref<2x65536xf32>
      }
    }
  }
  func.func @main(%x: memref<2x65536xf32>) -> memref<2x65536xf32> {
    %o = memref.alloc() : memref<2x65536xf32>
    %t = memref.alloc() : memref<2x65536xf32>
    loop.launch @k(%x, %o, %t) : memref<2x65536xf32>, memref<2x65536xf32>, memref<2x65536xf32>
    func.return %o : memref<2x65536xf32>
  }
}

// -----

// A column reduction, x.sum(0) of [1030, 2048] floats (8.4 MB): the load reads its row at the
// output's coordinate, so the reduce loop walks a row's stride. The fewest slices dividing 1030
// with at most 32 rows each: 103 of 10. The slice loop goes outside the outputs (a thread a
// column, consecutive threads consecutive addresses) and the partials are [slices, outputs].
// CHECK-LABEL: loop.kernel @sum_part(%x: memref<1030x2048xf32>, %out: memref<2048xf32>, %part: memref<103x2048xf32>)
// CHECK:         loop.for %s = 0 to 103 free {
// CHECK-NEXT:      loop.for %a = 0 to 2048 free {
// CHECK-NEXT:        %[[P:.*]] = loop.for %r = 0 to 10 reduce iter(%acc = %{{.*}}) -> f32 {
// CHECK-NEXT:          %[[V:.*]] = loop.load %x[%r, %a, %s] map (d0, d1, d2) -> (((d2 * 10) + d0), d1) : memref<1030x2048xf32>
// CHECK:             loop.store %[[P]], %part[%s, %a] : memref<103x2048xf32>
// CHECK-LABEL: loop.kernel @sum(%x: memref<1030x2048xf32>, %out: memref<2048xf32>, %part: memref<103x2048xf32>)
// CHECK:         loop.for %a = 0 to 2048 free {
// CHECK-NEXT:      %[[T:.*]] = loop.for %s = 0 to 103 reduce iter(%acc = %{{.*}}) -> f32 {
// CHECK-NEXT:        %[[Q:.*]] = loop.load %part[%s, %a] : memref<103x2048xf32>
// CHECK:           loop.store %[[T]], %out[%a] : memref<2048xf32>

builtin.module {
  loop.kernel @sum(%x: memref<1030x2048xf32>, %out: memref<2048xf32>) {
    %0 = arith.constant 0.000000e+00 : f32
    loop.for %a = 0 to 2048 free {
      %1 = loop.for %r = 0 to 1030 reduce iter(%acc = %0) -> f32 {
        %2 = loop.load %x[%r, %a] : memref<1030x2048xf32>
        %3 = arith.addf %acc, %2 : f32
        loop.yield %3 : f32
      }
      loop.store %1, %out[%a] : memref<2048xf32>
    }
  }
  func.func @main(%x: memref<1030x2048xf32>) -> memref<2048xf32> {
    %sum = memref.alloc() : memref<2048xf32>
    loop.launch @sum(%x, %sum) : memref<1030x2048xf32>, memref<2048xf32>
    func.return %sum : memref<2048xf32>
  }
}

// -----

// The same columns over 512 KB stay one kernel: the second launch would cost more than the
// L2 traffic it saves.
// CHECK-LABEL: loop.kernel @small
// CHECK-NOT:   _part
// CHECK:       func.func @main

builtin.module {
  loop.kernel @small(%x: memref<2048x64xf32>, %out: memref<64xf32>) {
    %0 = arith.constant 0.000000e+00 : f32
    loop.for %a = 0 to 64 free {
      %1 = loop.for %r = 0 to 2048 reduce iter(%acc = %0) -> f32 {
        %2 = loop.load %x[%r, %a] : memref<2048x64xf32>
        %3 = arith.addf %acc, %2 : f32
        loop.yield %3 : f32
      }
      loop.store %1, %out[%a] : memref<64xf32>
    }
  }
  func.func @main(%x: memref<2048x64xf32>) -> memref<64xf32> {
    %small = memref.alloc() : memref<64xf32>
    loop.launch @small(%x, %small) : memref<2048x64xf32>, memref<64xf32>
    func.return %small : memref<64xf32>
  }
}

// -----

// keepdim: x.sum(1, keepdim=True) of [4, 1048576] stores through a loop of one iteration (the
// kept dim) after the reduction. That loop is inlined, its coordinate a constant of the store's
// map, and the row splits as without keepdim: 4 x 128 rows of partials.
// CHECK-LABEL: loop.kernel @kept_part(%x: memref<4x1048576xf32>, %out: memref<4x1xf32>, %part: memref<4x128xf32>)
// CHECK:         loop.store %{{.*}}, %part[%i, %s] : memref<4x128xf32>
// CHECK-LABEL: loop.kernel @kept(%x: memref<4x1048576xf32>, %out: memref<4x1xf32>, %part: memref<4x128xf32>)
// CHECK:         loop.for %i = 0 to 4 free {
// CHECK-NEXT:      %[[T:.*]] = loop.for %s = 0 to 128 reduce
// CHECK:           loop.store %[[T]], %out[%i] map (d0) -> (d0, 0) : memref<4x1xf32>
// CHECK-NEXT:    }

builtin.module {
  loop.kernel @kept(%x: memref<4x1048576xf32>, %out: memref<4x1xf32>) {
    %0 = arith.constant 0.000000e+00 : f32
    loop.for %i = 0 to 4 free {
      %1 = loop.for %r = 0 to 1048576 reduce iter(%acc = %0) -> f32 {
        %2 = loop.load %x[%i, %r] : memref<4x1048576xf32>
        %3 = arith.addf %acc, %2 : f32
        loop.yield %3 : f32
      }
      loop.for %k = 0 to 1 free {
        loop.store %1, %out[%i, %k] : memref<4x1xf32>
      }
    }
  }
  func.func @main(%x: memref<4x1048576xf32>) -> memref<4x1xf32> {
    %kept = memref.alloc() : memref<4x1xf32>
    loop.launch @kept(%x, %kept) : memref<4x1048576xf32>, memref<4x1xf32>
    func.return %kept : memref<4x1xf32>
  }
}

// -----

// An epilogue that is a perfect nest (a layer_norm over [256, 256]: loops over h and w after the
// sum) is flattened to one loop over 65536 before it is sliced, each access taking the
// coordinates apart; 32 slices of 2048, the sum's partials reduced again by each.
// CHECK-LABEL: loop.kernel @scale(%x: memref<2x256x256xf32>, %out: memref<2x256x256xf32>, %part: memref<2x32xf32>)
// CHECK:         loop.for %i = 0 to 2 free {
// CHECK-NEXT:      loop.for %s = 0 to 32 free {
// CHECK-NEXT:        %[[T:.*]] = loop.for %s_1 = 0 to 32 reduce
// CHECK:             loop.for %h = 0 to 2048 free {
// CHECK-NEXT:          %[[V:.*]] = loop.load %x[%i, %h, %s] map (d0, d1, d2) -> (d0, (((d2 * 2048) + d1) floordiv 256), (((d2 * 2048) + d1) mod 256)) : memref<2x256x256xf32>
// CHECK-NEXT:          %[[Q:.*]] = arith.divf %[[V]], %[[T]] : f32
// CHECK-NEXT:          loop.store %[[Q]], %out[%i, %h, %s] map (d0, d1, d2) -> (d0, (((d2 * 2048) + d1) floordiv 256), (((d2 * 2048) + d1) mod 256)) : memref<2x256x256xf32>

builtin.module {
  loop.kernel @scale(%x: memref<2x256x256xf32>, %out: memref<2x256x256xf32>) {
    %0 = arith.constant 0.000000e+00 : f32
    loop.for %i = 0 to 2 free {
      %1 = loop.for %r = 0 to 65536 reduce iter(%acc = %0) -> f32 {
        %2 = loop.load %x[%i, %r] map (d0, d1) -> (d0, (d1 floordiv 256), (d1 mod 256)) : memref<2x256x256xf32>
        %3 = arith.addf %acc, %2 : f32
        loop.yield %3 : f32
      }
      loop.for %h = 0 to 256 free {
        loop.for %w = 0 to 256 free {
          %4 = loop.load %x[%i, %h, %w] : memref<2x256x256xf32>
          %5 = arith.divf %4, %1 : f32
          loop.store %5, %out[%i, %h, %w] : memref<2x256x256xf32>
        }
      }
    }
  }
  func.func @main(%x: memref<2x256x256xf32>) -> memref<2x256x256xf32> {
    %scale = memref.alloc() : memref<2x256x256xf32>
    loop.launch @scale(%x, %scale) : memref<2x256x256xf32>, memref<2x256x256xf32>
    func.return %scale : memref<2x256x256xf32>
  }
}

// -----

// A loop of one iteration (from 2) whose iv an access uses twice: inlined once per access.
// CHECK-LABEL: loop.kernel @kept(%x: memref<4x1048576xf32>, %out: memref<4x4x4xf32>, %part: memref<4x128xf32>)
// CHECK:           loop.store %{{.*}}, %out[%i] map (d0) -> (d0, 2, 2) : memref<4x4x4xf32>

builtin.module {
  loop.kernel @kept(%x: memref<4x1048576xf32>, %out: memref<4x4x4xf32>) {
    %0 = arith.constant 0.000000e+00 : f32
    loop.for %i = 0 to 4 free {
      %1 = loop.for %r = 0 to 1048576 reduce iter(%acc = %0) -> f32 {
        %2 = loop.load %x[%i, %r] : memref<4x1048576xf32>
        %3 = arith.addf %acc, %2 : f32
        loop.yield %3 : f32
      }
      loop.for %k = 2 to 3 free {
        loop.store %1, %out[%i, %k, %k] : memref<4x4x4xf32>
      }
    }
  }
  func.func @main(%x: memref<4x1048576xf32>) -> memref<4x4x4xf32> {
    %kept = memref.alloc() : memref<4x4x4xf32>
    loop.launch @kept(%x, %kept) : memref<4x1048576xf32>, memref<4x4x4xf32>
    func.return %kept : memref<4x4x4xf32>
  }
}

// -----

// Rows whose bytes one block streams in time but whose exps (four special functions an
// element) keep one SM's SFUs busy longer than a second launch costs: 16 rows of 32768 split
// (the model, H100: 10.7 -> 8.7 us); 64 such rows fill enough SMs and stay one kernel.
// CHECK-LABEL: loop.kernel @sm16_part(%x: memref<16x32768xf32>, %out: memref<16x32768xf32>, %part: memref<16x16xf32>, %part_1: memref<16x16xf32>)
// CHECK-LABEL: loop.kernel @sm16(

builtin.module {
  loop.kernel @sm16(%x: memref<16x32768xf32>, %out: memref<16x32768xf32>) {
    %0 = arith.constant -3.40282347e+38 : f32
    %1 = arith.constant 0.000000e+00 : f32
    loop.for %i = 0 to 16 free {
      %2, %3 = loop.for %r = 0 to 32768 reduce iter(%m = %0, %l = %1) -> (f32, f32) {
        %4 = loop.load %x[%i, %r] : memref<16x32768xf32>
        %m_new = arith.maximumf %m, %4 : f32
        %5 = arith.subf %4, %m_new : f32
        %6 = math.exp %5 : f32
        %7 = arith.subf %m, %m_new : f32
        %alpha = math.exp %7 : f32
        %8 = arith.mulf %l, %alpha : f32
        %9 = arith.addf %8, %6 : f32
        loop.yield %m_new, %9 : f32, f32
      }
      loop.for %j = 0 to 32768 free {
        %10 = loop.load %x[%i, %j] : memref<16x32768xf32>
        %11 = arith.subf %10, %2 : f32
        %12 = math.exp %11 : f32
        %13 = arith.divf %12, %3 : f32
        loop.store %13, %out[%i, %j] : memref<16x32768xf32>
      }
    }
  }
  func.func @main(%x: memref<16x32768xf32>) -> memref<16x32768xf32> {
    %sm = memref.alloc() : memref<16x32768xf32>
    loop.launch @sm16(%x, %sm) : memref<16x32768xf32>, memref<16x32768xf32>
    func.return %sm : memref<16x32768xf32>
  }
}

// -----

// CHECK-LABEL: loop.kernel @sm64(%x: memref<64x32768xf32>, %out: memref<64x32768xf32>) {
// CHECK-NOT:   loop.kernel @sm64_part

builtin.module {
  loop.kernel @sm64(%x: memref<64x32768xf32>, %out: memref<64x32768xf32>) {
    %0 = arith.constant -3.40282347e+38 : f32
    %1 = arith.constant 0.000000e+00 : f32
    loop.for %i = 0 to 64 free {
      %2, %3 = loop.for %r = 0 to 32768 reduce iter(%m = %0, %l = %1) -> (f32, f32) {
        %4 = loop.load %x[%i, %r] : memref<64x32768xf32>
        %m_new = arith.maximumf %m, %4 : f32
        %5 = arith.subf %4, %m_new : f32
        %6 = math.exp %5 : f32
        %7 = arith.subf %m, %m_new : f32
        %alpha = math.exp %7 : f32
        %8 = arith.mulf %l, %alpha : f32
        %9 = arith.addf %8, %6 : f32
        loop.yield %m_new, %9 : f32, f32
      }
      loop.for %j = 0 to 32768 free {
        %10 = loop.load %x[%i, %j] : memref<64x32768xf32>
        %11 = arith.subf %10, %2 : f32
        %12 = math.exp %11 : f32
        %13 = arith.divf %12, %3 : f32
        loop.store %13, %out[%i, %j] : memref<64x32768xf32>
      }
    }
  }
  func.func @main(%x: memref<64x32768xf32>) -> memref<64x32768xf32> {
    %sm = memref.alloc() : memref<64x32768xf32>
    loop.launch @sm64(%x, %sm) : memref<64x32768xf32>, memref<64x32768xf32>
    func.return %sm : memref<64x32768xf32>
  }
}
