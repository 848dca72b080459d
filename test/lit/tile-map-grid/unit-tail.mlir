// RUN: deplo-opt %s -p tile-map-grid,tile-map-threads | filecheck %s

// A trailing dim of 1 ([6, 5, 3, 1]: a keepdim result, a 1x1 conv's weight) is no work for
// threads: the loop around it is left for them (before: the grid took 3 x 5 x 6 blocks and the
// threads the loop of one iteration, blocks of one thread).
// CHECK-LABEL: tile.kernel @exp(
// CHECK-SAME:      grid(5, 6, 1) block(32, 1, 1)
// CHECK:           tile.for %a0 = 0 to 6 bind(block.y) {
// CHECK-NEXT:        tile.for %a1 = 0 to 5 bind(block.x) {
// CHECK-NEXT:          tile.for %a2 = 0 to 3 bind(thread.x) {
// CHECK-NEXT:            tile.for %a3 = 0 to 1 bind(serial) {
builtin.module {
  tile.kernel @exp(%x: memref<6x5x3x1xf32>, %out: memref<6x5x3x1xf32>) grid(1, 1, 1) block(1, 1, 1) plan pointwise(chain = [6, 5, 3, 1], leaf = true) {grid_dims = 3, leave_innermost = true, chunk = 0, threads = 256, stage_inputs = reused, copy = sync, unroll = 32} {
    tile.for %a0 = 0 to 6 bind(serial) {
      tile.for %a1 = 0 to 5 bind(serial) {
        tile.for %a2 = 0 to 3 bind(serial) {
          tile.for %a3 = 0 to 1 bind(serial) {
            %1 = loop.load %x[%a0, %a1, %a2, %a3] : memref<6x5x3x1xf32>
            %2 = math.exp %1 : f32
            loop.store %2, %out[%a0, %a1, %a2, %a3] : memref<6x5x3x1xf32>
          }
        }
      }
    }
  }
}
