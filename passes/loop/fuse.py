"""loop-fuse: merge producer nests into their consumers so intermediates are never written.

The rule (why fusion is not blind): a producer kernel P writes buffer T, a later kernel C reads it.
- P is *pointwise* (its free nest has no inner loop): every `loop.load` of T in C is replaced by
  P's scalar body at that index. Each element of T costs what one load of it cost (P's own
  loads), so inlining never multiplies global reads, even inside C's reduce loop — this is how
  the broadcast product of a matmul is never materialized.
- P contains a *reduction*: it is computed once per element of T, so it may only move to a point
  in C where each element is needed exactly once: every load of T must index T by distinct loop
  variables of C (a projected permutation), and every loop enclosing the insertion point must be
  one of them. P's body is then placed at the start of the innermost of those loops (RMSNorm's
  sum of squares lands at the start of the row loop; a matmul's K loop lands in front of its relu
  epilogue). Otherwise the pair stays two kernels.

    loop.launch @matmul(%p, %mm) ; loop.launch @relu(%mm, %out)
  ->
    loop.launch @relu_matmul(%x, %w, %out)  // K loop at the top of the (i, j) body, then max

Fusion repeats to a fixpoint; producers and buffers left without readers are erased.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import FlatSymbolRefAttr, ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.ir.affine import AffineDimExpr, AffineExpr, AffineMap
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint
from xdsl.traits import SymbolTable

from deplo.dialects import loop

# ---------------------------------------------------------------------------------------------
# kernel shape queries


def written_args(kernel: loop.KernelOp) -> set[int]:
    """Indices of the kernel arguments it stores to."""
    return {
        op.buffer.index
        for op in kernel.walk()
        if isinstance(op, loop.StoreOp) and op.buffer.owner is kernel.body.block
    }


@dataclass
class ProducerNest:
    """A kernel in the canonical single-output form that tir-to-loop emits."""

    kernel: loop.KernelOp
    out_index: int
    ivs: list[SSAValue]  # the free loops' induction variables, outermost first
    body: list[Operation]  # the innermost body without its store and yield
    stored: SSAValue  # the value stored into T
    has_reduction: bool


def producer_nest(kernel: loop.KernelOp) -> ProducerNest | None:
    outs = written_args(kernel)
    if len(outs) != 1:
        return None
    (out,) = outs
    shape = kernel.args[out].type.get_shape()
    block: Block = kernel.body.block
    nest = [o for o in block.ops if not isinstance(o, arith.ConstantOp)]
    ivs = []
    for n in shape:
        if len(nest) != 1 or not isinstance(f := nest[0], loop.ForOp):
            return None
        if f.kind.data != loop.LoopKind.FREE or (f.lb.data, f.ub.data, f.step.data) != (0, n, 1):
            return None
        ivs.append(f.iv)
        block = f.body.block
        nest = [o for o in block.ops if not isinstance(o, loop.YieldOp)]
    if not nest or not isinstance(store := nest[-1], loop.StoreOp):
        return None
    if store.buffer is not kernel.args[out] or list(store.indices) != ivs or store.map is not None:
        return None
    body = nest[:-1]
    if any(isinstance(o, loop.StoreOp) for o in body):
        return None
    return ProducerNest(
        kernel, out, ivs, body, store.value, any(isinstance(o, loop.ForOp) for o in body)
    )


def direct_iv_uses(nest: ProducerNest) -> set[SSAValue]:
    """The producer's free IVs that its body uses other than as `loop.load` indices."""
    return {
        v
        for op in nest.body
        for o in op.walk()
        if not isinstance(o, loop.LoadOp)
        for v in o.operands
        if v in nest.ivs
    }


# ---------------------------------------------------------------------------------------------
# affine access substitution


def substitute_access(
    indices: list[SSAValue],
    amap: AffineMap,
    subst: dict[SSAValue, tuple[list[SSAValue], AffineExpr]],
    mapper: dict[SSAValue, SSAValue],
) -> tuple[list[SSAValue], AffineMap]:
    """Rewrite an access (indices, map) where some indices are replaced by affine expressions
    over other values: returns new index operands and the composed map."""
    new_indices: list[SSAValue] = []

    def dim_of(v: SSAValue) -> AffineExpr:
        if v not in new_indices:
            new_indices.append(v)
        return AffineExpr.dimension(new_indices.index(v))

    exprs = []
    for v in indices:
        if v in subst:
            operands, e = subst[v]
            used = _dims_used(e)
            dims = [dim_of(o) if k in used else AffineExpr.constant(0) for k, o in enumerate(operands)]
            exprs.append(e.replace_dims_and_symbols(dims, []))
        else:
            exprs.append(dim_of(mapper.get(v, v)))
    inner = AffineMap(len(new_indices), 0, tuple(exprs))
    return new_indices, amap.compose(inner)


def _dims_used(e: AffineExpr) -> set[int]:
    if isinstance(e, AffineDimExpr):
        return {e.position}
    return set().union(*(_dims_used(c) for c in (getattr(e, "lhs", None), getattr(e, "rhs", None)) if c is not None))


def clone_producer_body(
    nest: ProducerNest,
    at: InsertPoint,
    subst: dict[SSAValue, tuple[list[SSAValue], AffineExpr]],
    mapper: dict[SSAValue, SSAValue],
    rewriter: PatternRewriter,
) -> SSAValue:
    """Clone P's body at `at`, P's free IVs replaced by affine expressions; returns the value
    P would have stored."""
    clones = [op.clone(value_mapper=mapper) for op in nest.body]
    rewriter.insert(clones, at)
    for clone in clones:  # accesses that still refer to P's induction variables
        for op in list(clone.walk()):
            if isinstance(op, loop.LoadOp) and any(v in subst for v in op.indices):
                idx, m = substitute_access(list(op.indices), op.access_map(), subst, mapper)
                new = loop.LoadOp(op.buffer, idx, m)
                new.result.name_hint = op.result.name_hint
                rewriter.replace(op, new)
                if op.result in mapper.values():
                    for k, v in list(mapper.items()):
                        if v is op.result:
                            mapper[k] = new.result
    return mapper.get(nest.stored, nest.stored)


# ---------------------------------------------------------------------------------------------
# the pattern


def _enclosing_loops(op: Operation) -> list[loop.ForOp]:
    return list(loop.enclosing_ops(op, loop.ForOp))


def _hoist_point(load: loop.LoadOp, kernel: loop.KernelOp) -> InsertPoint | None:
    """Where a reduction producer can be computed exactly once per element of T, or None."""
    m = load.access_map()
    used: list[SSAValue] = []
    for e in m.results:
        if not isinstance(e, AffineDimExpr):
            return None
        v = load.indices[e.position]
        if v in used:
            return None
        used.append(v)
    loops = []
    for v in used:
        owner = v.owner if isinstance(v.owner, Block) else None
        parent = owner.parent_op() if owner is not None else None
        if not isinstance(parent, loop.ForOp) or v is not parent.iv:
            return None
        loops.append(parent)
    enclosing = _enclosing_loops(load)
    if not loops:
        return None
    innermost = next(f for f in enclosing if f in loops)
    chain = [innermost, *_enclosing_loops(innermost)]
    if set(map(id, chain)) != set(map(id, loops)):
        return None
    return InsertPoint.at_start(innermost.body.block)


def _base(name: str) -> str:
    return re.sub(r"_\d+$", "", name)


class FuseProducer(RewritePattern):
    """Fuse one producer launch into the consumer launch being visited (see the module doc)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, launch: loop.LaunchOp, rewriter: PatternRewriter) -> None:
        # A consumer absorbs its whole producer chain before earlier launches are visited
        # (the walk goes last to first), so a reduction is hoisted into its final consumer
        # rather than into an intermediate broadcast that would then be materialized.
        while self._fuse_one(launch, rewriter):
            pass

    def _fuse_one(self, launch: loop.LaunchOp, rewriter: PatternRewriter) -> bool:
        host = launch.parent_block()
        fn = launch.parent_op()
        if host is None or not isinstance(fn, func.FuncOp):
            return False
        module = fn.parent_op()
        consumer = SymbolTable.lookup_symbol(launch, launch.callee)
        if not isinstance(consumer, loop.KernelOp):
            return False
        returned = {v for o in host.ops if isinstance(o, func.ReturnOp) for v in o.arguments}
        for i, t in enumerate(launch.args):
            if i in written_args(consumer) or t in returned:
                continue
            if not isinstance(t.owner, memref.AllocOp):
                continue
            writers = [
                u.operation
                for u in t.uses
                if isinstance(u.operation, loop.LaunchOp) and u.operation is not launch
                and u.index in written_args(SymbolTable.lookup_symbol(u.operation, u.operation.callee))
            ]
            if len(writers) != 1:
                continue
            p_launch = writers[0]
            if not _before(p_launch, launch) or _inputs_overwritten(p_launch, launch):
                continue
            pkernel = SymbolTable.lookup_symbol(p_launch, p_launch.callee)
            nest = producer_nest(pkernel) if isinstance(pkernel, loop.KernelOp) else None
            if nest is None or p_launch.args[nest.out_index] is not t:
                continue
            if self._fuse(launch, consumer, i, p_launch, nest, rewriter):
                _cleanup(module, host, t, p_launch, pkernel, rewriter)
                return True
        return False

    def _fuse(self, launch, consumer, i, p_launch, nest: ProducerNest, rewriter) -> bool:
        arg = consumer.args[i]
        loads = [u.operation for u in arg.uses if isinstance(u.operation, loop.LoadOp)]
        if len(loads) != len(list(arg.uses)):
            return False
        points = {}
        if nest.has_reduction:
            for ld in loads:
                p = _hoist_point(ld, consumer)
                if p is None:
                    return False
                points[ld] = p
        # P's IVs used as values (an iota's index_cast) need a consumer value to stand for
        # them: only a plain loop index will do (there is no op that computes an affine expr)
        direct = direct_iv_uses(nest)
        for ld in loads:
            exprs = dict(zip(nest.ivs, ld.access_map().results))
            if any(not isinstance(exprs[iv], AffineDimExpr) for iv in direct):
                return False
        # P's inputs become consumer arguments (reusing ones the consumer already has)
        # (inserted where T was, so the consumer's inputs stay ahead of its outputs)
        mapper: dict[SSAValue, SSAValue] = {}
        block = consumer.body.block
        operands = list(launch.operands)
        pos = i
        for j, (parg, hval) in enumerate(zip(nest.kernel.args, p_launch.args)):
            if j == nest.out_index:
                continue
            existing = next((k for k, v in enumerate(operands) if v is hval), None)
            if existing is not None:
                mapper[parg] = block.args[existing]
                continue
            new = block.insert_arg(parg.type, pos)
            new.name_hint = parg.name_hint
            operands.insert(pos, hval)
            mapper[parg] = new
            pos += 1
        top = InsertPoint.at_start(block)
        for c in nest.kernel.body.block.ops:
            if isinstance(c, arith.ConstantOp):
                rewriter.insert(clone := c.clone(), top)
                mapper[c.result] = clone.result
        done: dict[tuple, SSAValue] = {}
        for ld in loads:
            key = (tuple(ld.indices), ld.access_map())
            if nest.has_reduction and key in done:
                rewriter.replace(ld, [], [done[key]])
                continue
            m = ld.access_map()
            subst = {iv: (list(ld.indices), e) for iv, e in zip(nest.ivs, m.results)}
            at = points.get(ld, InsertPoint.before(ld))
            local = dict(mapper)
            for iv, e in zip(nest.ivs, m.results):
                if iv in direct:
                    local[iv] = ld.indices[e.position]
            value = clone_producer_body(nest, at, subst, local, rewriter)
            done[key] = value
            rewriter.replace(ld, [], [value])
        # drop T from the consumer
        launch.operands = [v for k, v in enumerate(operands) if k != arg.index]
        block.erase_arg(arg)
        if nest.has_reduction:
            a, b = _base(consumer.sym_name.data), _base(nest.kernel.sym_name.data)
            if b not in a:
                _rename(consumer, launch, f"{a}_{b}")
        return True


def _before(a: Operation, b: Operation) -> bool:
    block = a.parent_block()
    return block is b.parent_block() and block.get_operation_index(a) < block.get_operation_index(b)


def _inputs_overwritten(p_launch: loop.LaunchOp, c_launch: loop.LaunchOp) -> bool:
    """True if a launch between P and C writes one of P's inputs (fusing would read it late)."""
    ins = set(p_launch.args)
    op = p_launch.next_op
    while op is not None and op is not c_launch:
        if isinstance(op, loop.LaunchOp):
            k = SymbolTable.lookup_symbol(op, op.callee)
            if any(op.args[w] in ins for w in written_args(k)):
                return True
        op = op.next_op
    return False


def _rename(kernel: loop.KernelOp, launch: loop.LaunchOp, name: str) -> None:
    module = kernel.parent_op()
    taken = {o.sym_name.data for o in module.ops if isinstance(o, loop.KernelOp)}
    new, n = name, 1
    while new in taken:
        new, n = f"{name}_{n}", n + 1
    old = kernel.sym_name.data
    kernel.sym_name = type(kernel.sym_name)(new)
    for op in module.walk():
        if isinstance(op, loop.LaunchOp) and op.callee.root_reference.data == old:
            op.callee = FlatSymbolRefAttr(new)


def _cleanup(module, host: Block, t: SSAValue, p_launch, pkernel, rewriter: PatternRewriter):
    """Erase the producer launch, T and the producer kernel once nothing reads them."""
    if all(u.operation is p_launch for u in t.uses):
        rewriter.erase(p_launch)
        rewriter.erase(t.owner)
    name = pkernel.sym_name.data
    if not any(
        isinstance(o, loop.LaunchOp) and o.callee.root_reference.data == name for o in module.walk()
    ):
        rewriter.erase(pkernel)


class EraseDeadLaunch(RewritePattern):
    """A launch whose every output is a fresh buffer that nothing reads or returns does nothing."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, launch: loop.LaunchOp, rewriter: PatternRewriter) -> None:
        kernel = SymbolTable.lookup_symbol(launch, launch.callee)
        if not isinstance(kernel, loop.KernelOp):
            return
        outs = [launch.args[w] for w in written_args(kernel)]
        if not outs or not all(
            isinstance(t.owner, memref.AllocOp) and all(u.operation is launch for u in t.uses)
            for t in outs
        ):
            return
        module = kernel.parent_op()
        rewriter.erase(launch)
        for t in outs:
            rewriter.erase(t.owner)
        name = kernel.sym_name.data
        if not any(
            isinstance(o, loop.LaunchOp) and o.callee.root_reference.data == name
            for o in module.walk()
        ):
            rewriter.erase(kernel)


@dataclass(frozen=True)
class LoopFusePass(ModulePass):
    """Fuse producer loop nests into consumers (pointwise: inline; reductions: hoist once)."""

    name = "loop-fuse"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier([EraseDeadLaunch(), FuseProducer()], dce_enabled=False),
            apply_recursively=True,
            walk_reverse=True,
        ).rewrite_module(op)
        # drop the uniquing suffix of kernel names that fusion left unique
        kernels = [k for k in op.ops if isinstance(k, loop.KernelOp)]
        bases = [_base(k.sym_name.data) for k in kernels]
        for k, base in zip(kernels, bases):
            if bases.count(base) == 1 and base != k.sym_name.data:
                launch = next(o for o in op.walk() if isinstance(o, loop.LaunchOp)
                              and o.callee.root_reference.data == k.sym_name.data)
                _rename(k, launch, base)
