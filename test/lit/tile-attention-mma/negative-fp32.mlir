// RUN: not deplo-opt %s -p "loop-to-tile,tile-map-grid,tile-attention-mma{mma=true}" 2>&1 | filecheck %s
// RUN: deplo-opt %s -p loop-to-tile,tile-plan | filecheck %s --check-prefix=PLAN

// fp32 attention has no tensor-core plan: pinning one is an error naming the fact; the
// heuristic's plan says mma = false and has no tensor_cores fact.
// CHECK: tile-attention-mma{mma=true}: kernel @sdpa: knob mma: the row is not an f16/bf16 flash row tensor cores can run (fact tensor_cores)
// PLAN: plan attention(rows = [4], head_dim = 8, keys = 4, own_keys = true) {grid_dims = 1, mma = false, threads = 4, group_heads = 1, rows = 4, stage_keys = 0, lane_keys = 1,

builtin.module {
  loop.kernel @sdpa(%x0: memref<1x1x4x8xf32>, %x1: memref<1x1x4x8xf32>, %x2: memref<1x1x4x8xf32>, %out: memref<1x1x4x8xf32>) attributes {origin = ["scaled_dot_product_attention: aten.scaled_dot_product_attention at the expression"]} {
    %0 = arith.constant 0.353553385 : f32
    %1 = arith.constant 0.000000e+00 : f32
    %2 = arith.constant 0xff800000 : f32
    loop.for %a0 = 0 to 1 free {
      loop.for %a1 = 0 to 1 free {
        loop.for %a2 = 0 to 4 free {
          %acc = loop.private : memref<8xf32>
          loop.for %a3 = 0 to 8 free {
            loop.store %1, %acc[%a3] : memref<8xf32>
          }
          %3, %4 = loop.for %r0 = 0 to 4 reduce iter(%m = %2, %l = %1) -> (f32, f32) {
            %5 = loop.for %r0_1 = 0 to 8 reduce iter(%acc_1 = %1) -> f32 {
              %6 = loop.load %x0[%a0, %a1, %a2, %r0, %r0_1] map (d0, d1, d2, d3, d4) -> (d0, d1, d2, d4) : memref<1x1x4x8xf32>
              %7 = loop.load %x1[%a0, %a1, %a2, %r0, %r0_1] map (d0, d1, d2, d3, d4) -> (d0, d1, d3, d4) : memref<1x1x4x8xf32>
              %8 = arith.mulf %6, %7 : f32
              %9 = arith.addf %acc_1, %8 : f32
              loop.yield %9 : f32
            }
            %10 = arith.mulf %5, %0 : f32
            %m_new = arith.maximumf %m, %10 : f32
            %11 = arith.subf %10, %m_new : f32
            %12 = math.exp %11 : f32
            %13 = arith.subf %m, %m_new : f32
            %alpha = math.exp %13 : f32
            %14 = arith.mulf %l, %alpha : f32
            %15 = arith.addf %14, %12 : f32
            loop.for %a3_1 = 0 to 8 free {
              %16 = loop.load %x2[%a0, %a1, %a2, %a3_1, %r0] map (d0, d1, d2, d3, d4) -> (d0, d1, d4, d3) : memref<1x1x4x8xf32>
              %17 = loop.load %acc[%a3_1] : memref<8xf32>
              %18 = arith.mulf %12, %16 : f32
              %19 = arith.mulf %17, %alpha : f32
              %20 = arith.addf %19, %18 : f32
              loop.store %20, %acc[%a3_1] : memref<8xf32>
            }
            loop.yield %m_new, %15 : f32, f32
          }
          loop.for %a3_2 = 0 to 8 free {
            %21 = loop.load %acc[%a3_2] : memref<8xf32>
            %22 = arith.divf %21, %4 : f32
            loop.store %22, %out[%a0, %a1, %a2, %a3_2] : memref<1x1x4x8xf32>
          }
        }
      }
    }
  }
  func.func @main(%x0: memref<1x1x4x8xf32>, %x1: memref<1x1x4x8xf32>, %x2: memref<1x1x4x8xf32>) -> memref<1x1x4x8xf32> {
    %sdpa = memref.alloc() : memref<1x1x4x8xf32>
    loop.launch @sdpa(%x0, %x1, %x2, %sdpa) : memref<1x1x4x8xf32>, memref<1x1x4x8xf32>, memref<1x1x4x8xf32>, memref<1x1x4x8xf32>
    func.return %sdpa : memref<1x1x4x8xf32>
  }
}
