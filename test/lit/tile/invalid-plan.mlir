// RUN: not deplo-opt %s 2>&1 | filecheck %s
// RUN: sed 's/tiling(chain = \[4\]) {}/pointwise(chain = [4], leaf = true) {threads = 256, lanes = 4}/' %s | not deplo-opt 2>&1 | filecheck %s --check-prefix=KNOB

// A plan's class and knobs are checked as they are parsed, at the offending position.
// CHECK: invalid-plan.mlir:[[# @LINE + 3]]:57
// CHECK: unknown plan kind 'tiling'; expected one of matmul, row_reduce, attention, pointwise
// KNOB: unknown knob 'lanes'
tile.kernel @k(%x: memref<4xf32>) grid(1) block(1) plan tiling(chain = [4]) {} {
}
