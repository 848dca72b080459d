// RUN: deplo-opt %s --split-input-file --verify-diagnostics | filecheck %s

// CHECK: tile.kernel @k: expected argument 0 to be a memref, got f32
"tile.kernel"() <{sym_name = "k", grid = array<i64: 1, 1, 1>, block = array<i64: 1, 1, 1>, done = []}> ({
^bb0(%x: f32):
}) : () -> ()

// -----

// CHECK: tile.kernel @k: expected three positive grid sizes, got [0, 1, 1]
tile.kernel @k(%x: memref<4xf32>) grid(0) block(1) {
}

// -----

// CHECK: tile.kernel @k: grid size 70000 on y exceeds the limit 65535
tile.kernel @k(%x: memref<4xf32>) grid(1, 70000) block(1) {
}

// -----

// CHECK: tile.kernel @k: block size 128 on z exceeds the limit 64
tile.kernel @k(%x: memref<4xf32>) grid(1) block(1, 1, 128) {
}

// -----

// CHECK: tile.kernel @k: expected at most 1024 threads per block, got 2048
tile.kernel @k(%x: memref<4xf32>) grid(1) block(64, 32) {
}

// -----

// CHECK: tile.kernel @k: staged buffers take 262144 bytes of shared memory, more than 232448
tile.kernel @k(%x: memref<2x32768xf32>) grid(1) block(1) {
  %a = tile.stage %x[0, 0] [1, 32768] into shared : memref<2x32768xf32> -> memref<32768xf32, 3 : i64>
  %b = tile.stage %x[1, 0] [1, 32768] into shared : memref<2x32768xf32> -> memref<32768xf32, 3 : i64>
}

// -----

// CHECK: tile.for 0 to 4 bind(serial): expected a positive step, got 0
tile.kernel @k(%x: memref<4xf32>) grid(1) block(1) {
  tile.for %i = 0 to 4 step 0 bind(serial) {
  }
}

// -----

// CHECK: tile.for 4 to 4 bind(serial): expected an upper bound above the lower bound
tile.kernel @k(%x: memref<4xf32>) grid(1) block(1) {
  tile.for %i = 4 to 4 bind(serial) {
  }
}

// -----

// CHECK: tile.for 0 to 4 bind(serial): expected exactly one lower bound, static or dynamic
tile.kernel @k(%x: memref<4xf32>) grid(1) block(1) {
  %c = arith.constant 0 : index
  "tile.for"(%c) <{lb = #builtin.int<0>, ub = #builtin.int<4>, step = #builtin.int<1>, bind = #tile<bind serial>, operandSegmentSizes = array<i32: 1, 0, 0>}> ({
  ^bb0(%i: index):
    "tile.yield"() : () -> ()
  }) : (index) -> ()
}

// -----

// CHECK: tile.for 0 to 4 bind(serial): expected block arguments (index, accumulators...), got ['f32']
tile.kernel @k(%x: memref<4xf32>) grid(1) block(1) {
  "tile.for"() <{lb = #builtin.int<0>, ub = #builtin.int<4>, step = #builtin.int<1>, bind = #tile<bind serial>, operandSegmentSizes = array<i32: 0, 0, 0>}> ({
  ^bb0(%i: f32):
    "tile.yield"() : () -> ()
  }) : () -> ()
}

// -----

// CHECK: tile.for 0 to 4 bind(serial): accumulator 0 has init f32, block arg f64, result f32; expected one type
tile.kernel @k(%x: memref<4xf32>) grid(1) block(1) {
  %z = arith.constant 0.000000e+00 : f32
  %r = "tile.for"(%z) <{lb = #builtin.int<0>, ub = #builtin.int<4>, step = #builtin.int<1>, bind = #tile<bind serial>, operandSegmentSizes = array<i32: 0, 0, 1>}> ({
  ^bb0(%i: index, %a: f64):
    "tile.yield"(%z) : (f32) -> ()
  }) : (f32) -> f32
}

// -----

// CHECK: tile.for 0 to 4 bind(serial): tile.yield types [] do not match the accumulators ['f32']
tile.kernel @k(%x: memref<4xf32>) grid(1) block(1) {
  %z = arith.constant 0.000000e+00 : f32
  %r = tile.for %i = 0 to 4 bind(serial) iter(%a = %z) -> f32 {
  }
}

// -----

// CHECK: tile.for %lb to 8 bind(thread.x): expected a static lower bound on a bound loop
tile.kernel @k(%x: memref<4xf32>) grid(1) block(8) {
  %c = arith.constant 0 : index
  tile.for %i = %c to 8 bind(thread.x) {
  }
}

// -----

// CHECK: tile.for 0 to 8 bind(thread.x): expected no accumulators on a bound loop (use tile.combine)
tile.kernel @k(%x: memref<4xf32>) grid(1) block(8) {
  %z = arith.constant 0.000000e+00 : f32
  %r = tile.for %i = 0 to 8 bind(thread.x) iter(%a = %z) -> f32 {
    tile.yield %a : f32
  }
}

// -----

// CHECK: tile.for 0 to 8 bind(block.x): expected to be inside a tile.kernel
func.func @f() {
  tile.for %i = 0 to 8 bind(block.x) {
  }
  func.return
}

// -----

// CHECK: tile.for 0 to 64 bind(block.y): extent 64 exceeds the grid size 1 on y
tile.kernel @k(%x: memref<4xf32>) grid(64) block(1) {
  tile.for %i = 0 to 64 bind(block.y) {
  }
}

// -----

// CHECK: tile.for 0 to 300 bind(thread.x): extent 300 exceeds the block size 256 on x
tile.kernel @k(%x: memref<4xf32>) grid(1) block(256) {
  tile.for %i = 0 to 300 bind(thread.x) {
  }
}

// -----

// CHECK: tile.for 0 to 4 bind(thread.x): nested in another loop bound to thread.x
tile.kernel @k(%x: memref<4xf32>) grid(1) block(32) {
  tile.for %i = 0 to 32 bind(thread.x) {
    tile.for %j = 0 to 4 bind(thread.x) {
    }
  }
}

// -----

// CHECK: tile.for 0 to 4 bind(block.x): expected not to be nested in a thread-bound loop
tile.kernel @k(%x: memref<4xf32>) grid(4) block(32) {
  tile.for %i = 0 to 32 bind(thread.x) {
    tile.for %j = 0 to 4 bind(block.x) {
    }
  }
}

// -----

// CHECK: tile.stage of memref<4x8xf32>: expected 2 offsets and sizes, got 1 and 1
tile.kernel @k(%x: memref<4x8xf32>) grid(1) block(1) {
  %s = tile.stage %x[0] [8] into shared : memref<4x8xf32> -> memref<8xf32, 3 : i64>
}

// -----

// CHECK: tile.stage of memref<4x8xf32>: size 16 of dim 1 is not in [1, 8]
tile.kernel @k(%x: memref<4x8xf32>) grid(1) block(1) {
  %s = tile.stage %x[0, 0] [1, 16] into shared : memref<4x8xf32> -> memref<16xf32, 3 : i64>
}

// -----

// CHECK: tile.stage of memref<4x8xf32>: slab [4, 5) of dim 0 is out of bounds
tile.kernel @k(%x: memref<4x8xf32>) grid(1) block(1) {
  %s = tile.stage %x[4, 0] [1, 8] into shared : memref<4x8xf32> -> memref<8xf32, 3 : i64>
}

// -----

// A wrapped slab may pass an end of its source, by less than the dim (a halo of -1).
// CHECK: tile.stage of memref<4x8xf32>: wrapped slab [-8, 1) of dim 1 passes an end by 8 or more
tile.kernel @k(%x: memref<4x8xf32>) grid(1) block(1) {
  %s = tile.stage %x[0, -8] [1, 9] into shared wrapped : memref<4x8xf32> -> memref<9xf32, 3 : i64>
}

// -----

// CHECK: tile.stage of memref<4x8xf32>: expected buffers(1) to buffers(4), got 5
tile.kernel @k(%x: memref<4x8xf32>) grid(1) block(1) {
  %s = tile.stage %x[0, 0] [1, 8] into shared buffers(5) : memref<4x8xf32> -> memref<8xf32, 3 : i64>
}

// -----

// CHECK: tile.stage of memref<4x8xf32>: a transposed slab needs two dims larger than 1
tile.kernel @k(%x: memref<4x8xf32>) grid(1) block(1) {
  %s = tile.stage %x[0, 0] [1, 8] into shared transposed : memref<4x8xf32> -> memref<8xf32, 3 : i64>
}

// -----

// CHECK: tile.stage of memref<4x8xf32>: expected result type memref<8x4xf32, 3 : i64>, got memref<4x8xf32, 3 : i64>
tile.kernel @k(%x: memref<4x8xf32>) grid(1) block(1) {
  %s = tile.stage %x[0, 0] [4, 8] into shared transposed : memref<4x8xf32> -> memref<4x8xf32, 3 : i64>
}

// -----

// CHECK: tile.stage of memref<4x8xf32>: expected a non-negative pad, got -1
tile.kernel @k(%x: memref<4x8xf32>) grid(1) block(1) {
  %s = tile.stage %x[0, 0] [1, 8] into shared pad(-1) : memref<4x8xf32> -> memref<7xf32, 3 : i64>
}

// -----

// CHECK: tile.stage of memref<4x8xf32>: expected result type memref<4x9xf32, 3 : i64>, got memref<4x8xf32, 3 : i64>
tile.kernel @k(%x: memref<4x8xf32>) grid(1) block(1) {
  %s = tile.stage %x[0, 0] [4, 8] into shared pad(1) : memref<4x8xf32> -> memref<4x8xf32, 3 : i64>
}

// -----

// CHECK: tile.stage of memref<65536xf32>: the staged slab takes 262144 bytes, more than the 232448 of shared memory
tile.kernel @k(%x: memref<65536xf32>) grid(1) block(1) {
  %s = tile.stage %x[0] [65536] into shared : memref<65536xf32> -> memref<65536xf32, 3 : i64>
}

// -----

// CHECK: tile.stage of memref<4x8xf32>: expected to be at block level or inside thread loops that cover the whole block, got a thread.x loop of 16 iterations for 32 threads
tile.kernel @k(%x: memref<4x8xf32>) grid(1) block(32) {
  tile.for %t = 0 to 16 bind(thread.x) {
    %s = tile.stage %x[0, 0] [1, 8] into shared : memref<4x8xf32> -> memref<8xf32, 3 : i64>
  }
}

// -----

// CHECK: tile.combine add over thread.y: expected a combine over thread.x (the only one lowered)
tile.kernel @k(%x: memref<4xf32>) grid(1) block(1, 32) {
  %z = arith.constant 0.000000e+00 : f32
  tile.for %t = 0 to 32 bind(thread.y) {
    %s = tile.combine add %z over thread.y : f32
  }
}

// -----

// CHECK: tile.combine add over thread.x: expected to be inside a loop bound to thread.x
tile.kernel @k(%x: memref<4xf32>) grid(1) block(32) {
  %z = arith.constant 0.000000e+00 : f32
  %s = tile.combine add %z over thread.x : f32
}

// -----

// CHECK: tile.combine add over thread.x: expected the loops inside its thread.x loop to have static bounds, so that every thread reaches it
tile.kernel @k(%x: memref<4xf32>) grid(1) block(32) {
  %z = arith.constant 0.000000e+00 : f32
  tile.for %t = 0 to 32 bind(thread.x) {
    tile.for %i = %t to 100 step 32 bind(serial) {
      %s = tile.combine add %z over thread.x : f32
    }
  }
}

// -----

// CHECK: tile.combine max over thread.x: expected the enclosing thread.x loop to cover the whole block (16 iterations for 32 threads)
tile.kernel @k(%x: memref<4xf32>) grid(1) block(32) {
  %z = arith.constant 0.000000e+00 : f32
  tile.for %t = 0 to 16 bind(thread.x) {
    %s = tile.combine max %z over thread.x : f32
  }
}

// -----

// CHECK: tile.combine add over thread.x: expected the block's x size to be a power of two up to 32 or a multiple of 32, got 48
tile.kernel @k(%x: memref<4xf32>) grid(1) block(48) {
  %z = arith.constant 0.000000e+00 : f32
  tile.for %t = 0 to 48 bind(thread.x) {
    %s = tile.combine add %z over thread.x : f32
  }
}

// -----

// CHECK: tile.combine add over thread.x: expected stride to be a power of two under the lanes combined (8, at most a warp), got 8
tile.kernel @k(%x: memref<4xf32>) grid(1) block(8) {
  %z = arith.constant 0.000000e+00 : f32
  tile.for %t = 0 to 8 bind(thread.x) {
    %s = tile.combine add %z over thread.x lanes 8 stride 8 : f32
  }
}

// -----

// CHECK: tile.launch: no kernel named @nope
func.func @main(%x: memref<4xf32>) {
  tile.launch @nope(%x) : memref<4xf32>
  func.return
}

// -----

// CHECK: tile.launch @k: expected arguments ['memref<4xf32>'], got ['memref<8xf32>']
tile.kernel @k(%x: memref<4xf32>) grid(1) block(1) {
}
func.func @main(%x: memref<8xf32>) {
  tile.launch @k(%x) : memref<8xf32>
  func.return
}

// -----

// CHECK: tile.fragment_load a: expected a 2-D+ memref of f16 or bf16, got memref<16x16xf32>
tile.kernel @k(%x: memref<16x16xf32>) grid(1) block(32) {
  %c0 = arith.constant 0 : index
  tile.for %l = 0 to 32 bind(thread.x) {
    %a0, %a1, %a2, %a3 = tile.fragment_load a %x[%c0, %c0] lane(%l) : memref<16x16xf32> -> i32, i32, i32, i32
  }
}

// -----

// CHECK: tile.fragment_load b_kn: expected 2 i32 results
tile.kernel @k(%x: memref<16x16xf16>) grid(1) block(32) {
  %c0 = arith.constant 0 : index
  tile.for %l = 0 to 32 bind(thread.x) {
    %a0, %a1, %a2, %a3 = tile.fragment_load b_kn %x[%c0, %c0] lane(%l) : memref<16x16xf16> -> i32, i32, i32, i32
  }
}

// -----

// CHECK: tile.mma: expected type f16 or bf16, got f32
tile.kernel @k(%x: memref<16x16xf16>) grid(1) block(32) {
  %c0 = arith.constant 0 : index
  %z = arith.constant 0.000000e+00 : f32
  %i = arith.constant 0 : i32
  tile.for %l = 0 to 32 bind(thread.x) {
    %d0, %d1, %d2, %d3 = tile.mma f32 %i, %i, %i, %i, %i, %i, %z, %z, %z, %z
  }
}

// -----

// A stage inside thread loops that cover the whole block, in a static loop: allowed; an scf.if
// around it is not (some threads would skip its barrier).
// CHECK: tile.stage of memref<4x8xf32>: expected no 'scf.if' around it
tile.kernel @k(%x: memref<4x8xf32>) grid(1) block(32) {
  %t = arith.constant true
  tile.for %l = 0 to 32 bind(thread.x) {
    tile.for %c = 0 to 4 bind(serial) {
      %ok = tile.stage %x[0, 0] [1, 8] into shared : memref<4x8xf32> -> memref<8xf32, 3 : i64>
    }
    scf.if %t {
      %s = tile.stage %x[0, 0] [1, 8] into shared : memref<4x8xf32> -> memref<8xf32, 3 : i64>
    }
  }
}

// -----

// A knob value outside its range: the plan verifier names the knob.
// CHECK: knob threads: expected a multiple of 32 in [32, 1024], got 300
tile.kernel @k(%x: memref<4xf32>) grid(1) block(1) plan pointwise(chain = [4], leaf = true) {grid_dims = 3, leave_innermost = true, chunk = 0, threads = 300, stage_inputs = reused, copy = sync, unroll = 32} {
}

// -----

// CHECK: tile.kernel @k: done step 'tile-split-k' is not a step of a pointwise plan (tile-map-grid, tile-map-threads, tile-stage-inputs, tile-cp-async, tile-unroll)
tile.kernel @k(%x: memref<4xf32>) grid(1) block(1) plan pointwise(chain = [4], leaf = true) {grid_dims = 3, leave_innermost = true, chunk = 0, threads = 256, stage_inputs = reused, copy = sync, unroll = 32} done ["tile-split-k"] {
}

// -----

// CHECK: tile.kernel @k: expected no done steps without a plan
tile.kernel @k(%x: memref<4xf32>) grid(1) block(1) done ["tile-map-grid"] {
}

// -----

// CHECK: tile.gather: expected one index argument a dim
tile.kernel @k(%x: memref<4x8xf16>) grid(1) block(1) {
  %g = tile.gather {
  ^bb0(%i: index):
    %v = loop.load %x[%i, %i] : memref<4x8xf16>
    tile.yield %v : f16
  } : memref<4x8xf16>
}

// -----

// CHECK: tile.gather: expected the region to yield one element
tile.kernel @k(%x: memref<4x8xf16>) grid(1) block(1) {
  %g = tile.gather {
  ^bb0(%i: index, %j: index):
    %v = loop.load %x[%i, %j] : memref<4x8xf16>
    %w = arith.extf %v : f16 to f32
    tile.yield %w : f32
  } : memref<4x8xf16>
}
