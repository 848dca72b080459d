"""tile-map-grid: the outer free loops that enclose everything in the kernel run on blocks.

    tile.kernel @k(...) grid(1, 1, 1) block(1, 1, 1) schedule [] {
      tile.for %a0 = 0 to 1 bind(serial) {
        tile.for %a1 = 0 to 32 bind(serial) { <reduce loop> ... <free loop> }
    ->
    tile.kernel @k(...) grid(32, 1, 1) block(1, 1, 1) schedule ["tile-map-grid{max-dims=3 leave-innermost=true}"] {
      tile.for %a0 = 0 to 1 bind(serial) {
        tile.for %a1 = 0 to 32 bind(block.x) { ... }

The chain is the loops that are, level after level, the only loop of their parent (besides
scalar `arith`/`math` code). Loops of extent 1 stay serial. The innermost chosen loop gets
block.x (it usually walks the contiguous dim), the next block.y, then block.z. With
`leave-innermost`, the innermost loop of a chain of two or more is left for the threads when
nothing inside it could be (no free loop in its body): relu(x @ w) gets blocks over rows and
threads over columns rather than one thread per block.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from deplo.dialects import tile


def free_loop_chain(kernel: tile.KernelOp) -> list[tile.ForOp]:
    """The outer free loops that enclose everything in the kernel, outermost first."""
    chain: list[tile.ForOp] = []
    block = kernel.body.block
    while True:
        loops = [op for op in block.ops if isinstance(op, tile.ForOp)]
        others = [op for op in block.ops if not isinstance(op, tile.ForOp | tile.YieldOp)]
        if len(loops) != 1 or any(op.dialect_name() not in ("arith", "math") for op in others):
            return chain
        (lp,) = loops
        if not lp.is_free or lp.static_lb is None:
            return chain
        chain.append(lp)
        block = lp.body.block


def has_free_loop(lp: tile.ForOp) -> bool:
    return any(isinstance(op, tile.ForOp) and op.is_free for op in lp.body.walk())


@dataclass(frozen=True)
class TileMapGridPass(ModulePass):
    """Bind the outer free loops of each kernel to block.x/y/z (at most `max-dims` of them) and
    set the grid. A no-op on kernels that already have bound loops."""

    name = "tile-map-grid"

    max_dims: int = 3
    leave_innermost: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in [k for k in op.walk() if isinstance(k, tile.KernelOp)]:
            self.map_kernel(kernel)

    def map_kernel(self, kernel: tile.KernelOp) -> None:
        if any(
            isinstance(o, tile.ForOp) and o.binding != tile.Bind.SERIAL for o in kernel.body.walk()
        ):
            return
        chain = free_loop_chain(kernel)
        candidates = [lp for lp in chain if (lp.extent or 0) > 1]
        if (
            self.leave_innermost
            and len(candidates) >= 2
            and candidates[-1] is chain[-1]
            and not has_free_loop(chain[-1])
        ):
            candidates.pop()
        chosen = candidates[-self.max_dims :] if self.max_dims > 0 else []
        grid = [1, 1, 1]
        axes = (tile.Bind.BLOCK_X, tile.Bind.BLOCK_Y, tile.Bind.BLOCK_Z)
        for axis, lp in enumerate(reversed(chosen)):
            extent = lp.extent
            assert extent is not None
            if extent > tile.MAX_GRID[axis]:
                break
            grid[axis] = extent
            lp.bind = tile.BindAttr(axes[axis])
        if grid == [1, 1, 1]:
            return
        kernel.set_launch(grid=grid)
        kernel.record(self)
