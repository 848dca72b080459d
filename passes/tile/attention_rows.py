"""tile-attention-rows: the threads of a block share the head dim of a flash-attention row.

After loop-online-softmax a block (one query row, from tile-map-grid) holds a `loop.private`
accumulator over the head dim D, free loops over D (its init and the final normalize/store),
and the serial key loop carrying the online (m, l): for each key a reduce loop over D (q . k),
uniform scalar code (the (m, l) update) and a free loop over D (the rescaled accumulator
update). The region's body runs on T threads:

    %acc = loop.private : memref<64xf32>
    tile.for %a3 = 0 to 64 bind(serial) { loop.store %z, %acc[%a3] }
    %m, %l = tile.for %r0 = 0 to 8 bind(serial) iter(%m = .., %l = ..) -> (f32, f32) {
      %s = tile.for %r1 = 0 to 64 bind(serial) iter(%acc_1 = %zero) -> f32 { ... }
      ... (m, l) update ...
      tile.for %a4 = 0 to 64 bind(serial) { ... %acc[%a4] ... }
    }
    tile.for %a5 = 0 to 64 bind(serial) { ... %acc[%a5] ... }
    ->
    tile.for %t = 0 to 64 bind(thread.x) {
      %acc = loop.private : memref<1xf32>
      tile.for %a3 = %t to 64 step 64 bind(serial) { loop.store %z, %acc[%a3, %t] map (d0, d1) -> (0) }
      %m, %l = tile.for %r0 = 0 to 8 bind(serial) iter(..) -> (f32, f32) {
        %p = tile.for %r1 = %t to 64 step 64 bind(serial) iter(%acc_1 = %zero) -> f32 { ... }
        %s = tile.combine add %p over thread.x : f32
        ... (m, l) update, computed by every thread ...
        tile.for %a4 = %t to 64 step 64 bind(serial) { ... }
      }
      tile.for %a5 = %t to 64 step 64 bind(serial) { ... }
    }

Every thread gets the combined score, so the (m, l) update is uniform; each thread owns the
slice t, t + T, ... of the accumulator, which shrinks to ceil(D / T) registers indexed by
`(a - t) floordiv T`. T is the plan's `threads`, at most D rounded up to a warp. The
region must have that shape (analysis/nest.py, `flash_row`): a rank-1 `loop.private`, every loop over D (lb 0, step 1, no loop
inside), reduce loops only inside a serial accumulating loop, stores only inside the free loops
over D, and the private accessed only by the iv of the free loop around the access.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.dialects.builtin import MemRefType
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.rewriter import InsertPoint, Rewriter

from deplo import hardware as hw
from deplo.analysis.nest import FlashRow, block_regions, flash_row
from deplo.dialects import loop, tile
from deplo.dialects.tile_plan import Plan
from deplo.passes.tile.kernel_pass import KernelPass, PassOptionError
from deplo.passes.tile.rewrite import on_threads, share_reductions, stride_loop


@dataclass(frozen=True)
class TileAttentionRowsPass(KernelPass):
    """Run each flash-attention row (block region) on `threads` threads over the head dim:
    strided q . k partials + `tile.combine add`, uniform (m, l), per-thread accumulator slices."""

    name = "tile-attention-rows"

    threads: int | None = None

    def carry_out(self, kernel: tile.KernelOp, plan: Plan) -> None:
        rows = [row for r in block_regions(kernel) if (row := flash_row(r))]
        if not rows:
            raise PassOptionError(f"{self.name}: kernel @{kernel.sym_name.data}: its attention "
                                  "plan does not match its loops (no flash-attention row)")
        threads = 0
        for row in rows:
            t = min(plan.knob("threads"), -(-row.head_dim // hw.WARP) * hw.WARP)
            rewrite(row, t)
            threads = max(threads, t)
        kernel.set_launch(block=(threads, 1, 1))


def rewrite(row: FlashRow, threads: int) -> None:
    outer = on_threads(row.ops, threads)
    t = outer.iv
    per = -(-row.head_dim // threads)
    for p in [op for op in row.ops if isinstance(op, loop.PrivateOp)]:
        old = p.result.type
        new_t = MemRefType(old.element_type, [per])
        if per == 1:
            amap = AffineMap(2, 0, (AffineExpr.constant(0),))
        else:
            d0, d1 = AffineExpr.dimension(0), AffineExpr.dimension(1)
            amap = AffineMap(2, 0, ((d0 - d1) // threads,))
        new_p = loop.PrivateOp(new_t)
        Rewriter.insert_op(new_p, InsertPoint.before(p))
        new_p.result.name_hint = p.result.name_hint
        for use in list(p.result.uses):
            acc = use.operation
            iv = acc.indices[0]
            if isinstance(acc, loop.LoadOp):
                rep = loop.LoadOp(new_p.result, [iv, t], amap)
                rep.result.name_hint = acc.result.name_hint
            else:
                rep = loop.StoreOp(acc.value, new_p.result, [iv, t], amap)
            Rewriter.replace_op(acc, rep)
        Rewriter.erase_op(p)
    share_reductions(row.reduces, t, threads)
    for lp in row.free:
        stride_loop(lp, t, threads, Builder(InsertPoint.before(lp)))
