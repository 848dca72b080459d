"""tile-unroll: short innermost serial loops are unrolled (`bind(unroll)`, printed as
`#pragma unroll` before the CUDA `for`), so their induction variable becomes a constant in
each copy: register-tile accumulators stay in registers and shared-memory addresses fold.

    %d = tile.for %kk = 0 to 32 bind(serial) iter(...) { ... }
    ->
    %d = tile.for %kk = 0 to 32 bind(unroll) iter(...) { ... }

Applies to serial loops with static bounds and 2 to `unroll` iterations (the plan's knob; 0
unrolls nothing) that hold no other loop, stage or combine. The heuristic's 32 is the K chunk
of tile-chunk-reduce (with a 4 x 4 register tile, 512 multiply-adds per unrolled chunk).
"""

from __future__ import annotations

from dataclasses import dataclass

from deplo.dialects import tile
from deplo.dialects.tile_plan import Plan
from deplo.passes.tile.kernel_pass import KernelPass


@dataclass(frozen=True)
class TileUnrollPass(KernelPass):
    """Bind innermost serial loops of at most `unroll` iterations to `unroll`."""

    name = "tile-unroll"

    unroll: int | None = None

    def carry_out(self, kernel: tile.KernelOp, plan: Plan) -> None:
        limit = plan.knob("unroll")
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
