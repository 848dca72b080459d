// RUN: deplo-opt %s --split-input-file --verify-diagnostics | filecheck %s

// A serial loop may stop early at an index value: `to min(%n, 8)` prints and parses back.
// CHECK-LABEL: tile.kernel @k(
// CHECK:         tile.for %i = 0 to min(%n, 8) bind(serial) {
tile.kernel @k(%x: memref<8xf32>) grid(1) block(1) {
  %n = arith.constant 5 : index
  tile.for %i = 0 to min(%n, 8) bind(serial) {
    %v = loop.load %x[%i] : memref<8xf32>
    loop.store %v, %x[%i] : memref<8xf32>
  }
}

// -----

// Only a serial loop: the threads or blocks of a bound loop are fixed at launch.
// CHECK: tile.for 0 to 8 bind(thread.x): expected a dynamic upper bound only on a serial loop
tile.kernel @k(%x: memref<8xf32>) grid(1) block(8) {
  %n = arith.constant 5 : index
  tile.for %i = 0 to min(%n, 8) bind(thread.x) {
    %v = loop.load %x[%i] : memref<8xf32>
    loop.store %v, %x[%i] : memref<8xf32>
  }
}
