"""tile-map-2d: a contraction's two innermost free axes run on a 2-D grid of 2-D thread blocks.

i (extent I) is split over block.y x thread.y, j (J) over block.x x thread.x; a block computes
a threads-m x threads-n tile of (i, j), one (i, j) per thread (m x n outputs each after
tile-register-tile):

    tile.for %i = 0 to 16 bind(serial) {
      tile.for %j = 0 to 20 bind(serial) { CELL(%i, %j) }
    ->
    tile.kernel ... grid(2, 1, 1) block(16, 16, 1)
    tile.for %i = 0 to 1 bind(block.y) {
      tile.for %j = 0 to 2 bind(block.x) {
        tile.for %ty = 0 to 16 bind(thread.y) {
          tile.for %tx = 0 to 16 bind(thread.x) {
            %ir = %i * 16 + %ty ; %jr = %j * 16 + %tx
            %ic = arith.minsi %ir, %c15 ; %jc = arith.minsi %jr, %c19      (clamped, see analysis.py)
            CELL(%ic, %jc) with its stores guarded by %ir < 16 and %jr < 20

The thread loops cover the whole block (no thread is idle, the tails are clamped), so later
passes may put a collective `tile.stage` inside them. The innermost serial free axis outside i
with extent > 1 (a batch) goes to block.z. A no-op on kernels that are not contractions or have
fewer than two serial free axes.

Heuristic (threads-m=0 / threads-n=0): on matmul-sized contractions, 16 x 16 threads, each
reduced to the largest power of two not above its extent (at least 1): a 256-thread block.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntAttr, ModuleOp
from xdsl.ir import Block, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from deplo.dialects import tile
from deplo.passes.tile import analysis as an


def thread_loop(extent: int, bind: tile.Bind, hint: str) -> tile.ForOp:
    body = Region(Block(arg_types=[IndexType()]))
    body.block.add_op(tile.YieldOp())
    lp = tile.ForOp(0, extent, bind, [], body)
    lp.iv.name_hint = hint
    return lp


@dataclass(frozen=True)
class TileMap2dPass(ModulePass):
    """Map a contraction's two innermost serial free axes to blocks x threads in y and x;
    threads-m x threads-n threads per block (0 picks the heuristic)."""

    name = "tile-map-2d"

    threads_m: int = 0
    threads_n: int = 0

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in [k for k in op.walk() if isinstance(k, tile.KernelOp)]:
            self.map_kernel(kernel)

    def threads(self, c: an.Contraction, rows: int, cols: int) -> tuple[int, int] | None:
        if not (self.threads_m and self.threads_n) and not an.is_matmul_sized(c):
            return None
        tm = self.threads_m or an.pow2_at_most(rows, 16)
        tn = self.threads_n or an.pow2_at_most(cols, 16)
        if tm * tn > tile.MAX_BLOCK_THREADS or tm > tile.MAX_BLOCK[1] or tn > tile.MAX_BLOCK[0]:
            return None
        return tm, tn

    def map_kernel(self, kernel: tile.KernelOp) -> None:
        c = an.find_contraction(kernel)
        if c is None or kernel.block_dims != (1, 1, 1) or len(axes := c.serial_axes()) < 2:
            return
        if any(lp.binding != tile.Bind.SERIAL for lp in c.chain):
            return
        i, j = axes[-2], axes[-1]
        rows, cols = i.ub.data, j.ub.data
        picked = self.threads(c, rows, cols)
        if picked is None:
            return
        tm, tn = picked
        gy, gx = -(-rows // tm), -(-cols // tn)
        if gy > tile.MAX_GRID[1]:
            return
        an.sink_chain_ops(c.chain[c.chain.index(i) :], c.cell)
        ops = [o for o in c.cell.ops if not isinstance(o, tile.YieldOp)]
        ty = thread_loop(tm, tile.Bind.THREAD_Y, "ty")
        tx = thread_loop(tn, tile.Bind.THREAD_X, "tx")
        Rewriter.insert_op(ty, InsertPoint.before(c.cell.last_op))
        Rewriter.insert_op(tx, InsertPoint.before(ty.body.block.last_op))
        inner = tx.body.block
        for o in ops:
            o.detach()
            inner.insert_op_before(o, inner.last_op)
        b = Builder(InsertPoint.before(ops[0]))
        guards: list[SSAValue] = []
        for lp, t, extent, per in ((i, ty, rows, tm), (j, tx, cols, tn)):
            uses = list(lp.iv.uses)
            raw = an.add(b, an.mul(b, lp.iv, per), t.iv)
            raw.name_hint = (lp.iv.name_hint or "i") + "t"
            value = raw
            if extent % per:
                guards.append(an.below(b, raw, extent))
                value = an.clamp(b, raw, extent)
                value.name_hint = raw.name_hint + "c"
            for use in uses:
                use.operation.operands[use.index] = value
            lp.ub = IntAttr(-(-extent // per))
        if guards:
            cond = guards[0]
            if len(guards) == 2:
                cond = b.insert(arith.AndIOp(guards[0], guards[1])).result
                cond.name_hint = "in"
            an.guard_stores(ops, cond)
        i.bind = tile.BindAttr(tile.Bind.BLOCK_Y)
        j.bind = tile.BindAttr(tile.Bind.BLOCK_X)
        gz = 1
        outer = [lp for lp in c.chain[: c.chain.index(i)] if lp in axes]
        if outer and outer[-1].ub.data <= tile.MAX_GRID[2]:
            outer[-1].bind = tile.BindAttr(tile.Bind.BLOCK_Z)
            gz = outer[-1].ub.data
        an.cse(inner, an.stored_buffers(kernel))
        kernel.set_launch(grid=(gx, gy, gz), block=(tn, tm, 1))
        kernel.record(dataclasses.replace(self, threads_m=tm, threads_n=tn))
