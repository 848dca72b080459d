"""What the matmul schedule passes know about a kernel: the contraction nest, the values an index
takes over a block, what an index is a multiple of, and the two rewrites several passes share
(unroll-and-jam of the innermost body, guards on stores).

A contraction (matmul-like kernel) is a chain of free loops, each the only loop of its parent
(besides scalar `arith`/`math` code), around a *cell*: a block holding one or more reduce loops
(`tile.for ... iter(...)`), scalar code, loads and (possibly guarded) stores, and no free loop:

    tile.for %i = 0 to 64 bind(serial) {             <- chain
      tile.for %j = 0 to 80 bind(serial) {           <- chain
        %s = tile.for %k = 0 to 96 bind(serial) iter(%acc = %zero) -> f32 { ... }   <- cell
        loop.store %s, %out[%i, %j] : memref<64x80xf32>
      }
    }

RMSNorm and softmax are not contractions (their cell holds a free loop after the reduction).

Out-of-range rows and columns (extents that are not a multiple of a tile) are handled by
*clamping*: an index that may pass the end is `arith.minsi %raw, %last`, so every load stays in
bounds and the extra lanes recompute the last row, and the stores are guarded by
`scf.if %raw < %extent`. A clamp never goes below the first index of its block or thread group
(grids are rounded up, not down), which is what `span` relies on.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from xdsl.builder import Builder
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import AffineMapAttr, IndexType, IntegerAttr, MemRefType
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
    AffineMap,
)
from xdsl.rewriter import InsertPoint, Rewriter

from deplo.dialects import loop, tile

INDEX = IndexType()
ANY = 1 << 30  # "a multiple of everything" (the value 0)


# --------------------------------------------------------------------------------------------
# the contraction nest


@dataclass
class Contraction:
    """The chain of free loops (outermost first, serial or bound) and the cell they enclose."""

    kernel: tile.KernelOp
    chain: list[tile.ForOp]
    cell: Block

    @property
    def reduces(self) -> list[tile.ForOp]:
        return [op for op in self.cell.ops if isinstance(op, tile.ForOp) and op.inits]

    def serial_axes(self) -> list[tile.ForOp]:
        """Chain loops a schedule pass may still split: serial, `0 to N step 1`, N > 1."""
        return [
            lp
            for lp in self.chain
            if lp.binding == tile.Bind.SERIAL
            and lp.static_lb == 0
            and lp.step.data == 1
            and lp.ub.data > 1
        ]

    def thread_loops(self) -> list[tile.ForOp]:
        return [lp for lp in self.chain if lp.binding.is_thread]

    def covers_block(self) -> bool:
        """Whether the cell runs on every thread of the block, unguarded: each thread loop of the
        chain is `0 to B step 1` for the block size B of its axis, and the block has no other
        threads. A collective op (tile.stage) may then sit in the cell's loops."""
        loops = self.thread_loops()
        dims = self.kernel.block_dims
        if not loops or math.prod(dims) != math.prod(lp.extent or 0 for lp in loops):
            return False
        return all(
            lp.static_lb == 0 and lp.step.data == 1 and lp.extent == dims[lp.binding.axis]
            for lp in loops
        )


def _scalar(op: Operation) -> bool:
    return op.dialect_name() in ("arith", "math")


def find_contraction(kernel: tile.KernelOp) -> Contraction | None:
    chain: list[tile.ForOp] = []
    block = kernel.body.block
    while True:
        loops = [op for op in block.ops if isinstance(op, tile.ForOp)]
        if any(lp.inits for lp in loops):
            break
        others = [op for op in block.ops if not isinstance(op, tile.ForOp | tile.YieldOp)]
        if len(loops) != 1 or not all(_scalar(op) for op in others):
            return None
        chain.append(loops[0])
        block = loops[0].body.block
    for op in block.ops:
        if isinstance(op, tile.ForOp) and not op.inits:
            return None
        if isinstance(op, tile.StageOp | tile.CombineOp):
            return None
    if not chain:
        return None
    return Contraction(kernel, chain, block)


def reduce_extent(c: Contraction) -> int:
    """The longest reduce loop of the cell, in elements (K)."""
    return max((lp.extent or 0) * lp.step.data for lp in c.reduces)


def output_elements(c: Contraction) -> int:
    """Elements of the largest buffer the cell stores to (M * N for a matmul)."""
    return max(
        (
            math.prod(op.buffer.type.get_shape())
            for op in c.cell.walk()
            if isinstance(op, loop.StoreOp)
        ),
        default=0,
    )


def is_matmul_sized(c: Contraction) -> bool:
    """The gate of the matmul passes' heuristic defaults: at least 32 x 32 outputs and K >= 32.
    Below that, tile-map-grid / tile-map-threads give more blocks than 2-D tiles would fill,
    and there is too little reuse to stage."""
    return output_elements(c) >= 1024 and reduce_extent(c) >= 32


def pow2_at_most(n: int, cap: int) -> int:
    """The largest power of two <= min(n, cap) (at least 1)."""
    p = 1
    while p * 2 <= min(n, cap):
        p *= 2
    return p


# --------------------------------------------------------------------------------------------
# small builders


def const(b: Builder, n: int, t=INDEX) -> SSAValue:
    c = b.insert(arith.ConstantOp(IntegerAttr(n, t))).result
    c.name_hint = f"c{n}" if n >= 0 else f"cm{-n}"
    return c


def add(b: Builder, x: SSAValue, y: SSAValue) -> SSAValue:
    return b.insert(arith.AddiOp(x, y)).result


def mul(b: Builder, x: SSAValue, n: int) -> SSAValue:
    if n == 1:
        return x
    return b.insert(arith.MuliOp(x, const(b, n))).result


def linear_value(b: Builder, terms: dict[SSAValue, int], c: int) -> SSAValue:
    """Σ coeff * value + c, built with arith ops (values in a stable order)."""
    acc: SSAValue | None = None
    for v, k in terms.items():
        t = mul(b, v, k)
        acc = t if acc is None else add(b, acc, t)
    if acc is None:
        return const(b, c)
    return add(b, acc, const(b, c)) if c else acc


def sink_chain_ops(chain: Sequence[tile.ForOp], cell: Block) -> None:
    """Move the scalar ops of the chain blocks below chain[0] (inclusive) to the start of the
    cell, in order: each becomes part of the body a schedule pass splits or replicates."""
    moved: list[Operation] = []
    for lp in chain:
        if lp.body.block is cell:
            break
        for op in list(lp.body.block.ops):
            if not isinstance(op, tile.ForOp | tile.YieldOp):
                moved.append(op)
    anchor = cell.first_op
    for op in moved:
        op.detach()
        cell.insert_op_before(op, anchor)


# --------------------------------------------------------------------------------------------
# accesses


def compact_access(op: loop.LoadOp | loop.StoreOp) -> Operation:
    """The same access with the index operands its map does not use dropped (replaces `op`)."""
    m = op.access_map()
    used = set(m.used_dims())
    if len(used) == len(op.indices):
        return op
    keep = [i for i in range(m.num_dims) if i in used]
    new_map = m.drop_dims([i not in used for i in range(m.num_dims)])
    indices = [op.indices[i] for i in keep]
    if isinstance(op, loop.LoadOp):
        new: Operation = loop.LoadOp(op.buffer, indices, AffineMapAttr(new_map))
    else:
        new = loop.StoreOp(op.value, op.buffer, indices, AffineMapAttr(new_map))
    new.attributes |= op.attributes
    Rewriter.replace_op(op, new)
    return new


def compact_all(root: Operation) -> None:
    for op in list(root.walk()):
        if isinstance(op, loop.LoadOp | loop.StoreOp):
            compact_access(op)


def cse(block: Block, stored: set[SSAValue]) -> None:
    """Drop repeated scalar ops and repeated loads (of buffers nobody stores to) in `block` and
    the blocks nested in it; a nested block may reuse a value of an enclosing one."""

    def key(op: Operation):
        if op.regions or not (_scalar(op) or isinstance(op, loop.LoadOp)):
            return None
        if isinstance(op, loop.LoadOp) and op.buffer in stored:
            return None
        props = tuple(sorted((k, str(v)) for k, v in op.properties.items()))
        attrs = tuple(sorted((k, str(v)) for k, v in op.attributes.items()))
        return (op.name, tuple(op.operands), props, attrs, tuple(r.type for r in op.results))

    def visit(b: Block, seen: dict) -> None:
        for op in list(b.ops):
            k = key(op)
            if k is not None:
                if k in seen:
                    for old, new in zip(op.results, seen[k].results):
                        old.replace_all_uses_with(new)
                    Rewriter.erase_op(op)
                    continue
                seen[k] = op
            for r in op.regions:
                for inner in r.blocks:
                    visit(inner, dict(seen))

    visit(block, {})


def stored_buffers(kernel: tile.KernelOp) -> set[SSAValue]:
    return {op.buffer for op in kernel.body.walk() if isinstance(op, loop.StoreOp)}


# --------------------------------------------------------------------------------------------
# guards


def guard_stores(ops: Iterable[Operation], cond: SSAValue) -> None:
    """Every `loop.store` in `ops` runs only where `cond` holds: wrapped in `scf.if %cond`, or
    its existing guard's condition and-ed with `cond`."""
    for root in list(ops):
        for st in [o for o in root.walk() if isinstance(o, loop.StoreOp)]:
            parent = st.parent_op()
            if (
                isinstance(parent, scf.IfOp)
                and not parent.false_region.blocks
                and len(parent.true_region.block.ops) == 2
            ):
                both = arith.AndIOp(parent.cond, cond)
                Rewriter.insert_op(both, InsertPoint.before(parent))
                both.result.name_hint = "ok"
                parent.operands[0] = both.result
                continue
            prev = st.prev_op
            if (
                isinstance(prev, scf.IfOp)
                and prev.cond is cond
                and not prev.false_region.blocks
                and all(
                    isinstance(o, loop.StoreOp | scf.YieldOp) for o in prev.true_region.block.ops
                )
            ):  # the previous store has the same guard: one scf.if for both
                st.detach()
                prev.true_region.block.insert_op_before(st, prev.true_region.block.last_op)
                continue
            then = Block()
            guard = scf.IfOp(cond, [], Region(then))
            Rewriter.insert_op(guard, InsertPoint.before(st))
            st.detach()
            then.add_op(st)
            then.add_op(scf.YieldOp())


def below(b: Builder, v: SSAValue, n: int) -> SSAValue:
    """`v < n` (an i1), for a store guard."""
    c = b.insert(arith.CmpiOp(v, const(b, n), "ult")).result
    c.name_hint = "in"
    return c


def clamp(b: Builder, v: SSAValue, n: int) -> SSAValue:
    """min(v, n - 1): an index that stays in [0, n)."""
    c = b.insert(arith.MinSIOp(v, const(b, n - 1))).result
    return c


# --------------------------------------------------------------------------------------------
# unroll-and-jam


@dataclass
class Replica:
    """One copy of a replicated body: its value map and the guard of its stores."""

    vmap: dict[SSAValue, SSAValue]
    guard: SSAValue | None = None


def replicate(ops: Sequence[Operation], replicas: list[Replica], before: Operation) -> None:
    """Insert, before `before`, one copy of `ops` per replica (each through its value map); a
    reduce loop among them becomes one loop carrying every replica's accumulators (jam), so the
    copies share its iterations. Stores of a replica with a guard are guarded. `ops` are left
    in place (the caller erases them)."""
    for op in ops:
        if isinstance(op, tile.ForOp) and op.inits:
            _jam(op, replicas, before)
            continue
        for r in replicas:
            new = op.clone(value_mapper=r.vmap)
            Rewriter.insert_op(new, InsertPoint.before(before))
            if r.guard is not None and any(isinstance(o, loop.StoreOp) for o in new.walk()):
                guard_stores([new], r.guard)


def _jam(lp: tile.ForOp, replicas: list[Replica], before: Operation) -> None:
    n = len(lp.inits)
    inits = [r.vmap.get(v, v) for r in replicas for v in lp.inits]
    body = Block(arg_types=[INDEX, *(v.type for v in inits)])
    dyn = replicas[0].vmap.get(lp.dyn_lb, lp.dyn_lb) if lp.dyn_lb is not None else None
    lb = dyn if dyn is not None else lp.static_lb
    yield_op = tile.YieldOp()
    body.add_op(yield_op)
    inner_reps = []
    for k, r in enumerate(replicas):
        vmap = dict(r.vmap)
        vmap[lp.iv] = body.args[0]
        for a, b in zip(lp.accs, body.args[1 + k * n : 1 + (k + 1) * n]):
            vmap[a] = b
            b.name_hint = a.name_hint
        inner_reps.append(Replica(vmap))
    body.args[0].name_hint = lp.iv.name_hint
    ops = [o for o in lp.body.block.ops if not isinstance(o, tile.YieldOp)]
    replicate(ops, inner_reps, yield_op)
    values = [r.vmap.get(v, v) for r in inner_reps for v in lp.body.block.last_op.operands]
    new_yield = tile.YieldOp(*values)
    Rewriter.replace_op(yield_op, new_yield)
    new = tile.ForOp(lb, lp.ub.data, lp.binding, inits, Region(body), lp.step.data)
    new.attributes |= lp.attributes
    Rewriter.insert_op(new, InsertPoint.before(before))
    for k, r in enumerate(replicas):
        for old, res in zip(lp.res, new.res[k * n : (k + 1) * n]):
            r.vmap[old] = res
            res.name_hint = old.name_hint


def drop_dead(root: Operation) -> None:
    """Erase scalar ops and loads whose results nobody uses (left behind by rewrites)."""
    changed = True
    while changed:
        changed = False
        for op in list(root.walk(reverse=True)):
            pure = _scalar(op) or isinstance(op, loop.LoadOp)
            if pure and op.results and all(not r.uses for r in op.results):
                Rewriter.erase_op(op)
                changed = True


def erase_ops(ops: Sequence[Operation]) -> None:
    for op in reversed(ops):
        Rewriter.erase_op(op)


# --------------------------------------------------------------------------------------------
# what an index is a multiple of, what values it takes


def _iv_loop(v: SSAValue) -> Operation | None:
    if isinstance(v, BlockArgument) and v.index == 0:
        return v.block.parent_op()
    return None


def _const_value(v: SSAValue) -> int | None:
    op = v.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data
    return None


def known_multiple(v: SSAValue) -> int:
    """A number `v` is always a multiple of (1 when nothing is known; ANY for 0), through
    constants, +, -, *, min and the induction variables of tile.for / scf.for loops."""
    c = _const_value(v)
    if c is not None:
        return abs(c) if c else ANY
    lp = _iv_loop(v)
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
    c = _const_value(v)
    if c is not None:
        return c, c
    lp = _iv_loop(v)
    if isinstance(lp, tile.ForOp):
        if lp.static_lb is not None:
            return lp.static_lb, lp.static_lb + ((lp.extent or 1) - 1) * lp.step.data
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
    c = _const_value(v)
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
            k = _const_value(y)
            if k is not None:
                s = span(x, ctx)
                return None if s is None else s.scale(k)
        return None
    if isinstance(op, arith.MinSIOp) and _const_value(op.rhs) is not None:
        return span(op.lhs, ctx)  # a clamp: see the module docstring
    if isinstance(op, arith.DivSIOp | arith.RemSIOp) and (d := _const_value(op.rhs)):
        s = span(op.lhs, ctx)  # a warp's row / column in a block of warps
        if s is None or s.uniform or s.lo < 0 or d < 0:
            return None
        if isinstance(op, arith.DivSIOp):
            return Span({}, s.lo // d, s.hi // d, s.deps)
        return Span({}, 0, min(d - 1, s.hi), s.deps)
    return None


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
    c = _const_value(v)
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
            k = _const_value(y)
            if k is not None:
                terms, c0 = linear_of(x)
                return {leaf: t * k for leaf, t in terms.items() if t * k}, c0 * k
    return {v: 1}, 0


def shifted_access(
    op: loop.LoadOp, buf: SSAValue, offsets: Sequence[SSAValue | int], keep: Sequence[bool]
) -> loop.LoadOp | None:
    """A load of `buf` at the coordinates of `op` minus `offsets`, keeping only the dims marked in
    `keep` (a staged copy drops its unit dims). Coordinates and offsets are expanded into linear
    forms over their leaves, so `(%k0 + %kk) - %k0` reads `%kk`. None if a coordinate is not
    linear."""
    m = op.access_map()
    forms = [linear_of(v) for v in op.indices]
    leaves: list[SSAValue] = []
    coords: list[tuple[dict[SSAValue, int], int]] = []
    for expr, off, k in zip(m.results, offsets, keep):
        lin = linear_expr(expr)
        if lin is None:
            return None
        if not k:
            continue
        terms: dict[SSAValue, int] = {}
        c = lin[1]
        for d, coeff in lin[0].items():
            t, tc = forms[d]
            c += coeff * tc
            for leaf, x in t.items():
                terms[leaf] = terms.get(leaf, 0) + coeff * x
        t, tc = ({}, off) if isinstance(off, int) else linear_of(off)
        c -= tc
        for leaf, x in t.items():
            terms[leaf] = terms.get(leaf, 0) - x
        terms = {leaf: x for leaf, x in terms.items() if x}
        for leaf in terms:
            if leaf not in leaves:
                leaves.append(leaf)
        coords.append((terms, c))
    results: list[AffineExpr] = []
    for terms, c in coords:
        e: AffineExpr = AffineExpr.constant(c)
        first = True
        for leaf, x in terms.items():
            t = AffineExpr.dimension(leaves.index(leaf))
            t = t if x == 1 else t * x
            e = t if first and c == 0 else e + t
            first = False
        results.append(e)
    if not results:
        results = [AffineExpr.constant(0)]
    amap = AffineMap(len(leaves), 0, tuple(results))
    return loop.LoadOp(buf, leaves, AffineMapAttr(amap))


def stage_vector(op: tile.StageOp, nbytes: int) -> int:
    """Elements per `nbytes`-byte piece of a stage's copy when every piece is aligned on both
    sides (slab rows, source rows, staged rows and the innermost offset all multiples of it);
    0 when they are not, or when nbytes is not a whole number of elements."""
    src = op.source.type
    assert isinstance(src, MemRefType)
    eb = tile.element_bytes(src.element_type)
    v = nbytes // eb
    if nbytes % eb or v < 1:
        return 0
    if v == 1:
        return 1
    off = op.mixed_offsets()[-1]
    mult = (off or ANY) if isinstance(off, int) else known_multiple(off)
    dst = op.result.type
    assert isinstance(dst, MemRefType)
    inner = op.size_list[-1]
    if inner % v or src.get_shape()[-1] % v or dst.get_shape()[-1] % v or mult % v:
        return 0
    return v


def may_overhang(op: tile.StageOp) -> list[bool]:
    """Per dim of a stage: whether its slab can pass the end of the source (a dynamic offset
    whose largest value plus the size exceeds the dim)."""
    src = op.source.type
    assert isinstance(src, MemRefType)
    out = []
    for off, size, n in zip(op.mixed_offsets(), op.size_list, src.get_shape()):
        if isinstance(off, int):
            out.append(False)
            continue
        bounds = value_bounds(off)
        out.append(bounds is None or bounds[1] + size > n)
    return out
