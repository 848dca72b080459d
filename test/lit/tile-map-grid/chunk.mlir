// RUN: deplo-opt %s --split-input-file -p tile-map-grid | filecheck %s
// RUN: deplo-opt %s --split-input-file -p tile-map-grid,tile-map-threads | filecheck %s --check-prefix=THREADS

// A pointwise plan's chunk: the innermost loop (1000 columns) in chunks of 256 on block.x, the
// rows on block.y; 1000 is not a multiple of 256, so the last chunk's index is clamped and the
// store guarded.
// CHECK-LABEL: tile.kernel @relu(
// CHECK-SAME:      grid(4, 4, 1) block(1, 1, 1)
// CHECK:           tile.for %a0 = 0 to 4 bind(block.y) {
// CHECK-NEXT:        tile.for %a1 = 0 to 4 bind(block.x) {
// CHECK-NEXT:          tile.for %e = 0 to 256 bind(serial) {
// CHECK-NEXT:            %[[C:.*]] = arith.constant 256 : index
// CHECK-NEXT:            %[[B:.*]] = arith.muli %a1, %[[C]] : index
// CHECK-NEXT:            %[[I:.*]] = arith.addi %[[B]], %e : index
// CHECK:                 %in = arith.cmpi ult, %[[I]], %{{.*}} : index
// CHECK:                 %[[K:.*]] = arith.minsi %[[I]], %{{.*}} : index
// CHECK:                 loop.load %x[%a0, %[[K]]]
// CHECK:                 scf.if %in {
// CHECK-NEXT:              loop.store %{{.*}}, %out[%a0, %[[K]]]
// A chunk of one block's threads: a thread an element.
// THREADS-LABEL: tile.kernel @relu(
// THREADS-SAME:      grid(4, 4, 1) block(256, 1, 1)
// THREADS:             tile.for %e = 0 to 256 bind(thread.x) {
builtin.module {
  tile.kernel @relu(%x: memref<4x1000xf32>, %out: memref<4x1000xf32>) grid(1, 1, 1) block(1, 1, 1) plan pointwise(chain = [4, 1000], leaf = true) {grid_dims = 3, leave_innermost = true, chunk = 256, threads = 256, stage_inputs = reused, copy = sync, unroll = 32} {
    %0 = arith.constant 0.000000e+00 : f32
    tile.for %a0 = 0 to 4 bind(serial) {
      tile.for %a1 = 0 to 1000 bind(serial) {
        %1 = loop.load %x[%a0, %a1] : memref<4x1000xf32>
        %2 = arith.maximumf %1, %0 : f32
        loop.store %2, %out[%a0, %a1] : memref<4x1000xf32>
      }
    }
  }
}

// -----

// A chunk that divides the extent needs no clamp or guard; a 1-D kernel gets blocks of threads
// (not one thread per block).
// CHECK-LABEL: tile.kernel @neg(
// CHECK-SAME:      grid(8, 1, 1) block(1, 1, 1)
// CHECK:           tile.for %a0 = 0 to 8 bind(block.x) {
// CHECK-NEXT:        tile.for %e = 0 to 512 bind(serial) {
// CHECK-NOT:           arith.minsi
// CHECK-NOT:           scf.if
// CHECK:               loop.store
// Longer than the block: the threads stride through it (neighbouring lanes, neighbouring
// elements), two elements each.
// THREADS-LABEL: tile.kernel @neg(
// THREADS-SAME:      grid(8, 1, 1) block(256, 1, 1)
// THREADS:             tile.for %t = 0 to 256 bind(thread.x) {
// THREADS-NEXT:          tile.for %e = %t to 512 step 256 bind(serial) {
builtin.module {
  tile.kernel @neg(%x: memref<4096xf32>, %out: memref<4096xf32>) grid(1, 1, 1) block(1, 1, 1) plan pointwise(chain = [4096], leaf = true) {grid_dims = 1, leave_innermost = true, chunk = 512, threads = 256, stage_inputs = reused, copy = sync, unroll = 32} {
    tile.for %a0 = 0 to 4096 bind(serial) {
      %1 = loop.load %x[%a0] : memref<4096xf32>
      %2 = arith.negf %1 : f32
      loop.store %2, %out[%a0] : memref<4096xf32>
    }
  }
}
