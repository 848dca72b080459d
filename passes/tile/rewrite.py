"""The rewrites several tile passes share: small builders of index arithmetic, loops on threads
(strided shares, thread loops), clamps and store guards for tiles that pass the end of an axis,
unroll-and-jam of a body (register tiles, tensor-core epilogues), sharing a reduction between
threads, and clean-ups (cse, dead ops, compact accesses).

Out-of-range rows and columns (extents that are not a multiple of a tile) are handled by
*clamping*: an index that may pass the end is `arith.minsi %raw, %last`, so every load stays in
bounds and the extra lanes recompute the last row, and the stores are guarded by
`scf.if %raw < %extent`. A clamp never goes below the first index of its block or thread group
(grids are rounded up, not down), which is what `analysis.index.span` relies on.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.dialects import arith, memref, scf
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import (
    AffineMapAttr,
    AnyFloat,
    FloatAttr,
    IndexType,
    IntAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
    AffineMap,
)
from xdsl.rewriter import InsertPoint, Rewriter

from deplo import hardware as hw
from deplo.analysis.index import AFFINE_OPS, linear_expr, linear_of
from deplo.analysis.nest import K, is_scalar
from deplo.dialects import loop, tile
from deplo.passes.tile.kernel_pass import PassOptionError

INDEX = IndexType()


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


def access_at(b: Builder, ld: loop.LoadOp, at: dict[SSAValue, SSAValue]) -> list[SSAValue]:
    """Every coordinate of an access with the indices in `at` replaced (a fragment's first row
    and column for the loops it covers), built with arith ops (`head floordiv 4` of a
    grouped-query K, `kv_head * 64 + d` of a flattened projection)."""

    def value(e) -> SSAValue:
        if isinstance(e, AffineDimExpr):
            return at.get(ld.indices[e.position], ld.indices[e.position])
        if isinstance(e, AffineConstantExpr):
            return const(b, e.value)  # (the kernel's named constants)
        assert isinstance(e, AffineBinaryOpExpr)
        return b.insert(AFFINE_OPS[e.kind](value(e.lhs), value(e.rhs))).result

    return [value(e) for e in ld.access_map().results]


def accumulator_lane(b: Builder, lane: SSAValue) -> tuple[SSAValue, SSAValue]:
    """Where lane `lane` of an mma.sync m16n8 accumulator tile sits: (g, t2) = (lane / 4,
    2 (lane % 4)); it holds rows g and g + 8, columns t2 and t2 + 1."""
    g = b.insert(arith.DivSIOp(lane, const(b, 4))).result
    t2 = mul(b, b.insert(arith.RemSIOp(lane, const(b, 4))).result, 2)
    g.name_hint, t2.name_hint = "g", "t2"
    return g, t2


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
        if op.regions or not (is_scalar(op) or isinstance(op, loop.LoadOp)):
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
        if isinstance(op, tile.SplitLastOp) and _shared(op.operands, replicas):  # one arrival
            new = op.clone(value_mapper=replicas[0].vmap)
            Rewriter.insert_op(new, InsertPoint.before(before))
            for r in replicas:
                r.vmap[op.result] = new.result
            continue
        if _shared_if(op, replicas):  # one branch for every replica, their bodies jammed in it
            assert isinstance(op, scf.IfOp)
            then = Block()
            then.add_op(end := scf.YieldOp())
            Rewriter.insert_op(scf.IfOp(replicas[0].vmap.get(op.cond, op.cond), [],
                                        Region(then)), InsertPoint.before(before))
            inner = [o for o in op.true_region.block.ops if not isinstance(o, scf.YieldOp)]
            jams = [i for i, o in enumerate(inner) if isinstance(o, tile.ForOp) and o.inits]
            cut = jams[-1] + 1 if jams else 0
            replicate(inner[:cut], replicas, end)
            for r in replicas:  # what follows the jammed loops a replica at a time: short lives
                replicate(inner[cut:], [r], end)
            continue
        for r in replicas:
            new = op.clone(value_mapper=r.vmap)
            Rewriter.insert_op(new, InsertPoint.before(before))
            if r.guard is not None and any(isinstance(o, loop.StoreOp) for o in new.walk()):
                guard_stores([new], r.guard)


def _shared_if(op: Operation, replicas: list[Replica]) -> bool:
    """An `scf.if` without results or else whose condition every replica shares (the last
    split of a split-K tile): its replicas' bodies go in one branch."""
    return (isinstance(op, scf.IfOp) and not op.results and not op.false_region.blocks
            and _shared([op.cond], replicas))


def _shared(values, replicas: list[Replica]) -> bool:
    """Whether every replica maps `values` to the same values."""
    return all(len({id(r.vmap.get(v, v)) for r in replicas}) == 1 for v in values)


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
    ub = replicas[0].vmap.get(lp.dyn_ub, lp.dyn_ub) if lp.dyn_ub is not None else None
    new = tile.ForOp(lb, lp.ub.data, lp.binding, inits, Region(body), lp.step.data, ub)
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
            pure = is_scalar(op) or isinstance(op, loop.LoadOp)
            if pure and op.results and all(not r.uses for r in op.results):
                Rewriter.erase_op(op)
                changed = True


def erase_ops(ops: Sequence[Operation]) -> None:
    for op in reversed(ops):
        Rewriter.erase_op(op)


def shifted_access(
    op: loop.LoadOp, buf: SSAValue, offsets: Sequence[SSAValue | int], keep: Sequence[bool],
    transposed: bool = False,
) -> loop.LoadOp | None:
    """A load of `buf` at the coordinates of `op` minus `offsets`, keeping only the dims marked in
    `keep` (a staged copy drops its unit dims; a transposed one swaps the innermost two kept).
    Coordinates and offsets are expanded into linear forms over their leaves, so
    `(%k0 + %kk) - %k0` reads `%kk`. None if a coordinate is not linear."""
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
    if transposed:
        coords[-2:] = coords[-1:-3:-1]
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


def thread_start(builder: Builder, t: SSAValue, lb: int, step: int) -> SSAValue:
    """`lb + t * step`, the first iteration of thread `t` in a strided loop."""
    if step != 1:
        c = builder.insert(arith.ConstantOp(IntegerAttr(step, IndexType()))).result
        t = builder.insert(arith.MuliOp(t, c)).result
    if lb != 0:
        c = builder.insert(arith.ConstantOp(IntegerAttr(lb, IndexType()))).result
        t = builder.insert(arith.AddiOp(t, c)).result
    return t


def stride_loop(lp: tile.ForOp, t: SSAValue, threads: int, builder: Builder) -> tile.ForOp:
    """`tile.for %a = lb to ub step s` -> `tile.for %a = lb + t*s to ub step s*threads` (same
    body, same accumulators), built at `builder`; uses of the old results move to the new, and
    the old loop is erased."""
    lb, step = lp.static_lb, lp.step.data
    assert lb is not None
    start = thread_start(builder, t, lb, step)
    body = Rewriter.move_region_contents_to_new_regions(lp.body)
    new = tile.ForOp(start, lp.ub.data, lp.binding, list(lp.inits), body, step * threads,
                     lp.dyn_ub)
    new.attributes |= lp.attributes
    builder.insert(new)
    for old, res in zip(lp.res, new.res):
        old.replace_all_uses_with(res)
    Rewriter.erase_op(lp)
    return new


def slice_loop(lp: tile.ForOp, t: SSAValue, threads: int) -> tile.ForOp:
    """`tile.for %a = lb to ub step s` (trip count n, a multiple of `threads`) -> thread `t`'s
    n / threads iterations as `tile.for %j = 0 to n / threads` with `%a = lb + s t + s T j`
    inside: a loop with static bounds (tile-unroll can unroll it, so a per-thread array indexed
    by %j stays in registers), the same iterations as `stride_loop`'s."""
    lb, step, n = lp.static_lb, lp.step.data, lp.extent
    assert lb is not None and n is not None and n % threads == 0
    body = Rewriter.move_region_contents_to_new_regions(lp.body)
    j = body.block.args[0]
    uses = list(j.uses)
    new = swap_loop(lp, tile.ForOp(0, n // threads, lp.binding, list(lp.inits), body))
    b = Builder(InsertPoint.at_start(body.block))
    a = add(b, thread_start(b, t, lb, step), mul(b, j, step * threads))
    a.name_hint, j.name_hint = j.name_hint, "j"
    for use in uses:
        use.operation.operands[use.index] = a
    return new


def bound_loop(lp: tile.ForOp, stop: SSAValue) -> tile.ForOp:
    """`lp` rebuilt to stop at min(`stop`, its upper bound) (same body and accumulators)."""
    body = Rewriter.move_region_contents_to_new_regions(lp.body)
    lb = lp.dyn_lb if lp.dyn_lb is not None else lp.static_lb
    return swap_loop(lp, tile.ForOp(lb, lp.ub.data, lp.binding, list(lp.inits), body,
                                    lp.step.data, stop))


def swap_loop(lp: tile.ForOp, new: tile.ForOp) -> tile.ForOp:
    """`new` in `lp`'s place: its attributes, the uses of its results; `lp` erased."""
    new.attributes |= lp.attributes
    Rewriter.insert_op(new, InsertPoint.before(lp))
    for old, res in zip(lp.res, new.res):
        old.replace_all_uses_with(res)
    Rewriter.erase_op(lp)
    return new


def unroll_by(lp: tile.ForOp, factor: int) -> tile.ForOp:
    """`lp` (static lb, step 1, a trip count `factor` divides) as a loop of step `factor` whose
    body is `factor` copies of the old one, the i-th at iv + i (accumulators threaded through
    the copies): accesses to neighbouring elements side by side, which kernel-vectorize merges
    into one wide access. Returns the new loop; uses of the old results move to it."""
    body = Block(arg_types=[INDEX, *(v.type for v in lp.inits)])
    b = Builder(InsertPoint.at_end(body))
    body.args[0].name_hint = lp.iv.name_hint
    accs = list(body.args[1:])
    for i in range(factor):
        vmap = {lp.iv: add(b, body.args[0], const(b, i)) if i else body.args[0],
                **dict(zip(lp.accs, accs))}
        for op in lp.body.block.ops:
            if isinstance(op, tile.YieldOp):
                accs = [vmap.get(v, v) for v in op.operands]
            else:
                b.insert(op.clone(value_mapper=vmap))
    b.insert(tile.YieldOp(*accs))
    assert lp.static_lb is not None and lp.step.data == 1
    return swap_loop(lp, tile.ForOp(lp.static_lb, lp.ub.data, lp.binding, list(lp.inits),
                                    Region(body), factor, lp.dyn_ub))


def thread_loop(extent: int, bind: tile.Bind = tile.Bind.THREAD_X, hint: str = "t") -> tile.ForOp:
    """An empty `tile.for %t = 0 to extent bind(thread.*)` (to be inserted)."""
    body = Region(Block(arg_types=[INDEX]))
    body.block.add_op(tile.YieldOp())
    lp = tile.ForOp(0, extent, bind, [], body)
    lp.iv.name_hint = hint
    return lp


def on_threads(ops: Sequence[Operation], threads: int, bind: tile.Bind = tile.Bind.THREAD_X,
               hint: str = "t") -> tile.ForOp:
    """Move `ops` (consecutive, in one block) into a new thread loop of `threads` threads
    (thread.x unless `bind` says), inserted where they were; returns it."""
    outer = thread_loop(threads, bind, hint)
    Rewriter.insert_op(outer, InsertPoint.before(ops[0]))
    end = outer.body.block.last_op
    for op in ops:
        op.detach()
        outer.body.block.insert_op_before(op, end)
    return outer


def share_reductions(reduces, t: SSAValue, threads: int, sliced: bool = False,
                     online: Sequence[tile.ForOp] = (), args: Sequence[tile.ForOp] = ()) -> None:
    """Each reduce loop (with its combiners) becomes thread `t`'s strided share (`sliced`: as
    `slice_loop`), started from the combiner's identity, followed by a `tile.combine` per
    accumulator (a non-identity init is folded in after it); uses of the loop's results read
    the combined values. An `online` loop's (m, l) (nest.online_pair): the max of the m, then
    the sum of each thread's l times exp(m_t - max). An `args` loop's (value, index)
    (nest.arg_pair): the extreme value, then the least index of a share that holds it (NaN for a
    NaN: a share's index is its first, the shares' least is the row's first)."""
    for lp, kinds in reduces:
        if lp in args or lp in online:
            new = slice_loop(lp, t, threads) if sliced else \
                stride_loop(lp, t, threads, Builder(InsertPoint.before(lp)))
            uses = [list(r.uses) for r in new.res]
            after = Builder(InsertPoint.after(new))
            pair = _first_extreme(after, kinds[0], *new.res) if lp in args else \
                _online_totals(after, *new.res)
            for value, found in zip(pair, uses):
                for use in found:
                    use.operation.operands[use.index] = value
            continue
        b = Builder(InsertPoint.before(lp))
        inits = list(lp.inits)
        for i, (kind, init) in enumerate(zip(kinds, inits)):
            if not is_identity(init, kind):
                c = b.insert(arith.ConstantOp(identity(kind, init.type)))
                c.result.name_hint = "id"
                lp.operands[i] = c.result  # no dynamic lb yet: operands are the inits
        new = slice_loop(lp, t, threads) if sliced else stride_loop(lp, t, threads, b)
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


def _online_totals(b: Builder, m: SSAValue, l_: SSAValue) -> tuple[SSAValue, SSAValue]:
    """The block's (m, l) from each thread's: the max m, the sum of l exp(m_t - max)."""
    top = b.insert(tile.CombineOp(K.MAX, m)).result
    mine = b.insert(arith.MulfOp(l_, exp_minus(b, m, top))).result
    return top, b.insert(tile.CombineOp(K.ADD, mine)).result


def _first_extreme(b: Builder, kind: K, value: SSAValue, index: SSAValue
                   ) -> tuple[SSAValue, SSAValue]:
    """The block's (extreme, index) from each thread's first extreme of its share: the extreme,
    then the least index of a share holding it (or NaN, which the max/min combine keeps)."""
    top = b.insert(tile.CombineOp(kind, value)).result
    holds = b.insert(arith.OrIOp(b.insert(arith.CmpfOp(value, top, "oeq")).result,
                                 b.insert(arith.CmpfOp(value, value, "une")).result)).result
    never = b.insert(arith.ConstantOp(identity(K.MIN, index.type))).result
    mine = b.insert(arith.SelectOp(holds, index, never)).result
    return top, b.insert(tile.CombineOp(K.MIN, mine)).result


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


def combine_op(kind: K, lhs: SSAValue, rhs: SSAValue) -> Operation:
    floating = isinstance(lhs.type, AnyFloat)
    cls = {
        K.ADD: (arith.AddfOp, arith.AddiOp),
        K.MUL: (arith.MulfOp, arith.MuliOp),
        K.MAX: (arith.MaximumfOp, arith.MaxSIOp),
        K.MIN: (arith.MinimumfOp, arith.MinSIOp),
    }[kind][0 if floating else 1]
    return cls(lhs, rhs)


def restage(op: tile.StageOp, **changes) -> tile.StageOp:
    """The same stage with some of copy / buffers / pad changed (replaces `op`)."""
    fields = {"copy": op.copy.data, "buffers": op.buffers.data, "pad": op.pad.data,
              "transposed": op.is_transposed, "wrapped": op.is_wrapped} | changes
    new = tile.StageOp(op.source, op.mixed_offsets(), op.size_list, **fields)
    new.attributes |= op.attributes
    new.result.name_hint = op.result.name_hint
    Rewriter.replace_op(op, new)
    return new


def serial_rows_cols(step: str, kernel: tile.KernelOp, c) -> tuple[tile.ForOp, tile.ForOp]:
    """The rows and columns loops of a contraction (the innermost two of its chain), which a
    matmul step maps: still serial `0 to N step 1`, else the plan does not fit the IR."""
    ok = c is not None and len(c.chain) >= 2 and all(
        lp.binding == tile.Bind.SERIAL and lp.static_lb == 0 and lp.step.data == 1
        for lp in c.chain[-2:]
    )
    if not ok:
        raise PassOptionError(
            f"{step}: kernel @{kernel.sym_name.data}: expected a contraction whose rows and "
            "columns are still serial loops (its matmul plan does not match its loops)"
        )
    return c.chain[-2], c.chain[-1]


def map_batch_to_z(kernel: tile.KernelOp, chain: list[tile.ForOp], rows: tile.ForOp) -> int:
    """Bind the serial chain loops outside the rows with extent > 1 (batches, and the split of
    tile-split-k) to block.z, innermost first while the grid allows it; returns the grid's z
    size. Several become one index over their product (a conv's image and output row): left on
    a serial loop, a batch would run one block's tiles one after another. A split whose last
    block finishes the tile (tile.split_last counts arrivals a (block.x, block.y)) stays z's
    only loop."""
    outer = [
        lp for lp in chain[: chain.index(rows)]
        if lp.binding == tile.Bind.SERIAL and lp.static_lb == 0 and lp.step.data == 1
        and lp.ub.data > 1
    ]
    arrivals = {op.split for op in kernel.walk() if isinstance(op, tile.SplitLastOp)}
    picked: list[tile.ForOp] = []
    size = 1
    for lp in reversed(outer):
        if size * lp.ub.data > hw.MAX_GRID[2] or picked and picked[0].iv in arrivals:
            break
        picked.append(lp)
        size *= lp.ub.data
    if not picked:
        return 1
    if len(picked) > 1:
        _fold_loops(chain, picked)
    picked[0].bind = tile.BindAttr(tile.Bind.BLOCK_Z)
    return size


def _fold_loops(chain: list[tile.ForOp], loops: list[tile.ForOp]) -> None:
    """`loops` (chain loops, innermost first) become the innermost one over their product; the
    others run once. Their ivs are taken apart again at the start of its body, where the scalar
    ops and loads between them move (find_contraction: pure, so reading them there is the
    same)."""
    inner, outermost = loops[0], loops[-1]
    body = inner.body.block
    levels = chain[chain.index(outermost) : chain.index(inner)]
    moved = [op for lp in levels for op in lp.body.block.ops
             if not isinstance(op, tile.ForOp | tile.YieldOp)]
    anchor = body.first_op
    for op in moved:
        op.detach()
        body.insert_op_before(op, anchor)
    b = Builder(InsertPoint.at_start(body))
    rest = inner.iv
    values, made = [], set()
    for lp in loops[:-1]:
        extent = const(b, lp.ub.data)
        values.append(b.insert(arith.RemSIOp(rest, extent)).result)
        rest = b.insert(arith.DivSIOp(rest, extent)).result
        made |= {values[-1].owner, rest.owner}
    values.append(rest)
    for lp, v in zip(loops, values):
        v.name_hint = lp.iv.name_hint
        for use in list(lp.iv.uses):
            if use.operation not in made:
                use.operation.operands[use.index] = v
    inner.ub = IntAttr(math.prod(lp.ub.data for lp in loops))
    for lp in loops[1:]:
        lp.ub = IntAttr(1)


def add_scratch(kernel: tile.KernelOp, t: MemRefType, hint: str) -> SSAValue:
    """A buffer of type `t` the host function allocates for `kernel` (split partial sums): a
    new last argument of the kernel and of each of its launches."""
    arg = kernel.body.block.insert_arg(t, len(kernel.args))
    arg.name_hint = hint
    module = kernel.parent_op()
    assert isinstance(module, ModuleOp)
    name = kernel.sym_name.data
    for launch in [o for o in module.walk()
                   if isinstance(o, tile.LaunchOp) and o.callee.root_reference.data == name]:
        buf = Builder(InsertPoint.before(launch)).insert(memref.AllocOp([], [], t)).memref
        buf.name_hint = hint
        Rewriter.replace_op(launch, tile.LaunchOp(name, [*launch.args, buf]))
    return arg


def tree(b: Builder, cls, values: list[SSAValue]) -> SSAValue:
    """values combined pairwise (a balanced tree: short dependency chains)."""
    while len(values) > 1:
        values = [b.insert(cls(x, y)).result if y is not None else x
                  for x, y in itertools.zip_longest(values[::2], values[1::2])]
    return values[0]


def exp_minus(b: Builder, x: SSAValue, m: SSAValue) -> SSAValue:
    """exp(x - m): an online softmax's p and alpha."""
    return b.insert(xmath.ExpOp(b.insert(arith.SubfOp(x, m)).result)).result


def uses_of(ops: Sequence[Operation], seeds: Iterable[SSAValue]) -> set[Operation]:
    """The ops of `ops` (in program order) that use one of `seeds`, directly or through an
    earlier one of them: what must wait for the seeds (the rest may go before)."""
    found: set[Operation] = set()
    values = set(seeds)
    for op in ops:
        if any(o in values for o in op.operands):
            found.add(op)
            values.update(op.results)
    return found
