"""tile-double-buffer: a stage inside a loop alternates between two buffers, so filling the
next one does not wait for the threads still reading the last one.

    tile.for %k0 = 0 to 96 step 32 bind(serial) iter(...) {
      %xs = tile.stage %x[%o, %k0] [64, 32] into shared copy(sync) buffers(1) pad(0) : ...
    ->
      %xs = tile.stage %x[%o, %k0] [64, 32] into shared copy(sync) buffers(2) pad(0) : ...

tile-to-kernel indexes the halves by the loop's iteration parity and drops the barrier that a
single buffer needs before each refill; with `copy(cp_async)` it also issues the next
iteration's copy before waiting for this one (a prefetch). A no-op on stages outside loops,
already double-buffered, or whose second buffer would not fit in shared memory (`max-bytes`).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from deplo.dialects import tile
from deplo.passes.tile.pad_shared import restage


def in_repeating_loop(op: tile.StageOp) -> bool:
    return any(
        not (lp.binding.is_block or lp.binding.is_thread) and lp.extent != 1
        for lp in tile.enclosing_loops(op)
    )


@dataclass(frozen=True)
class TileDoubleBufferPass(ModulePass):
    """Give every stage inside a serial loop a second buffer (`buffers(2)`), while the kernel's
    staged bytes stay within `max-bytes`."""

    name = "tile-double-buffer"

    max_bytes: int = tile.SHARED_MEMORY_BYTES

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in [k for k in op.walk() if isinstance(k, tile.KernelOp)]:
            free = min(self.max_bytes, tile.SHARED_MEMORY_BYTES) - kernel.staged_bytes()
            changed = False
            for st in [o for o in kernel.body.walk() if isinstance(o, tile.StageOp)]:
                if st.buffers.data != 1 or not in_repeating_loop(st) or st.smem_bytes > free:
                    continue
                free -= st.smem_bytes
                restage(st, buffers=2)
                changed = True
            if changed:
                kernel.record(self)
