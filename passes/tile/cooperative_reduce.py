"""tile-cooperative-reduce: the threads of a block share a long reduction (the RMSNorm schedule).

At block level (inside the block-bound loops) the region's body runs on T threads (the plan's
`threads`, at most the longest reduction rounded up to a warp); each reduce loop becomes each
thread's strided share followed by a `tile.combine`, and the free loops of the region become
strided too, so every thread takes its share of the epilogue:

    %ss = tile.for %a2 = 0 to 2048 bind(serial) iter(%acc = %zero) -> f32 { ... }
    %r = ... %ss ...
    tile.for %a3 = 0 to 2048 bind(serial) { ... }
    ->
    tile.for %t = 0 to 256 bind(thread.x) {
      %p = tile.for %a2 = %t to 2048 step 256 bind(serial) iter(%acc = %zero) -> f32 { ... }
      %ss = tile.combine add %p over thread.x : f32
      %r = ... %ss ...
      tile.for %a3 = %t to 2048 step 256 bind(serial) { ... }
    }

With the plan's `vector` V (fact `contiguous`: the row's accesses walk its innermost dim), each
step of a thread's share is V neighbouring elements (`unroll_by`), which kernel-vectorize makes
one 16-byte access: `tile.for %a2 = %t * 4 to 2048 step 1024` holding the body at %a2 .. %a2 + 3.
A warp then keeps four times the bytes in flight per load (a row on one block streams at what
its warps keep in flight, Little's law); a loop whose trip count V does not divide stays
strided by single elements.

Each thread starts its share from the combiner's identity; a non-identity init is folded in
after the combine. The region must be a row reduction (analysis/nest.py: every accumulator
updated by one recognized combiner, `acc = acc + f(...)`, max, min, mul).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.rewriter import InsertPoint

from deplo import hardware as hw
from deplo.analysis.nest import block_regions, row_reduction
from deplo.dialects import tile
from deplo.dialects.tile_plan import Plan
from deplo.passes.tile.kernel_pass import KernelPass, PassOptionError
from deplo.passes.tile.rewrite import on_threads, share_reductions, stride_loop, unroll_by


@dataclass(frozen=True)
class TileCooperativeReducePass(KernelPass):
    """Split the reduce loops of each block-level region between `threads` threads (strided
    loop + `tile.combine`); the region's free loops become strided thread loops too."""

    name = "tile-cooperative-reduce"

    threads: int | None = None
    vector: int | None = None

    def carry_out(self, kernel: tile.KernelOp, plan: Plan) -> None:
        rows = [(r, row) for r in block_regions(kernel) if (row := row_reduction(r))]
        if not rows:
            raise PassOptionError(f"{self.name}: kernel @{kernel.sym_name.data}: its "
                                  "row_reduce plan does not match its loops (no shared reduction)")
        threads, vector = 0, plan.knob("vector", 1)
        for _, row in rows:
            t = min(plan.knob("threads"), -(-row.extent // (hw.WARP * vector)) * hw.WARP)
            outer = on_threads(row.ops, t)
            steps = {lp: _in_steps(lp, vector) for lp, _ in row.reduces}
            share_reductions([(steps[lp], kinds) for lp, kinds in row.reduces], outer.iv, t,
                             online=[steps[lp] for lp in row.online],
                             args=[steps[lp] for lp in row.args])
            for op in list(outer.body.block.ops):
                if isinstance(op, tile.ForOp) and op.is_free and op.static_lb is not None:
                    op = _in_steps(op, vector)
                    stride_loop(op, outer.iv, t, Builder(InsertPoint.before(op)))
            threads = max(threads, t)
        kernel.set_launch(block=(threads, 1, 1))


def _in_steps(lp: tile.ForOp, vector: int) -> tile.ForOp:
    """`lp` walking `vector` neighbouring iterations a step (unroll_by), where it can: static
    lb, step 1, a trip count `vector` divides; else `lp` as it is."""
    if vector > 1 and lp.static_lb is not None and lp.step.data == 1 \
            and lp.extent is not None and lp.extent % vector == 0:
        return unroll_by(lp, vector)
    return lp
