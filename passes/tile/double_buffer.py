"""tile-double-buffer: a stage inside a loop takes `buffers` buffers in turn (a matmul plan's
`buffers`, or a tensor-core attention plan's for its K and V tiles; 1 to 4; the name is its
first use, two), so filling the next one does not wait for the threads still reading the last.

    tile.for %k0 = 0 to 96 step 32 bind(serial) iter(...) {
      %xs = tile.stage %x[%o, %k0] [64, 32] into shared copy(sync) buffers(1) pad(0) : ...
    ->
      %xs = tile.stage %x[%o, %k0] [64, 32] into shared copy(sync) buffers(2) pad(0) : ...

tile-to-kernel indexes the buffers by the loop's iteration number modulo n and drops the
barrier that a single buffer needs before each refill; with `copy(cp_async)` it also issues the
copies of the next n - 1 iterations before waiting for this one's (a pipeline). Stages outside
loops keep one buffer.
"""

from __future__ import annotations

from dataclasses import dataclass

from deplo.analysis.nest import repeating_loops
from deplo.dialects import tile
from deplo.dialects.tile_plan import Plan
from deplo.passes.tile.kernel_pass import KernelPass
from deplo.passes.tile.rewrite import restage


@dataclass(frozen=True)
class TileDoubleBufferPass(KernelPass):
    """Give every stage inside a serial loop `buffers` buffers."""

    name = "tile-double-buffer"

    buffers: int | None = None

    def carry_out(self, kernel: tile.KernelOp, plan: Plan) -> None:
        buffers = plan.knob("buffers")
        for st in [o for o in kernel.body.walk() if isinstance(o, tile.StageOp)]:
            if st.buffers.data != buffers and repeating_loops(st):
                restage(st, buffers=buffers)
