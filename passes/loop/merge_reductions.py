"""loop-merge-reductions: sibling reduce loops over the same range become one pass over the data.

    %s1 = loop.for %r = 0 to 2048 reduce iter(%a = %z) -> f32 { ...x[r]*x[r]... }   // RMSNorm
    %s2 = loop.for %q = 0 to 2048 reduce iter(%b = %z) -> f32 { ...x[q]*x[q]... }   // the same
    %g = loop.for %k = 0 to 2048 reduce iter(%c = %z) -> f32 { ... x[k] * wg[j, k] ... }
    %u = loop.for %k = 0 to 2048 reduce iter(%d = %z) -> f32 { ... x[k] * wu[j, k] ... }
  ->
    %s1 = loop.for %r = 0 to 2048 reduce iter(%a = %z) -> f32 { ... }                 // once
    %g, %u = loop.for %k = 0 to 2048 reduce iter(%c = %z, %d = %z) -> (f32, f32) {
      ... x[k] * wg[j, k] ... x[k] * wu[j, k] ... loop.yield %c2, %d2 : f32, f32 }

Fusion leaves such siblings behind: a reduction hoisted into a consumer once per load that reads
it (silu(gate)·up reads both projections' row statistic), and two reductions fused into one
epilogue (gate and up). An identical loop is computed once; independent loops are merged, so
the data they both read is read once per iteration (`loop-simplify` then shares the loads).
Loops that depend on each other (softmax's max, then sum of exp) are left alone:
`loop-online-softmax` is the rewrite for that pair.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from deplo.dialects import loop


def _is_reduce(op: Operation) -> bool:
    return isinstance(op, loop.ForOp) and op.kind.data == loop.LoopKind.REDUCE


def same_range(a: loop.ForOp, b: loop.ForOp) -> bool:
    return (a.lb.data, a.ub.data, a.step.data) == (b.lb.data, b.ub.data, b.step.data)


def equivalent(a: loop.ForOp, b: loop.ForOp) -> bool:
    """Same range, same inits, same body up to the names of its block arguments."""
    if not same_range(a, b):
        return False
    return a.is_structurally_equivalent(b, {a.parent: b.parent})


def _outside_values(op: Operation) -> set[SSAValue]:
    """The values `op` (and its regions) use that are defined outside it."""
    inside = {r for o in op.walk() for r in o.results}
    inside |= {a for o in op.walk() for reg in o.regions for blk in reg.blocks for a in blk.args}
    return {v for o in op.walk() for v in o.operands if v not in inside}


def _defined_before(v: SSAValue, op: Operation) -> bool:
    """Whether `v` is available right before `op` (defined above it or around it)."""
    owner = v.owner
    if isinstance(owner, Block):
        return owner.is_ancestor(op)
    block = op.parent_block()
    cur: Operation | None = op
    while cur is not None and block is not None:
        if owner.parent_block() is block:
            return block.get_operation_index(owner) < block.get_operation_index(cur)
        cur = block.parent_op()
        block = cur.parent_block() if cur is not None else None
    return False


def merge(a: loop.ForOp, b: loop.ForOp, rewriter: PatternRewriter) -> loop.ForOp:
    """One loop at `a`'s place carrying a's accumulators, then b's."""
    new = loop.ForOp(a.lb.data, a.ub.data, loop.LoopKind.REDUCE, [*a.inits, *b.inits],
                     step=a.step.data)
    na = len(a.inits)
    new.iv.name_hint = a.iv.name_hint
    for old, arg in zip([*a.accs, *b.accs], new.accs):
        arg.name_hint = old.name_hint
    block = new.body.block
    yielded: list[SSAValue] = []
    for lp, accs in ((a, new.accs[:na]), (b, new.accs[na:])):
        mapper: dict[SSAValue, SSAValue] = {lp.iv: new.iv, **dict(zip(lp.accs, accs))}
        for op in lp.body.block.ops:
            if isinstance(op, loop.YieldOp):
                yielded += [mapper.get(v, v) for v in op.values]
                continue
            block.add_op(op.clone(value_mapper=mapper))
    block.add_op(loop.YieldOp(*yielded))
    rewriter.insert(new, InsertPoint.before(a))
    results = list(new.res)
    for old, res in zip([*a.res, *b.res], results):
        res.name_hint = old.name_hint
    rewriter.replace(b, [], results[na:])
    rewriter.replace(a, [], results[:na])
    return new


def merge_block(block: Block, rewriter: PatternRewriter) -> bool:
    """One dedupe or merge among the reduce loops directly in `block`; True if it did one."""
    loops = [op for op in block.ops if _is_reduce(op)]
    for i, a in enumerate(loops):
        for b in loops[i + 1 :]:
            if equivalent(a, b):
                rewriter.replace(b, [], list(a.res))
                return True
            if not same_range(a, b):
                continue
            if all(_defined_before(v, a) for v in _outside_values(b)):
                merge(a, b, rewriter)
                return True
    return False


def dedupe_constants(kernel: loop.KernelOp, rewriter: PatternRewriter) -> None:
    """One `arith.constant` per value at the kernel's top (fusion copies each producer's), so
    that equal loops also have equal operands."""
    seen: dict = {}
    for op in list(kernel.body.block.ops):
        if isinstance(op, arith.ConstantOp):
            key = (str(op.value), op.result.type)
            if key in seen:
                rewriter.replace(op, [], [seen[key]])
            else:
                seen[key] = op.result


class MergeSiblingReductions(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, kernel: loop.KernelOp, rewriter: PatternRewriter) -> None:
        dedupe_constants(kernel, rewriter)
        changed = True
        while changed:
            changed = False
            blocks = [kernel.body.block] + [
                op.body.block for op in kernel.walk() if isinstance(op, loop.ForOp)
            ]
            for block in blocks:
                if merge_block(block, rewriter):
                    changed = True
                    break


@dataclass(frozen=True)
class LoopMergeReductionsPass(ModulePass):
    """Compute identical sibling reduce loops once; merge independent ones with the same range
    into one loop carrying all their accumulators."""

    name = "loop-merge-reductions"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier([MergeSiblingReductions()], dce_enabled=False),
            apply_recursively=False,
        ).rewrite_module(op)
