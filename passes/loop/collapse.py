"""loop-collapse-dims: an intermediate read through a reshape has the reshape's shape.

A view that merges dims (attention's output `[b, s, heads, d]` read as `[b, s, heads * d]` by
the o projection) reaches the loop level as a load whose map splits one index again:
`(d0, d1, d2) -> (0, d1, d2 floordiv 16, d2 mod 16)`. That reads the same addresses as a plain
`(0, d1, d2)` of the merged shape, but no later analysis sees a plain row of K there: the
matmul is not a plain product (no tensor cores), its slab is not staged. Memory is row-major,
so the buffer may as well have the merged shape: every access then writes the merged index —
`e` for the pair `(e floordiv C, e mod C)`, `x * C + y` for any other `(x, y)` (the writer's
`out[b, s, h, dd]` becomes `out[b, s, h * 16 + dd]`):

    loop.kernel @sdpa(..., %t: memref<1x16x4x16xf32>)  { loop.store %v, %t[%b, %s, %h, %dd] }
    loop.kernel @o(%t: memref<1x16x4x16xf32>, ...) {
      loop.load %t[%a0, %a1, %r0] map (d0, d1, d2) -> (0, d1, d2 floordiv 16, d2 mod 16) }
  ->
    loop.kernel @sdpa(..., %t: memref<1x16x64xf32>)
      { loop.store %v, %t[%b, %s, %h, %dd] map (d0, d1, d2, d3) -> (d0, d1, d2 * 16 + d3) }
    loop.kernel @o(%t: memref<1x16x64xf32>, ...) { loop.load %t[%a0, %a1, %r0] map (...) -> (0, d1, d2) }

Two adjacent dims are merged when some access splits an index across them like that; only
intermediates qualify (passes/loop/intermediates.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import MemRefType, ModuleOp
from xdsl.ir import BlockArgument
from xdsl.ir.affine import (
    AffineBinaryOpKind,
    AffineExpr,
    AffineMap,
)
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from deplo.analysis.index import by_constant
from deplo.dialects import loop
from deplo.passes.loop.intermediates import intermediates, retype


def _split(hi: AffineExpr, lo: AffineExpr, c: int) -> AffineExpr | None:
    """`e` when (hi, lo) is (e floordiv c, e mod c); `e mod (m * c)` when it is ((e floordiv c)
    mod m, e mod c) (a conv's window (kh, kw) of K = (channel, kh, kw) over [O, C, 3, 3]
    weights: merged, then merged with the channel into K)."""
    if not by_constant(lo, AffineBinaryOpKind.Mod, c):
        return None
    if by_constant(hi, AffineBinaryOpKind.FloorDiv, c) and hi.lhs == lo.lhs:
        return hi.lhs
    if by_constant(hi, AffineBinaryOpKind.Mod) \
            and by_constant(hi.lhs, AffineBinaryOpKind.FloorDiv, c) and hi.lhs.lhs == lo.lhs:
        return lo.lhs % (hi.rhs.value * c)
    return None


def _accesses(args: list[BlockArgument]) -> list[loop.LoadOp | loop.StoreOp]:
    return [u.operation for a in args for u in a.uses]


def _splitting_dim(args: list[BlockArgument], shape: list[int], unit_tail: bool = False
                   ) -> int | None:
    """A dim p that some access splits an index across (p, p + 1); with `unit_tail`, also the
    one before a trailing size-1 dim (`_unit_tail`)."""
    accesses = _accesses(args)
    for acc in accesses:
        if not isinstance(acc, loop.LoadOp | loop.StoreOp) or acc.buffer not in args:
            return None
        r = acc.access_map().results
        for p in range(len(shape) - 1):
            if _split(r[p], r[p + 1], shape[p + 1]) is not None:
                return p
    return _unit_tail(accesses, shape) if unit_tail else None


def _unit_tail(accesses: list, shape: list[int]) -> int | None:
    """The dim before a trailing size-1 dim every access reads at 0: a 1x1 conv's weight
    [O, C, 1, 1] read as (o, c, 0, 0) is then the plain [O, C] a fragment load takes."""
    if len(shape) < 2 or shape[-1] != 1 or not accesses:
        return None
    zero = AffineExpr.constant(0)
    return len(shape) - 2 if all(acc.access_map().results[-1] == zero for acc in accesses) \
        else None


def _merge(p: int, c: int):
    def rewrite(arg: BlockArgument) -> None:
        for use in list(arg.uses):
            acc = use.operation
            m = acc.access_map()
            r = list(m.results)
            merged = _split(r[p], r[p + 1], c)
            if merged is None:
                merged = r[p] * c + r[p + 1]
            amap = AffineMap(m.num_dims, 0, (*r[:p], merged, *r[p + 2:]))
            loop.reaccess(acc, list(acc.indices), amap, arg)
    return rewrite


@dataclass(frozen=True)
class LoopCollapseDimsPass(ModulePass):
    """Intermediates read through a reshape (an index split by floordiv/mod) take its shape."""

    name = "loop-collapse-dims"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        changed = True
        while changed:
            changed = False
            for alloc, args in list(intermediates(op)):
                t = alloc.memref.type
                assert isinstance(t, MemRefType)
                shape = list(t.get_shape())
                p = _splitting_dim(args, shape)
                if p is None:
                    continue
                retype(alloc, args, _merged(t, p), _merge(p, shape[p + 1]))
                changed = True
        # the program's inputs and results: the kernel's argument alone takes the merged shape
        # (its launches pass the buffer as it is: loop.same_elements)
        inner = {a for _, args in intermediates(op) for a in args}
        for kernel in [k for k in op.ops if isinstance(k, loop.KernelOp)]:
            for arg in [a for a in kernel.body.block.args
                        if a not in inner and isinstance(a.type, MemRefType)]:
                while (p := _splitting_dim([arg], list(arg.type.get_shape()), True)) is not None:
                    c = arg.type.get_shape()[p + 1]
                    arg = Rewriter.replace_value_with_new_type(arg, _merged(arg.type, p))
                    _merge(p, c)(arg)


def _merged(t: MemRefType, p: int) -> MemRefType:
    """`t` with dims p and p + 1 merged into one."""
    shape = list(t.get_shape())
    return MemRefType(t.element_type, [*shape[:p], shape[p] * shape[p + 1], *shape[p + 2:]])
