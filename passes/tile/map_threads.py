"""tile-map-threads: the innermost free loops at block level run on the threads of the block.

Short loops (extent <= threads) are bound directly; the block is the extent rounded up to a
warp, and the ids past the extent skip the body:

    tile.for %a1 = 0 to 16 bind(serial) { ... }   ->   tile.for %a1 = 0 to 16 bind(thread.x) { ... }
                                                       (block(32, 1, 1))
Longer loops are strided, every thread takes every T-th iteration:

    tile.for %a3 = 0 to 2048 bind(serial) { ... }
    ->
    tile.for %t = 0 to 256 bind(thread.x) {
      tile.for %a3 = %t to 2048 step 256 bind(serial) { ... }
    }

T is the plan's `threads`. Reductions outside these loops stay serial, computed by every thread
alike (a pointwise plan; a row_reduce plan shares them: tile-cooperative-reduce).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.rewriter import InsertPoint, Rewriter

from deplo import hardware as hw
from deplo.analysis.nest import block_regions, innermost_free_loops
from deplo.dialects import tile
from deplo.dialects.tile_plan import Plan
from deplo.passes.tile.kernel_pass import KernelPass
from deplo.passes.tile.rewrite import stride_loop, thread_loop


@dataclass(frozen=True)
class TileMapThreadsPass(KernelPass):
    """Bind the innermost free loops of each block-level region to thread.x, strided when longer
    than `threads`, and set the block size."""

    name = "tile-map-threads"

    threads: int | None = None

    def carry_out(self, kernel: tile.KernelOp, plan: Plan) -> None:
        threads = plan.knob("threads")
        block_x = 0
        for region in block_regions(kernel):
            for lp in innermost_free_loops(region):
                extent = lp.extent
                if extent is None:  # (stops at a run-time value, `min(%n, 8)`: stays serial)
                    continue
                if extent <= threads:
                    lp.bind = tile.BindAttr(tile.Bind.THREAD_X)
                    block_x = max(block_x, -(-extent // hw.WARP) * hw.WARP)
                    continue
                outer = thread_loop(threads)
                Rewriter.insert_op(outer, InsertPoint.before(lp))
                stride_loop(lp, outer.iv, threads, Builder(InsertPoint.before(outer.body.block.last_op)))
                block_x = max(block_x, threads)
        if block_x:
            kernel.set_launch(block=(min(block_x, hw.MAX_BLOCK_THREADS), 1, 1))
