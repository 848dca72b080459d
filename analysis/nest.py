"""What shape a tile kernel's loop nest has: the patterns the planner classifies kernels by and
the tile passes find their loops with (a contraction, the outer free chain, block regions, a
row reduction, a flash-attention row, stageable slabs), and the one walk over a module's tile
kernels.

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
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass, field

from xdsl.dialects import arith, scf
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import FloatAttr, ModuleOp
from xdsl.ir import Block, BlockArgument, Operation, OpResult, SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
)

from deplo.analysis.index import is_float_zero
from deplo.dialects import loop, tile


def tile_kernels(module: ModuleOp) -> list[tile.KernelOp]:
    """Every tile kernel of the module, in order (a list: passes add and replace kernels)."""
    return [op for op in module.walk() if isinstance(op, tile.KernelOp)]


def is_scalar(op: Operation) -> bool:
    return op.dialect_name() in ("arith", "math")


def stored_buffers(kernel: tile.KernelOp) -> set[SSAValue]:
    return {op.buffer for op in kernel.body.walk() if isinstance(op, loop.StoreOp)}


def repeating_loops(op: Operation) -> list[tile.ForOp]:
    """The serial/unroll loops around `op` that may run more than one iteration, innermost first."""
    return [
        lp
        for lp in tile.enclosing_loops(op)
        if not (lp.binding.is_block or lp.binding.is_thread) and lp.extent != 1
    ]


# --------------------------------------------------------------------------------------------
# contractions


@dataclass
class Contraction:
    """The chain of free loops (outermost first, serial or bound) and the cell they enclose."""

    kernel: tile.KernelOp
    chain: list[tile.ForOp]
    cell: Block

    @property
    def reduces(self) -> list[tile.ForOp]:
        return [op for op in self.cell.ops if isinstance(op, tile.ForOp) and op.inits]

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


def find_contraction(kernel: tile.KernelOp) -> Contraction | None:
    """The perfect nest of free loops down to the cell of a kernel's reductions. Between the
    loops only scalar ops and loads of buffers the kernel never stores (a batch norm's
    per-channel scale after a conv, hoisted by loop-simplify): schedule passes sink them into
    the cell, where reading them again is reading the same values."""
    chain: list[tile.ForOp] = []
    block = kernel.body.block
    stored = stored_buffers(kernel)

    def sinkable(op: Operation) -> bool:
        return is_scalar(op) or isinstance(op, loop.LoadOp) and op.buffer not in stored

    while True:
        loops = [op for op in block.ops if isinstance(op, tile.ForOp)]
        if any(lp.inits for lp in loops):
            break
        others = [op for op in block.ops if not isinstance(op, tile.ForOp | tile.YieldOp)]
        if len(loops) != 1 or not all(sinkable(op) for op in others):
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


def coords(ld: loop.LoadOp | loop.StoreOp) -> list[SSAValue | int] | None:
    """The coordinates of an access when each is a plain index operand or a constant."""
    out: list[SSAValue | int] = []
    for e in ld.access_map().results:
        if isinstance(e, AffineDimExpr):
            out.append(ld.indices[e.position])
        elif isinstance(e, AffineConstantExpr):
            out.append(e.value)
        else:
            return None
    return out


def tail_coords(ld: loop.LoadOp | loop.StoreOp, lead: set[SSAValue]) -> list[SSAValue | int] | None:
    """The last two coordinates of an access as the plain index each moves with — `iv` or
    `iv + offset`, the offset affine in `lead` values (a head's columns of a flattened
    projection, `kv_head * 64 + d`) — and the ones before them as 0 placeholders where they
    are affine in `lead` values only (`rw.access_at` builds them all); None otherwise."""
    results = ld.access_map().results
    out: list[SSAValue | int] = []
    for n, e in enumerate(results):
        if n < len(results) - 2:
            if not all(ld.indices[d] in lead for d in e.used_dims()):
                return None
            out.append(0)
        elif isinstance(e, AffineConstantExpr):
            out.append(e.value)
        else:
            terms = _sum_terms(e)
            plain = [t for t in terms if isinstance(t, AffineDimExpr)
                     and ld.indices[t.position] not in lead]
            rest = [t for t in terms if t not in plain]
            if len(plain) != 1 or any(ld.indices[d] not in lead for t in rest
                                      for d in t.used_dims()):
                return None
            out.append(ld.indices[plain[0].position])
    return out


def column_reads(red: loop.ForOp | tile.ForOp, column: SSAValue) -> int:
    """A column reduction (`x.sum(0)`): every load `red` moves reads its row at the `column`
    index (the innermost output's), so consecutive outputs are consecutive addresses and the
    reduced coordinate is a row's stride. Threads sharing one output read a sector each for one
    element there; threads a column each read coalesced. The widest element's bytes where it
    is one, else 0."""
    moved = [o for o in red.body.walk() if isinstance(o, loop.LoadOp) and red.iv in o.indices]
    for ld in moved:
        coords = ld.access_map().results  # (none: a 0-d buffer, its index mapped away)
        col = coords[-1] if coords else None
        if not isinstance(col, AffineDimExpr) or ld.indices[col.position] is not column:
            return 0
    return max((ld.result.type.bitwidth // 8 for ld in moved), default=0)


def shared_reads(red: loop.ForOp | tile.ForOp, column: SSAValue) -> bool:
    """No load `red` moves reads at the `column` index: outputs along it read the same
    elements (a warp's threads one address a load)."""
    return not any(isinstance(o, loop.LoadOp) and red.iv in o.indices and column in (
        o.indices[d] for d in o.access_map().used_dims()) for o in red.body.walk())


def _sum_terms(e) -> list:
    """The summands of an affine sum."""
    if isinstance(e, AffineBinaryOpExpr) and e.kind == AffineBinaryOpKind.Add:
        return _sum_terms(e.lhs) + _sum_terms(e.rhs)
    return [e]


# --------------------------------------------------------------------------------------------
# free loops, block regions


def free_loop_chain(kernel: tile.KernelOp) -> list[tile.ForOp]:
    """The outer free loops that enclose everything in the kernel, outermost first."""
    return list(_lone_free_loops(kernel.body.block))


def _lone_free_loops(block: Block, unit_only: bool = False) -> Iterator[tile.ForOp]:
    """The free loops (of one iteration, `unit_only`) each alone in the one before, beside
    scalar code only, from `block` in."""
    while True:
        loops = [op for op in block.ops if isinstance(op, tile.ForOp)]
        others = [op for op in block.ops if not isinstance(op, tile.ForOp | tile.YieldOp)]
        if len(loops) != 1 or not all(is_scalar(op) or isinstance(op, loop.LoadOp)
                                      for op in others):
            return  # (a load beside them: an invariant loop-simplify hoisted, e.g. a [1] max)
        (lp,) = loops
        if not lp.is_free or lp.static_lb is None or unit_only and lp.extent != 1:
            return
        yield lp
        block = lp.body.block


def crossed_read(kernel: tile.KernelOp) -> int:
    """The bytes of an element of an input read across its rows by the free chain (`x.t()`):
    its innermost dim by an outer loop of the chain, another dim by the innermost, which the
    threads take (a warp's lanes in as many rows); 0 when there is none."""
    chain = free_loop_chain(kernel)
    if len(chain) < 2 or has_free_loop(chain[-1]):
        return 0
    inner, outer = chain[-1].iv, {lp.iv for lp in chain[:-1]}
    stored = stored_buffers(kernel)
    sizes = []
    for ld in kernel.walk():
        if not isinstance(ld, loop.LoadOp) or ld.buffer in stored or ld.buffer not in kernel.args:
            continue
        reads = [{ld.indices[d] for d in sorted(e.used_dims())} for e in ld.access_map().results]
        if len(reads) >= 2 and reads[-1] and reads[-1] <= outer \
                and any(inner in r for r in reads[:-1]):
            sizes.append(max(1, ld.result.type.bitwidth // 8))
    return min(sizes, default=0)


def halo_rows(kernel: tile.KernelOp) -> int:
    """The input rows a load reads again for the next of the free chain's rows (the loop
    before the innermost) through taps (`tapped`: a convolution's window less its stride, 2
    for a 3x3 one, 1 with stride 2), the most of any input; 0 when none does."""
    chain = free_loop_chain(kernel)
    if len(chain) < 2 or has_free_loop(chain[-1]):
        return 0
    region, row = chain[-1].body.block, chain[-2].iv
    stored = stored_buffers(kernel)
    spans = [t.hi - t.lo + 1 - t.stride for ld in kernel.walk()
             if isinstance(ld, loop.LoadOp) and ld.buffer in kernel.args
             and ld.buffer not in stored for t in _tapped_dims(ld, region)
             if ld.indices[t.pos] is row]
    return max([0, *spans])


def column_step(red: tile.ForOp, column: SSAValue) -> int:
    """The most elements an input's innermost coordinate moves a step of `column` among the
    reduce loop's loads that read it through taps (`tapped`: a strided convolution's input
    window, 2 at stride 2); 1 when none moves more."""
    region = red.parent_block()
    if region is None:
        return 1
    steps = [1]
    for ld in red.body.walk():
        if isinstance(ld, loop.LoadOp) and (results := ld.access_map().results):
            t = tapped(results[-1], ld, ld.buffer.type.get_shape()[-1], region)  # type: ignore[attr-defined]
            if t is not None and ld.indices[t.pos] is column:
                steps.append(t.stride)
    return max(steps)


def has_free_loop(lp: tile.ForOp) -> bool:
    """Whether `lp` holds a free loop of more than one iteration: loops of one (the trailing
    dims of 1 of `[n, c, h, 1]`) are no work for threads, which take the loop around them."""
    return any(isinstance(op, tile.ForOp) and op.is_free and op.extent != 1
               for op in lp.body.walk())


def block_regions(kernel: tile.KernelOp) -> list[Block]:
    """Where block-level code lives: the bodies of the innermost block-bound loops, or the
    kernel body when no loop is bound to blocks (each through its unit loops)."""
    bound = [op for op in kernel.body.walk() if isinstance(op, tile.ForOp) and op.binding.is_block]
    inner = [
        lp.body.block
        for lp in bound
        if not any(isinstance(o, tile.ForOp) and o.binding.is_block for o in lp.body.walk())
    ]
    return [through_unit_loops(b) for b in inner or [kernel.body.block]]


def through_unit_loops(block: Block) -> Block:
    """The body of the free loops of one iteration that `block` holds alone (the grid skips
    them): decoding's single query row, [1, heads, 1, D], is the same flash or reduction row
    as prefill's, one loop deeper."""
    loops = list(_lone_free_loops(block, unit_only=True))
    return loops[-1].body.block if loops else block


def innermost_free_loops(block: Block) -> list[tile.ForOp]:
    """Free loops at block level that hold no other free loop and sit in no accumulating loop."""
    found: list[tile.ForOp] = []

    def visit(b: Block) -> None:
        for op in b.ops:
            if not isinstance(op, tile.ForOp) or op.inits:
                continue
            if op.is_free and op.static_lb is not None and not has_free_loop(op):
                if not any(isinstance(o, tile.StageOp) for o in op.body.walk()):
                    found.append(op)
            else:
                visit(op.body.block)

    visit(block)
    return found


# --------------------------------------------------------------------------------------------
# reductions a block's threads can share


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
"""Accumulator updates threads can split between them, and the combine they become."""


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
    """The combiner of each accumulator of a reduce loop, or None if one is not recognized
    (`acc = acc <op> f(...)` with f independent of the accumulators)."""
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


def online_pair(lp: tile.ForOp) -> bool:
    """A loop carrying an online softmax's (m, l) and nothing else, from the lowest float (or
    -inf) and 0:
    `m' = max(m, x)`, `l' = l exp(m - m') + exp(x - m')`, x independent of both (a softmax or
    logsumexp row after loop-online-softmax). Threads' shares combine as the max, then the
    sum of each share's l rescaled by exp(m_t - max); a share of masked (-inf) elements only
    has l = 0, weight 0."""
    if len(lp.accs) != 2:
        return False
    m, l_ = lp.accs
    m_new, l_new = lp.body.block.last_op.operands
    upd = m_new.owner
    if not isinstance(upd, arith.MaximumfOp) or m not in upd.operands \
            or not _identity_pair(lp) or not l_.has_one_use():
        return False
    x = upd.rhs if upd.lhs is m else upd.lhs
    p, alpha = _exp_of(x, m_new), _exp_of(m, m_new)
    if p is None or alpha is None or depends_on(x, {m, l_}, lp.body.block):
        return False
    if any(o.regions or isinstance(o, loop.StoreOp) for o in lp.body.block.ops) \
            or not (alpha.has_one_use() and p.has_one_use()):
        return False  # a flash row's accumulator also rescales: not a plain pair
    return len(list(m.uses)) == 2 and _sum_of(l_new, _prod_pair(l_, alpha), p)


def arg_pair(lp: tile.ForOp) -> K | None:
    """MAX for a loop carrying argmax's (value, index) and nothing else, MIN for argmin's: from
    (-inf, 0) (+inf, 0), both updated by selects on one condition, `x > v` (`<`) or x NaN while v
    is not, the index the loop's own (tir-to-loop's argmax: the first largest element, NaN the
    largest). Threads' shares combine as the extreme value, then the least index that holds it
    (rewrite.share_reductions)."""
    if len(lp.accs) != 2 or not lp.accs[1].has_one_use():
        return None
    v, i = lp.accs
    sv, si = (r.owner for r in lp.body.block.last_op.operands)
    if not (isinstance(sv, arith.SelectOp) and isinstance(si, arith.SelectOp)) \
            or sv.cond is not si.cond or sv.rhs is not v or si.rhs is not i:
        return None
    x, pos = sv.lhs, si.lhs
    if not (isinstance(pos.owner, arith.IndexCastOp) and _iv_or_offset(pos.owner.input, lp)) \
            or depends_on(x, {v, i}, lp.body.block):
        return None
    inits = [c.owner.value.value.data if isinstance(c.owner, arith.ConstantOp) else None
             for c in lp.inits]
    kind = {math.inf: K.MIN, -math.inf: K.MAX}.get(inits[0]) if inits[1] == 0 else None
    cond = sv.cond.owner
    if kind is None or not isinstance(cond, arith.OrIOp):
        return None
    cmps = [o.owner for o in cond.operands]
    better = next((c for c in cmps if isinstance(c, arith.CmpfOp) and c.lhs is x and c.rhs is v),
                  None)
    pred = "ogt" if kind == K.MAX else "olt"
    if better is None or better.predicate.value.data != arith.CMPF_COMPARISON_OPERATIONS.index(pred):
        return None
    return kind


def _iv_or_offset(x: SSAValue, lp) -> bool:
    """x is `lp`'s iv, or the iv plus a value from outside the loop (a slice's first index,
    loop-split-reductions'): either way increasing with the iv, which is all the shares' least
    index needs."""
    if x is lp.iv:
        return True
    op = x.owner
    if not isinstance(op, arith.AddiOp) or lp.iv not in (op.lhs, op.rhs):
        return False
    other = op.rhs if op.lhs is lp.iv else op.lhs
    return not lp.is_ancestor(other.owner) if isinstance(other.owner, Operation) else \
        not lp.is_ancestor(other.owner.parent_op())


F16_LOWEST = -65504.0  # the least negative of the float types' lowest values


def _identity_pair(lp: tile.ForOp) -> bool:
    """Inits -inf or a type's lowest float (max; loop-online-softmax's) and 0 (add)."""
    vals = [v.owner.value.value.data if isinstance(v.owner, arith.ConstantOp)
            and isinstance(v.owner.value, FloatAttr) else None for v in lp.inits]
    return vals[0] is not None and vals[0] <= F16_LOWEST and vals[1] == 0.0


@dataclass
class RowReduction:
    """A block region whose ops (after its last stage) run on the block's threads: its
    top-level reduce loops, each with its combiners, and the longest one's extent; `online`
    those of them carrying an online softmax's (m, l) (kinds max, add; `online_pair`), `args`
    those carrying argmax's or argmin's (value, index) (kinds max or min, then min; `arg_pair`)."""

    ops: list[Operation]
    reduces: list[tuple[tile.ForOp, list[K]]]
    extent: int
    online: list[tile.ForOp] = field(default_factory=list)
    args: list[tile.ForOp] = field(default_factory=list)


def row_reduction(region: Block) -> RowReduction | None:
    ops = [op for op in region.ops if not isinstance(op, tile.YieldOp)]
    stages = [i for i, op in enumerate(ops) if isinstance(op, tile.StageOp)]
    ops = ops[stages[-1] + 1 :] if stages else ops
    reduces, online, args = [], [], []
    for op in ops:
        if isinstance(op, tile.ForOp) and op.binding == tile.Bind.SERIAL and op.inits:
            kinds = combine_kinds(op)
            if kinds is None and online_pair(op):
                kinds = [K.MAX, K.ADD]
                online.append(op)
            if kinds is None and (extreme := arg_pair(op)) is not None:
                kinds = [extreme, K.MIN]
                args.append(op)
            if kinds is None or op.static_lb is None:
                return None
            reduces.append((op, kinds))
    if not reduces:
        return None
    return RowReduction(ops, reduces, max(lp.extent or 0 for lp, _ in reduces), online, args)


def row_contiguous(row: RowReduction, buffers) -> int:
    """The element bytes of the row's accesses to `buffers` (the kernel's) when each walks its
    innermost dim with the row loop's iv, coefficient 1 (`x[r, a]`, `out[r, a + 8]`): a
    thread's V neighbouring elements of the row are one wide access (the plan's `vector`); 0
    when an access uses the iv otherwise (a column, `x[a, c]`, or through arithmetic)."""
    loops = [lp for lp, _ in row.reduces] + [
        op for op in row.ops if isinstance(op, tile.ForOp) and op.is_free]
    sizes = []
    for lp in loops:
        for op in lp.body.walk():
            if not isinstance(op, loop.LoadOp | loop.StoreOp) or op.buffer not in buffers:
                continue
            if any(v is not lp.iv and depends_on(v, {lp.iv}, lp.body.block)
                   for v in op.indices):
                return 0
            if lp.iv not in op.indices:
                continue
            delta = iv_step(op, lp.iv)
            if not any(delta):
                continue  # (the map drops the iv: the same element every step)
            if any(delta[:-1]) or delta[-1] != 1:
                return 0
            sizes.append(max(1, op.buffer.type.element_type.bitwidth // 8))
    return min(sizes, default=0)


def iv_step(op: loop.LoadOp | loop.StoreOp, iv: SSAValue) -> list[int]:
    """How far each coordinate of `op`'s access moves when `iv` (an index operand) moves by 1:
    `[0, 1]` walks the innermost dim, `[1, 0]` a column."""
    amap, n = op.access_map(), len(op.indices)
    at = amap.eval([1 if v is iv else 0 for v in op.indices], [])
    return [a - b for a, b in zip(at, amap.eval([0] * n, []))]


@dataclass
class FlashRow:
    """A flash-attention row (after loop-online-softmax): a rank-1 `loop.private` accumulator
    over the head dim D, free loops over D (its init and the final store), and a serial key
    loop carrying the online (m, l) whose body holds reduce loops over D (q . k) and free
    loops over D (the rescaled accumulator update)."""

    ops: list[Operation]
    free: list[tile.ForOp]
    reduces: list[tuple[tile.ForOp, list[K]]]
    head_dim: int
    keys: int
    key_loops: list[tile.ForOp]


def _plain(lp: tile.ForOp, extent: int) -> bool:
    """A loop 0..extent step 1 with no loop inside."""
    return (
        lp.static_lb == 0
        and lp.step.data == 1
        and lp.extent == extent
        and not any(isinstance(o, tile.ForOp) for o in lp.body.walk())
    )


def flash_row(region: Block) -> FlashRow | None:
    ops = [op for op in region.ops if not isinstance(op, tile.YieldOp)]
    if any(isinstance(op, tile.StageOp) for op in region.walk()):
        return None
    privates = [op for op in ops if isinstance(op, loop.PrivateOp)]
    if not privates or any(len(p.result.type.get_shape()) != 1 for p in privates):
        return None
    extents = {p.result.type.get_shape()[0] for p in privates}
    if len(extents) != 1:
        return None
    (d,) = extents
    free: list[tile.ForOp] = []
    reduces: list[tuple[tile.ForOp, list[K]]] = []
    key_loops: list[tile.ForOp] = []
    keys = 0

    def inner(lp: tile.ForOp, in_key: bool) -> bool:
        if lp.binding != tile.Bind.SERIAL or not _plain(lp, d):
            return False
        if lp.inits:
            kinds = combine_kinds(lp)
            if not in_key or kinds is None:
                return False
            reduces.append((lp, kinds))
        else:
            free.append(lp)
        return True

    for op in ops:
        if not isinstance(op, tile.ForOp):
            continue
        if op.is_free or not op.inits:
            if not inner(op, False):
                return None
            continue
        # the key loop: serial, static, accumulating, one level of loops over D inside
        if op.binding != tile.Bind.SERIAL or op.static_lb is None:
            return None
        keys = max(keys, op.extent or 0)
        key_loops.append(op)
        for o in op.body.block.ops:
            if isinstance(o, tile.ForOp):
                if not inner(o, True):
                    return None
            elif o.regions:
                return None
    if not reduces:
        return None
    for op in region.walk():
        if isinstance(op, loop.StoreOp) and op.parent_op() not in free:
            return None
        if isinstance(op, tile.CombineOp | scf.IfOp):
            return None
    for p in privates:
        for use in p.result.uses:
            acc = use.operation
            assert isinstance(acc, loop.LoadOp | loop.StoreOp)
            owner = acc.parent_op()
            if owner not in free or list(acc.indices) != [owner.iv] or acc.map:
                return None
    return FlashRow(ops, free, reduces, d, keys, key_loops)


MASKED = -1e30
"""A score at or below this is a masked one: its exp is 0 next to any real score."""


def kv_group(row: FlashRow, head: SSAValue) -> int:
    """G where the row's keys and values are read at `head floordiv G`: grouped-query
    attention, G query heads of one K/V head (the head iv `head`); 1 where they are read at
    `head` or in any other way, or the row's K and V loads disagree. Only the loads that read
    by the key and the head dim count (K, V): a mask read by head and key (a per-head bias)
    leaves G to them."""
    groups: set[int] = set()
    for kl in row.key_loops:
        scope = kl.body.block
        over_d = {o.iv for o in kl.walk() if isinstance(o, tile.ForOp) and o is not kl
                  and o.extent == row.head_dim}
        for ld in kl.walk():
            if not isinstance(ld, loop.LoadOp) or head not in ld.indices:
                continue
            read = [ld.indices[n] for n in ld.access_map().used_dims()]
            if not any(depends_on(v, {kl.iv}, scope) for v in read) or not any(
                    depends_on(v, over_d, scope) for v in read):
                continue  # (the row's q: not by the key; a mask: not by the head dim)
            dims = {n for n, v in enumerate(ld.indices) if v is head}
            for e in ld.access_map().results:
                if not dims & e.used_dims():
                    continue
                if isinstance(e, AffineDimExpr):
                    groups.add(1)
                elif (isinstance(e, AffineBinaryOpExpr) and e.kind == AffineBinaryOpKind.FloorDiv
                      and isinstance(e.lhs, AffineDimExpr) and e.lhs.position in dims
                      and isinstance(e.rhs, AffineConstantExpr) and e.rhs.value > 1):
                    groups.add(e.rhs.value)
                else:
                    groups.add(0)
    return next(iter(groups)) if len(groups) == 1 and 0 not in groups else 1


def causal_limit(key_loop: tile.ForOp) -> tuple[SSAValue, int] | None:
    """Where a flash row's key loop may stop: its scores are `select(key <= X, s, -big)`
    (`key < X`), X defined outside the loop, so every key past X masks out — it adds 0 to l
    and the accumulator and leaves the running max alone, once key 0 has been seen. Returns
    (X, 1) for `<=` (the loop may stop at X + 1) and (X, 0) for `<`; None otherwise."""
    key = key_loop.iv
    for op in key_loop.body.block.ops:
        if not isinstance(op, arith.SelectOp):
            continue
        masked = op.rhs.owner
        cond = op.cond.owner
        if not (isinstance(masked, arith.ConstantOp) and isinstance(masked.value, FloatAttr)
                and masked.value.value.data <= MASKED and isinstance(cond, arith.CmpiOp)):
            continue
        pred = cond.predicate.value.data
        lhs, rhs = (_uncast(v) for v in (cond.lhs, cond.rhs))
        if lhs is key and pred in (2, 3) and not defined_inside(rhs, key_loop.body.block):
            return rhs, 1 if pred == 3 else 0  # slt, sle
    return None


@dataclass
class FlashMma:
    """A flash row tensor cores can run (tile-attention-mma): one key loop carrying (m, l) whose
    scores are a plain f16/bf16 product q . k followed by scalar code (`chain`: scale, masks),
    the standard online update (`p = exp(x - m')`, `alpha = exp(m - m')`, `l' = l alpha + p`),
    the accumulator update `acc[d] = acc[d] alpha + p V[key, d]` with V of the same type, a
    zero init of the accumulator and a final loop over it (`final`)."""

    row: FlashRow
    key_loop: tile.ForOp
    qk: Product
    v: loop.LoadOp
    v_kind: tile.FragmentKind
    x: SSAValue  # the score after the chain
    chain: list[Operation]  # the scalar ops x is computed by, in order (some outside the loop)
    final: tile.ForOp
    final_inputs: list[Operation]  # the scalar ops outside `final` its body uses (the row's)
    row_iv: SSAValue  # the query row: the index of a loop around the row


def flash_mma(row: FlashRow, region: Block) -> FlashMma | None:
    """`row` as tensor cores run it, or None (see FlashMma). The query row is the index of one
    of the loops around the region (block.x, or block.y where the heads are innermost)."""
    parent = region.parent_op()
    while isinstance(parent, tile.ForOp):
        if not parent.inits and (found := _flash_mma(row, region, parent.iv)) is not None:
            return found
        parent = parent.parent_op()
    return None


@dataclass
class FlashUpdate:
    """The online update of a flash row with one key loop (lb 0, step 1, carrying (m, l)) and
    one q . k reduce loop in it: the score after the row's scalar chain `x`, `m' = max(m, x)`
    (`new_max`), `p = exp(x - m')`, `alpha = exp(m - m')`, `l' = l alpha + p`, one free loop
    over the head dim in the key loop updating the accumulator (`pv`: `acc[d] alpha + p ..`),
    the accumulator (one private) zeroed by `init` before and read by `final` after the key
    loop."""

    key_loop: tile.ForOp
    reduce: tile.ForOp
    x: SSAValue
    new_max: arith.MaximumfOp
    p: SSAValue
    alpha: SSAValue
    pv: tile.ForOp
    acc: SSAValue
    init: tile.ForOp
    final: tile.ForOp


def flash_update(row: FlashRow) -> FlashUpdate | None:
    """`row`'s online update (see FlashUpdate), or None where it has another shape."""
    if len(row.key_loops) != 1 or len(row.reduces) != 1:
        return None
    kl = row.key_loops[0]
    red = row.reduces[0][0]
    privates = [op for op in row.ops if isinstance(op, loop.PrivateOp)
                and any(u.operation.parent_op() in row.free and u.operation.parent_op()
                        .parent_op() is kl for u in op.result.uses)]
    inner_free = [lp for lp in row.free if lp.parent_op() is kl]
    if (len(kl.inits) != 2 or kl.static_lb != 0 or kl.step.data != 1
            or red.parent_op() is not kl or len(privates) != 1 or len(inner_free) != 1):
        return None
    acc = privates[0].result
    m, l = kl.accs
    (m_new, l_new) = kl.body.block.last_op.operands
    upd = m_new.owner
    if not isinstance(upd, arith.MaximumfOp) or m not in upd.operands:
        return None
    x = upd.rhs if upd.lhs is m else upd.lhs
    p, alpha = _exp_of(x, m_new), _exp_of(m, m_new)
    if p is None or alpha is None or not _sum_of(l_new, _prod_pair(l, alpha), p):
        return None
    pv = inner_free[0]
    if not _scales(pv, acc, alpha):
        return None
    at = kl.parent_block().get_operation_index
    outer = [lp for lp in row.free if lp.parent_block() is kl.parent_block()
             and any(isinstance(o, loop.LoadOp | loop.StoreOp) and o.buffer is acc
                     for o in lp.body.block.ops)]
    inits = [lp for lp in outer if at(lp) < at(kl) and _zero_init(lp, acc)]
    finals = [lp for lp in outer if at(lp) > at(kl)]
    if len(inits) != 1 or len(finals) != 1:
        return None
    return FlashUpdate(kl, red, x, upd, p, alpha, pv, acc, inits[0], finals[0])


def _scales(lp: tile.ForOp, acc: SSAValue, alpha: SSAValue) -> bool:
    """Whether `lp` stores `acc[d] * alpha + ..` into acc[d], once."""
    stores = [o for o in lp.body.block.ops if isinstance(o, loop.StoreOp)]
    if len(stores) != 1 or stores[0].buffer is not acc:
        return False
    add = stores[0].value.owner
    return isinstance(add, arith.AddfOp) and any(
        isinstance(t.owner, arith.MulfOp) and alpha in t.owner.operands
        and any(isinstance(v.owner, loop.LoadOp) and v.owner.buffer is acc
                for v in t.owner.operands) for t in add.operands)


def _flash_mma(row: FlashRow, region: Block, row_iv: SSAValue) -> FlashMma | None:
    fu = flash_update(row)
    outer_free = [lp for lp in row.free if lp.parent_block() is region]
    if fu is None or fu.key_loop.dyn_ub is not None or len(outer_free) != 2 \
            or sum(isinstance(op, loop.PrivateOp) for op in row.ops) != 1:
        return None
    kl, red, x = fu.key_loop, fu.reduce, fu.x
    lead = {v for o in region.walk() if isinstance(o, loop.LoadOp | loop.StoreOp)
            for v in o.indices if not defined_inside(v, region)} - {row_iv}
    qk = match_product(red, row_iv, kl.iv, lead, mapped_lead=True)
    if qk is None or qk.k_base is not None:
        return None
    v = _accumulator_update(fu.pv, fu.acc, fu.p, fu.alpha)
    if v is None or v.buffer.type.element_type != qk.type:
        return None
    pv, final = fu.pv, fu.final
    c = tail_coords(v, lead)
    if c is None or kl.iv in c[:-2] or pv.iv in c[:-2]:
        return None
    if c[-2:] == [kl.iv, pv.iv]:
        v_kind = tile.FragmentKind.B_KN
    elif c[-2:] == [pv.iv, kl.iv]:
        v_kind = tile.FragmentKind.B_NK
    else:
        return None
    scope = row_iv.owner  # the query-row loop's body: values computed from the row there
    assert isinstance(scope, Block)
    chain = _slice([x], {red.res[0], kl.iv, row_iv}, scope)
    acc_loads = {o.result for o in final.body.walk()
                 if isinstance(o, loop.LoadOp) and o.buffer is fu.acc}
    uses = [v for o in final.body.walk() for v in o.operands]
    inputs = _slice(uses, {final.iv, *kl.res, *acc_loads, fu.acc, row_iv}, scope)
    if chain is None or inputs is None:
        return None
    inputs = [o for o in inputs if not final.body.block.is_ancestor(o.parent_block())]
    d = row.head_dim  # past a ragged head dim a fragment must read zeros, not the next head
    if d % 16 and any(ld.buffer.type.get_shape()[-1] != d for ld in (qk.a, qk.b, v)):
        return None
    return FlashMma(row, kl, qk, v, v_kind, x, chain, final, inputs, row_iv)


def _exp_of(a: SSAValue, b: SSAValue) -> SSAValue | None:
    """The `exp(a - b)` among the uses of `a - b`."""
    for use in a.uses:
        sub = use.operation
        if isinstance(sub, arith.SubfOp) and sub.lhs is a and sub.rhs is b:
            for u in sub.result.uses:
                if isinstance(u.operation, xmath.ExpOp):
                    return u.operation.result
    return None


def _prod_pair(a: SSAValue, b: SSAValue | None) -> SSAValue | None:
    """The `a * b` (either order) among the uses of `a`."""
    for use in a.uses:
        op = use.operation
        if isinstance(op, arith.MulfOp) and {op.lhs, op.rhs} == {a, b} and b is not None:
            return op.result
    return None


def _sum_of(v: SSAValue, a: SSAValue | None, b: SSAValue) -> bool:
    op = v.owner
    return a is not None and isinstance(op, arith.AddfOp) and {op.lhs, op.rhs} == {a, b}


def _accumulator_update(lp: tile.ForOp, acc: SSAValue, p: SSAValue, alpha: SSAValue):
    """The V load of `acc[d] = acc[d] * alpha + p * extf(V[..])` (either orders), else None."""
    if not _scales(lp, acc, alpha):
        return None
    (store,) = [o for o in lp.body.block.ops if isinstance(o, loop.StoreOp)]
    for term in store.value.owner.operands:
        n = term.owner
        if isinstance(n, arith.MulfOp) and p in n.operands:
            ext = (n.rhs if n.lhs is p else n.lhs).owner
            if isinstance(ext, arith.ExtFOp) and isinstance(ext.input.owner, loop.LoadOp):
                return ext.input.owner
    return None


def _zero_init(lp: tile.ForOp, acc: SSAValue) -> bool:
    ops = [o for o in lp.body.block.ops if not isinstance(o, tile.YieldOp)]
    return all(isinstance(o, loop.StoreOp) and o.buffer is acc and is_float_zero(o.value)
               for o in ops if not is_scalar(o)) and any(isinstance(o, loop.StoreOp) for o in ops)


def _slice(values: list[SSAValue], stops: set[SSAValue], region: Block) -> list[Operation] | None:
    """The ops inside `region` that `values` are computed from (up to the `stops`), in program
    order; None if one is not scalar code or a load."""
    found: set[Operation] = set()
    todo = list(values)
    while todo:
        x = todo.pop()
        if x in stops or not isinstance(x, OpResult) or not defined_inside(x, region):
            continue
        op = x.owner
        if op in found:
            continue
        if not (is_scalar(op) or isinstance(op, loop.LoadOp)) or op.regions:
            return None
        found.add(op)
        todo.extend(op.operands)
    return [op for op in region.walk() if op in found]


def _uncast(v: SSAValue) -> SSAValue:
    owner = v.owner
    return owner.input if isinstance(owner, arith.IndexCastOp) else v


# --------------------------------------------------------------------------------------------
# slabs a block reads (tile-stage-inputs)

Fixed = int | SSAValue  # a coordinate that is the same for the whole block
Range = tuple[int, int]  # [lo, hi) spanned by the block's loops


@dataclass(frozen=True)
class Window:
    """`base * scale + [lo, hi)`: a range of the block's loops from where a block's chunk of a
    loop split over blocks starts (tile-map-grid's chunks: `base` the block loop's iv)."""

    base: SSAValue
    scale: int
    lo: int
    hi: int


def window_parts(v: SSAValue, region: Block) -> tuple[SSAValue, int, SSAValue] | None:
    """(base, scale, iv) when `v` is `base * scale + iv`, `base` the same for the whole block
    and `iv` a loop's of the region (split_over_blocks's index)."""
    op = v.owner
    if not isinstance(op, arith.AddiOp):
        return None
    for m, iv in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
        mul = m.owner
        if isinstance(mul, arith.MuliOp) and isinstance(c := mul.rhs.owner, arith.ConstantOp) \
                and not defined_inside(mul.lhs, region) and iv_range(iv) is not None:
            return mul.lhs, c.value.value.data, iv
    return None


def defined_inside(v: SSAValue, region: Block) -> bool:
    """Whether `v` may differ between the threads or iterations of one block's region (the
    region's own arguments, e.g. the block loop's induction variable, do not)."""
    if isinstance(v, BlockArgument):
        return v.block is not region and region.is_ancestor(v.block)
    block = v.owner.parent_block()
    return block is not None and region.is_ancestor(block)


def iv_range(v: SSAValue) -> Range | None:
    """The values an induction variable takes over all threads of the block."""
    if not isinstance(v, BlockArgument) or v.index != 0:
        return None
    lp = v.block.parent_op()
    if not isinstance(lp, tile.ForOp):
        return None
    if lp.static_lb is not None:
        extent = lp.extent or 0
        return lp.static_lb, lp.static_lb + (extent - 1) * lp.step.data + 1
    # a strided share: tile.for %a = %t to N step S, %t the iv of a thread loop; or %t * V
    # (a share in steps of V neighbours: every value a multiple of V, the last below N)
    outer, scale = lp.dyn_lb, share_vector(lp)
    if scale > 1:
        outer = outer.owner.lhs
    if isinstance(outer, BlockArgument) and outer.index == 0:
        tl = outer.block.parent_op()
        if isinstance(tl, tile.ForOp) and tl.binding.is_thread and tl.step.data == 1 \
                and lp.step.data % scale == 0:
            return (tl.static_lb or 0) * scale, (lp.ub.data - 1) // scale * scale + 1
    return None


def share_vector(lp: tile.ForOp) -> int:
    """V of a thread's share in steps of V neighbours (`tile.for %a = %t * V to N step V T`,
    tile-cooperative-reduce's `vector`; its body reads %a .. %a + V - 1); 1 for any other loop."""
    mul = getattr(lp.dyn_lb, "owner", None)
    if isinstance(mul, arith.MuliOp) and isinstance(c := mul.rhs.owner, arith.ConstantOp) \
            and c.value.value.data >= 1 and lp.step.data % c.value.value.data == 0:
        return c.value.value.data
    return 1


def _shifted_range(v: SSAValue) -> Range | None:
    """The range of `iv + c` (a share's neighbour in steps of V: tile-cooperative-reduce's
    `vector`), c a constant."""
    op = v.owner
    if not isinstance(op, arith.AddiOp):
        return None
    for iv, c in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
        if isinstance(k := c.owner, arith.ConstantOp) and (r := iv_range(iv)) is not None:
            return r[0] + k.value.value.data, r[1] + k.value.value.data
    return None


MAX_TAP_POINTS = 4096  # tap values evaluated one by one to bound a window's shift


@dataclass(frozen=True)
class Tapped:
    """A load coordinate `(index * stride + taps) mod n` or `index * stride + taps`: a
    convolution's input row, `index` the output position (load index `pos`) and `taps` a shift
    made of the ivs of loops inside the block (the kernel window's), from `lo` to `hi`. `wrapped`: the coordinate
    is taken mod the dim (a padded conv reads (i + k - p) mod n, in bounds, and masks the pad),
    its constant then moved by n so that the shift lies around zero."""

    pos: int
    stride: int
    taps: AffineExpr
    lo: int
    hi: int
    wrapped: bool


def _position(e: AffineExpr) -> tuple[int, int] | None:
    """(d, s) of `d`, `d * s` (a strided window) or `d floordiv 1` (the lowering's group index
    with one group)."""
    scale = 1
    if isinstance(e, AffineBinaryOpExpr) and isinstance(e.rhs, AffineConstantExpr) and (
            e.kind == AffineBinaryOpKind.FloorDiv and e.rhs.value == 1
            or e.kind == AffineBinaryOpKind.Mul and e.rhs.value >= 1):
        scale, e = e.rhs.value if e.kind == AffineBinaryOpKind.Mul else 1, e.lhs
    return (e.position, scale) if isinstance(e, AffineDimExpr) else None


def _tap_bounds(taps: AffineExpr, load: loop.LoadOp, region: Block) -> tuple[int, int] | None:
    """The least and greatest value of `taps` over the ranges of the loops inside the region
    whose ivs it reads (each value evaluated: a kernel window is a few taps)."""
    dims = sorted(taps.used_dims())
    ranges = []
    for d in dims:
        v = load.indices[d]
        r = iv_range(v) if defined_inside(v, region) else None
        if r is None:
            return None
        ranges.append(range(*r))
    if math.prod(len(r) for r in ranges) > MAX_TAP_POINTS:
        return None
    arity = len(load.indices)
    values = []
    for point in itertools.product(*ranges):
        at = [0] * arity
        for d, x in zip(dims, point):
            at[d] = x
        values.append(taps.eval(at, []))
    return (min(values), max(values)) if values else None


def tapped(expr: AffineExpr, load: loop.LoadOp, size: int, region: Block) -> Tapped | None:
    """`expr` as an output position plus a bounded shift (`Tapped`), or None."""
    wrapped = isinstance(expr, AffineBinaryOpExpr) and expr.kind == AffineBinaryOpKind.Mod \
        and isinstance(expr.rhs, AffineConstantExpr) and expr.rhs.value == size
    terms = _sum_terms(expr.lhs if wrapped else expr)  # type: ignore[attr-defined]
    # the position: a term of an index fixed in the block (the output's), else the first
    # (fusion may order `kh + oh * 2` either way)
    places = [i for i, t in enumerate(terms) if _position(t) is not None]
    outer = [i for i in places if not defined_inside(load.indices[_position(terms[i])[0]], region)]
    pos = (outer or places or [None])[0]
    if pos is None or len(terms) < 2 and not wrapped:
        return None
    d, stride = _position(terms.pop(pos))  # type: ignore[misc]
    taps: AffineExpr = AffineExpr.constant(0)
    for t in terms:
        taps = taps + t
    bounds = _tap_bounds(taps, load, region)
    if bounds is None:
        return None
    lo, hi = bounds
    if wrapped and lo > size // 2:  # (i + k + n - p) mod n: the shift k - p
        taps, lo, hi = taps - size, lo - size, hi - size
    if wrapped and not -size < lo <= hi < size:
        return None  # (the stage wraps a coordinate once at most)
    return Tapped(d, stride, taps, lo, hi, wrapped)


def _coordinate(v: SSAValue, region: Block) -> Fixed | Range | Window | None:
    """What one load index spans in one block: fixed, a range or a window."""
    if not defined_inside(v, region):
        return v
    if (r := iv_range(v) or _shifted_range(v)) is not None:
        return r
    if (w := window_parts(v, region)) is not None:
        lo, hi = iv_range(w[2])  # type: ignore[misc]
        return Window(w[0], w[1], lo, hi)
    if (c := clamped(v)) is not None:
        return _coordinate(c, region)
    return None


def clamped(v: SSAValue) -> SSAValue | None:
    """`x` of `min(x, c)`, c a constant: tile-map-grid's index of a ragged tile, clamped to
    the last element (its threads past the end compute a copy of it and store nothing). It
    spans no more than x; its block starts at or before c, so it never falls before x's."""
    op = v.owner
    if not isinstance(op, arith.MinSIOp):
        return None
    for x, c in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
        if isinstance(c.owner, arith.ConstantOp):
            return x
    return None


def _shifted(dim: Fixed | Range | Window, t: Tapped) -> Fixed | Range | Window:
    """The span of a position `dim` times the stride, moved by its taps (a fixed position: a
    window from it)."""
    s = t.stride
    if t.lo == t.hi == 0 and s == 1:
        return dim  # (a group's channel: `g + c floordiv C` with one tap)
    if isinstance(dim, tuple):
        return dim[0] * s + t.lo, (dim[1] - 1) * s + t.hi + 1
    if isinstance(dim, Window):
        return Window(dim.base, dim.scale * s, dim.lo * s + t.lo, (dim.hi - 1) * s + t.hi + 1)
    return Window(dim, s, t.lo, t.hi + 1)  # type: ignore[arg-type]


def slab_size(dim: Fixed | Range | Window) -> int:
    """Elements a slab spans along a dim."""
    if isinstance(dim, Window):
        return dim.hi - dim.lo
    return dim[1] - dim[0] if isinstance(dim, tuple) else 1


def slab_of(load: loop.LoadOp, region: Block) -> list[Fixed | Range | Window] | None:
    """Per buffer dim: the fixed coordinate, the range or the window this load reads in one
    block; a coordinate moved by taps (`tapped`) spans its position's taps around it."""
    out: list[Fixed | Range | Window] = []
    shape = load.buffer.type.get_shape()  # type: ignore[attr-defined]
    for expr, size in zip(load.access_map().results, shape):
        if isinstance(expr, AffineConstantExpr):
            out.append(expr.value)
            continue
        if isinstance(expr, AffineDimExpr):
            dim = _coordinate(load.indices[expr.position], region)
        elif (t := tapped(expr, load, size, region)) is not None:
            base = _coordinate(load.indices[t.pos], region)
            dim = None if base is None else _shifted(base, t)
        else:
            return None
        if dim is None:
            return None
        out.append(dim)
    return out


def _tapped_dims(load: loop.LoadOp, region: Block) -> list[Tapped]:
    """The load's coordinates moved by taps (`tapped`)."""
    shape = load.buffer.type.get_shape()  # type: ignore[attr-defined]
    return [t for e, n in zip(load.access_map().results, shape)
            if not isinstance(e, AffineDimExpr | AffineConstantExpr)
            and (t := tapped(e, load, n, region)) is not None]


def tap_overlap(load: loop.LoadOp, region: Block) -> int:
    """How many of the load's taps read each element of what it reads: the product of the
    shifts of its tapped coordinates (1 for a load with none)."""
    return math.prod(t.hi - t.lo + 1 for t in _tapped_dims(load, region))


def wraps(load: loop.LoadOp, region: Block) -> bool:
    """Whether a coordinate of the load is taken mod its dim (`Tapped.wrapped`)."""
    return any(t.wrapped for t in _tapped_dims(load, region))


def merge_slabs(slabs: list[list[Fixed | Range | Window]]) -> list[Fixed | Range | Window] | None:
    """One slab covering all loads, or None when their fixed coordinates (or windows' bases)
    differ."""
    merged = list(slabs[0])
    for slab in slabs[1:]:
        for d, (a, b) in enumerate(zip(merged, slab)):
            if isinstance(a, tuple) and isinstance(b, tuple):
                merged[d] = (min(a[0], b[0]), max(a[1], b[1]))
            elif isinstance(a, Window) and isinstance(b, Window) \
                    and (a.base, a.scale) == (b.base, b.scale):
                merged[d] = Window(a.base, a.scale, min(a.lo, b.lo), max(a.hi, b.hi))
            elif isinstance(a, tuple | Window) or isinstance(b, tuple | Window) \
                    or not (a is b or a == b):
                return None
    return merged


@dataclass
class Slab:
    """An input's slab one block region reads: the buffer, the loads of it, the merged slab."""

    buffer: SSAValue
    loads: list[loop.LoadOp]
    slab: list[Fixed | Range | Window]
    wrapped: bool = False  # a load takes a coordinate mod its dim (the stage wraps too)


def region_slabs(kernel: tile.KernelOp, region: Block) -> list[Slab]:
    """The inputs (never stored) the region loads, each with a slab covering all its loads, in
    the order of their first load."""
    stored = stored_buffers(kernel)
    loads: dict[SSAValue, list[loop.LoadOp]] = {}
    for o in region.walk():
        if isinstance(o, loop.LoadOp) and o.buffer in kernel.args and o.buffer not in stored:
            loads.setdefault(o.buffer, []).append(o)
    out = []
    for buf, group in loads.items():
        slabs = [slab_of(o, region) for o in group]
        if any(s is None for s in slabs) or (slab := merge_slabs(slabs)) is None:  # type: ignore[arg-type]
            continue
        out.append(Slab(buf, group, slab, any(wraps(o, region) for o in group)))
    return out


def chunk_loops(cell: Block) -> list[tuple[tile.ForOp, tile.ForOp]]:
    """(chunk loop, inner loop) pairs: a static serial reduce loop holding a serial reduce loop."""
    out = []
    for lp in cell.ops:
        if not (isinstance(lp, tile.ForOp) and lp.inits and lp.static_lb is not None):
            continue
        if any(isinstance(o, tile.StageOp) for o in lp.body.block.ops):
            continue
        inner = [o for o in lp.body.block.ops if isinstance(o, tile.ForOp) and o.inits]
        if len(inner) == 1 and inner[0].static_lb is not None:
            out.append((lp, inner[0]))
    return out


def grid_loops(kernel: tile.KernelOp, dims: int = 3, leave_innermost: bool = True) -> list[tile.ForOp]:
    """The outer free loops tile-map-grid binds to block.x, .y, .z, in that order (innermost
    first): of the free chain's loops of more than one element, the innermost `dims`; with
    `leave_innermost`, the innermost loop of a chain of two or more is left for the threads
    when nothing inside it could be (relu(x @ w): blocks over rows, threads over columns)."""
    chain = free_loop_chain(kernel)
    while len(chain) > 1 and chain[-1].extent == 1 and not any(  # ([n, c, h, 1]: the
            isinstance(op, tile.ForOp) for op in chain[-1].body.walk()):  # threads take h)
        chain.pop()
    candidates = [lp for lp in chain if (lp.extent or 0) > 1]
    if (
        leave_innermost
        and len(candidates) >= 2
        and candidates[-1] is chain[-1]
        and not has_free_loop(chain[-1])
    ):
        candidates.pop()
    return list(reversed(candidates[-dims:])) if dims > 0 else []


@dataclass
class Product:
    """A reduce loop that is a plain product `acc + extf(A[.., i, k]) * extf(B[.., k, j])` (or
    A[.., k, i], `x.t() @ y`; B[.., j, k], a linear layer's weight) of one 16-bit type: what
    tensor cores run."""

    loop: tile.ForOp
    a: loop.LoadOp
    b: loop.LoadOp | None
    b_kind: tile.FragmentKind
    type: object
    k_base: SSAValue | None = None  # K is read at k_base + k (a slice of tile-split-k)
    a_kind: tile.FragmentKind = tile.FragmentKind.A
    # B gathered (an implicit GEMM: a conv's window of its input, its padding selected away):
    # the 16-bit element B[.., k, j] is `gather`, computed in the K loop from k, j and the
    # `gather_ivs` (batch loops) by pure ops and loads; `b` is None
    gather: SSAValue | None = None
    gather_ivs: frozenset[SSAValue] = frozenset()


def match_product(
    lp: tile.ForOp, i: SSAValue, j: SSAValue, k_free: set[SSAValue], mapped_lead: bool = False
) -> Product | None:
    """`mapped_lead`: the dims before the last two may be affine in `k_free` values (a grouped
    query attention's `head floordiv group`), not only plain indices."""
    if len(lp.inits) != 1 or lp.static_lb != 0 or lp.step.data != 1:
        return None
    body = [o for o in lp.body.block.ops if not isinstance(o, tile.YieldOp)]
    k, base = lp.iv, None
    first = body[0] if body else None
    if isinstance(first, arith.AddiOp) and first.rhs is lp.iv \
            and not defined_inside(first.lhs, lp.body.block):
        k, base = first.result, first.lhs  # K at an offset: a split-K slice
        body = body[1:]
    (nxt,) = lp.body.block.last_op.operands
    add = nxt.owner
    if not isinstance(add, arith.AddfOp) or lp.accs[0] not in add.operands:
        return None
    prod = add.rhs if add.lhs is lp.accs[0] else add.lhs
    mul = prod.owner
    if not isinstance(mul, arith.MulfOp):
        return None
    loads = []
    exts = [v.owner for v in (mul.lhs, mul.rhs)]
    if not all(isinstance(e, arith.ExtFOp) for e in exts):
        return None
    loaded = all(isinstance(e.input.owner, loop.LoadOp) for e in exts)
    if mapped_lead and not loaded:
        return None  # (attention's q.k: its leads read through tail_coords below)
    if not mapped_lead and (not loaded or any(coords(e.input.owner) is None for e in exts)):
        if base is not None:  # B an expression, or a window: gathered
            return None
        for a_ext, b_ext in (exts, exts[::-1]):
            if isinstance(a_ext.input.owner, loop.LoadOp):
                found = _gathered_product(lp, body, k, a_ext.input.owner, b_ext, add, i, j,
                                          k_free)
                if found is not None:
                    return found
        return None
    for ext in exts:
        loads.append(ext.input.owner)
    if len(body) != 6 or len({ld.buffer.type.element_type for ld in loads}) != 1:
        return None
    t = loads[0].buffer.type.element_type
    if t not in tile.HALF_TYPES:
        return None
    a = b = None
    kind, a_kind = None, tile.FragmentKind.A
    for ld in loads:
        c = tail_coords(ld, k_free) if mapped_lead else coords(ld)
        if c is None or any(
            x is not k and x is not i and x is not j and not isinstance(x, int) and x not in k_free
            for x in c
        ):
            return None
        if c[-2:] == [i, k] and j not in c:
            a = ld
        elif c[-2:] == [k, i] and j not in c:
            a, a_kind = ld, tile.FragmentKind.A_KM
        elif c[-2:] == [k, j] and i not in c:
            b, kind = ld, tile.FragmentKind.B_KN
        elif c[-2:] == [j, k] and i not in c:
            b, kind = ld, tile.FragmentKind.B_NK
    if a is None or b is None or a is b:
        return None
    return Product(lp, a, b, kind, t, base, a_kind)


def _gathered_product(lp: tile.ForOp, body: list[Operation], k: SSAValue, a: loop.LoadOp,
                      ext: arith.ExtFOp, add: Operation, i: SSAValue, j: SSAValue,
                      k_free: set[SSAValue]) -> Product | None:
    """`acc + extf(A[.., i, k]) * extf(E)`, E a 16-bit value of A's type computed in the K loop
    by pure ops and loads from k, j and batch loops only (an f16 conv's window with its padding
    selected away, once loop-fuse inlines the im2col): an implicit GEMM's gathered B."""
    t = a.buffer.type.element_type
    c = coords(a)
    if t not in tile.HALF_TYPES or ext.input.type != t or c is None or c[-2:] != [i, k] \
            or j in c or any(not isinstance(x, int) and x not in (i, k) and x not in k_free
                             for x in c):
        return None
    slice_: list[Operation] = []
    ivs: set[SSAValue] = set()
    seen: set[Operation] = set()
    kernel = next(loop.enclosing_ops(lp, tile.KernelOp), None)
    if kernel is None:
        return None

    def visit(v: SSAValue) -> bool:
        if v is k or v is j or v in k_free:
            if v is not k and v is not j:
                ivs.add(v)
            return True
        if isinstance(v, BlockArgument):
            return v.block is kernel.body.block  # a kernel argument (a buffer)
        op = v.owner
        if op in seen:
            return True
        seen.add(op)
        if op.regions or not (isinstance(op, loop.LoadOp) or op.name.startswith("arith.")):
            return False
        if not all(visit(x) for x in op.operands):
            return False
        if lp.body.block.is_ancestor(op.parent_block()):
            slice_.append(op)
        return True

    if not visit(ext.input):
        return None
    mul = ext.results[0].first_use.operation if ext.results[0].first_use else None
    ext_a = a.results[0].first_use.operation if a.results[0].first_use else None
    if set(body) != {*slice_, a, ext_a, ext, mul, add}:
        return None  # (the K loop computes nothing else)
    return Product(lp, a, None, tile.FragmentKind.B_KN, t, None, gather=ext.input,
                   gather_ivs=frozenset(ivs))
