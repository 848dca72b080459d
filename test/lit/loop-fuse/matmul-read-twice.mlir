// RUN: deplo-opt %s -p loop-fuse | filecheck %s

// A consumer that reads a matmul's output in two passes (a row's max, then its sum of exp: a
// softmax of x @ w without P.V after it). Moved in, the matmul's K loop would run once per
// pass (twice its FLOPs, on a row plan); it stays a kernel of its own, written once.
// CHECK-LABEL: loop.kernel @matmul(
// CHECK:           loop.for %k = 0 to 32 reduce
// CHECK-LABEL: loop.kernel @rows(%t: memref<48x24xf32>, %out: memref<48xf32>) {
// CHECK-NOT:       0 to 32 reduce
// CHECK-LABEL: func.func @main(
// CHECK:         loop.launch @matmul(
// CHECK:         loop.launch @rows(
builtin.module {
  loop.kernel @matmul(%x: memref<48x32xf32>, %w: memref<32x24xf32>, %out: memref<48x24xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    loop.for %i = 0 to 48 free {
      loop.for %j = 0 to 24 free {
        %s = loop.for %k = 0 to 32 reduce iter(%acc = %zero) -> f32 {
          %a = loop.load %x[%i, %k] : memref<48x32xf32>
          %b = loop.load %w[%k, %j] : memref<32x24xf32>
          %p = arith.mulf %a, %b : f32
          %n = arith.addf %acc, %p : f32
          loop.yield %n : f32
        }
        loop.store %s, %out[%i, %j] : memref<48x24xf32>
      }
    }
  }
  loop.kernel @rows(%t: memref<48x24xf32>, %out: memref<48xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    %ninf = arith.constant 0xff800000 : f32
    loop.for %i = 0 to 48 free {
      %m = loop.for %r = 0 to 24 reduce iter(%a = %ninf) -> f32 {
        %v = loop.load %t[%i, %r] : memref<48x24xf32>
        %n = arith.maximumf %a, %v : f32
        loop.yield %n : f32
      }
      %l = loop.for %q = 0 to 24 reduce iter(%b = %zero) -> f32 {
        %v2 = loop.load %t[%i, %q] : memref<48x24xf32>
        %d = arith.subf %v2, %m : f32
        %e = math.exp %d : f32
        %s = arith.addf %b, %e : f32
        loop.yield %s : f32
      }
      loop.store %l, %out[%i] : memref<48xf32>
    }
  }
  func.func @main(%x: memref<48x32xf32>, %w: memref<32x24xf32>) -> memref<48xf32> {
    %t = memref.alloc() : memref<48x24xf32>
    loop.launch @matmul(%x, %w, %t) : memref<48x32xf32>, memref<32x24xf32>, memref<48x24xf32>
    %out = memref.alloc() : memref<48xf32>
    loop.launch @rows(%t, %out) : memref<48x24xf32>, memref<48xf32>
    func.return %out : memref<48xf32>
  }
}
