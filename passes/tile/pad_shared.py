"""tile-pad-shared: the rows of a 2-D staged buffer get `pad` extra elements, so that threads
reading down a column hit different shared-memory banks.

    %xs = tile.stage %x[%o, %k0] [64, 32] into shared copy(sync) buffers(1) pad(0)
        : memref<128x96xf32> -> memref<64x32xf32, 3 : i64>
    ->
    %xs = tile.stage %x[%o, %k0] [64, 32] into shared copy(sync) buffers(1) pad(4)
        : memref<128x96xf32> -> memref<64x36xf32, 3 : i64>

A row of 32 fp32 is 128 bytes, one full turn of the 32 four-byte banks: element [r][k] of every
row r sits in the same bank, so the threads of a warp that read A[i][k] for different rows i
(tile-register-tile's rows of one thread, the thread.y rows of a warp) are serialized; with
rows of 64 bytes every other row collides (an `ldmatrix` reads 8 rows of 16 bytes at once). Loads keep
their coordinates; only the buffer's row stride changes. A no-op on 1-D stages and on stages
already padded; a stage is left alone when the padding would not fit in shared memory.

Heuristic (pad=-1): pad rows whose size is a multiple of 64 bytes by 16 bytes (4 fp32, 8 fp16):
it breaks the bank alignment (8 rows of an ldmatrix fall in 8 different 16-byte bank groups) and
keeps rows 16-byte aligned for vector, cp.async and ldmatrix accesses.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import MemRefType, ModuleOp
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from deplo.dialects import tile


def restage(op: tile.StageOp, **changes) -> tile.StageOp:
    """The same stage with some of copy / buffers / pad changed (replaces `op`)."""
    fields = {"copy": op.copy.data, "buffers": op.buffers.data, "pad": op.pad.data} | changes
    new = tile.StageOp(op.source, op.mixed_offsets(), op.size_list, **fields)
    new.attributes |= op.attributes
    new.result.name_hint = op.result.name_hint
    Rewriter.replace_op(op, new)
    return new


@dataclass(frozen=True)
class TilePadSharedPass(ModulePass):
    """Pad the rows of 2-D (or more) staged buffers by `pad` elements (-1 picks the heuristic)."""

    name = "tile-pad-shared"

    pad: int = -1

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in [k for k in op.walk() if isinstance(k, tile.KernelOp)]:
            self.pad_kernel(kernel)

    def pick(self, t: MemRefType) -> int:
        if self.pad >= 0:
            return self.pad
        eb = tile.element_bytes(t.element_type)
        return 16 // eb if (t.get_shape()[-1] * eb) % 64 == 0 else 0

    def pad_kernel(self, kernel: tile.KernelOp) -> None:
        free = tile.SHARED_MEMORY_BYTES - kernel.staged_bytes()
        pads = set()
        for st in [o for o in kernel.body.walk() if isinstance(o, tile.StageOp)]:
            t = st.result.type
            assert isinstance(t, MemRefType)
            if st.pad.data or t.get_num_dims() < 2:
                continue
            if (p := self.pick(t)) <= 0:
                pads.add(0)
                continue
            rows = math.prod(t.get_shape()[:-1])
            extra = rows * p * tile.element_bytes(t.element_type) * st.buffers.data
            if extra > free:
                continue
            free -= extra
            restage(st, pad=p)
            pads.add(p)
        if pads - {0}:  # the value picked, when every 2-D stage got it (replays the same)
            kernel.record(TilePadSharedPass(pads.pop() if len(pads) == 1 else self.pad))
