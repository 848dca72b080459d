"""tile-map-grid: the outer free loops that enclose everything in the kernel run on blocks.

    tile.kernel @k(...) grid(1, 1, 1) block(1, 1, 1) plan pointwise(...) {grid_dims = 3, ...} {
      tile.for %a0 = 0 to 1 bind(serial) {
        tile.for %a1 = 0 to 32 bind(serial) { <reduce loop> ... <free loop> }
    ->
    tile.kernel @k(...) grid(32, 1, 1) block(1, 1, 1) plan ... done ["tile-map-grid"] {
      tile.for %a0 = 0 to 1 bind(serial) {
        tile.for %a1 = 0 to 32 bind(block.x) { ... }

The chain is the loops that are, level after level, the only loop of their parent (besides
scalar `arith`/`math` code); loops of extent 1 stay serial. Of the rest, the innermost
`grid_dims` go to blocks: the innermost to block.x (it usually walks the contiguous dim), the
next to block.y, then block.z, stopping at a loop longer than its axis allows. With
`leave_innermost` (pointwise plans), the innermost loop of a chain of two or more is left for
the threads when nothing inside it could be (relu(x @ w): blocks over rows, threads over
columns); row reductions and attention rows leave none.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.dialects.builtin import IntAttr
from xdsl.ir import Block, Region
from xdsl.rewriter import InsertPoint

from deplo import hardware as hw
from deplo.analysis.nest import free_loop_chain, grid_loops
from deplo.dialects import tile
from deplo.dialects.tile_plan import Plan
from deplo.passes.tile.kernel_pass import KernelPass
from deplo.passes.tile.rewrite import INDEX, add, below, clamp, guard_stores, mul

AXES = (tile.Bind.BLOCK_X, tile.Bind.BLOCK_Y, tile.Bind.BLOCK_Z)


@dataclass(frozen=True)
class TileMapGridPass(KernelPass):
    """Bind the outer free loops of each kernel to block.x/y/z and set the grid."""

    name = "tile-map-grid"

    grid_dims: int | None = None
    leave_innermost: bool | None = None
    chunk: int | None = None

    def carry_out(self, kernel: tile.KernelOp, plan: Plan) -> None:
        leave = plan.knob("leave_innermost", False)  # only pointwise plans leave a loop
        dims, chunk = plan.knob("grid_dims"), plan.knob("chunk", 0)
        if chunk:
            inner = free_loop_chain(kernel)[-1]
            outer = grid_loops(kernel, dims, leave_innermost=True)
            outer = [lp for lp in outer if lp is not inner][: dims - 1]
            loops = [split_over_blocks(inner, chunk), *outer]
        else:
            loops = grid_loops(kernel, dims, leave)
        grid = [1, 1, 1]
        for axis, lp in enumerate(loops):
            extent = lp.extent
            assert extent is not None
            if extent > hw.MAX_GRID[axis]:
                break
            grid[axis] = extent
            lp.bind = tile.BindAttr(AXES[axis])
        kernel.set_launch(grid=grid)


def split_over_blocks(lp: tile.ForOp, chunk: int) -> tile.ForOp:
    """`lp` (0 to N) now counts chunks; a new serial loop inside walks one chunk's elements,
    the index clamped and the stores guarded where the last chunk passes N. Returns `lp`."""
    extent = lp.extent
    assert extent is not None
    uses = list(lp.iv.uses)
    ops = [op for op in lp.body.block.ops if not isinstance(op, tile.YieldOp)]
    body = Block(arg_types=[INDEX])
    body.add_op(tile.YieldOp())
    inner = tile.ForOp(0, chunk, tile.Bind.SERIAL, [], Region(body))
    inner.iv.name_hint = "e"
    lp.body.block.insert_op_before(inner, lp.body.block.last_op)
    for op in ops:
        op.detach()
        body.insert_op_before(op, body.last_op)
    lp.ub = IntAttr(-(-extent // chunk))
    b = Builder(InsertPoint.at_start(body))
    index = add(b, mul(b, lp.iv, chunk), inner.iv)
    index.name_hint = lp.iv.name_hint
    if extent % chunk:
        guard = below(b, index, extent)
        index = clamp(b, index, extent)
        guard_stores(ops, guard)
    for u in uses:
        u.operation.operands[u.index] = index
    return lp
