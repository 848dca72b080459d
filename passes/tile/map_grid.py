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

from deplo import hardware as hw
from deplo.analysis.nest import grid_loops
from deplo.dialects import tile
from deplo.dialects.tile_plan import Plan
from deplo.passes.tile.kernel_pass import KernelPass

AXES = (tile.Bind.BLOCK_X, tile.Bind.BLOCK_Y, tile.Bind.BLOCK_Z)


@dataclass(frozen=True)
class TileMapGridPass(KernelPass):
    """Bind the outer free loops of each kernel to block.x/y/z and set the grid."""

    name = "tile-map-grid"

    grid_dims: int | None = None
    leave_innermost: bool | None = None

    def carry_out(self, kernel: tile.KernelOp, plan: Plan) -> None:
        leave = plan.knob("leave_innermost", False)  # only pointwise plans leave a loop
        loops = grid_loops(kernel, plan.knob("grid_dims"), leave)
        grid = [1, 1, 1]
        for axis, lp in enumerate(loops):
            extent = lp.extent
            assert extent is not None
            if extent > hw.MAX_GRID[axis]:
                break
            grid[axis] = extent
            lp.bind = tile.BindAttr(AXES[axis])
        kernel.set_launch(grid=grid)
