"""tile-cooperative-reduce: the threads of a block share a long reduction (the RMSNorm schedule).

At block level (inside the block-bound loops), when the region holds a reduce loop and no thread
loop yet, the region's body runs on T threads; the reduce loop becomes each thread's strided
share followed by a `tile.combine`, and the free loops of the region become strided too, so
every thread takes its share of the epilogue:

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

Each thread starts its share from the combiner's identity; a non-identity init is folded in
after the combine. Fires only when every accumulator is updated by one recognized combiner
(`acc = acc + f(...)`, max, min, mul) and the longest reduce loop has `min-extent` iterations.
T is `threads` rounded to warps, at most the reduce extent rounded up to a warp.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import AnyFloat, FloatAttr, IntegerAttr, IntegerType, ModuleOp
from xdsl.ir import Attribute, Block, Operation, OpResult, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from deplo.dialects import tile
from deplo.passes.tile.map_threads import new_thread_loop, round_up, stride_loop, warp_threads

K = tile.CombineKind
COMBINERS: dict[type[Operation], K] = {
    arith.AddfOp: K.ADD,
    arith.AddiOp: K.ADD,
    arith.MulfOp: K.MUL,
    arith.MuliOp: K.MUL,
    arith.MaximumfOp: K.MAX,
    arith.MaxnumfOp: K.MAX,
    arith.MaxSIOp: K.MAX,
    arith.MinimumfOp: K.MIN,
    arith.MinnumfOp: K.MIN,
    arith.MinSIOp: K.MIN,
}
"""Accumulator updates this pass can split between threads, and the combine they become."""


def identity(kind: K, t: Attribute) -> Attribute:
    """The neutral element of `kind` for type `t`, as a constant's value."""
    if isinstance(t, AnyFloat):
        value = {K.ADD: 0.0, K.MUL: 1.0, K.MAX: -math.inf, K.MIN: math.inf}[kind]
        return FloatAttr(value, t)
    assert isinstance(t, IntegerType)
    bits = t.width.data
    value = {K.ADD: 0, K.MUL: 1, K.MAX: -(2 ** (bits - 1)), K.MIN: 2 ** (bits - 1) - 1}[kind]
    return IntegerAttr(value, t)


def is_identity(v: SSAValue, kind: K) -> bool:
    op = v.owner
    return isinstance(op, arith.ConstantOp) and op.value == identity(kind, v.type)


def depends_on(v: SSAValue, values: set[SSAValue], scope: Block) -> bool:
    """Whether `v` is computed, inside `scope`, from one of `values`."""
    seen: set[SSAValue] = set()
    stack = [v]
    while stack:
        cur = stack.pop()
        if cur in values:
            return True
        if cur in seen:
            continue
        seen.add(cur)
        owner = cur.owner
        if isinstance(owner, Operation) and scope.is_ancestor(owner):
            stack.extend(owner.operands)
            for inner in owner.walk():
                stack.extend(inner.operands)
    return False


def combine_kinds(lp: tile.ForOp) -> list[K] | None:
    """The combiner of each accumulator of a reduce loop, or None if one is not recognized."""
    block = lp.body.block
    accs = set(lp.accs)
    kinds = []
    for acc, new in zip(lp.accs, lp.body.block.last_op.operands):
        op = new.owner
        kind = COMBINERS.get(type(op)) if isinstance(new, OpResult) else None
        if kind is None or op.parent_block() is not block or not acc.has_one_use():
            return None
        if acc not in op.operands:
            return None
        other = op.operands[1] if op.operands[0] is acc else op.operands[0]
        if depends_on(other, accs, block):
            return None
        kinds.append(kind)
    return kinds


def combine_op(kind: K, lhs: SSAValue, rhs: SSAValue) -> Operation:
    floating = isinstance(lhs.type, AnyFloat)
    cls = {
        K.ADD: (arith.AddfOp, arith.AddiOp),
        K.MUL: (arith.MulfOp, arith.MuliOp),
        K.MAX: (arith.MaximumfOp, arith.MaxSIOp),
        K.MIN: (arith.MinimumfOp, arith.MinSIOp),
    }[kind][0 if floating else 1]
    return cls(lhs, rhs)


@dataclass(frozen=True)
class TileCooperativeReducePass(ModulePass):
    """Split the reduce loops of each block-level region between `threads` threads (strided
    loop + `tile.combine`); the region's free loops become strided thread loops too."""

    name = "tile-cooperative-reduce"

    threads: int = 256
    min_extent: int = 64

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in [k for k in op.walk() if isinstance(k, tile.KernelOp)]:
            self.map_kernel(kernel)

    def map_kernel(self, kernel: tile.KernelOp) -> None:
        if tile.has_thread_loops(kernel) or kernel.block_dims != (1, 1, 1):
            return
        plans = [p for region in tile.block_regions(kernel) if (p := self.plan(region))]
        if not plans:
            return
        threads = 0
        for ops, reduces, extent in plans:
            t = min(warp_threads(self.threads), round_up(extent, tile.WARP))
            self.rewrite(ops, reduces, t)
            threads = max(threads, t)
        kernel.set_launch(block=(threads, 1, 1))
        kernel.record(self)

    def plan(self, region: Block):
        """The ops to run on threads (after the last tile.stage), their reduce loops with
        combiners, and the longest reduce extent; None when the pass does not apply."""
        ops = [op for op in region.ops if not isinstance(op, tile.YieldOp)]
        stages = [i for i, op in enumerate(ops) if isinstance(op, tile.StageOp)]
        ops = ops[stages[-1] + 1 :] if stages else ops
        reduces = []
        for op in ops:
            if isinstance(op, tile.ForOp) and op.binding == tile.Bind.SERIAL and op.inits:
                kinds = combine_kinds(op)
                if kinds is None or op.static_lb is None:
                    return None
                reduces.append((op, kinds))
        if not reduces:
            return None
        extent = max(lp.extent or 0 for lp, _ in reduces)
        if extent < self.min_extent:
            return None
        return ops, reduces, extent

    def rewrite(self, ops: list[Operation], reduces, threads: int) -> None:
        outer = new_thread_loop(threads)
        Rewriter.insert_op(outer, InsertPoint.before(ops[0]))
        yield_op = outer.body.block.last_op
        for op in ops:
            op.detach()
            outer.body.block.insert_op_before(op, yield_op)
        t = outer.iv
        for lp, kinds in reduces:
            b = Builder(InsertPoint.before(lp))
            inits = list(lp.inits)
            for i, (kind, init) in enumerate(zip(kinds, inits)):
                if not is_identity(init, kind):
                    c = b.insert(arith.ConstantOp(identity(kind, init.type)))
                    c.result.name_hint = "id"
                    lp.operands[i] = c.result  # no dynamic lb yet: operands are the inits
            new = stride_loop(lp, t, threads, b)
            after = Builder(InsertPoint.after(new))
            for kind, init, res in zip(kinds, inits, new.res):
                uses = list(res.uses)
                total = after.insert(tile.CombineOp(kind, res)).result
                if not is_identity(init, kind):
                    total = after.insert(combine_op(kind, init, total)).results[0]
                if res.name_hint:
                    total.name_hint = res.name_hint
                    res.name_hint = "p"
                for use in uses:
                    use.operation.operands[use.index] = total
        for op in list(outer.body.block.ops):
            if isinstance(op, tile.ForOp) and op.is_free and op.static_lb is not None:
                stride_loop(op, t, threads, Builder(InsertPoint.before(op)))
