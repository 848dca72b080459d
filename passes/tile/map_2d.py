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

i and j are the innermost two loops of the chain; threads-m x threads-n is the plan's
`threads_m` x `threads_n`. The thread loops cover the whole block (no thread is idle, the tails
are clamped), so later passes may put a collective `tile.stage` inside them. The innermost
serial free axis outside i with extent > 1 (a batch, or tile-split-k's split) goes to block.z.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.dialects.builtin import IntAttr
from xdsl.ir import SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from deplo import hardware as hw
from deplo.analysis.nest import find_contraction, stored_buffers
from deplo.dialects import tile
from deplo.dialects.tile_plan import Plan
from deplo.passes.tile.kernel_pass import KernelPass
from deplo.passes.tile.rewrite import (
    add,
    below,
    clamp,
    cse,
    guard_stores,
    map_batch_to_z,
    mul,
    serial_rows_cols,
    sink_chain_ops,
    thread_loop,
)


@dataclass(frozen=True)
class TileMap2dPass(KernelPass):
    """Map a contraction's rows and columns to blocks x threads in y and x; threads_m x
    threads_n threads per block."""

    name = "tile-map-2d"

    threads_m: int | None = None
    threads_n: int | None = None

    def carry_out(self, kernel: tile.KernelOp, plan: Plan) -> None:
        c = find_contraction(kernel)
        i, j = serial_rows_cols(self.name, kernel, c)
        tm, tn = plan.knob("threads_m"), plan.knob("threads_n")
        rows, cols = i.ub.data, j.ub.data
        gy, gx = -(-rows // tm), -(-cols // tn)
        sink_chain_ops(c.chain[c.chain.index(i) :], c.cell)
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
            raw = add(b, mul(b, lp.iv, per), t.iv)
            raw.name_hint = (lp.iv.name_hint or "i") + "t"
            value = raw
            if extent % per:
                guards.append(below(b, raw, extent))
                value = clamp(b, raw, extent)
                value.name_hint = raw.name_hint + "c"
            for use in uses:
                use.operation.operands[use.index] = value
            lp.ub = IntAttr(-(-extent // per))
        if guards:
            cond = guards[0]
            if len(guards) == 2:
                cond = b.insert(arith.AndIOp(guards[0], guards[1])).result
                cond.name_hint = "in"
            guard_stores(ops, cond)
        i.bind = tile.BindAttr(tile.Bind.BLOCK_Y)
        j.bind = tile.BindAttr(tile.Bind.BLOCK_X)
        gz = map_batch_to_z(kernel, c.chain, i)
        cse(inner, stored_buffers(kernel))
        kernel.set_launch(grid=(gx, gy, gz), block=(tn, tm, 1))
        assert gy <= hw.MAX_GRID[1]  # the plan's rule
