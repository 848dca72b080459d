"""loop-chunk-scans: a long cumulative sum in chunks, not a masked sum per output.

tir-to-loop writes `cumsum` as every output summing the whole row through a mask,

    loop.for %a = 0 to E free {
      %t = loop.for %r = 0 to E reduce iter(%acc = %init) {
             %v = V(r) ; yield %acc + select(%r <= %a, %v, 0) }
      EPILOGUE(%t) }                         // the store at [.., %a]

E * E loads a row: a 100000-long row is 10^10 (the model, two rows: 408 x its roofline). Cut
the row into S chunks of C (C divides E, chosen near (2E)^(1/3), which minimizes E * C + S * S):

    @name_part     S partial sums a row, C loads each          part[.., s] = sum V(s C + r)
    @name_offsets  each chunk's exclusive prefix of partials   offs[.., s] = sum_{s' < s} part[s']
    @name          each output: its chunk's offset plus the masked sum within the chunk,
                   C loads each, the epilogue at s C + c

E * C + S * S loads a row instead of E * E (100000: 5.6M against 10^10). A row with no such
divisor (a prime length) keeps S = E // C whole chunks and a tail of T = E - S C positions:
the offsets get one more entry, and @name_tail sums within the tail from S C and adds it
(T * T more loads, a fourth launch). Each is a plain loop nest the tile planner schedules like
any other. Qualifies: a kernel whose innermost free loop `a` (0 to E by 1, under plain free
loops; size-1 loops may sit between) holds one reduce loop over the same range carrying one
sum (float or integer) of `select(r <= a, V, 0)` (or `a >= r`), V computed from neither the
sum nor `a`, `r` used only by V's loads and the mask, `a` only by the mask and by loads and
stores; E at least MIN_EXTENT (or rows x E x E at least MIN_LOADS). The sum's order changes
(chunks, then their offsets): fp32 rounding, not a different result. A scan over a dim that
is not the last (`[100000, 2].cumsum(0)`) first has its position loop moved innermost in the
free nest (`_scan_dim_innermost`; free iterations are independent), when the row is one to
chunk.
A cumprod is the same with products from 1; an exclusive mask (`r < a`) is left as it is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import (
    FloatAttr,
    IndexType,
    IntAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    StringAttr,
)
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from deplo.analysis import nest
from deplo.dialects import loop
from deplo.passes.loop.cutting import (
    clear_after,
    fresh_name,
    index_only,
    insert_at_end,
    launched_once,
    plain_free_path,
    slice_indices,
)
from deplo.passes.loop.fusion_rules import outer_free_nest, permute_free_nest

# below both, the E * E loads of the masked form cost less than two more launches (the model:
# [8, 4096] 12.6 us as it is, 17.9 chunked; [1, 16384] 36.7 -> 12.1; [32, 4096] 36.7 -> 15.0)
MIN_EXTENT = 16384  # a row this long is chunked whatever the rows
MIN_LOADS = 2**29  # rows x E x E: many rows of a shorter one
MIN_CHUNK, MAX_CHUNK = 8, 256
_LE = {"sle": False, "ule": False, "sge": True, "uge": True}  # predicate -> operands (a, r)


@dataclass
class Scan:
    path: list[loop.ForOp]  # the free loops above `a`, outermost first
    pos: loop.ForOp  # `a`: the output's position along the row
    red: loop.ForOp  # the masked sum over the row
    select: arith.SelectOp
    mask: arith.CmpiOp
    combine: type  # arith's add or mul (cumsum, cumprod), of floats or integers


# the combining op of a scan and the number the mask's select gives where it leaves a value out
_IDENTITY = {arith.AddfOp: 0, arith.AddiOp: 0, arith.MulfOp: 1, arith.MuliOp: 1}


def _match(kernel: loop.KernelOp) -> Scan | None:
    reds = [o for o in kernel.walk() if isinstance(o, loop.ForOp)
            and o.kind.data == loop.LoopKind.REDUCE]
    if len(reds) != 1:
        return None
    red = reds[0]
    pos, units = red.parent_op(), []
    while isinstance(pos, loop.ForOp) and pos.kind.data == loop.LoopKind.FREE \
            and (pos.lb.data, pos.ub.data) == (0, 1):
        units.append(pos)  # a trailing size-1 dim (cumsum over dim 1 of [3, E, 1])
        pos = pos.parent_op()
    if not isinstance(pos, loop.ForOp) or pos.kind.data != loop.LoopKind.FREE \
            or (pos.lb.data, pos.step.data, red.lb.data, red.step.data) != (0, 1, 0, 1) \
            or pos.ub.data != red.ub.data or len(red.accs) != 1:
        return None
    path = plain_free_path(pos, kernel)
    if path is None or any(isinstance(o, loop.ForOp) and o is not red and o not in units
                           for o in pos.body.walk() if o is not pos):
        return None
    acc = red.accs[0]
    y = red.body.block.last_op
    if not acc.has_one_use() or not isinstance(y, loop.YieldOp):
        return None
    (use,) = acc.uses
    add = use.operation
    if type(add) not in _IDENTITY or y.operands[0] is not add.result:
        return None
    sel = add.operands[1 - use.index].owner
    if not isinstance(sel, arith.SelectOp) or not sel.result.has_one_use() \
            or _number(sel.rhs) != _IDENTITY[type(add)]:
        return None
    mask = sel.cond.owner
    if not isinstance(mask, arith.CmpiOp) or not mask.result.has_one_use():
        return None
    pred = arith.CMPI_COMPARISON_OPERATIONS[mask.predicate.value.data]
    if pred not in _LE:
        return None
    a, r = (mask.lhs, mask.rhs) if _LE[pred] else (mask.rhs, mask.lhs)
    if a is not pos.iv or r is not red.iv:
        return None
    if nest.depends_on(sel.lhs, {acc, pos.iv}, red.body.block):
        return None
    if not index_only(red.iv, but=mask) or not index_only(pos.iv, but=mask):
        return None
    return Scan(path, pos, red, sel, mask, type(add))


def _number(v: SSAValue) -> float | None:
    """The value of a constant (None for anything else)."""
    op = v.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, FloatAttr | IntegerAttr):
        return op.value.value.data
    return None


def _chunk(extent: int) -> int | None:
    """The chunk with the fewest loads, E C + S^2 (S = E / C whole chunks, at least 4): a
    divisor of the row in [MIN_CHUNK, MAX_CHUNK]; a row with none (a prime length) takes the
    best C there and a tail of E - S C positions (T^2 more loads, a fourth kernel)."""
    def loads(c: int) -> int:
        return extent * c + (extent // c) ** 2 + (extent % c) ** 2

    fits = [c for c in range(MIN_CHUNK, MAX_CHUNK + 1) if extent // c >= 4]
    whole = [c for c in fits if extent % c == 0]
    return min(whole or fits, key=loads) if fits else None


def _identity(s: Scan, t, at: InsertPoint) -> SSAValue:
    """The scan's starting value (0 for a sum, 1 for a product) of type `t`."""
    n = _IDENTITY[s.combine]
    c = arith.ConstantOp(IntegerAttr(n, t) if isinstance(t, IntegerType) else FloatAttr(n, t))
    Rewriter.insert_op(c, at)
    return c.result


def _partials(kernel: loop.KernelOp, chunk: int, slices: int, part: SSAValue) -> None:
    """@name_part: `a` walks the chunks, the sum runs over one, unmasked, from 0."""
    s = _match(kernel)
    assert s is not None
    s.pos.ub = IntAttr(slices)
    s.pos.iv.name_hint = "s"
    s.red.ub = IntAttr(chunk)
    s.red.operands = [_identity(s, s.red.inits[0].type, InsertPoint.before(s.red))]
    s.select.result.replace_all_uses_with(s.select.lhs)
    Rewriter.erase_op(s.select)
    Rewriter.erase_op(s.mask)
    slice_indices(s.red, s.pos.iv, chunk)
    clear_after(s.red)
    insert_at_end(s.red.parent_block(),
                  [loop.StoreOp(s.red.res[0], part, [*(lp.iv for lp in s.path), s.pos.iv])])


def _offsets(kernel: loop.KernelOp, slices: int, outs: int, part: SSAValue,
             offs: SSAValue) -> None:
    """@name_offsets: `a` walks the `outs` chunks (the whole ones and a tail); each sums the
    partials of the whole chunks before it."""
    s = _match(kernel)
    assert s is not None
    s.pos.ub = IntAttr(outs)
    s.pos.iv.name_hint = "s"
    body = s.pos.body.block
    for o in reversed(list(body.ops)):
        if not isinstance(o, loop.YieldOp):
            Rewriter.erase_op(o, safe_erase=False)
    zero = _identity(s, part.type.element_type, InsertPoint.at_start(body))
    over = loop.ForOp(0, slices, loop.LoopKind.REDUCE, [zero])
    over.iv.name_hint = "t"
    over.accs[0].name_hint = "acc"
    ivs = [lp.iv for lp in s.path]
    ld = loop.LoadOp(part, [*ivs, over.iv])
    before = arith.CmpiOp(over.iv, s.pos.iv, "slt")
    pick = arith.SelectOp(before.result, ld.result, zero)
    add = s.combine(over.accs[0], pick.result)
    over.body.block.add_ops([ld, before, pick, add, loop.YieldOp(add.result)])
    Rewriter.insert_op(over, InsertPoint.after(zero.owner))
    insert_at_end(body, [loop.StoreOp(over.res[0], offs, [*ivs, s.pos.iv])])


def _outputs(s: Scan, chunk: int, slices: int, offs: SSAValue) -> None:
    """@name: a free loop over the chunks around `a`, now a position within one; the masked
    sum runs over the chunk and adds the chunk's offset."""
    s_loop = loop.ForOp(0, slices, loop.LoopKind.FREE)
    s_loop.iv.name_hint = "s"
    Rewriter.insert_op(s_loop, InsertPoint.before(s.pos))
    s.pos.detach()
    s_loop.body.block.add_ops([s.pos, loop.YieldOp()])
    s.pos.ub = IntAttr(chunk)
    s.red.ub = IntAttr(chunk)
    slice_indices(s.red, s_loop.iv, chunk, accesses_only=True)
    slice_indices(s.pos, s_loop.iv, chunk, accesses_only=True)
    _add_offset(s, loop.LoadOp(offs, [*(lp.iv for lp in s.path), s_loop.iv]))


def _tail(kernel: loop.KernelOp, chunk: int, slices: int, offs: SSAValue) -> None:
    """@name_tail: the T positions past the whole chunks, as one more chunk of T that starts at
    S C and adds offset S."""
    s = _match(kernel)
    assert s is not None
    extent = s.red.ub.data
    for lp in (s.pos, s.red):
        lp.ub = IntAttr(extent - slices * chunk)
        slice_indices(lp, None, chunk, accesses_only=True, start=slices * chunk)
    last = arith.ConstantOp.from_int_and_width(slices, IndexType())
    Rewriter.insert_op(last, InsertPoint.before(s.pos))
    _add_offset(s, loop.LoadOp(offs, [*(lp.iv for lp in s.path), last.result]))


def _add_offset(s: Scan, off: loop.LoadOp) -> None:
    """The sum within the chunk plus its chunk's offset (times, for a product), for every use
    of the sum."""
    total = s.combine(s.red.res[0], off.result)
    Rewriter.insert_op([off, total], InsertPoint.after(s.red))
    for use in list(s.red.res[0].uses):
        if use.operation is not total:
            use.operation.operands[use.index] = total.result


def _long(s: Scan) -> bool:
    extent, rows = s.red.ub.data, math.prod(lp.ub.data for lp in s.path)
    return _chunk(extent) is not None and (extent >= MIN_EXTENT
                                           or rows * extent * extent >= MIN_LOADS)


def _scan_dim_innermost(kernel: loop.KernelOp) -> Scan | None:
    """A scan over a dim that is not the last (`[100000, 2].cumsum(0)`): its position loop
    moved innermost in the kernel's free nest (free iterations are independent), where the
    chunked form wants it; the order is put back when the scan is not one to chunk."""
    nest = outer_free_nest(kernel)
    reds = [o for o in kernel.walk() if isinstance(o, loop.ForOp)
            and o.kind.data == loop.LoopKind.REDUCE]
    if len(nest) < 2 or len(reds) != 1 or reds[0].parent_op() is not nest[-1]:
        return None
    ivs = [f.iv for f in nest[:-1]]
    compared = {v for o in reds[0].body.walk() if isinstance(o, arith.CmpiOp)
                for v in o.operands if v in ivs}
    if len(compared) != 1:
        return None
    k = ivs.index(compared.pop())
    order = [*(i for i in range(len(nest)) if i != k), k]
    permute_free_nest(nest, order)
    s = _match(kernel)
    if s is None or not _long(s):
        permute_free_nest(nest, [order.index(i) for i in range(len(nest))])
        return None
    return s


def _scan(kernel: loop.KernelOp, launch: loop.LaunchOp) -> bool:
    s = _match(kernel) or _scan_dim_innermost(kernel)
    if s is None or not _long(s):
        return False
    chunk = _chunk(s.red.ub.data)
    extent = s.red.ub.data
    slices, tail = divmod(extent, chunk)
    name = kernel.sym_name.data
    rows = [lp.ub.data for lp in s.path]
    elt = s.red.res[0].type
    shapes = ([*rows, slices], [*rows, slices + (tail > 0)])  # the partials, the offsets
    allocs = [memref.AllocOp.get(elt, shape=shape) for shape in shapes]
    for a, hint in zip(allocs, ("part", "offsets")):
        a.memref.name_hint = f"{name}_{hint}"
        Rewriter.insert_op(a, InsertPoint.before(launch))
    args = [*launch.args, *(a.memref for a in allocs)]
    bufs = []
    for hint, shape in zip(("part", "offs"), shapes):
        arg = kernel.body.block.insert_arg(MemRefType(elt, shape), len(kernel.body.block.args))
        arg.name_hint = hint
        bufs.append(arg)
    stages = []
    for suffix in ("part", "offsets", "tail")[:3 if tail else 2]:
        k = kernel.clone()
        k.properties["sym_name"] = StringAttr(fresh_name(kernel, f"{name}_{suffix}"))
        stages.append(k)
    n = len(launch.args)
    _partials(stages[0], chunk, slices, stages[0].body.block.args[n])
    _offsets(stages[1], slices, shapes[1][-1], *stages[1].body.block.args[n:n + 2])
    if tail:
        _tail(stages[2], chunk, slices, stages[2].body.block.args[n + 1])
    _outputs(s, chunk, slices, bufs[1])
    for k in stages[:2]:
        Rewriter.insert_op(k, InsertPoint.before(kernel))
        Rewriter.insert_op(loop.LaunchOp(k.sym_name.data, args), InsertPoint.before(launch))
    if tail:
        Rewriter.insert_op(stages[2], InsertPoint.after(kernel))
        Rewriter.insert_op(loop.LaunchOp(stages[2].sym_name.data, args), InsertPoint.after(launch))
    Rewriter.replace_op(launch, loop.LaunchOp(name, args))
    return True


@dataclass(frozen=True)
class LoopChunkScansPass(ModulePass):
    """A cumulative sum over a long row: chunk partials, their exclusive prefix, then each
    output's offset plus its masked sum within the chunk (three kernels)."""

    name = "loop-chunk-scans"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel, launch in launched_once(op):
            _scan(kernel, launch)
