// RUN: deplo-opt %s --split-input-file -p tile-map-grid,tile-map-threads,tile-stage-inputs | filecheck %s
// RUN: deplo-opt %s --split-input-file -p tile-map-grid,tile-map-threads,tile-stage-inputs | deplo-opt --split-input-file | filecheck %s
// RUN: deplo-opt %s --split-input-file -p "tile-map-grid{tile-rows=16 chunk=96},tile-map-threads,tile-stage-inputs{stage-inputs=crossed}" | filecheck %s --check-prefix=OPT

// x.t() + y, [96, 64]: x is read across its rows (the threads walk its dim 0). tile_rows = 8
// splits the rows of the output (a0) into blocks of 8 on block.y beside the chunks of 32
// columns (a1) on block.x; both loops over a block's elements go inside, a thread walking the
// 8 rows of its column. x's slab of the tile, [32][8] from (a1 * 32, a0 * 8), is staged
// with a padded row (33 banks apart, not 32) and read at the thread's column and the walked
// row; y, read along its rows, stays in global memory.
// CHECK-LABEL: tile.kernel @add(
// CHECK-SAME:      grid(3, 8, 1) block(32, 1, 1)
// CHECK-SAME:      tile_rows = 8
// CHECK:           tile.for %a0 = 0 to 8 bind(block.y) {
// CHECK-NEXT:        tile.for %a1 = 0 to 3 bind(block.x) {
// CHECK:               %[[X0:.*]] = arith.muli %a1, %{{.*}} : index
// CHECK:               %[[Y0:.*]] = arith.muli %a0, %{{.*}} : index
// CHECK-NEXT:          %[[XS:.*]] = tile.stage %x[%[[X0]], %[[Y0]]] [32, 8] into shared copy(sync) buffers(1) pad(1) : memref<96x64xf32> -> memref<32x9xf32, 3 : i64>
// CHECK-NEXT:          tile.for %e = 0 to 8 bind(serial) {
// CHECK:                 tile.for %e_1 = 0 to 32 bind(thread.x) {
// CHECK:                   loop.load %[[XS]][%e_1, %e] : memref<32x9xf32, 3 : i64>
// CHECK-NEXT:              loop.load %y[%{{.*}}, %{{.*}}] : memref<64x96xf32>
// The options re-plan around 16 rows, chunks of all 96 columns and the crossed stage.
// OPT-LABEL: tile.kernel @add(
// OPT-SAME:      grid(1, 4, 1) block(96, 1, 1)
// OPT:           tile.stage %x[%{{.*}}, %{{.*}}] [96, 16] into shared copy(sync) buffers(1) pad(1) : memref<96x64xf32> -> memref<96x17xf32, 3 : i64>
builtin.module {
  tile.kernel @add(%x: memref<96x64xf32>, %y: memref<64x96xf32>, %out: memref<64x96xf32>) grid(1, 1, 1) block(1, 1, 1) plan pointwise(chain = [64, 96], leaf = true, crossed = 4) {grid_dims = 3, leave_innermost = true, chunk = 32, tile_rows = 8, threads = 256, stage_inputs = crossed, copy = sync, unroll = 32} {
    tile.for %a0 = 0 to 64 bind(serial) {
      tile.for %a1 = 0 to 96 bind(serial) {
        %1 = loop.load %x[%a1, %a0] : memref<96x64xf32>
        %2 = loop.load %y[%a0, %a1] : memref<64x96xf32>
        %3 = arith.addf %1, %2 : f32
        loop.store %3, %out[%a0, %a1] : memref<64x96xf32>
      }
    }
  }
}
