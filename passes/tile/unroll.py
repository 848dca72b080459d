"""tile-unroll: short innermost serial loops are unrolled (`bind(unroll)`, printed as
`#pragma unroll` before the CUDA `for`), so their induction variable becomes a constant in
each copy: register-tile accumulators stay in registers and shared-memory addresses fold.

    %d = tile.for %kk = 0 to 32 bind(serial) iter(...) { ... }
    ->
    %d = tile.for %kk = 0 to 32 bind(unroll) iter(...) { ... }

Applies to serial loops with static bounds and at most `max-extent` iterations that hold no
other loop, stage or combine. Heuristic (max-extent=0): 32, the K chunk of tile-chunk-reduce
(with a 4 x 4 register tile, 512 multiply-adds per unrolled chunk).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from deplo.dialects import tile


@dataclass(frozen=True)
class TileUnrollPass(ModulePass):
    """Bind innermost serial loops of at most `max-extent` iterations to `unroll` (0: 32)."""

    name = "tile-unroll"

    max_extent: int = 0

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        limit = self.max_extent or 32
        for kernel in [k for k in op.walk() if isinstance(k, tile.KernelOp)]:
            changed = False
            for lp in [o for o in kernel.body.walk() if isinstance(o, tile.ForOp)]:
                if lp.binding != tile.Bind.SERIAL or lp.static_lb is None:
                    continue
                if not 1 < (lp.extent or 0) <= limit:
                    continue
                if any(
                    isinstance(o, tile.ForOp | tile.StageOp | tile.CombineOp)
                    for o in lp.body.walk()
                    if o is not lp
                ):
                    continue
                lp.bind = tile.BindAttr(tile.Bind.UNROLL)
                changed = True
            if changed:
                kernel.record(dataclasses.replace(self, max_extent=limit))
