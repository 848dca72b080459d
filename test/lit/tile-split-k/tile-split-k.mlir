// RUN: deplo-opt %s --split-input-file -p loop-to-tile,tile-split-k | filecheck %s
// RUN: deplo-opt %s --split-input-file -p "loop-to-tile,tile-split-k{splits=2},tile-map-2d" | filecheck %s --check-prefix=TWO

// 64 x 64 outputs, K = 4096: one 64 x 64 tile of outputs would be one block; the heuristic
// splits K in 16 slices of 256. @matmul adds one slice per split and stores the partial sum;
// @matmul_sum adds the 16 partials (from the original init) and runs the epilogue (relu); the
// host allocates the partials and launches both.
// CHECK-LABEL: tile.kernel @matmul({{.*}}, %out: memref<64x64xf32>, %partials: memref<16x64x64xf32>) grid(1, 1, 1) block(1, 1, 1) schedule ["tile-split-k{splits=16}"] {
// CHECK:         tile.for %split = 0 to 16 bind(serial) {
// CHECK-NEXT:      tile.for %a0 = 0 to 64 bind(serial) {
// CHECK-NEXT:        tile.for %a1 = 0 to 64 bind(serial) {
// CHECK-NEXT:          %c256 = arith.constant 256 : index
// CHECK-NEXT:          %k0 = arith.muli %split, %c256 : index
// CHECK-NEXT:          %s = tile.for %r0 = 0 to 256 bind(serial) iter(%acc = %zero) -> f32 {
// CHECK-NEXT:            %r0_1 = arith.addi %k0, %r0 : index
// CHECK-NEXT:            loop.load %x0[%a0, %r0_1]
// CHECK:               loop.store %s, %partials[%split, %a0, %a1] : memref<16x64x64xf32>
// CHECK-NOT:           arith.maximumf
// CHECK-LABEL: tile.kernel @matmul_sum({{.*}}, %partials: memref<16x64x64xf32>) grid(1, 1, 1) block(1, 1, 1) schedule ["tile-split-k{splits=16}"] {
// CHECK:             %s = tile.for %split = 0 to 16 bind(serial) iter(%acc = %zero) -> f32 {
// CHECK-NEXT:          %[[P:.*]] = loop.load %partials[%split, %a0, %a1] : memref<16x64x64xf32>
// CHECK-NEXT:          %[[N:.*]] = arith.addf %acc, %[[P]] : f32
// CHECK-NEXT:          tile.yield %[[N]] : f32
// CHECK:             %r = arith.maximumf %s, %zero : f32
// CHECK-NEXT:        loop.store %r, %out[%a0, %a1] : memref<64x64xf32>
// CHECK-LABEL: func.func @main
// CHECK:         %partials = memref.alloc() : memref<16x64x64xf32>
// CHECK-NEXT:    tile.launch @matmul(%x0, %x1, %out, %partials)
// CHECK-NEXT:    tile.launch @matmul_sum(%x0, %x1, %out, %partials)
// Two splits, then 2-D blocks: the split is on block.z (where a batch would be).
// TWO-LABEL:   tile.kernel @matmul({{.*}}) grid(4, 4, 2) block(16, 16, 1) schedule ["tile-split-k{splits=2}", "tile-map-2d{threads-m=16 threads-n=16}"] {
// TWO:           tile.for %split = 0 to 2 bind(block.z) {
// TWO-LABEL:   tile.kernel @matmul_sum

builtin.module {
  loop.kernel @matmul(%x0: memref<64x4096xf32>, %x1: memref<4096x64xf32>, %out: memref<64x64xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    loop.for %a0 = 0 to 64 free {
      loop.for %a1 = 0 to 64 free {
        %s = loop.for %r0 = 0 to 4096 reduce iter(%acc = %zero) -> f32 {
          %a = loop.load %x0[%a0, %r0] : memref<64x4096xf32>
          %b = loop.load %x1[%r0, %a1] : memref<4096x64xf32>
          %p = arith.mulf %a, %b : f32
          %n = arith.addf %acc, %p : f32
          loop.yield %n : f32
        }
        %r = arith.maximumf %s, %zero : f32
        loop.store %r, %out[%a0, %a1] : memref<64x64xf32>
      }
    }
  }
  func.func @main(%x0: memref<64x4096xf32>, %x1: memref<4096x64xf32>) -> memref<64x64xf32> {
    %out = memref.alloc() : memref<64x64xf32>
    loop.launch @matmul(%x0, %x1, %out) : memref<64x4096xf32>, memref<4096x64xf32>, memref<64x64xf32>
    func.return %out : memref<64x64xf32>
  }
}

// -----

// Many outputs (512 x 512: 64 blocks of 64 x 64 already) or a short K: no split by default.
// CHECK-LABEL: tile.kernel @negative_wide({{.*}}) schedule [] {
// CHECK-LABEL: tile.kernel @negative_short({{.*}}) schedule [] {
// TWO-LABEL:   tile.kernel @negative_wide({{.*}}) schedule ["tile-split-k{splits=2}", "tile-map-2d
// TWO-LABEL:   tile.kernel @negative_short({{.*}}) schedule ["tile-split-k{splits=2}", "tile-map-2d

builtin.module {
  loop.kernel @negative_wide(%x0: memref<512x4096xf32>, %x1: memref<4096x512xf32>, %out: memref<512x512xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    loop.for %a0 = 0 to 512 free {
      loop.for %a1 = 0 to 512 free {
        %s = loop.for %r0 = 0 to 4096 reduce iter(%acc = %zero) -> f32 {
          %a = loop.load %x0[%a0, %r0] : memref<512x4096xf32>
          %b = loop.load %x1[%r0, %a1] : memref<4096x512xf32>
          %p = arith.mulf %a, %b : f32
          %n = arith.addf %acc, %p : f32
          loop.yield %n : f32
        }
        loop.store %s, %out[%a0, %a1] : memref<512x512xf32>
      }
    }
  }
  loop.kernel @negative_short(%x0: memref<64x512xf32>, %x1: memref<512x64xf32>, %out: memref<64x64xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    loop.for %a0 = 0 to 64 free {
      loop.for %a1 = 0 to 64 free {
        %s = loop.for %r0 = 0 to 512 reduce iter(%acc = %zero) -> f32 {
          %a = loop.load %x0[%a0, %r0] : memref<64x512xf32>
          %b = loop.load %x1[%r0, %a1] : memref<512x64xf32>
          %p = arith.mulf %a, %b : f32
          %n = arith.addf %acc, %p : f32
          loop.yield %n : f32
        }
        loop.store %s, %out[%a0, %a1] : memref<64x64xf32>
      }
    }
  }
  func.func @main(%x0: memref<512x4096xf32>, %x1: memref<4096x512xf32>, %y0: memref<64x512xf32>, %y1: memref<512x64xf32>) -> memref<64x64xf32> {
    %out = memref.alloc() : memref<512x512xf32>
    loop.launch @negative_wide(%x0, %x1, %out) : memref<512x4096xf32>, memref<4096x512xf32>, memref<512x512xf32>
    %out2 = memref.alloc() : memref<64x64xf32>
    loop.launch @negative_short(%y0, %y1, %out2) : memref<64x512xf32>, memref<512x64xf32>, memref<64x64xf32>
    func.return %out2 : memref<64x64xf32>
  }
}
