// RUN: deplo-opt %s -p "loop-to-tile,tile-map-grid,tile-attention-mma{warps=2 key-block=16 stage=true}" | filecheck %s
// RUN: deplo-opt %s -p "loop-to-tile,tile-map-grid,tile-attention-mma{warps=2 key-block=16 stage=true}" | deplo-opt | filecheck %s
// RUN: deplo-opt %s -p "loop-to-tile,tile-map-grid,tile-attention-mma{stage=false}" | filecheck %s --check-prefix=GLOBAL
// RUN: not deplo-opt %s -p "loop-to-tile,tile-map-grid,tile-attention-mma{warps=3}" 2>&1 | filecheck %s --check-prefix=BAD
// RUN: deplo-opt %s -p "loop-to-tile,tile-map-grid,tile-attention-mma{warps=1 frags-m=2 key-block=16 stage=true}" | filecheck %s --check-prefix=TILES
// RUN: not deplo-opt %s -p "loop-to-tile,tile-map-grid,tile-attention-mma{warps=2 frags-m=2}" 2>&1 | filecheck %s --check-prefix=BAD-TILES
// RUN: deplo-opt %s -p "loop-to-tile,tile-map-grid,tile-attention-mma{warps=2 key-block=16 stage=true},tile-double-buffer,tile-cp-async,tile-unroll,tile-to-kernel" | filecheck %s --check-prefix=PIPE

// The flash kernel of causal GQA sdpa in bf16 (2 query heads on 1 kv head, S = 20, D = 16)
// on tensor cores: two warps a block, 16 query rows each (32 rows: one block a head, rows 20..31
// computed and not stored), 16 keys a step. Q's fragments are loaded once; each step stages the
// K and V tiles in shared memory (rows padded by 8 halves), S = Q K^T is two mma tiles of 8
// keys (the chain's work that needs no score, the causal compare, before them), the chain
// (scale, causal select, the mask of keys past 20) runs on each score, the row
// max is a lane's own then 4 lanes', the probabilities are packed to an A fragment in
// registers, O += P V on two 8-column tiles of V. The key loop stops after the block's last row.
// CHECK-LABEL: tile.kernel @sdpa({{.*}}) grid(1, 2, 1) block(32, 2, 1) key "{{.*}}" plan attention(rows = [2, 20], head_dim = 16, keys = 20, own_keys = true, tensor_cores = true, queries = 20, kv_group = 2) {grid_dims = 2, mma = true, warps = 2, frags_m = 1, key_block = 16, stage = true, key_splits = 1, buffers = 2, copy = cp_async, unroll = 32} done ["tile-map-grid", "tile-attention-mma"]
// CHECK:         tile.for %a2 = 0 to 1 bind(block.x) {
// CHECK-NEXT:      tile.for %w = 0 to 2 bind(thread.y) {
// CHECK-NEXT:        tile.for %l = 0 to 32 bind(thread.x) {
// CHECK:               %[[Q:.*]], %{{.*}}, %{{.*}}, %{{.*}} = tile.fragment_load a %x0[%a0, %a1, %row0, %c0] lane(%l)
// CHECK:               %[[END:.*]] = arith.addi %{{.*}}, %c31 : index
// CHECK:               %[[LAST:.*]] = arith.minsi %[[END]], %c19 : index
// CHECK:               %kub = arith.addi %[[LAST]], %c1 : index
// CHECK-NEXT:          {{.*}} = tile.for %k0 = 0 to min(%kub, 32) step 16 bind(serial) iter(
// CHECK:                 %[[KV:.*]] = arith.floordivsi %a1, %c2 : index
// CHECK-NEXT:            %x1s = tile.stage %x1[%a0, %[[KV]], %k0, 0] [1, 1, 16, 16] into shared copy(sync) buffers(1) pad(8) : memref<1x1x20x16xbf16> -> memref<16x24xbf16, 3 : i64>
// CHECK-NEXT:            %x2s = tile.stage %x2[%a0, %[[KV]], %k0, 0] [1, 1, 16, 16] into shared copy(sync) buffers(1) pad(8)
// CHECK:                 arith.cmpi sle,
// CHECK:                 tile.fragment_load b_nk %x1s[{{.*}}] lane(%l)
// CHECK-NEXT:            tile.mma bf16 %[[Q]],
// CHECK:                 arith.select
// CHECK:                 %in = arith.cmpi ult, %{{.*}}, %c20 : index
// CHECK:                 tile.combine max %{{.*}} over thread.x lanes 4 : f32
// CHECK:                 tile.pack_halves %{{.*}}, %{{.*}} : bf16
// CHECK:                 tile.fragment_load b_kn %x2s[{{.*}}, %c0] lane(%l)
// CHECK:                 tile.fragment_load b_kn %x2s[{{.*}}, %c8] lane(%l)
// CHECK:                 tile.yield
// CHECK:               tile.combine add %{{.*}} over thread.x lanes 4 : f32
// CHECK:               scf.if %{{.*}} {
// CHECK-NEXT:            loop.store %{{.*}}, %out[%a0, %a1, %{{.*}}, %{{.*}}] : memref<1x2x20x16xbf16>

// Without staging each warp reads K and V where they are and stops after its own last row.
// GLOBAL:        tile.fragment_load b_nk %x1[%a0, %{{.*}}, %{{.*}}, %c0] lane(%l)
// GLOBAL:        tile.fragment_load b_kn %x2[%a0, %{{.*}}, %{{.*}}, %c0] lane(%l)
// GLOBAL-NOT:    tile.stage

// One warp of two 16-row tiles (frags_m 2): Q's fragments at the warp's rows 0 and 16; each K
// fragment read from shared memory feeds one mma of each tile, and so does each V fragment.
// TILES-LABEL: tile.kernel @sdpa({{.*}}) grid(1, 2, 1) block(32, 1, 1)
// TILES:         %row0 = arith.addi
// TILES:         tile.fragment_load a %x0[%a0, %a1, %row0, %c0] lane(%l)
// TILES:         %[[ROW16:.*]] = arith.addi %row0, %c16 : index
// TILES-NEXT:    tile.fragment_load a %x0[%a0, %a1, %[[ROW16]], %c0] lane(%l)
// TILES:         tile.fragment_load b_nk %x1s[{{.*}}] lane(%l)
// TILES-NEXT:    tile.mma bf16
// TILES-NEXT:    tile.mma bf16
// TILES:         tile.fragment_load b_kn %x2s[{{.*}}, %c0] lane(%l)
// TILES-NEXT:    tile.mma bf16
// TILES-NEXT:    tile.mma bf16

// BAD-TILES: tile-attention-mma{warps=2 frags-m=2}: kernel @sdpa: knob frags_m: expected 1, 2 or 4 tiles of 16 rows a warp, the block's 2 warps at most the 20 query rows rounded up to 16; got 2

// BAD: tile-attention-mma{warps=3}: kernel @sdpa: knob warps: expected 1, 2, 4 or 8 warps of 16 rows

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

// The heuristic's two buffers with cp.async: the causal key loop's bound is dynamic (the
// block's last row), so the prologue copies the first step's K and V only where the loop runs
// at all, and each step copies the next one's (where there is one) before waiting for its own.
// PIPE:      %x1s = kernel.shared : memref<2x16x24xbf16, 3 : i64>
// PIPE:      %x2s = kernel.shared : memref<2x16x24xbf16, 3 : i64>
// PIPE:      %[[UB:.*]] = arith.minsi %kub, %c32 : index
// PIPE:      %[[UB1:.*]] = arith.minsi %kub, %c32 : index
// PIPE-NEXT: %[[ANY:.*]] = arith.cmpi slt, %c0, %[[UB1]] : index
// PIPE-NEXT: scf.if %[[ANY]] {
// PIPE:        kernel.cp_async %x1
// PIPE:        kernel.cp_async %x2
// PIPE:      kernel.cp_async_commit
// PIPE-NEXT: scf.for %k0 = %c0 to %[[UB]] step %c16
// PIPE:        kernel.barrier
// PIPE:        %[[NEXT:.*]] = arith.cmpi slt, %{{.*}}, %{{.*}} : index
// PIPE-NEXT:   scf.if %[[NEXT]] {
// PIPE:          kernel.cp_async %x1
// PIPE:          kernel.cp_async %x2
// PIPE:        kernel.cp_async_commit
// PIPE-NEXT:   kernel.cp_async_wait 1
// PIPE-NEXT:   kernel.barrier
