"""tile-cp-async: stages copy with `cp.async` (global -> shared without a trip through registers,
LDGSTS on sm_80+) instead of loads and stores.

    %xs = tile.stage %x[%o, %k0] [64, 32] into shared copy(sync) ...
    ->
    %xs = tile.stage %x[%o, %k0] [64, 32] into shared copy(cp_async) ...

tile-to-kernel copies 16-byte pieces where the slab, the rows and the offset are multiples of
16 bytes (offsets proven by analysis.known_multiple), else 4-byte pieces, then commits and waits
for the group (with buffers(2): one chunk ahead). A no-op on stages whose elements are not a
whole number of 4-byte pieces in line (e.g. an odd fp16 row), and on stages already async.
`min-bytes`: only copies of pieces at least this large (16 keeps 4-byte copies sync).

Heuristic (`loops-only=true`): only stages inside a loop (the K chunks of a matmul), where the
copy of the next chunk overlaps the compute of this one; a one-off stage waits at once.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from deplo.dialects import tile
from deplo.passes.tile.analysis import stage_vector
from deplo.passes.tile.double_buffer import in_repeating_loop
from deplo.passes.tile.pad_shared import restage


@dataclass(frozen=True)
class TileCpAsyncPass(ModulePass):
    """Switch stages to `copy(cp_async)` where their pieces are aligned (`min-bytes` = 4 or 16)."""

    name = "tile-cp-async"

    min_bytes: int = 4
    loops_only: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in [k for k in op.walk() if isinstance(k, tile.KernelOp)]:
            changed = False
            for st in [o for o in kernel.body.walk() if isinstance(o, tile.StageOp)]:
                if st.copy.data != tile.CopyKind.SYNC:
                    continue
                if self.loops_only and not in_repeating_loop(st):
                    continue
                if not any(stage_vector(st, n) for n in (16, 4) if n >= self.min_bytes):
                    continue
                restage(st, copy=tile.CopyKind.CP_ASYNC)
                changed = True
            if changed:
                kernel.record(self)
