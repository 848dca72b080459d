"""tile-cp-async: stages copy with `cp.async` (global -> shared without a trip through registers,
LDGSTS on sm_80+) instead of loads and stores, when the plan's `copy` is `cp_async`.

    %xs = tile.stage %x[%o, %k0] [64, 32] into shared copy(sync) ...
    ->
    %xs = tile.stage %x[%o, %k0] [64, 32] into shared copy(cp_async) ...

tile-to-kernel copies 16-byte pieces where the slab, the rows and the offset are multiples of
16 bytes (offsets proven by analysis/index.py, `known_multiple`), else 4-byte pieces, then
commits and waits for the group (with buffers(n): n - 1 chunks ahead). A stage whose elements are
not a whole number of 4-byte pieces in line (e.g. an odd fp16 row) keeps its plain copy. The
heuristic uses cp.async for stages in loops (the K chunks of a matmul), where the copy of the
next chunk overlaps the compute of this one; a one-off stage would wait at once. A stage of a
`tile.gather` (an implicit GEMM's window, zero in the padding) keeps its plain copy: cp.async
copies bytes, it does not compute them.
"""

from __future__ import annotations

from dataclasses import dataclass

from deplo.analysis.index import stage_vector
from deplo.dialects import tile
from deplo.dialects.tile_plan import Plan
from deplo.passes.tile.kernel_pass import KernelPass
from deplo.passes.tile.rewrite import restage


@dataclass(frozen=True)
class TileCpAsyncPass(KernelPass):
    """Switch stages to `copy(cp_async)` where their pieces are aligned (plan knob `copy`)."""

    name = "tile-cp-async"

    copy: str | None = None

    def carry_out(self, kernel: tile.KernelOp, plan: Plan) -> None:
        if plan.knob("copy") != "cp_async":
            return
        for st in [o for o in kernel.body.walk() if isinstance(o, tile.StageOp)]:
            if isinstance(st.source.owner, tile.GatherOp):
                continue  # (computed element by element: loads, index math, st.shared)
            if st.copy.data == tile.CopyKind.SYNC and (stage_vector(st, 16) or stage_vector(st, 4)):
                restage(st, copy=tile.CopyKind.CP_ASYNC)
