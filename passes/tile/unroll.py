"""tile-unroll: short innermost serial loops are unrolled (`bind(unroll)`, printed as
`#pragma unroll` before the CUDA `for`), so their induction variable becomes a constant in
each copy: register-tile accumulators stay in registers and shared-memory addresses fold.

    %d = tile.for %kk = 0 to 32 bind(serial) iter(...) { ... }
    ->
    %d = tile.for %kk = 0 to 32 bind(unroll) iter(...) { ... }

Applies to serial loops with static bounds and 2 to `unroll` iterations (the plan's knob; 0
unrolls nothing) that hold no other loop, stage or combine, except a split-K tile's sum in its
last block (tile.split_last: unrolled, it would cost the main loop registers). The heuristic's 32 is the K chunk
of tile-chunk-reduce (with a 4 x 4 register tile, 512 multiply-adds per unrolled chunk).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import scf

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
            ) or _in_last_split(lp):
                continue
            lp.bind = tile.BindAttr(tile.Bind.UNROLL)


def _in_last_split(lp: tile.ForOp) -> bool:
    """The last split's sum over the partials (tile-split-k, `split_sum = last_block`) stays a
    loop: its m x n loads a split are ILP enough, and unrolled they would raise the registers of
    the whole kernel, so the occupancy of its main loop."""
    parent = lp.parent_op()
    while parent is not None and not isinstance(parent, tile.KernelOp):
        if isinstance(parent, scf.IfOp) and isinstance(parent.cond.owner, tile.SplitLastOp):
            return True
        parent = parent.parent_op()
    return False
