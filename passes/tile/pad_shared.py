"""tile-pad-shared: the rows of 2-D staged buffers get `pad` extra elements (a matmul plan's
knob), so that threads reading down a column hit different shared-memory banks.

    %xs = tile.stage %x[%o, %k0] [64, 32] into shared copy(sync) buffers(1) pad(0)
        : memref<128x96xf32> -> memref<64x32xf32, 3 : i64>
    ->
    %xs = tile.stage %x[%o, %k0] [64, 32] into shared copy(sync) buffers(1) pad(4)
        : memref<128x96xf32> -> memref<64x36xf32, 3 : i64>

A row of 32 fp32 is 128 bytes, one full turn of the 32 four-byte banks: element [r][k] of every
row r sits in the same bank, so the threads of a warp that read A[i][k] for different rows i
(tile-register-tile's rows of one thread, the thread.y rows of a warp) are serialized; with
rows of 64 bytes every other row collides (an `ldmatrix` reads 8 rows of 16 bytes at once).
Loads keep their coordinates; only the buffer's row stride changes. 1-D stages are left alone.
The heuristic pads by 16 bytes (4 fp32, 8 fp16) where a row is a multiple of 64 bytes: that
breaks the bank alignment and keeps rows 16-byte aligned for vector, cp.async and ldmatrix.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import MemRefType

from deplo.dialects import tile
from deplo.dialects.tile_plan import Plan
from deplo.passes.tile.kernel_pass import KernelPass
from deplo.passes.tile.rewrite import restage


@dataclass(frozen=True)
class TilePadSharedPass(KernelPass):
    """Pad the rows of 2-D (or more) staged buffers by `pad` elements."""

    name = "tile-pad-shared"

    pad: int | None = None

    def carry_out(self, kernel: tile.KernelOp, plan: Plan) -> None:
        pad = plan.knob("pad")
        for st in [o for o in kernel.body.walk() if isinstance(o, tile.StageOp)]:
            t = st.result.type
            assert isinstance(t, MemRefType)
            if pad and t.get_num_dims() >= 2 and st.pad.data != pad:
                restage(st, pad=pad)
