// RUN: deplo-opt %s -p 'tile-split-k{split-sum=last_block}' | filecheck %s --check-prefix=LAST
// RUN: deplo-opt %s -p 'tile-split-k{split-sum=last_block},tile-map-2d{threads-m=8 threads-n=8},tile-to-kernel' | filecheck %s --check-prefix=KERNEL
// RUN: deplo-opt %s -p 'tile-split-k{split-sum=last_block},tile-map-2d{threads-m=8 threads-n=8},to-cuda' -t cuda | filecheck %s --check-prefix=CUDA
// RUN: deplo-opt %s -p 'tile-split-k{split-sum=last_block},tile-to-kernel' | filecheck %s --check-prefix=SERIAL

// `split_sum = last_block`: one kernel. After its partial, each split arrives
// (tile.split_last); the last of an output's splits adds the partials up in split order from
// the original init, the same sums as @matmul_sum's, and runs the epilogue. One launch.
// LAST-LABEL:  tile.kernel @matmul(
// LAST-SAME:       %partials: memref<32x64x64xf32>)
// LAST-SAME:       {splits = 32, split_sum = last_block,
// LAST:              loop.store %[[S:.*]], %partials[%[[SPLIT:.*]], %[[I:.*]], %[[J:.*]]] : memref<32x64x64xf32>
// LAST-NEXT:         %last = tile.split_last %partials[%[[SPLIT]]] of 32 : memref<32x64x64xf32>
// LAST-NEXT:         scf.if %last {
// LAST-NEXT:           %total = tile.for %[[SP:.*]] = 0 to 32 bind(serial) iter(%[[ACC:.*]] = %zero) -> f32 {
// LAST-NEXT:             %[[P:.*]] = loop.load %partials[%[[SP]], %[[I]], %[[J]]] : memref<32x64x64xf32>
// LAST-NEXT:             %[[N:.*]] = arith.addf %[[ACC]], %[[P]] : f32
// LAST-NEXT:             tile.yield %[[N]] : f32
// LAST:                %r = arith.maximumf %total, %zero : f32
// LAST-NEXT:           loop.store %r, %out[%[[I]], %[[J]]] : memref<64x64xf32>
// LAST-NOT:    tile.kernel @matmul_sum
// LAST-LABEL:  func.func @main
// LAST:          %partials = memref.alloc() : memref<32x64x64xf32>
// LAST-NEXT:     tile.launch @matmul(%x, %w, %out, %partials)
// LAST-NEXT:     func.return %out


// Lowered: the splits on block.z, one arrival counter a block tile (block.x + 8 block.y); every
// thread arrives after its partial store, the block's last arrival adds the 32 partials.
// KERNEL-LABEL: kernel.func @matmul(
// KERNEL-SAME:      grid(8, 8, 32) block(8, 8, 1)
// KERNEL:           memref.store %{{.*}}, %partials[%bid_z,
// KERNEL:           %last = kernel.arrive_last %slot of 32
// KERNEL-NEXT:      scf.if %last {
// KERNEL:             scf.for %{{.*}} = %c0 to %c32 step %c1 iter_args(
// KERNEL:               memref.load %partials[
// KERNEL:             memref.store %{{.*}}, %out[

// The .cu: the prelude's arrival counters (defined only in a program that arrives) and one call.
// CUDA:         #define KC_ARRIVALS 65536
// CUDA:         __device__ unsigned kc_arrivals[KC_ARRIVALS];
// CUDA:         __global__ void __launch_bounds__(64) matmul(
// CUDA:         kc_arrive_last(

// Lowered before any mapping (one thread walks the splits in order, as `deplo bisect` lowers
// after each pass): the last split is the last one, no counter.
// SERIAL-LABEL: kernel.func @matmul(
// SERIAL:         scf.for %split = %c0 to %c32 step %c1 {
// SERIAL:           %last = arith.cmpi eq, %split, %c31 : index
// SERIAL-NEXT:      scf.if %last {
// SERIAL-NOT:     kernel.arrive_last

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
