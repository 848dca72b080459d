// RUN: deplo-opt %s -p to-kernel | filecheck %s

// A loop that stops at a run-time value (`min(%n, 8)`) has no extent to map to threads or
// plan by: the planner takes it as unknown and it stays a serial loop (the planner compared
// None with the block size: a TypeError traceback).
// CHECK-LABEL: kernel.func @k(%x: memref<8xf32>) grid(1, 1, 1) block(1, 1, 1) {
// CHECK:         %[[B:.*]] = arith.minsi %n, %{{.*}} : index
// CHECK-NEXT:    scf.for %i = %{{.*}} to %[[B]] step %{{.*}} {
// CHECK-NEXT:      %v = memref.load %x[%i] : memref<8xf32>
// CHECK-NEXT:      memref.store %v, %x[%i] : memref<8xf32>
tile.kernel @k(%x: memref<8xf32>) grid(1) block(1) {
  %n = arith.constant 5 : index
  tile.for %i = 0 to min(%n, 8) bind(serial) {
    %v = loop.load %x[%i] : memref<8xf32>
    loop.store %v, %x[%i] : memref<8xf32>
  }
}
