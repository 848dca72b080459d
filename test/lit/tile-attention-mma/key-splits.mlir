// RUN: deplo-opt %s -p "loop-to-tile,tile-map-grid,tile-attention-mma{warps=1 key-block=16 stage=false key-splits=2}" | filecheck %s
// RUN: deplo-opt %s -p "loop-to-tile,tile-map-grid,tile-attention-mma{warps=1 key-block=16 stage=false key-splits=2}" | deplo-opt | filecheck %s
// RUN: deplo-opt %s -p "loop-to-tile,tile-map-grid,tile-attention-mma{warps=1 key-block=16 stage=false key-splits=2},to-cuda" -t cuda | filecheck %s --check-prefix=CUDA
// RUN: not deplo-opt %s -p "loop-to-tile,tile-map-grid,tile-attention-mma{key-block=16 key-splits=4}" 2>&1 | filecheck %s --check-prefix=EMPTY
// RUN: not deplo-opt %s -p "loop-to-tile,tile-map-grid,tile-attention-mma{key-splits=3}" 2>&1 | filecheck %s --check-prefix=BAD

// Split-KV (`key_splits` 2) of causal GQA sdpa in bf16 (S = 20, D = 16, 16 keys a step): the
// keys in two slices of 16 on block.z. Each slice walks its keys from %kbase to the causal
// stop (capped at the last key), stores its accumulator, m and l (one lane a quad) to the host's scratch buffer
// [slice, batch, head, row block, warp, row of the warp, D + 2], and arrives; the last slice of the row block reads both
// slices' m, rescales by exp(m_s - max) and finishes the rows (the epilogue's divide by l).
// CHECK-LABEL: tile.kernel @sdpa(
// CHECK-SAME:      %slices: memref<2x1x2x2x1x16x18xf32>) grid(2, 2, 2) block(32, 1, 1)
// CHECK-SAME:      key_splits = 2
// CHECK:         tile.for %a2 = 0 to 2 bind(block.x) {
// CHECK-NEXT:      tile.for %ks = 0 to 2 bind(block.z) {
// CHECK-NEXT:        tile.for %w = 0 to 1 bind(thread.y) {
// CHECK-NEXT:          tile.for %l = 0 to 32 bind(thread.x) {
// CHECK:                 %kbase = arith.muli %ks, %c16 : index
// CHECK:                 %[[CAP:.*]] = arith.minsi %kub, %c20 : index
// CHECK-NEXT:            %[[STOP:.*]] = arith.subi %[[CAP]], %kbase : index
// CHECK-NEXT:            {{.*}} = tile.for %k0 = 0 to min(%[[STOP]], 16) step 16 bind(serial)
// CHECK-NEXT:              {{.*}} = arith.addi %k0, %kbase : index
// CHECK:                 tile.combine add %{{.*}} over thread.x lanes 4 : f32
// CHECK:                 %[[QUAD0:.*]] = arith.cmpi eq, %t2, %c0
// CHECK:                 loop.store %{{.*}}, %slices[%ks, %a0, %a1, %a2, %w, %g, %{{.*}}] : memref<2x1x2x2x1x16x18xf32>
// CHECK:                 scf.if %[[QUAD0]] {
// CHECK-NEXT:              loop.store %{{.*}}, %slices[%ks, %a0, %a1, %a2, %w, %g, %c16]
// CHECK-NEXT:              loop.store %{{.*}}, %slices[%ks, %a0, %a1, %a2, %w, %g, %c17]
// CHECK:                 %last = tile.split_last %slices[%ks] of 2 : memref<2x1x2x2x1x16x18xf32>
// CHECK-NEXT:            scf.if %last {
// CHECK-NEXT:              %[[M0:.*]] = loop.load %slices[%c0, %a0, %a1, %a2, %w, %g, %c16]
// CHECK-NEXT:              %[[M1:.*]] = loop.load %slices[%c1, %a0, %a1, %a2, %w, %g, %c16]
// CHECK:                   %[[M:.*]] = arith.maximumf %[[M0]], %[[M1]] : f32
// CHECK:                   arith.divf
// CHECK:                   loop.store %{{.*}}, %out[%a0, %a1, %{{.*}}, %{{.*}}] : memref<1x2x20x16xbf16>
// CHECK:         func.func @main(
// CHECK-NEXT:      %sdpa = memref.alloc() : memref<1x2x20x16xbf16>
// CHECK-NEXT:      %slices = memref.alloc() : memref<2x1x2x2x1x16x18xf32>
// CHECK-NEXT:      tile.launch @sdpa(%x0, %x1, %x2, %sdpa, %slices)

// One launch; the slices of a row block count their arrivals (kernel.arrive_last).
// CUDA:          grid(2, 2, 2) block(32, 1, 1)
// CUDA:          const bool last = kc_arrive_last(slot, 2);

// EMPTY: tile-attention-mma{key-block=16 key-splits=4}: kernel @sdpa: knob key_splits: 4 slices of 20 keys, 16 a step: a slice without a step
// BAD: tile-attention-mma{key-splits=3}: kernel @sdpa: knob key_splits: expected 1, 2, 4, 8 or 16 slices of the keys, got 3

builtin.module {
  loop.kernel @sdpa(%x0: memref<1x2x20x16xbf16>, %x1: memref<1x1x20x16xbf16>, %x2: memref<1x1x20x16xbf16>, %out: memref<1x2x20x16xbf16>) attributes {origin = ["scaled_dot_product_attention: aten.scaled_dot_product_attention at the expression"]} {
    %0 = arith.constant -3.40282347e+38 : f32
    %1 = arith.constant 2.500000e-01 : f32
    %2 = arith.constant 0.000000e+00 : f32
    %3 = arith.constant 0xff800000 : f32
    loop.for %a0 = 0 to 1 free {
      loop.for %a1 = 0 to 2 free {
        loop.for %a2 = 0 to 20 free {
          %acc = loop.private : memref<16xf32>
          loop.for %a3 = 0 to 16 free {
            loop.store %2, %acc[%a3] : memref<16xf32>
          }
          %4 = arith.index_cast %a2 : index to i64
          %5, %6 = loop.for %r0 = 0 to 20 reduce iter(%m = %3, %l = %2) -> (f32, f32) {
            %7 = loop.for %r0_1 = 0 to 16 reduce iter(%acc_1 = %2) -> f32 {
              %8 = loop.load %x0[%a0, %a1, %a2, %r0_1] : memref<1x2x20x16xbf16>
              %9 = arith.extf %8 : bf16 to f32
              %10 = loop.load %x1[%a0, %a1, %r0, %r0_1] map (d0, d1, d2, d3) -> (d0, (d1 floordiv 2), d2, d3) : memref<1x1x20x16xbf16>
              %11 = arith.extf %10 : bf16 to f32
              %12 = arith.mulf %9, %11 : f32
              %13 = arith.addf %acc_1, %12 : f32
              loop.yield %13 : f32
            }
            %14 = arith.mulf %7, %1 : f32
            %15 = arith.index_cast %r0 : index to i64
            %16 = arith.cmpi sle, %15, %4 : i64
            %17 = arith.select %16, %14, %0 : f32
            %m_new = arith.maximumf %m, %17 : f32
            %18 = arith.subf %17, %m_new : f32
            %19 = math.exp %18 : f32
            %20 = arith.subf %m, %m_new : f32
            %alpha = math.exp %20 : f32
            %21 = arith.mulf %l, %alpha : f32
            %22 = arith.addf %21, %19 : f32
            loop.for %a3_1 = 0 to 16 free {
              %23 = loop.load %x2[%a0, %a1, %r0, %a3_1] map (d0, d1, d2, d3) -> (d0, (d1 floordiv 2), d2, d3) : memref<1x1x20x16xbf16>
              %24 = arith.extf %23 : bf16 to f32
              %25 = loop.load %acc[%a3_1] : memref<16xf32>
              %26 = arith.mulf %19, %24 : f32
              %27 = arith.mulf %25, %alpha : f32
              %28 = arith.addf %27, %26 : f32
              loop.store %28, %acc[%a3_1] : memref<16xf32>
            }
            loop.yield %m_new, %22 : f32, f32
          }
          loop.for %a3_2 = 0 to 16 free {
            %29 = loop.load %acc[%a3_2] : memref<16xf32>
            %30 = arith.divf %29, %6 : f32
            %31 = arith.truncf %30 : f32 to bf16
            loop.store %31, %out[%a0, %a1, %a2, %a3_2] : memref<1x2x20x16xbf16>
          }
        }
      }
    }
  }
  func.func @main(%x0: memref<1x2x20x16xbf16>, %x1: memref<1x1x20x16xbf16>, %x2: memref<1x1x20x16xbf16>) -> memref<1x2x20x16xbf16> {
    %sdpa = memref.alloc() : memref<1x2x20x16xbf16>
    loop.launch @sdpa(%x0, %x1, %x2, %sdpa) : memref<1x2x20x16xbf16>, memref<1x1x20x16xbf16>, memref<1x1x20x16xbf16>, memref<1x2x20x16xbf16>
    func.return %sdpa : memref<1x2x20x16xbf16>
  }
}
