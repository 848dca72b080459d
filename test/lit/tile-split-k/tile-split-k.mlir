// RUN: deplo-opt %s --split-input-file -p tile-split-k | filecheck %s
// RUN: deplo-opt %s --split-input-file -p 'tile-split-k{splits=128}' | filecheck %s --check-prefix=OPT
// RUN: not deplo-opt %s --split-input-file -p 'tile-split-k{splits=3}' 2>&1 | filecheck %s --check-prefix=ERR

// 64 x 64 outputs, K = 4096: one wave of 64 x 64 tiles would leave most SMs idle, so the plan
// splits K in 32 slices of 128. @matmul adds one slice per split and stores the partial sum;
// @matmul_sum adds the 32 partials (from the original init) and runs the epilogue (relu); the
// host allocates the partials and launches both. @matmul keeps its plan; @matmul_sum gets one of
// its own (a sum over the splits: a thread an output), keyed after its parent.
// CHECK-LABEL: tile.kernel @matmul(
// CHECK-SAME:      %out: memref<64x64xf32>, %partials: memref<32x64x64xf32>) grid(1, 1, 1) block(1, 1, 1) key "9b1c54824562f52d"
// CHECK-SAME:      {splits = 32,
// CHECK-SAME:      done ["tile-split-k"] {
// CHECK:         tile.for %[[SPLIT:.*]] = 0 to 32 bind(serial) {
// CHECK-NEXT:      tile.for %[[I:.*]] = 0 to 64 bind(serial) {
// CHECK-NEXT:        tile.for %[[J:.*]] = 0 to 64 bind(serial) {
// CHECK-NEXT:          %[[C128:.*]] = arith.constant 128 : index
// CHECK-NEXT:          %[[K0:.*]] = arith.muli
// CHECK-SAME:              %[[SPLIT]], %[[C128]] : index
// CHECK-NEXT:          %[[S:.*]] = tile.for
// CHECK-SAME:              %[[K:.*]] = 0 to 128 bind(serial) iter(%{{.*}} = %zero) -> f32 {
// CHECK-NEXT:            %[[KG:.*]] = arith.addi
// CHECK-SAME:                %[[K0]], %[[K]] : index
// CHECK-NEXT:            loop.load %x[%[[I]], %[[KG]]]
// CHECK-NEXT:            loop.load %w[%[[KG]], %[[J]]]
// CHECK:               loop.store %[[S]], %partials[%[[SPLIT]], %[[I]], %[[J]]] : memref<32x64x64xf32>
// CHECK-NOT:           arith.maximumf
// CHECK-LABEL: tile.kernel @matmul_sum(
// CHECK-SAME:      %partials: memref<32x64x64xf32>) grid(1, 1, 1) block(1, 1, 1) key "9b1c54824562f52d-sum"
// CHECK-SAME:      plan pointwise(chain = [64, 64], leaf = true) {
// CHECK-NOT:       done
// CHECK-SAME:      {
// CHECK:             %[[T:.*]] = tile.for
// CHECK-SAME:            %[[SP:.*]] = 0 to 32 bind(serial) iter(
// CHECK-SAME:            %[[ACC:.*]] = %zero) -> f32 {
// CHECK-NEXT:          %[[P:.*]] = loop.load
// CHECK-SAME:              %partials[%[[SP]],
// CHECK-SAME:              %[[I2:.*]],
// CHECK-SAME:              %[[J2:.*]]] : memref<32x64x64xf32>
// CHECK-NEXT:          %[[N:.*]] = arith.addf
// CHECK-SAME:              %[[ACC]], %[[P]] : f32
// CHECK-NEXT:          tile.yield %[[N]] : f32
// CHECK:             %[[R:.*]] = arith.maximumf
// CHECK-SAME:            %[[T]], %zero : f32
// CHECK-NEXT:        loop.store %[[R]], %out[%[[I2]], %[[J2]]] : memref<64x64xf32>
// CHECK-LABEL: func.func @main
// CHECK:         %partials = memref.alloc() : memref<32x64x64xf32>
// CHECK-NEXT:    tile.launch @matmul(%x, %w, %out, %partials)
// CHECK-NEXT:    tile.launch @matmul_sum(%x, %w, %out, %partials)
// CHECK-NEXT:    func.return %out

// The option sets the split (slices of 32); the plan's later knobs are re-planned around it
// (K chunks of 16: two per slice). With 128 partials to add, the sum kernel's plan is a row
// reduction over them (a block's threads share each output's 128).
// OPT-LABEL:   tile.kernel @matmul(
// OPT-SAME:        %partials: memref<128x64x64xf32>)
// OPT-SAME:        {splits = 128, {{.*}} k_chunk = 16, stage = true,
// OPT-SAME:        done ["tile-split-k"]
// OPT:             tile.for %{{.*}} = 0 to 32 bind(serial) iter
// OPT-LABEL:   tile.kernel @matmul_sum(
// OPT-SAME:        key "9b1c54824562f52d-sum" plan row_reduce(rows = [64, 64], extent = 128)

// An illegal option names the pass, the option, the kernel and the knob.
// ERR: deplo-opt: error: tile-split-k{splits=3}: kernel @matmul: knob splits: 3: expected a divisor of K = 4096
// ERR-NOT: error

builtin.module {
  tile.kernel @matmul(%x: memref<64x4096xf32>, %w: memref<4096x64xf32>, %out: memref<64x64xf32>) grid(1, 1, 1) block(1, 1, 1) key "9b1c54824562f52d" plan matmul(chain = [64, 64], k = 4096, tensor_cores = false, splittable = true, slabs = [ik4, kj4]) {splits = 32, mma = false, reg_m = 4, reg_n = 4, interleave = false, threads_m = 8, threads_n = 8, k_chunk = 32, stage = true, pad = 4, buffers = 2, copy = cp_async, unroll = 32} {
    %zero = arith.constant 0.000000e+00 : f32
    tile.for %i = 0 to 64 bind(serial) {
      tile.for %j = 0 to 64 bind(serial) {
        %s = tile.for %k = 0 to 4096 bind(serial) iter(%acc = %zero) -> f32 {
          %xv = loop.load %x[%i, %k] : memref<64x4096xf32>
          %wv = loop.load %w[%k, %j] : memref<4096x64xf32>
          %p = arith.mulf %xv, %wv : f32
          %n = arith.addf %acc, %p : f32
          tile.yield %n : f32
        }
        %r = arith.maximumf %s, %zero : f32
        loop.store %r, %out[%i, %j] : memref<64x64xf32>
      }
    }
  }
  func.func @main(%x: memref<64x4096xf32>, %w: memref<4096x64xf32>) -> memref<64x64xf32> {
    %out = memref.alloc() : memref<64x64xf32>
    tile.launch @matmul(%x, %w, %out) : memref<64x4096xf32>, memref<4096x64xf32>, memref<64x64xf32>
    func.return %out : memref<64x64xf32>
  }
}

// -----

// K = 512 is too short to pay for a second kernel: the plan keeps one slice (splits = 1). The
// step is recorded as done and nothing else changes: no partials, one launch.
// CHECK-LABEL: tile.kernel @negative_splits_one(
// CHECK-SAME:      %out: memref<64x64xf32>) grid(1, 1, 1) block(1, 1, 1)
// CHECK-SAME:      done ["tile-split-k"] {
// CHECK:           tile.for %{{.*}} = 0 to 512 bind(serial) iter
// CHECK-NOT:   tile.kernel
// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %out = memref.alloc()
// CHECK-NEXT:    tile.launch @negative_splits_one(%x, %w, %out)
// CHECK-NEXT:    func.return
// The option overrides the plan (slices of 4: too short to chunk, so nothing is staged).
// OPT-LABEL:   tile.kernel @negative_splits_one(
// OPT-SAME:        %partials: memref<128x64x64xf32>)
// OPT-SAME:        {splits = 128, {{.*}} k_chunk = 0, stage = false, pad = 0, buffers = 1, copy = sync,
// OPT-LABEL:   tile.kernel @negative_splits_one_sum(

builtin.module {
  tile.kernel @negative_splits_one(%x: memref<64x512xf32>, %w: memref<512x64xf32>, %out: memref<64x64xf32>) grid(1, 1, 1) block(1, 1, 1) plan matmul(chain = [64, 64], k = 512, tensor_cores = false, splittable = true, slabs = [ik4, kj4]) {splits = 1, mma = false, reg_m = 4, reg_n = 4, interleave = false, threads_m = 8, threads_n = 8, k_chunk = 32, stage = true, pad = 4, buffers = 2, copy = cp_async, unroll = 32} {
    %zero = arith.constant 0.000000e+00 : f32
    tile.for %i = 0 to 64 bind(serial) {
      tile.for %j = 0 to 64 bind(serial) {
        %s = tile.for %k = 0 to 512 bind(serial) iter(%acc = %zero) -> f32 {
          %xv = loop.load %x[%i, %k] : memref<64x512xf32>
          %wv = loop.load %w[%k, %j] : memref<512x64xf32>
          %p = arith.mulf %xv, %wv : f32
          %n = arith.addf %acc, %p : f32
          tile.yield %n : f32
        }
        loop.store %s, %out[%i, %j] : memref<64x64xf32>
      }
    }
  }
  func.func @main(%x: memref<64x512xf32>, %w: memref<512x64xf32>) -> memref<64x64xf32> {
    %out = memref.alloc() : memref<64x64xf32>
    tile.launch @negative_splits_one(%x, %w, %out) : memref<64x512xf32>, memref<512x64xf32>, memref<64x64xf32>
    func.return %out : memref<64x64xf32>
  }
}

// -----

// The same matmul as @matmul with a pointwise plan: the plan decides, not the shape. A pointwise
// plan has no split step, so the kernel is left alone (not even marked done), with the option too.
// CHECK-LABEL: tile.kernel @negative_pointwise(
// CHECK-SAME:      %out: memref<64x64xf32>) grid(1, 1, 1) block(1, 1, 1) plan pointwise(chain = [64, 64], leaf = true)
// CHECK-NOT:       done
// CHECK-SAME:      {
// CHECK:           tile.for %{{.*}} = 0 to 4096 bind(serial) iter
// CHECK-NOT:   tile.kernel
// OPT-LABEL:   tile.kernel @negative_pointwise(
// OPT-SAME:        %out: memref<64x64xf32>) grid(1, 1, 1) block(1, 1, 1) plan pointwise(chain = [64, 64], leaf = true)
// OPT-NOT:         done
// OPT-NOT:     tile.kernel

builtin.module {
  tile.kernel @negative_pointwise(%x: memref<64x4096xf32>, %w: memref<4096x64xf32>, %out: memref<64x64xf32>) grid(1, 1, 1) block(1, 1, 1) plan pointwise(chain = [64, 64], leaf = true) {grid_dims = 3, leave_innermost = true, chunk = 0, threads = 256, stage_inputs = reused, copy = sync, unroll = 32} {
    %zero = arith.constant 0.000000e+00 : f32
    tile.for %i = 0 to 64 bind(serial) {
      tile.for %j = 0 to 64 bind(serial) {
        %s = tile.for %k = 0 to 4096 bind(serial) iter(%acc = %zero) -> f32 {
          %xv = loop.load %x[%i, %k] : memref<64x4096xf32>
          %wv = loop.load %w[%k, %j] : memref<4096x64xf32>
          %p = arith.mulf %xv, %wv : f32
          %n = arith.addf %acc, %p : f32
          tile.yield %n : f32
        }
        loop.store %s, %out[%i, %j] : memref<64x64xf32>
      }
    }
  }
  func.func @main(%x: memref<64x4096xf32>, %w: memref<4096x64xf32>) -> memref<64x64xf32> {
    %out = memref.alloc() : memref<64x64xf32>
    tile.launch @negative_pointwise(%x, %w, %out) : memref<64x4096xf32>, memref<4096x64xf32>, memref<64x64xf32>
    func.return %out : memref<64x64xf32>
  }
}

// -----

// Already split (done lists tile-split-k): running the pass again changes nothing, and the option
// agrees with the plan (an option that disagrees is an error: invalid.mlir).
// CHECK-LABEL: tile.kernel @negative_done(
// CHECK-SAME:      %partials: memref<128x64x64xf32>) grid(1, 1, 1) block(1, 1, 1)
// CHECK-SAME:      done ["tile-split-k"] {
// CHECK-NEXT:      %zero = arith.constant
// CHECK-NEXT:      tile.for %split = 0 to 128 bind(serial) {
// CHECK-NEXT:        tile.for %i = 0 to 64 bind(serial) {
// CHECK-NOT:     tile.for %{{.*}} = 0 to 128 bind(serial) {
// CHECK-NOT:   tile.kernel
// CHECK-LABEL: func.func @main
// CHECK:         tile.launch @negative_done(%x, %w, %out, %partials)
// CHECK-NEXT:    func.return
// OPT-LABEL:   tile.kernel @negative_done(
// OPT-SAME:        %partials: memref<128x64x64xf32>) grid(1, 1, 1) block(1, 1, 1)
// OPT-SAME:        done ["tile-split-k"] {
// OPT-NOT:     tile.kernel

builtin.module {
  tile.kernel @negative_done(%x: memref<64x4096xf32>, %w: memref<4096x64xf32>, %out: memref<64x64xf32>, %partials: memref<128x64x64xf32>) grid(1, 1, 1) block(1, 1, 1) plan matmul(chain = [64, 64], k = 4096, tensor_cores = false, splittable = true, slabs = [ik4, kj4]) {splits = 128, mma = false, reg_m = 4, reg_n = 4, interleave = false, threads_m = 8, threads_n = 8, k_chunk = 16, stage = true, pad = 4, buffers = 2, copy = cp_async, unroll = 32} done ["tile-split-k"] {
    %zero = arith.constant 0.000000e+00 : f32
    tile.for %split = 0 to 128 bind(serial) {
      tile.for %i = 0 to 64 bind(serial) {
        tile.for %j = 0 to 64 bind(serial) {
          %c32 = arith.constant 32 : index
          %k0 = arith.muli %split, %c32 : index
          %s = tile.for %kk = 0 to 32 bind(serial) iter(%acc = %zero) -> f32 {
            %k = arith.addi %k0, %kk : index
            %xv = loop.load %x[%i, %k] : memref<64x4096xf32>
            %wv = loop.load %w[%k, %j] : memref<4096x64xf32>
            %p = arith.mulf %xv, %wv : f32
            %n = arith.addf %acc, %p : f32
            tile.yield %n : f32
          }
          loop.store %s, %partials[%split, %i, %j] : memref<128x64x64xf32>
        }
      }
    }
  }
  func.func @main(%x: memref<64x4096xf32>, %w: memref<4096x64xf32>) -> memref<64x64xf32> {
    %out = memref.alloc() : memref<64x64xf32>
    %partials = memref.alloc() : memref<128x64x64xf32>
    tile.launch @negative_done(%x, %w, %out, %partials) : memref<64x4096xf32>, memref<4096x64xf32>, memref<64x64xf32>, memref<128x64x64xf32>
    func.return %out : memref<64x64xf32>
  }
}
