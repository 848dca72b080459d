// RUN: deplo-opt %s | deplo-opt | filecheck %s
// RUN: deplo-opt %s --print-op-generic | deplo-opt | filecheck %s

// CHECK-LABEL: loop.kernel @relu_matmul(%x: memref<16x64xf32>, %b: memref<64xf32>, %w: memref<64x16xf32>, %out: memref<16x16xf32>) {
// CHECK:         loop.for %a0 = 0 to 16 free {
// CHECK:           %acc = loop.for %a2 = 0 to 64 reduce iter(%s = %zero) -> f32 {
// CHECK:             %bv = loop.load %b[%a0, %a2] map (d0, d1) -> (d1) : memref<64xf32>
// CHECK:             loop.yield %n : f32
// CHECK:           loop.store %r, %out[%a0, %a1] : memref<16x16xf32>
// CHECK:         loop.for %i = 0 to 8 step 2 free {
// CHECK:         %{{.*}}, %q = loop.for %k = 0 to 4 reduce iter(%m = %zero, %l = %zero) -> (f32, f32) {
// CHECK:           %o = loop.private : memref<8xf32>
// CHECK:           loop.for %kk = 0 to 4 reduce iter(%c = %zero) -> f32 {
// CHECK-NEXT:        loop.store %c, %o[%kk] : memref<8xf32>
// CHECK-LABEL: func.func @main
// CHECK:         loop.launch @relu_matmul(%x, %b, %w, %out) : memref<16x64xf32>, memref<64xf32>, memref<64x16xf32>, memref<16x16xf32>
builtin.module {
  loop.kernel @relu_matmul(%x: memref<16x64xf32>, %b: memref<64xf32>, %w: memref<64x16xf32>, %out: memref<16x16xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    loop.for %a0 = 0 to 16 free {
      loop.for %a1 = 0 to 16 free {
        %acc = loop.for %a2 = 0 to 64 reduce iter(%s = %zero) -> f32 {
          %xv = loop.load %x[%a0, %a2] : memref<16x64xf32>
          %bv = loop.load %b[%a0, %a2] map (d0, d1) -> (d1) : memref<64xf32>
          %xb = arith.addf %xv, %bv : f32
          %wv = loop.load %w[%a2, %a1] : memref<64x16xf32>
          %p = arith.mulf %xb, %wv : f32
          %n = arith.addf %s, %p : f32
          loop.yield %n : f32
        }
        %r = arith.maximumf %acc, %zero : f32
        loop.store %r, %out[%a0, %a1] : memref<16x16xf32>
      }
    }
    loop.for %i = 0 to 8 step 2 free {
      %p, %q = loop.for %k = 0 to 4 reduce iter(%m = %zero, %l = %zero) -> (f32, f32) {
        loop.yield %m, %l : f32, f32
      }
      %o = loop.private : memref<8xf32>
      %t = loop.for %kk = 0 to 4 reduce iter(%c = %zero) -> f32 {
        loop.store %c, %o[%kk] : memref<8xf32>
        loop.yield %c : f32
      }
    }
  }
  func.func @main(%x: memref<16x64xf32>, %b: memref<64xf32>, %w: memref<64x16xf32>) -> memref<16x16xf32> {
    %out = memref.alloc() : memref<16x16xf32>
    loop.launch @relu_matmul(%x, %b, %w, %out) : memref<16x64xf32>, memref<64xf32>, memref<64x16xf32>, memref<16x16xf32>
    func.return %out : memref<16x16xf32>
  }
}
