// RUN: deplo-opt %s --split-input-file --verify-diagnostics | filecheck %s

loop.kernel @free_with_acc(%out: memref<4xf32>) {
  %z = arith.constant 0.0 : f32
  // CHECK: loop.for 0 to 4 free: expected no accumulators, got 1
  %r = "loop.for"(%z) <{lb = #builtin.int<0>, ub = #builtin.int<4>, step = #builtin.int<1>, kind = #loop<kind free>}> ({
  ^bb0(%i: index, %a: f32):
    loop.yield %a : f32
  }) : (f32) -> f32
}

// -----

loop.kernel @store_in_reduce(%out: memref<4xf32>) {
  %z = arith.constant 0.0 : f32
  // CHECK: loop.for 0 to 4 reduce: expected no loop.store inside
  %r = loop.for %i = 0 to 4 reduce iter(%a = %z) -> f32 {
    loop.store %a, %out[%i] : memref<4xf32>
    loop.yield %a : f32
  }
}

// -----

loop.kernel @private_escapes(%out: memref<4xf32>) {
  // CHECK: loop.private: expected only loop.load/loop.store to use it, got memref.load
  %o = loop.private : memref<4xf32>
  %c0 = arith.constant 0 : index
  %v = memref.load %o[%c0] : memref<4xf32>
}

// -----

loop.kernel @rank(%x: memref<4x4xf32>) {
  loop.for %i = 0 to 4 free {
    // CHECK: loop.load: expected 2 indices for memref<4x4xf32>, got 1
    %v = loop.load %x[%i] : memref<4x4xf32>
  }
}

// -----

loop.kernel @k(%x: memref<4xf32>) {
}
func.func @main(%y: memref<8xf32>) {
  // CHECK: loop.launch @k: expected arguments ['memref<4xf32>'], got ['memref<8xf32>']
  loop.launch @k(%y) : memref<8xf32>
  func.return
}

// -----

// Another row-major shape of the same elements is the same buffer; another element type is not.
loop.kernel @k(%x: memref<2x6xf32>) {
}
func.func @main(%y: memref<12xi32>) {
  // CHECK: loop.launch @k: expected arguments ['memref<2x6xf32>'], got ['memref<12xi32>']
  loop.launch @k(%y) : memref<12xi32>
  func.return
}

// -----

loop.kernel @bound_past_int(%out: memref<4xf32>) {
  // CHECK: loop.for 0 to 9223372036854775808: expected bounds within +-2^31 (CUDA C indexes with int)
  loop.for %i = 0 to 9223372036854775808 free {
  }
}

// -----

// a loop's index past the dim it indexes (a hand-edited bound) would read past the buffer
loop.kernel @past_the_dim(%x: memref<4x64xf32>, %out: memref<4x64xf32>) {
  loop.for %i = 0 to 4 free {
    loop.for %j = 0 to 65 free {
      // CHECK: loop.load: index 1 runs over 0..64 (its loop), past dim 1 of memref<4x64xf32> (0..63)
      %v = loop.load %x[%i, %j] : memref<4x64xf32>
      loop.store %v, %out[%i, %j] : memref<4x64xf32>
    }
  }
}

// -----

// a constant index past its dim (a hand-edited row) would as well
loop.kernel @constant_past_the_dim(%x: memref<4x64xf32>, %out: memref<4x64xf32>) {
  %c9 = arith.constant 9 : index
  loop.for %j = 0 to 64 free {
    // CHECK: loop.load: index 0 is the constant 9, past dim 0 of memref<4x64xf32> (0..3)
    %v = loop.load %x[%c9, %j] : memref<4x64xf32>
    loop.store %v, %out[%c9, %j] : memref<4x64xf32>
  }
}

// -----

// so would a mapped coordinate (a matmul's input shrunk to 16 rows under its 32-row loop)
loop.kernel @mapped_past_the_dim(%x: memref<16x64xf32>, %w: memref<64x8xf32>, %out: memref<32x8xf32>) {
  loop.for %i = 0 to 32 free {
    loop.for %j = 0 to 8 free {
      %z = arith.constant 0.0 : f32
      %s = loop.for %k = 0 to 64 reduce iter(%acc = %z) -> f32 {
        // CHECK: loop.load: coordinate 0 (d0) runs over 0..31, past dim 0 of memref<16x64xf32> (0..15)
        %a = loop.load %x[%i, %j, %k] map (d0, d1, d2) -> (d0, d2) : memref<16x64xf32>
        %b = loop.load %w[%i, %j, %k] map (d0, d1, d2) -> (d2, d1) : memref<64x8xf32>
        %p = arith.mulf %a, %b : f32
        %n = arith.addf %acc, %p : f32
        loop.yield %n : f32
      }
      loop.store %s, %out[%i, %j] : memref<32x8xf32>
    }
  }
}

// -----

// one buffer passed as two arguments, one of them written: the .cu's parameters are restrict
loop.kernel @copy(%x: memref<4xf32>, %out: memref<4xf32>) {
  loop.for %i = 0 to 4 free {
    %v = loop.load %x[%i] : memref<4xf32>
    loop.store %v, %out[%i] : memref<4xf32>
  }
}
func.func @main(%x: memref<4xf32>) {
  // CHECK: loop.launch @copy: passes one buffer as two arguments, and the kernel writes %out
  loop.launch @copy(%x, %x) : memref<4xf32>, memref<4xf32>
  func.return
}
