"""The questions `loop-fuse` asks before it moves code: where is each element of a buffer needed
once, who reads a buffer, what global data a kernel ends up reading, and how a concat is read
back as a select. The rule itself is written in `fuse.py`'s docstring.

    hoist_point(indices, map, anchor)   where a producer can be computed once per element, or None
    readers(t, host) / writer(t)         the launches that read / write a host buffer
    sources(launch)                      the buffers a launch reads once pointwise producers are
                                         looked through (what fusing it would make a kernel read)
    concat_parts(kernel)                 a concat kernel's nests, each a pointwise part at an offset
    inline_concat_load(...)              `select(i < off1, part0, select(i < off2, part1, ...))`
                                         with every part read at a wrapped (in-range) index
"""

from __future__ import annotations

import contextlib
import functools
from dataclasses import dataclass
from weakref import WeakKeyDictionary

from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import IndexType, IntegerAttr, IntegerType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
    AffineMap,
)
from xdsl.rewriter import InsertPoint
from xdsl.traits import SymbolTable

from deplo.dialects import loop, tile

# ---------------------------------------------------------------------------------------------
# where an element is needed once


def hoist_point(indices, amap: AffineMap, anchor: Operation, shape=None) -> InsertPoint | None:
    """Where a reduction producer read at (indices, amap) by `anchor` can be computed exactly
    once per element, or None.

    Every coordinate must be a distinct loop induction variable of a loop around `anchor` (or
    the constant 0 along a size-1 dim of `shape`), and every loop around the insertion point —
    the start of the innermost of those loops — must be one of them: a loop around it that does
    not index the element would compute it again on each of its iterations."""
    used: list[SSAValue] = []
    for k, e in enumerate(amap.results):
        if isinstance(e, AffineConstantExpr) and e.value == 0 and shape and shape[k] == 1:
            continue
        if not isinstance(e, AffineDimExpr):
            return None
        v = indices[e.position]
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
    if not loops:
        return None
    enclosing = list(loop.enclosing_ops(anchor, loop.ForOp))
    innermost = next((f for f in enclosing if f in loops), None)
    if innermost is None:
        return None
    chain = [innermost, *loop.enclosing_ops(innermost, loop.ForOp)]
    if set(map(id, chain)) != set(map(id, loops)):
        return None
    return InsertPoint.at_start(innermost.body.block)


def reads_each_element_once_in_place(load: loop.LoadOp, ivs: list[SSAValue]) -> bool:
    """`load` sits in the innermost loop of the free nest `ivs` and reads one element per
    iteration of the whole nest (distinct plain indices covering every loop): a reduction read
    there can be computed right there, once per element — the load's own kernel becomes the
    reduction's epilogue."""
    point = hoist_point(list(load.indices), load.access_map(), load, load.buffer.type.get_shape())
    if point is None or not ivs or point.block is not ivs[-1].owner:
        return False
    used = {load.indices[e.position] for e in load.access_map().results
            if isinstance(e, AffineDimExpr)}
    extents = [iv.owner.parent_op().extent for iv in ivs]
    return all(iv in used or n == 1 for iv, n in zip(ivs, extents))


# ---------------------------------------------------------------------------------------------
# the host function's dataflow


_SYMBOLS: WeakKeyDictionary[Block, dict[str, Operation]] = WeakKeyDictionary()


_MEMO: dict | None = None


@contextlib.contextmanager
def memoized():
    """Within: `written_args` and `producer_nest` of a kernel computed once, until `forget`
    (loop-fuse changes one kernel at a time, its consumer, and asks them ~10^6 times of the
    others: an RNN's recurrent chain took minutes)."""
    global _MEMO
    saved, _MEMO = _MEMO, {}
    try:
        yield
    finally:
        _MEMO = saved


def forget(kernel: loop.KernelOp) -> None:
    """`kernel` is about to change: what `memoized` keeps of it goes."""
    if _MEMO is not None:
        _MEMO.pop((written_args, kernel), None)
        _MEMO.pop((producer_nest, kernel), None)


def _memo(analysis):
    @functools.wraps(analysis)
    def cached(kernel):
        if _MEMO is None:
            return analysis(kernel)
        key = (cached, kernel)
        if key not in _MEMO:
            _MEMO[key] = analysis(kernel)
        return _MEMO[key]

    return cached


@_memo
def written_args(kernel: loop.KernelOp) -> frozenset[int]:
    """Indices of the kernel arguments it stores to (from the arguments' uses: fusion asks
    this ~10^5 times, a walk of the kernel each time took most of its time)."""
    return frozenset(a.index for a in kernel.body.block.args
                     if any(isinstance(u.operation, loop.StoreOp) and u.operation.buffer is a
                            for u in a.uses))


@dataclass
class ProducerNest:
    """A kernel in the canonical single-output form that tir-to-loop emits."""

    kernel: loop.KernelOp
    out_index: int
    ivs: list[SSAValue]  # the free loops' induction variables, outermost first
    body: list[Operation]  # the innermost body without its store and yield
    stored: SSAValue  # the value stored into T
    has_reduction: bool


@_memo
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


def window_read(nest: ProducerNest) -> bool:
    """A producer that copies a 16-bit input through a window or a stride (an f16 conv's
    im2col tensor, `s * stride + k * dilation`): some coordinate of a load is no mixed-radix
    digit sum of its loop indices (terms that overlap, or leave gaps), or adds a digit of one
    index to another loop's (a patch: `h * 16 + (k floordiv 16) mod 16`, ViT's patch embedding,
    stride = kernel). Inlined into a K loop it would make the product's operand a gather that
    tensor cores cannot take; a reshape's `h * 16 + d` (d < 16) or `e floordiv 56` is none."""
    extents = nest.kernel.args[nest.out_index].type.get_shape()  # (its loops run over them)
    for ld in (o for o in nest.body if isinstance(o, loop.LoadOp)):
        if ld.buffer.type.element_type not in tile.HALF_TYPES:
            continue
        positions = [nest.ivs.index(v) if v in nest.ivs else None for v in ld.indices]
        for e in ld.access_map().results:
            if not _digit_sum(e, {k: None if p is None else extents[p]
                                  for k, p in enumerate(positions)}):
                return True
    return False


def im2col(nest: ProducerNest) -> bool:
    """An f16/bf16 conv's im2col tensor (`torch_to_tir._columns`): a window or stride copy
    (`window_read`) of one 16-bit input of its own type, its padding selected to zero (integer
    index math, compares and selects: no float arithmetic). Inlined into a matmul's K loop it
    is an implicit GEMM: tile-tensor-core takes the product's B as a `tile.gather` whose chunks
    tile-stage-chunks computes into shared memory, no im2col tensor written."""
    t = nest.kernel.args[nest.out_index].type.element_type
    if t not in tile.HALF_TYPES or not window_read(nest):
        return False
    for o in nest.kernel.body.walk():
        if isinstance(o, loop.LoadOp):
            if o.buffer.type.element_type != t:
                return False
        elif isinstance(o, arith.SelectOp | arith.ConstantOp):
            continue
        elif o.name.startswith("arith."):
            if any(not isinstance(r.type, IndexType | IntegerType) for r in o.results):
                return False
        elif not isinstance(o, loop.ForOp | loop.StoreOp | loop.YieldOp):
            return False
    return True


def _digit_sum(e: AffineExpr, extents: dict[int, int | None]) -> bool:
    """Whether `e`'s terms (a constant aside) are c0 * t0 + c1 * t1 + ... with c0 = 1 and each
    next coefficient the span of those before (each term's values counted by `_values`)."""
    terms: list[tuple[int, AffineExpr]] = []

    def split(x: AffineExpr, coeff: int) -> None:
        if isinstance(x, AffineBinaryOpExpr) and x.kind == AffineBinaryOpKind.Add:
            split(x.lhs, coeff)
            split(x.rhs, coeff)
        elif isinstance(x, AffineBinaryOpExpr) and x.kind == AffineBinaryOpKind.Mul \
                and isinstance(x.rhs, AffineConstantExpr):
            split(x.lhs, coeff * x.rhs.value)
        elif not isinstance(x, AffineConstantExpr):
            terms.append((coeff, x))

    split(e, 1)
    digit = any(not isinstance(t, AffineDimExpr) for _, t in terms)
    if digit and len({d for _, t in terms for d in t.used_dims()}) > 1:
        return False
    expected = 1
    for coeff, term in sorted(terms, key=lambda t: t[0]):
        n = _values(term, extents)
        if n == 1:
            continue
        if n is None or coeff != expected:
            return False
        expected = coeff * n
    return True


def _values(e: AffineExpr, extents: dict[int, int | None]) -> int | None:
    """How many values `e` takes over its dims' extents (a bound), or None if unknown."""
    if isinstance(e, AffineDimExpr):
        return extents.get(e.position)
    if isinstance(e, AffineBinaryOpExpr) and isinstance(e.rhs, AffineConstantExpr):
        inner = _values(e.lhs, extents)
        if e.kind == AffineBinaryOpKind.Mod:
            return e.rhs.value if inner is None else min(inner, e.rhs.value)
        if e.kind == AffineBinaryOpKind.FloorDiv and inner is not None:
            return -(-inner // e.rhs.value)
    return None


def kernel_of(launch: loop.LaunchOp) -> Operation | None:
    """The kernel `launch` calls. Fusion asks this ~10^5 times on a 100-kernel module, where
    SymbolTable.lookup_symbol's scan took minutes: a name -> op table per module, rebuilt when
    an entry is stale (the kernel was erased, renamed or added since)."""
    name = launch.callee.root_reference.data
    fn = launch.parent_op()
    module = fn.parent_block() if fn is not None else None
    if module is None:
        return SymbolTable.lookup_symbol(launch, launch.callee)
    table = _SYMBOLS.get(module)
    k = table.get(name) if table is not None else None
    if k is None or k.parent is not module or k.sym_name.data != name:
        table = _SYMBOLS[module] = {o.sym_name.data: o for o in module.ops
                                    if isinstance(o, loop.KernelOp)}
        k = table.get(name)
    return k


def written(launch: loop.LaunchOp) -> set[int]:
    k = kernel_of(launch)
    return written_args(k) if isinstance(k, loop.KernelOp) else set()


def writer(t: SSAValue, written_by=written) -> loop.LaunchOp | None:
    """The one launch that writes host buffer `t`, or None (an input, or several writers);
    `written_by` answers what a launch writes (`sources` asks each launch once a walk)."""
    ws = [u.operation for u in t.uses
          if isinstance(u.operation, loop.LaunchOp) and u.index in written_by(u.operation)]
    return ws[0] if len(ws) == 1 else None


def readers(t: SSAValue, but: Operation | None = None) -> list[Operation]:
    """The ops other than the writers of `t` (and `but`) that use it: launches that read it,
    returns, calls."""
    out = []
    for u in t.uses:
        op = u.operation
        if op is but or (isinstance(op, loop.LaunchOp) and u.index in written(op)):
            continue
        if op not in out:
            out.append(op)
    return out


SOURCES_WALK = 256
"""Buffers a `sources` walk looks through at most: an RNN's state is a pointwise chain through
every step, hundreds of kernels long; a transformer's chains are a few kernels."""


def sources(launch: loop.LaunchOp) -> set[SSAValue]:
    """The host buffers `launch` reads, looking through buffers written by pointwise kernels
    (which fusion inlines): the global data a kernel reads once its pointwise producers are
    fused into it. (What each launch writes is asked once a walk: a recurrent state's buffer
    has a use in every step.)"""
    written_by = functools.cache(written)
    found: set[SSAValue] = set()
    stack = [v for i, v in enumerate(launch.args) if i not in written_by(launch)]
    seen: set[SSAValue] = set()
    while stack:
        if len(seen) >= SOURCES_WALK:  # (what is left stays unexpanded: a superset of its
            return found | set(stack)  # own sources, so `a <= b` errs towards no)
        t = stack.pop()
        if t in seen:
            continue
        seen.add(t)
        w = writer(t, written_by) if isinstance(t.owner, memref.AllocOp) else None
        k = kernel_of(w) if w is not None else None
        nest = producer_nest(k) if isinstance(k, loop.KernelOp) else None
        if nest is None or nest.has_reduction:
            found.add(t)
            continue
        stack.extend(v for i, v in enumerate(w.args) if i != nest.out_index)
    return found


# ---------------------------------------------------------------------------------------------
# concat as a select


@dataclass
class ConcatPart:
    ivs: list[SSAValue]
    body: list[Operation]  # without the store
    stored: SSAValue
    offset: int  # where the part starts along the concat dim
    extents: list[int]  # its nest's extents


@dataclass
class ConcatNests:
    kernel: loop.KernelOp
    out_index: int
    dim: int
    parts: list[ConcatPart]


def _perfect_free_nest(top: Operation, rank: int) -> tuple[list[SSAValue], list[Operation]] | None:
    """(ivs, innermost body without the yield) of `rank` perfectly nested free loops from 0."""
    ivs: list[SSAValue] = []
    op: Operation | None = top
    body: list[Operation] = []
    for _ in range(rank):
        if not isinstance(op, loop.ForOp) or op.kind.data != loop.LoopKind.FREE:
            return None
        if op.lb.data != 0 or op.step.data != 1:
            return None
        ivs.append(op.iv)
        body = [o for o in op.body.block.ops if not isinstance(o, loop.YieldOp)]
        op = body[0] if len(body) == 1 else None
    return ivs, body


def concat_parts(kernel: loop.KernelOp, ivs_as_values: bool = False) -> ConcatNests | None:
    """The form tir-to-loop gives a concat: one perfect free nest per input, pointwise, storing
    its region at `(d0, ..., d_dim + offset, ...)`; None for anything else. `ivs_as_values`:
    a part's body may use the ivs of the other dims as values (a pad of two dims: the inner
    pad's selects compare its row), which a caller that keeps those loops can map."""
    outs = written_args(kernel)
    if len(outs) != 1:
        return None
    (out,) = outs
    shape = kernel.args[out].type.get_shape()
    rank = len(shape)
    parts: list[ConcatPart] = []
    dims: set[int] = set()
    valued: set[int] = set()  # dims whose iv a part uses as a value
    for top in kernel.body.block.ops:
        if isinstance(top, arith.ConstantOp):
            continue
        nest = _perfect_free_nest(top, rank)
        if nest is None:
            return None
        ivs, body = nest
        if not body or not isinstance(store := body[-1], loop.StoreOp):
            return None
        if store.buffer is not kernel.args[out] or list(store.indices) != ivs:
            return None
        if any(isinstance(o, loop.ForOp | loop.StoreOp) for b in body[:-1] for o in b.walk()):
            return None
        as_values = {v for b in body[:-1] for o in b.walk()
                     if not isinstance(o, loop.LoadOp) for v in o.operands if v in ivs}
        if as_values and not ivs_as_values:
            return None  # an IV used as a value would need an affine expression as a value
        m = store.access_map()
        coords = m.eval([0] * rank, [])
        moved = [k for k, c in enumerate(coords) if c != 0]
        if len(moved) > 1:
            return None
        offset = coords[moved[0]] if moved else 0
        dims.update(moved)
        valued.update(ivs.index(v) for v in as_values)
        if moved:
            d = moved[0]
            exprs = tuple(AffineExpr.dimension(k) + (offset if k == d else 0) for k in range(rank))
            if m != AffineMap(rank, 0, exprs):
                return None
        elif m != AffineMap.identity(rank):
            return None
        extents = [iv.owner.parent_op().extent for iv in ivs]
        parts.append(ConcatPart(ivs, body[:-1], store.value, offset, extents))
    if len(parts) < 2 or len(dims) != 1 or dims <= valued:
        return None
    (dim,) = dims
    parts.sort(key=lambda p: p.offset)
    pos = 0
    for p in parts:
        if p.offset != pos or [n for k, n in enumerate(p.extents) if k != dim] != [
            n for k, n in enumerate(shape) if k != dim
        ]:
            return None
        pos += p.extents[dim]
    if pos != shape[dim]:
        return None
    return ConcatNests(kernel, out, dim, parts)


def wrapped_coordinate(e: AffineExpr, offset: int, n: int) -> AffineExpr:
    """`e - offset` brought into [0, n) with a mod: exact inside the part's region, and a valid
    index everywhere else, where the select discards the value."""
    shift = -(-offset // n) * n - offset  # >= 0: the dividend stays non-negative
    return (e + shift) % n if shift else e % n


def index_constant(kernel: loop.KernelOp, value: int) -> SSAValue:
    """An `arith.constant value : index` at the top of the kernel."""
    c = arith.ConstantOp(IntegerAttr(value, IndexType()))
    kernel.body.block.insert_op_before(c, kernel.body.block.first_op)
    return c.result


# ---------------------------------------------------------------------------------------------
# free loop interchange


def outer_free_nest(kernel: loop.KernelOp) -> list[loop.ForOp]:
    """The kernel's outer perfect nest of free loops (each body holds only the next loop)."""
    nest: list[loop.ForOp] = []
    ops = [o for o in kernel.body.block.ops if not isinstance(o, arith.ConstantOp)]
    while len(ops) == 1 and isinstance(f := ops[0], loop.ForOp) \
            and f.kind.data == loop.LoopKind.FREE:
        nest.append(f)
        ops = [o for o in f.body.block.ops if not isinstance(o, loop.YieldOp)]
    return nest


def permute_free_nest(nest: list[loop.ForOp], order: list[int]) -> None:
    """Reorder a perfect free nest: position k gets the loop that was at `order[k]` (bounds and
    every use of its induction variable). Free iterations are independent, so any order computes
    the same stores."""
    headers = [(f.lb, f.ub, f.step, f.iv.name_hint) for f in nest]
    ivs = [f.iv for f in nest]
    uses = [[(u.operation, u.index) for u in iv.uses] for iv in ivs]
    for k, src in enumerate(order):
        f = nest[k]
        f.lb, f.ub, f.step = headers[src][:3]
        f.iv.name_hint = headers[src][3]
        for op, i in uses[src]:
            op.operands[i] = ivs[k]


def free_nest_order_for(nest: list[loop.ForOp], loads: list[loop.LoadOp]) -> list[int] | None:
    """An order of `nest` that puts the loops indexing the loads (reduction reads) outermost,
    keeping relative orders; None when that is the current order or cannot help."""
    positions = {f.iv: k for k, f in enumerate(nest)}
    used: set[int] = set()
    for ld in loads:
        for e in ld.access_map().results:
            if isinstance(e, AffineDimExpr):
                v = ld.indices[e.position]
                if v in positions:
                    used.add(positions[v])
    order = sorted(used) + [k for k in range(len(nest)) if k not in used]
    return None if order == list(range(len(nest))) else order
