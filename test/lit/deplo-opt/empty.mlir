// RUN: deplo-opt %s -p to-cuda | filecheck %s

// A file with nothing but comments is an empty module, as mlir-opt reads it (not a parse error).

// CHECK:      builtin.module {
// CHECK-NEXT: }
