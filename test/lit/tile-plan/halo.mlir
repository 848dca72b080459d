// RUN: deplo-opt %s -p loop-to-tile,tile-plan | filecheck %s
// RUN: deplo-opt %s -p loop-to-tile,tile-plan,tile-map-grid,tile-map-threads,tile-stage-inputs | filecheck %s --check-prefix=STAGE

// A depthwise 3x3 conv, padding 1 (F.conv2d(x, w, padding=1, groups=32) of [8, 32, 32, 32]):
// the next output row reads 2 of its input rows again (fact halo = 2). A block takes a tile
// of 16 rows (up to 8 times the halo, dividing 32) and a warp of columns, so that it stages
// 18 input rows for 16 output rows instead of 3 for 1.
// CHECK: tile.kernel @conv({{.*}}) grid(1, 1, 1) block(1, 1, 1) key "{{.*}}" plan pointwise(chain = [8, 32, 32, 32], leaf = true, halo = 2) {grid_dims = 3, leave_innermost = true, chunk = 32, tile_rows = 16, threads = 32, stage_inputs = reused, copy = sync, unroll = 32} {
// STAGE:       tile.kernel @conv({{.*}}) grid(1, 2, 256) block(32, 1, 1)
// STAGE:       %x0s = tile.stage %x0[%a0_1, %a1_1, %{{.*}}, %{{.*}}] [1, 1, 18, 34] into shared copy(sync) buffers(1) pad(0) wrapped : memref<8x32x32x32xf32> -> memref<18x34xf32, 3 : i64>
// STAGE-NEXT:  tile.for %e = 0 to 16 bind(serial) {
// STAGE:         loop.load %x0s[%r0, %e, %e_1] map (d0, d1, d2) -> (((d1 + 1) + (((d0 floordiv 3) mod 3) + -1)), ((d2 + 1) + ((d0 mod 3) + -1))) : memref<18x34xf32, 3 : i64>

builtin.module {
  loop.kernel @conv(%x0: memref<8x32x32x32xf32>, %x1: memref<32x9xf32>, %out: memref<8x32x32x32xf32>) {
    %0 = arith.constant 3 : index
    %1 = arith.constant 0.000000e+00 : f32
    %2 = arith.constant 33 : index
    %3 = arith.constant 1 : index
    loop.for %a0 = 0 to 8 free {
      loop.for %a1 = 0 to 32 free {
        loop.for %a2 = 0 to 32 free {
          loop.for %a3 = 0 to 32 free {
            %4 = loop.for %r0 = 0 to 9 reduce iter(%acc = %1) -> f32 {
              %5 = arith.remsi %r0, %0 : index
              %6 = arith.addi %a3, %5 : index
              %7 = arith.floordivsi %r0, %0 : index
              %8 = arith.remsi %7, %0 : index
              %9 = arith.addi %a2, %8 : index
              %10 = loop.load %x0[%a0, %a1, %r0, %a2, %a3] map (d0, d1, d2, d3, d4) -> (d0, ((d1 floordiv 1) + (d2 floordiv 9)), (((d3 + ((d2 floordiv 3) mod 3)) + 31) mod 32), (((d4 + (d2 mod 3)) + 31) mod 32)) : memref<8x32x32x32xf32>
              %11 = arith.cmpi ult, %9, %2 : index
              %12 = arith.select %11, %10, %1 : f32
              %13 = arith.cmpi ult, %9, %3 : index
              %14 = arith.select %13, %1, %12 : f32
              %15 = arith.cmpi ult, %6, %2 : index
              %16 = arith.select %15, %14, %1 : f32
              %17 = arith.cmpi ult, %6, %3 : index
              %18 = arith.select %17, %1, %16 : f32
              %19 = loop.load %x1[%a0, %a1, %a2, %a3, %r0] map (d0, d1, d2, d3, d4) -> (d1, d4) : memref<32x9xf32>
              %20 = arith.mulf %18, %19 : f32
              %21 = arith.addf %acc, %20 : f32
              loop.yield %21 : f32
            }
            loop.store %4, %out[%a0, %a1, %a2, %a3] : memref<8x32x32x32xf32>
          }
        }
      }
    }
  }
  func.func @main(%x0: memref<8x32x32x32xf32>, %x1: memref<32x1x3x3xf32>) -> memref<8x32x32x32xf32> {
    %conv = memref.alloc() : memref<8x32x32x32xf32>
    loop.launch @conv(%x0, %x1, %conv) : memref<8x32x32x32xf32>, memref<32x1x3x3xf32>, memref<8x32x32x32xf32>
    func.return %conv : memref<8x32x32x32xf32>
  }
}
