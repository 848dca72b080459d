"""loop-flatten-reductions: a nest of reduce loops becomes one reduce loop over their product.

A reduction over several dims (`x.sum((1, 2))`, BatchNorm's `x.mean((0, 2, 3))`) reaches the
loop level as reduce loops nested one in the other, each carrying the accumulators on:

    %s = loop.for %r0 = 0 to 8 reduce iter(%a = %zero) -> f32 {
      %t = loop.for %r1 = 0 to 256 reduce iter(%b = %a) -> f32 {
        %v = loop.load %x[%r0, %i, %r1] ; ... loop.yield %n : f32 }
      loop.yield %t : f32 }
  ->
    %s = loop.for %r = 0 to 2048 reduce iter(%b = %zero) -> f32 {
      %v = loop.load %x[%r, %i] map (d0, d1) -> (d0 floordiv 256, d1, d0 mod 256) ; ... }

The tile classes see one reduction, as long as all of them, so a block's threads can share it
(a row reduction) instead of one thread walking the whole nest: BatchNorm's statistics over
[8, 64, 16, 16], the model, 29 -> 4 us. The iteration order is unchanged (the outer index is
the major one), so the result is the nest's, term for term.

A row written over several dims after its reductions (instance_norm's [H, W], a layer_norm over
two dims) is flattened the same way, free loops: the block's threads then stride the whole row
(over the outer dim alone, each walked a row of the inner dim, uncoalesced). The kernel's outer
free loops (its grid) are left as they are. `(x floordiv c) * c + x mod c` reads x.

A pair qualifies when the outer loop's body is the inner loop and a yield of its results, the
inner loop starts from the outer's accumulators in order, both run 0 to N by 1, and the two
induction variables are used only as indices of loads and stores (anything else would need the
divisions as arith ops). Innermost pairs go first, so a nest of three takes two steps.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineExpr,
    AffineMap,
)
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from deplo.dialects import loop
from deplo.passes.loop.fusion_rules import outer_free_nest


def _plain(op: Operation, kind: loop.LoopKind = loop.LoopKind.REDUCE) -> bool:
    return (isinstance(op, loop.ForOp) and op.kind.data == kind
            and op.lb.data == 0 and op.step.data == 1)


def _inner(outer: loop.ForOp) -> loop.ForOp | None:
    """The reduce loop that is all of `outer`'s body, carrying its accumulators on."""
    ops = list(outer.body.block.ops)
    if len(ops) != 2 or not _plain(ops[0]):
        return None
    inner, last = ops
    assert isinstance(inner, loop.ForOp) and isinstance(last, loop.YieldOp)
    if list(inner.inits) != list(outer.accs) or list(last.operands) != list(inner.res):
        return None
    if not all(a.has_one_use() for a in outer.accs):
        return None
    return inner


def _flattens(outer: loop.ForOp) -> bool:
    """`outer` and the reduce loop that is its body can become one loop."""
    inner = _inner(outer)
    return inner is not None and _only_indices(outer.iv) and _only_indices(inner.iv)


def _written_pair(outer: loop.ForOp, grid: list[loop.ForOp]) -> loop.ForOp | None:
    """The free loop that is all of `outer`'s body, where `outer` is a free loop inside the
    kernel's blocks (not one of its outer free nest `grid`) and both only index memory: a row
    written over two dims after its reductions (instance_norm's [H, W])."""
    ops = list(outer.body.block.ops)
    if outer in grid or len(ops) != 2 or not _plain(ops[0], loop.LoopKind.FREE) \
            or not _only_indices(outer.iv) or not _only_indices(ops[0].iv) \
            or not any(isinstance(o, loop.ForOp) and o.kind.data == loop.LoopKind.REDUCE
                       for o in outer.parent_block().ops):  # (a pad's parts: split-nests')
        return None
    return ops[0]


def _only_indices(iv: SSAValue) -> bool:
    """Every use of `iv` is an index of a load (operands: buffer, indices...) or a store
    (value, buffer, indices...)."""
    return all(isinstance(u.operation, loop.LoadOp) and u.index >= 1
               or isinstance(u.operation, loop.StoreOp) and u.index >= 2 for u in iv.uses)


def _reindex(access: loop.LoadOp | loop.StoreOp, hi: SSAValue, flat: SSAValue, n: int) -> None:
    """`hi` becomes `flat floordiv n` in the access, and `flat` (standing for the inner index
    until now) `flat mod n`."""
    old = list(access.indices)
    new = list(dict.fromkeys(flat if v is hi else v for v in old))
    pos = {v: i for i, v in enumerate(new)}
    d = AffineExpr.dimension
    exprs = [d(pos[flat]) // n if v is hi else d(pos[flat]) % n if v is flat else d(pos[v])
             for v in old]
    results = tuple(_tidy(r.replace_dims_and_symbols(exprs, []))
                    for r in access.access_map().results)
    loop.reaccess(access, new, AffineMap(len(new), 0, results))


def _tidy(e: AffineExpr) -> AffineExpr:
    """`(x mod a) mod b` -> `x mod b` and `(x mod a) floordiv b` -> `(x floordiv b) mod (a / b)`
    where b divides a: a nest of three reads `d0 floordiv 256, (d0 floordiv 16) mod 16, d0 mod
    16`, not mods of mods."""
    if not isinstance(e, AffineBinaryOpExpr):
        return e
    lhs, rhs = _tidy(e.lhs), _tidy(e.rhs)
    if e.kind == AffineBinaryOpKind.Add and (x := _digits(lhs, rhs) or _digits(rhs, lhs)):
        return x  # (x floordiv c) * c + x mod c: the flat index a row-major pair read
    inner_mod = isinstance(lhs, AffineBinaryOpExpr) and lhs.kind == AffineBinaryOpKind.Mod
    if inner_mod and isinstance(rhs, AffineConstantExpr) and isinstance(lhs.rhs, AffineConstantExpr) \
            and lhs.rhs.value % rhs.value == 0:
        if e.kind == AffineBinaryOpKind.Mod:
            return lhs.lhs % rhs.value
        if e.kind == AffineBinaryOpKind.FloorDiv:
            return (lhs.lhs // rhs.value) % (lhs.rhs.value // rhs.value)
    return AffineBinaryOpExpr(e.kind, lhs, rhs)


def _digits(hi: AffineExpr, lo: AffineExpr) -> AffineExpr | None:
    """x where hi is (x floordiv c) * c and lo is x mod c."""
    if isinstance(hi, AffineBinaryOpExpr) and hi.kind == AffineBinaryOpKind.Mul \
            and isinstance(hi.rhs, AffineConstantExpr) and isinstance(lo, AffineBinaryOpExpr) \
            and lo.kind == AffineBinaryOpKind.Mod and lo.rhs == hi.rhs \
            and isinstance(q := hi.lhs, AffineBinaryOpExpr) \
            and q.kind == AffineBinaryOpKind.FloorDiv and q.rhs == hi.rhs and q.lhs == lo.lhs:
        return lo.lhs
    return None


def flatten(outer: loop.ForOp, inner: loop.ForOp) -> loop.ForOp:
    """One loop (reduce, or free) over outer x inner iterations, with the inner loop's body."""
    n = inner.extent
    flat = loop.ForOp(0, outer.extent * n, outer.kind.data, list(outer.inits))
    flat.iv.name_hint = inner.iv.name_hint
    for arg, new in zip(inner.accs, flat.accs):
        new.name_hint = arg.name_hint
        arg.replace_all_uses_with(new)
    inner.iv.replace_all_uses_with(flat.iv)
    for op in list(inner.body.block.ops):
        op.detach()
        flat.body.block.add_op(op)
    for access in {u.operation for v in (outer.iv, flat.iv) for u in v.uses}:
        assert isinstance(access, loop.LoadOp | loop.StoreOp)
        _reindex(access, outer.iv, flat.iv, n)
    Rewriter.replace_op(outer, flat)
    return flat


@dataclass(frozen=True)
class LoopFlattenReductionsPass(ModulePass):
    """Nested reduce loops that only index memory become one reduce loop over their product;
    so do a row's nested free loops inside the kernel's blocks."""

    name = "loop-flatten-reductions"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        # innermost loops first (the walk's reverse): a nest of three has flattened its inner
        # pair by the time its outer loop is met, which then flattens with the flat loop
        for outer in reversed([o for o in op.walk() if _plain(o)]):
            if _flattens(outer):
                flatten(outer, _inner(outer))
        # a row written over several dims: one loop, which the block's threads then stride
        # as a whole (threads over [128, 128]'s rows walked 128 columns each, uncoalesced,
        # half of 256 idle: instance_norm of [8, 64, 128, 128] 89 -> 82 us by the model)
        for kernel in [k for k in op.walk() if isinstance(k, loop.KernelOp)]:
            grid = outer_free_nest(kernel)
            for outer in reversed([o for o in kernel.walk() if _plain(o, loop.LoopKind.FREE)]):
                if (inner := _written_pair(outer, grid)) is not None:
                    flatten(outer, inner)
