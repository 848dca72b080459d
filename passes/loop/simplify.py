"""loop-simplify: clean up after fusion — one copy of each constant, no repeated loads or scalar
ops, and loop-invariant code hoisted out of the loops.

    loop.for %a2 = 0 to 2048 free {
      %m = arith.divf %ss, %n ; %r = math.rsqrt ...   // depends only on the row
      %v = loop.load %x[...] ; %v2 = loop.load %x[...] // the same element twice (x * x)
  ->
    %m = arith.divf %ss, %n ; %r = math.rsqrt ...       // once per row
    loop.for %a2 = 0 to 2048 free { %v = loop.load %x[...] ... %v * %v ... }

Inlining pointwise producers (loop-fuse) duplicates their loads and scalar ops where a value is
used twice and leaves per-element work that only depends on outer loops; both cost the schedule
passes nothing to keep, but a reader of the IR and the CPU runtime pay for them. A `loop.load` is
treated as pure when the kernel never stores to that buffer.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, OpResult, SSAValue
from xdsl.ir.affine import AffineMap
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint, Rewriter

from deplo.dialects import loop
from deplo.passes.loop.fusion_rules import outer_free_nest, written_args


def is_pure(op: Operation, read_only: set[SSAValue]) -> bool:
    """An arith/math op, or a load of a buffer the kernel never stores to (`read_only`)."""
    if isinstance(op, loop.LoadOp):
        return op.buffer in read_only
    return op.dialect_name() in ("arith", "math") and not op.regions


def _key(op: Operation):
    return (op.name, tuple(op.operands), tuple(sorted((k, str(v)) for k, v in op.properties.items())),
            tuple(r.type for r in op.results))


def _defined_inside(value: SSAValue, region_op: Operation) -> bool:
    owner = value.owner
    op = owner.parent_op() if isinstance(owner, Block) else owner
    while op is not None:
        if op is region_op:
            return True
        op = op.parent_op()
    return False


def simplify_kernel(kernel: loop.KernelOp, rewriter: PatternRewriter) -> None:
    read_only = {a for i, a in enumerate(kernel.args) if i not in written_args(kernel)}
    top = kernel.body.block
    # 1. constants: one of each, at the top
    seen: dict = {}
    for op in list(kernel.walk()):
        if isinstance(op, arith.ConstantOp):
            k = (str(op.value), op.result.type)
            if k in seen:
                rewriter.replace(op, [], [seen[k]])
            else:
                seen[k] = op.result
                if op.parent_block() is not top:
                    op.detach()
                    rewriter.insert(op, InsertPoint.at_start(top))
    # 2. hoist loop invariants, innermost loops first (post-order), repeatedly outward
    for f in _post_order_loops(kernel):
        for op in list(f.body.block.ops):
            if is_pure(op, read_only) and not any(_defined_inside(v, f) for v in op.operands):
                op.detach()
                rewriter.insert(op, InsertPoint.before(f))
    # 3. CSE within each block, outer values visible inside
    _cse_block(top, {}, read_only, rewriter)


def _post_order_loops(op: Operation):
    for region in op.regions:
        for block in region.blocks:
            for child in list(block.ops):
                yield from _post_order_loops(child)
    if isinstance(op, loop.ForOp):
        yield op


def _cse_block(block: Block, known: dict, read_only: set[SSAValue], rewriter) -> None:
    known = dict(known)
    for op in list(block.ops):
        if is_pure(op, read_only) and op.results:
            k = _key(op)
            if k in known:
                rewriter.replace(op, [], known[k])
                continue
            known[k] = list(op.results)
        for region in op.regions:
            for inner in region.blocks:
                _cse_block(inner, known, read_only, rewriter)


class SimplifyKernel(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: loop.KernelOp, rewriter: PatternRewriter) -> None:
        simplify_kernel(op, rewriter)


@dataclass(frozen=True)
class LoopSimplifyPass(ModulePass):
    """Deduplicate constants, CSE pure ops and read-only loads, hoist loop invariants."""

    name = "loop-simplify"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier([SimplifyKernel()], dce_enabled=False),
            apply_recursively=False,
        ).rewrite_module(op)
        forward_copies(op)


def _identity_copy(kernel: loop.KernelOp) -> tuple[int, int] | None:
    """(source, destination) argument of a kernel that copies a buffer into one of its type
    element for element: a perfect free nest over the shape, a load and a store at its ivs."""
    nest = outer_free_nest(kernel)
    body = [o for o in nest[-1].body.block.ops if not isinstance(o, loop.YieldOp)] if nest else []
    if len(body) != 2 or not isinstance(ld := body[0], loop.LoadOp) \
            or not isinstance(st := body[1], loop.StoreOp) or st.value is not ld.result:
        return None
    ivs = [f.iv for f in nest]
    identity = AffineMap.identity(len(ivs))
    if ld.buffer.type != st.buffer.type or ld.buffer.type.get_shape() != tuple(
            f.ub.data for f in nest) or any(f.lb.data or f.step.data != 1 for f in nest) \
            or any(list(a.indices) != ivs or a.access_map() != identity for a in (ld, st)):
        return None
    args = list(kernel.args)
    if ld.buffer is st.buffer or ld.buffer not in args or st.buffer not in args:
        return None
    return args.index(ld.buffer), args.index(st.buffer)


def _forwardable(launch: loop.LaunchOp, src: SSAValue, dst: SSAValue) -> bool:
    """Two allocs of the launch's block, `src` used nowhere after the copy, `dst` nowhere
    before it."""
    block = launch.parent_block()

    def local_alloc(v: SSAValue) -> bool:
        return isinstance(v, OpResult) and isinstance(v.op, memref.AllocOp) \
            and v.op.parent_block() is block

    def before(u) -> bool:
        return u.operation.parent_block() is block and u.operation.is_before_in_block(launch)

    return src is not dst and local_alloc(src) and local_alloc(dst) \
        and all(u.operation is launch or before(u) for u in src.uses) \
        and all(u.operation is launch or u.operation.parent_block() is block and not before(u)
                for u in dst.uses)


def forward_copies(module: ModuleOp) -> None:
    """A launch copying an intermediate that nothing reads afterwards into a fresh buffer (a
    reshape of what fusion wrote transposed, ViT's attention output) goes: the destination is
    the intermediate. Both are allocs in one host block, the destination unused before."""
    kernels = {k.sym_name.data: k for k in module.ops if isinstance(k, loop.KernelOp)}
    copies = {name: c for name, k in kernels.items() if (c := _identity_copy(k))}
    for launch in [o for o in module.walk() if isinstance(o, loop.LaunchOp)]:
        found = copies.get(launch.callee.root_reference.data)
        if found is None:
            continue
        src, dst = (launch.args[i] for i in found)
        if not _forwardable(launch, src, dst):
            continue
        Rewriter.erase_op(launch)
        dst.replace_all_uses_with(src)
        Rewriter.erase_op(dst.op)
    used = {o.callee.root_reference.data for o in module.walk() if isinstance(o, loop.LaunchOp)}
    for name in copies.keys() - used:
        Rewriter.erase_op(kernels[name])
