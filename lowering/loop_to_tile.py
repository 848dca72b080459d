"""loop -> tile: the trivial schedule. Every loop becomes `bind(serial)`, the kernel runs as one
block of one thread. Slow but correct, and it lowers to CUDA like any other schedule; the `tile-*`
passes then make one decision each.

    loop.kernel @k(%x: memref<16xf32>, ...) {          tile.kernel @k(%x: memref<16xf32>, ...)
      loop.for %i = 0 to 16 free { ... }        ->         grid(1, 1, 1) block(1, 1, 1) schedule [] {
    }                                                    tile.for %i = 0 to 16 bind(serial) { ... }
                                                       }
    loop.launch @k(...) : ...                   ->     tile.launch @k(...) : ...
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from deplo.dialects import loop, tile


class KernelToTile(RewritePattern):
    """`loop.kernel @k(...) {...}` -> `tile.kernel @k(...) grid(1, 1, 1) block(1, 1, 1) schedule [] {...}`"""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: loop.KernelOp, rewriter: PatternRewriter) -> None:
        body = rewriter.move_region_contents_to_new_regions(op.body)
        new = tile.KernelOp(op.sym_name.data, [], body)
        new.attributes |= op.attributes
        rewriter.replace(op, new)


class ForToTile(RewritePattern):
    """`loop.for %i = 0 to 16 free|reduce ...` -> `tile.for %i = 0 to 16 bind(serial) ...`"""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: loop.ForOp, rewriter: PatternRewriter) -> None:
        body = rewriter.move_region_contents_to_new_regions(op.body)
        new = tile.ForOp(
            op.lb.data, op.ub.data, tile.Bind.SERIAL, list(op.inits), body, op.step.data
        )
        new.attributes |= op.attributes
        rewriter.replace(op, new)


class YieldToTile(RewritePattern):
    """`loop.yield %v : f32` -> `tile.yield %v : f32`"""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: loop.YieldOp, rewriter: PatternRewriter) -> None:
        rewriter.replace(op, tile.YieldOp(*op.values))


class LaunchToTile(RewritePattern):
    """`loop.launch @k(...)` -> `tile.launch @k(...)`"""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: loop.LaunchOp, rewriter: PatternRewriter) -> None:
        rewriter.replace(op, tile.LaunchOp(op.callee.root_reference.data, list(op.args)))


@dataclass(frozen=True)
class LoopToTilePass(ModulePass):
    """Every loop kernel to a tile kernel with the trivial schedule (one block of one thread,
    every loop serial); launches follow."""

    name = "loop-to-tile"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier(
                [KernelToTile(), ForToTile(), YieldToTile(), LaunchToTile()], dce_enabled=False
            ),
            apply_recursively=False,
        ).rewrite_module(op)
