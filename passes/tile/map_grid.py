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

With `chunk`, the innermost loop is split into blocks of that many elements on block.x
(split_over_blocks); with `tile_rows` too, the loop before it into blocks of that many rows on
block.y, each thread walking the rows of its column: a 2-D tile of the output, whose reads
across rows (`x.t()`) tile-stage-inputs copies row by row. The loops outside go to block.z, as
one loop over their product where there are several (rewrite.map_batch_to_z: an NCHW ->
NHWC permute's images and rows).

    tile.for %a0 = 0 to 4096 { tile.for %a1 = 0 to 4096 { .. %x[%a1, %a0] .. } }
    ->
    tile.for %a0 = 0 to 128 bind(block.y) { tile.for %a1 = 0 to 16 bind(block.x) {
      tile.for %e0 = 0 to 32 { tile.for %e1 = 0 to 256 { .. %x[%a1 * 256 + %e1, %a0 * 32 + %e0] .. } } } }
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
from deplo.passes.tile.rewrite import (
    INDEX,
    add,
    below,
    clamp,
    guard_stores,
    map_batch_to_z,
    mul,
)

AXES = (tile.Bind.BLOCK_X, tile.Bind.BLOCK_Y, tile.Bind.BLOCK_Z)


@dataclass(frozen=True)
class TileMapGridPass(KernelPass):
    """Bind the outer free loops of each kernel to block.x/y/z and set the grid."""

    name = "tile-map-grid"

    grid_dims: int | None = None
    leave_innermost: bool | None = None
    chunk: int | None = None
    tile_rows: int | None = None

    def carry_out(self, kernel: tile.KernelOp, plan: Plan) -> None:
        leave = plan.knob("leave_innermost", False)  # only pointwise plans leave a loop
        dims, chunk = plan.knob("grid_dims"), plan.knob("chunk", 0)
        rows = plan.knob("tile_rows")
        chain = free_loop_chain(kernel)
        if chunk and rows:  # a 2-D tile: columns on x, rows on y, the loops outside on z
            split_over_blocks(chain[-1], chunk)
            loops = [chain[-1], _tile_rows(chain[-2], chain[-1], rows)]
        elif chunk:
            inner = chain[-1]
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
        if chunk and rows and dims == 3:
            grid[2] = map_batch_to_z(kernel, chain, chain[-2])
        kernel.set_launch(grid=grid)


def _tile_rows(lp: tile.ForOp, columns: tile.ForOp, rows: int) -> tile.ForOp:
    """`lp` split into blocks of `rows` (split_over_blocks), its loop over a block's rows moved
    inside `columns` (already split: the block of columns): both block loops outside, both
    loops over a block's elements inside. Returns `lp`."""
    split_over_blocks(lp, rows)
    walk = next(o for o in lp.body.block.ops if isinstance(o, tile.ForOp))
    (elements,) = [o for o in columns.body.block.ops if isinstance(o, tile.ForOp)]
    columns.detach()
    elements.detach()
    walk.body.block.insert_op_before(elements, walk.body.block.last_op)
    walk.detach()
    columns.body.block.insert_op_before(walk, columns.body.block.last_op)
    lp.body.block.insert_op_before(columns, lp.body.block.last_op)
    return lp


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
