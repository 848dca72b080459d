// RUN: deplo-opt %s -p loop-to-tile,tile-map-grid,tile-map-threads,tile-stage-inputs | filecheck %s
// RUN: deplo-opt %s -p loop-to-tile,tile-map-grid,tile-map-threads,tile-stage-inputs,tile-to-kernel | filecheck %s --check-prefix=KERNEL
// RUN: deplo-opt %s -p "loop-to-tile,tile-map-grid,tile-map-threads,tile-stage-inputs,tile-cp-async{copy=cp_async}" | filecheck %s --check-prefix=ASYNC

// A depthwise conv1d, padding 1 (F.conv1d(x, w, padding=1, groups=4)): each output reads x
// at (a2 + k - 1) mod 40 for its 3 taps k, the pad masked by the selects. One load op, but
// its taps read every element 3 times: the block's row and its halo, [-1, 41), are staged
// once, wrapped as the load wraps, and the taps read the copy at a2 + k.
// CHECK-LABEL: tile.kernel @conv
// CHECK:         tile.for %a1 = 0 to 4 bind(block.x) {
// CHECK-NEXT:      %x0s = tile.stage %x0[%a0, %a1, -1] [1, 1, 42] into shared copy(sync) buffers(1) pad(0) wrapped : memref<1x4x40xf32> -> memref<42xf32, 3 : i64>
// CHECK:             %{{.*}} = loop.load %x0s[%r0, %a2] map (d0, d1) -> (((d1 + 1) + ((d0 mod 3) + -1))) : memref<42xf32, 3 : i64>
// CHECK:             %{{.*}} = loop.load %x1[%a0, %a1, %a2, %r0] map
// A later step's copy of the stage (cp.async here) keeps it wrapped.
// ASYNC: tile.stage %x0[%a0, %a1, -1] [1, 1, 42] into shared copy(cp_async) buffers(1) pad(0) wrapped : memref<1x4x40xf32> -> memref<42xf32, 3 : i64>
// The copy takes the coordinate that passes an end mod its dim (-1 reads element 39, which
// the selects mask), the others as they are.
// KERNEL-LABEL: kernel.func @conv
// KERNEL:         scf.for %i = %tid_x to %c42 step %c64 {
// KERNEL-NEXT:      %[[G:.*]] = arith.addi %cm1, %i : index
// KERNEL-NEXT:      %[[N:.*]] = arith.addi %[[G]], %c40 : index
// KERNEL-NEXT:      %[[W:.*]] = arith.remsi %[[N]], %c40 : index
// KERNEL-NEXT:      %[[V:.*]] = memref.load %x0[%c0, %bid_x, %[[W]]] : memref<1x4x40xf32>
// KERNEL-NEXT:      memref.store %[[V]], %x0s[%i] : memref<42xf32, 3 : i64>
// KERNEL-NEXT:    }
// KERNEL-NEXT:    kernel.barrier

builtin.module {
  loop.kernel @conv(%x0: memref<1x4x40xf32>, %x1: memref<4x3xf32>, %out: memref<1x4x40xf32>) {
    %0 = arith.constant 3 : index
    %1 = arith.constant 0.000000e+00 : f32
    %2 = arith.constant 41 : index
    %3 = arith.constant 1 : index
    loop.for %a0 = 0 to 1 free {
      loop.for %a1 = 0 to 4 free {
        loop.for %a2 = 0 to 40 free {
          %4 = loop.for %r0 = 0 to 3 reduce iter(%acc = %1) -> f32 {
            %5 = arith.remsi %r0, %0 : index
            %6 = arith.addi %a2, %5 : index
            %7 = loop.load %x0[%a0, %a1, %r0, %a2] map (d0, d1, d2, d3) -> (d0, ((d1 floordiv 1) + (d2 floordiv 3)), (((d3 + (d2 mod 3)) + 39) mod 40)) : memref<1x4x40xf32>
            %8 = arith.cmpi ult, %6, %2 : index
            %9 = arith.select %8, %7, %1 : f32
            %10 = arith.cmpi ult, %6, %3 : index
            %11 = arith.select %10, %1, %9 : f32
            %12 = loop.load %x1[%a0, %a1, %a2, %r0] map (d0, d1, d2, d3) -> (d1, d3) : memref<4x3xf32>
            %13 = arith.mulf %11, %12 : f32
            %14 = arith.addf %acc, %13 : f32
            loop.yield %14 : f32
          }
          loop.store %4, %out[%a0, %a1, %a2] : memref<1x4x40xf32>
        }
      }
    }
  }
  func.func @main(%x0: memref<1x4x40xf32>, %x1: memref<4x3xf32>) -> memref<1x4x40xf32> {
    %conv = memref.alloc() : memref<1x4x40xf32>
    loop.launch @conv(%x0, %x1, %conv) : memref<1x4x40xf32>, memref<4x3xf32>, memref<1x4x40xf32>
    func.return %conv : memref<1x4x40xf32>
  }
}
