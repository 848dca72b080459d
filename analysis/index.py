"""What an index is: the multiples and bounds of an `index` value, its linear form over its leaves,
and the values it takes over one block (its span) — the facts that schedule passes and the
tile-to-kernel lowering both rely on (alignment of stage copies, whether a slab can overhang).

Indices are built from constants, `arith` +, -, * by a constant, min (a clamp), floordiv/rem by a
constant and the induction variables of `tile.for` / `scf.for` loops.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import FloatAttr, IndexType, IntegerAttr, MemRefType
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
)

from deplo.dialects import loop, tile
from deplo.dialects.loop import trip_count

ANY = 1 << 30  # "a multiple of everything" (the value 0)
# a product that runs as a matmul on 2-D tiles (loop-fuse's `_is_matmul`; an f16 conv writes
# its im2col tensor only for one, `torch_to_tir._tensor_core_window`): K and output counts
MATMUL_MIN_K = 32
MATMUL_MIN_OUTPUTS = 1024

AFFINE_OPS = {  # the arith op that computes each affine operation on indices
    AffineBinaryOpKind.Add: arith.AddiOp,
    AffineBinaryOpKind.Mul: arith.MuliOp,
    AffineBinaryOpKind.Mod: arith.RemSIOp,  # indices are non-negative
    AffineBinaryOpKind.FloorDiv: arith.FloorDivSIOp,
    AffineBinaryOpKind.CeilDiv: arith.CeilDivSIOp,
}


def index_value(e: AffineExpr, indices, ops: list[Operation]) -> SSAValue:
    """`e` over `indices` as index arithmetic (`ops`, in order): a coordinate that is no plain
    loop index as a value (a pool's `2 * oh + kh` compared with a concat's offsets, a
    fragment's first row)."""
    if isinstance(e, AffineDimExpr):
        return indices[e.position]
    if isinstance(e, AffineConstantExpr):
        ops.append(arith.ConstantOp(IntegerAttr(e.value, IndexType())))
        return ops[-1].results[0]
    assert isinstance(e, AffineBinaryOpExpr), e
    lhs, rhs = index_value(e.lhs, indices, ops), index_value(e.rhs, indices, ops)
    ops.append(AFFINE_OPS[e.kind](lhs, rhs))
    return ops[-1].results[0]


def iv_loop(v: SSAValue) -> Operation | None:
    if isinstance(v, BlockArgument) and v.index == 0:
        return v.block.parent_op()
    return None


def const_value(v: SSAValue) -> int | None:
    op = v.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data
    return None


def is_float_zero(v: SSAValue) -> bool:
    """Whether `v` is the constant 0.0 (an accumulator's start)."""
    op = v.owner
    return isinstance(op, arith.ConstantOp) and isinstance(op.value, FloatAttr) \
        and op.value.value.data == 0.0


def known_multiple(v: SSAValue) -> int:
    """A number `v` is always a multiple of (1 when nothing is known; ANY for 0), through
    constants, +, -, *, min and the induction variables of tile.for / scf.for loops."""
    c = const_value(v)
    if c is not None:
        return abs(c) if c else ANY
    lp = iv_loop(v)
    if isinstance(lp, tile.ForOp):
        lb = lp.static_lb if lp.static_lb is not None else known_multiple(lp.dyn_lb)
        return math.gcd(lb, lp.step.data) or ANY
    if isinstance(lp, scf.ForOp):
        return math.gcd(known_multiple(lp.lb), known_multiple(lp.step)) or ANY
    op = v.owner
    if isinstance(op, arith.AddiOp | arith.SubiOp | arith.MinSIOp | arith.MaxSIOp):
        return math.gcd(known_multiple(op.lhs), known_multiple(op.rhs)) or ANY
    if isinstance(op, arith.MuliOp):
        return min(ANY, known_multiple(op.lhs) * known_multiple(op.rhs))
    return 1


def value_bounds(v: SSAValue) -> tuple[int, int] | None:
    """[lo, hi] of an index built from constants, +, -, * by a constant, min and tile.for
    induction variables with static bounds; None when unknown."""
    c = const_value(v)
    if c is not None:
        return c, c
    lp = iv_loop(v)
    if isinstance(lp, tile.ForOp):
        if lp.static_lb is not None:  # a dynamic stop is at most the static bound
            trips = trip_count(lp.static_lb, lp.ub.data, lp.step.data)
            return lp.static_lb, lp.static_lb + (max(trips, 1) - 1) * lp.step.data
        lo = value_bounds(lp.dyn_lb)
        return None if lo is None else (lo[0], lp.ub.data - 1)
    op = v.owner
    if isinstance(op, arith.AddiOp | arith.SubiOp | arith.MuliOp | arith.MinSIOp):
        a, b = value_bounds(op.lhs), value_bounds(op.rhs)
        if a is None or b is None:
            return None
        if isinstance(op, arith.AddiOp):
            return a[0] + b[0], a[1] + b[1]
        if isinstance(op, arith.SubiOp):
            return a[0] - b[1], a[1] - b[0]
        if isinstance(op, arith.MinSIOp):
            return min(a[0], b[0]), min(a[1], b[1])
        products = [x * y for x in a for y in b]
        return min(products), max(products)
    return None


# --------------------------------------------------------------------------------------------
# the values an index takes over one block


@dataclass(frozen=True)
class Span:
    """An index over one block: `Σ coeff * leaf + t`, the leaves uniform over the block (block
    ids, the chunk loop's iv, values computed before the thread loops), t in [lo, hi] over the
    threads and the loops inside the staging point; `deps` are the thread ivs t depends on."""

    uniform: dict[SSAValue, int] = field(default_factory=dict)
    lo: int = 0
    hi: int = 0
    deps: frozenset[SSAValue] = frozenset()

    def __add__(self, o: Span) -> Span:
        u = dict(self.uniform)
        for v, k in o.uniform.items():
            u[v] = u.get(v, 0) + k
        return Span(
            {v: k for v, k in u.items() if k}, self.lo + o.lo, self.hi + o.hi, self.deps | o.deps
        )

    def scale(self, c: int) -> Span:
        lo, hi = sorted((self.lo * c, self.hi * c))
        return Span(
            {v: k * c for v, k in self.uniform.items() if k * c},
            lo,
            hi,
            self.deps if c else frozenset(),
        )

    def same_base(self, o: Span) -> bool:
        return self.uniform == o.uniform


@dataclass
class SpanContext:
    """Where spans are taken: `uniform(v)` says whether a value is a leaf; `ranges` gives the
    [lo, hi] of the varying induction variables; `threads` are the thread-loop ivs."""

    uniform: Callable[[SSAValue], bool]
    ranges: dict[SSAValue, tuple[int, int]]
    threads: set[SSAValue]


def span(v: SSAValue, ctx: SpanContext) -> Span | None:
    if v in ctx.ranges:
        lo, hi = ctx.ranges[v]
        return Span({}, lo, hi, frozenset([v]) if v in ctx.threads else frozenset())
    c = const_value(v)
    if c is not None:
        return Span({}, c, c)
    if ctx.uniform(v):
        return Span({v: 1})
    op = v.owner
    if isinstance(op, arith.AddiOp | arith.SubiOp):
        a, b = span(op.lhs, ctx), span(op.rhs, ctx)
        if a is None or b is None:
            return None
        return a + (b if isinstance(op, arith.AddiOp) else b.scale(-1))
    if isinstance(op, arith.MuliOp):
        for x, y in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            k = const_value(y)
            if k is not None:
                s = span(x, ctx)
                return None if s is None else s.scale(k)
        return None
    if isinstance(op, arith.MinSIOp) and const_value(op.rhs) is not None:
        return span(op.lhs, ctx)  # a clamp: see the module docstring
    if isinstance(op, arith.DivSIOp | arith.RemSIOp) and (d := const_value(op.rhs)):
        # a warp's row / column in a block of warps; an interleaved register tile's group and
        # lane (block * T + thread, divided by or modulo T)
        s = span(op.lhs, ctx)
        if s is None or s.lo < 0 or d <= 0 or any(k % d for k in s.uniform.values()):
            return None
        if isinstance(op, arith.DivSIOp):
            return Span({v: k // d for v, k in s.uniform.items()}, s.lo // d, s.hi // d, s.deps)
        if s.hi - s.lo >= d or s.lo // d != s.hi // d:
            return Span({}, 0, d - 1, s.deps)
        return Span({}, s.lo % d, s.hi % d, s.deps)
    return None


def by_constant(e: AffineExpr, kind: AffineBinaryOpKind, c: int | None = None) -> bool:
    """`e` is `x kind k` for a constant k (k == c where c is given): `d floordiv 9`."""
    return isinstance(e, AffineBinaryOpExpr) and e.kind == kind \
        and isinstance(e.rhs, AffineConstantExpr) and (c is None or e.rhs.value == c)


def linear_expr(e: AffineExpr) -> tuple[dict[int, int], int] | None:
    """An affine expression as {dim: coeff}, constant; None if it is not linear."""
    if isinstance(e, AffineDimExpr):
        return {e.position: 1}, 0
    if isinstance(e, AffineConstantExpr):
        return {}, e.value
    if isinstance(e, AffineBinaryOpExpr):
        a, b = linear_expr(e.lhs), linear_expr(e.rhs)
        if a is None or b is None:
            return None
        if e.kind == AffineBinaryOpKind.Add:
            d = dict(a[0])
            for k, c in b[0].items():
                d[k] = d.get(k, 0) + c
            return d, a[1] + b[1]
        if e.kind == AffineBinaryOpKind.Mul:
            if not a[0]:
                a, b = b, a
            if b[0]:
                return None
            return {k: c * b[1] for k, c in a[0].items()}, a[1] * b[1]
    return None


def access_spans(op: loop.LoadOp, ctx: SpanContext) -> list[Span] | None:
    """The span of every coordinate of an access."""
    operand_spans = [span(v, ctx) for v in op.indices]
    out = []
    for e in op.access_map().results:
        lin = linear_expr(e)
        if lin is None:
            return None
        s = Span({}, lin[1], lin[1])
        for d, c in lin[0].items():
            if operand_spans[d] is None:
                return None
            s = s + operand_spans[d].scale(c)
        out.append(s)
    return out


def linear_of(v: SSAValue) -> tuple[dict[SSAValue, int], int]:
    """`v` as Σ coeff * leaf + c, expanding +, - and * by a constant (leaves: everything else)."""
    c = const_value(v)
    if c is not None:
        return {}, c
    op = v.owner
    if isinstance(op, arith.AddiOp | arith.SubiOp):
        (a, ac), (b, bc) = linear_of(op.lhs), linear_of(op.rhs)
        sign = 1 if isinstance(op, arith.AddiOp) else -1
        out = dict(a)
        for leaf, k in b.items():
            out[leaf] = out.get(leaf, 0) + sign * k
        return {x: k for x, k in out.items() if k}, ac + sign * bc
    if isinstance(op, arith.MuliOp):
        for x, y in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            k = const_value(y)
            if k is not None:
                terms, c0 = linear_of(x)
                return {leaf: t * k for leaf, t in terms.items() if t * k}, c0 * k
    return {v: 1}, 0


def stage_vector(op: tile.StageOp, nbytes: int, source_only: bool = False) -> int:
    """Elements per `nbytes`-byte piece of a stage's copy when every piece is aligned on both
    sides (slab rows, source rows, staged rows and the innermost offset all multiples of it);
    0 when they are not, or when nbytes is not a whole number of elements. A transposed stage
    scatters a piece over shared rows: only single elements, unless `source_only` (the pieces
    a copy loads, stored element by element)."""
    src = op.source.type
    assert isinstance(src, MemRefType)
    eb = tile.element_bytes(src.element_type)
    v = nbytes // eb
    if nbytes % eb or v < 1:
        return 0
    if v == 1:
        return 1
    if op.is_transposed and not source_only:
        return 0
    off = op.mixed_offsets()[-1]
    mult = (off or ANY) if isinstance(off, int) else known_multiple(off)
    dst = op.result.type
    assert isinstance(dst, MemRefType)
    inner = op.size_list[-1]
    if inner % v or src.get_shape()[-1] % v or mult % v:
        return 0
    return 0 if dst.get_shape()[-1] % v and not source_only else v


def may_overhang(op: tile.StageOp) -> list[bool]:
    """Per dim of a stage: whether its slab can pass an end of the source (an offset whose
    largest value plus the size exceeds the dim, or whose least is negative: a halo window;
    a static one only in a wrapped stage)."""
    src = op.source.type
    assert isinstance(src, MemRefType)
    out = []
    for off, size, n in zip(op.mixed_offsets(), op.size_list, src.get_shape()):
        bounds = (off, off) if isinstance(off, int) else value_bounds(off)
        out.append(bounds is None or bounds[0] < 0 or bounds[1] + size > n)
    return out
