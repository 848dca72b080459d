"""Lanes own keys: tile-attention-rows with the plan's `lane_keys` E > 0.

The head-dim split (attention_rows.rewrite) combines every key's q . k across the row's lanes
before the (m, l) update can start: a shuffle tree, an exp and the update stand between one
key and the next, so a row is a long chain of dependent latencies (ncu on an fp32 sdpa: long
scoreboard stalls). Here each of the row's T lanes scores its own keys instead, the whole
head dim in one lane (or its part, below), and the row steps T E keys at a time:

    %m, %l = tile.for %k0 = 0 to 128 step 32 bind(serial) iter(%m = .., %l = ..) {
      %key = %k0 + %tx (+ e T)                       E scores a lane, each the row's chain
      %mx = tile.combine max (max of the lane's E scores) over thread.x
      m' = max(m, mx); alpha = exp(m - m'); p_e = exp(x_e - m')
      l' = l alpha + sum p_e                         a lane's partial sum
      tile.for %d = 0 to D { acc[d] = acc[d] alpha + p_0 V[key_0, d] } (+ E - 1 more terms)
    }
    l = tile.combine add %l; acc[d] = tile.combine add acc[d], d = 0 .. D - 1
    the final loop as it was, its stores by lane 0

m is the same on every lane (the combined max), so alpha is too and the partial l and acc
rescale consistently; they are summed across the lanes once, after the last key. A step
ends the dependent chain once for T E keys. Keys past the end of a ragged last step read the
last key and are masked (-inf: no weight even in a row its own mask hides whole, whose running
max stays at its init, the lowest float), as keys past a causal stop are by the row's own select.
Each lane holds the whole accumulator (its part with head_parts; and, for a part up to
tile_plan.HOISTED_Q, the row's q) in registers: the loops over the head dim are unrolled
whatever the plan's `unroll`.

With `head_parts` P > 1 the row's lanes are T / P key lanes times P parts of the head dim
(lane t: key lane t mod T/P, part t div T/P): every loop over the head dim walks the lane's
D / P of it and the arrays hold that much (a head dim of 128 in registers without spilling);
a key's q . k partial sums are added over its parts (`tile.combine add .. stride T/P`: the
lanes T/P apart) before the row's chain, so every part holds the whole score; the max, l and
the accumulator go over the key lanes of one part (`lanes T/P`), and key lane 0 of each part
stores its D / P outputs.
"""

from __future__ import annotations

import math

from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.dialects.builtin import FloatAttr, IntAttr, MemRefType
from xdsl.ir import Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from deplo import hardware as hw
from deplo.analysis.nest import FlashRow, FlashUpdate
from deplo.dialects import kernel, loop, tile
from deplo.passes.tile import key_slices as ks
from deplo.passes.tile.kernel_pass import PassOptionError
from deplo.passes.tile.rewrite import (
    add,
    below,
    clamp,
    const,
    drop_dead,
    exp_minus,
    guard_stores,
    on_threads,
    tree,
    unroll_by,
    uses_of,
)


def own_keys(row: FlashRow, fu: FlashUpdate, lanes: int, per_lane: int, parts: int = 1,
             split: tile.ForOp | None = None) -> None:
    """Rewrite `row` (its query rows already on blocks and thread.y) for `lanes` lanes a row
    each scoring `per_lane` keys a step, the head dim in `parts` (see the module docstring);
    with `split` (a block.z loop around the row), the keys of its slice (split-KV)."""
    threads = on_threads(row.ops, lanes)
    tx = threads.iv
    kl = fu.key_loop
    owners = lanes // parts
    part = None
    if parts > 1:  # lane tx: key lane tx mod owners, part tx div owners of the head dim
        b = Builder(InsertPoint.at_start(threads.body.block))
        part = b.insert(arith.DivSIOp(tx, const(b, owners))).result
        tx = b.insert(arith.RemSIOp(tx, const(b, owners))).result
        part.name_hint, tx.name_hint = "part", "kl"
        _split_head(row, fu, part, parts)
        _combined(Builder(InsertPoint.after(fu.reduce)), fu.reduce.res[0],  # the parts' q . k
                  lanes=lanes if lanes < hw.WARP else None, stride=owners)
    lanes = owners
    group = lanes if parts > 1 else None  # combines over the key lanes of one part
    keys, step = kl.ub.data, lanes * per_lane  # lb 0 (flash_update); ub static
    kl.ub = IntAttr(-(-keys // step) * step)
    kl.step = IntAttr(step)
    body = kl.body.block
    _loads_first(body, fu)
    scoring = list(body.ops)[:body.get_operation_index(fu.new_max)]
    b = Builder(InsertPoint.at_start(body))
    k0 = kl.iv
    raw = [add(b, add(b, k0, const(b, e * lanes)), tx) if e else add(b, k0, tx)
           for e in range(per_lane)]
    at = [clamp(b, k, keys) if keys % step else k for k in raw]
    for use in list(k0.uses):
        if use.operation.parent_block() is not body or use.operation in scoring:
            use.operation.operands[use.index] = at[0]
    scores, vmaps = _scores(fu, scoring, at, raw, keys if keys % step else None)
    # the step's max over the lanes; every lane's (m, alpha) alike
    b = Builder(InsertPoint.before(fu.new_max))
    most = tree(b, arith.MaximumfOp, scores)
    if lanes > 1:  # over the key lanes of a part (its parts hold a key's score alike)
        most = b.insert(tile.CombineOp(tile.CombineKind.MAX, most, lanes=group)).result
    fu.new_max.operands[list(fu.new_max.operands).index(fu.x)] = most
    p0 = fu.p.owner.operands[0].owner  # exp(x - m'): x may have been masked
    p0.operands[0] = scores[0]
    b = Builder(InsertPoint.after(fu.p.owner))
    probs = [exp_minus(b, x, fu.new_max.result) for x in scores[1:]]
    if per_lane > 1:
        total = tree(b, arith.AddfOp, [fu.p, *probs])
        l_new = body.last_op.operands[1].owner  # l alpha + p
        l_new.operands[list(l_new.operands).index(fu.p)] = total
    _more_terms(fu, vmaps, probs)
    for lp in [o for o in body.ops if isinstance(o, tile.ForOp)]:
        _widen(lp)
    if split is not None:
        kl = fu.key_loop = ks.slice_keys(kl, split, keys)
    key_lane0, l_row = _sum_lanes(fu, tx, group) if lanes > 1 else (None, fu.key_loop.res[1])
    if split is not None:
        _finish_slices(fu, threads, split, part, row.head_dim, key_lane0, l_row)
    drop_dead(threads)
    for lp in threads.walk():  # loops over the head dim: unrolled whatever the plan's
        if isinstance(lp, tile.ForOp) and lp is not kl and lp.binding == tile.Bind.SERIAL:
            lp.bind = tile.BindAttr(tile.Bind.UNROLL)  # `unroll`, or the arrays go to memory


def _loads_first(body, fu: FlashUpdate) -> None:
    """The row chain's work that needs no q . k (a mask's loads, the key's index) moved before
    the q . k loop: its loads go out before the loop's dependent FMAs, not after them."""
    red = fu.reduce
    chain = list(body.ops)[body.get_operation_index(red) + 1:body.get_operation_index(fu.new_max)]
    late = uses_of(chain, red.results)
    for op in chain:
        if op not in late:
            op.detach()
            body.insert_op_before(op, red)


def _widen(lp: tile.ForOp) -> None:
    """A loop over the head dim reading a lane's own K or V row: unrolled by 16 bytes of the
    row, so kernel-vectorize reads each 16 bytes with one load (the lanes' rows are apart: a
    scalar load would bring a sector in for 4 bytes of it)."""
    rows = [ld.buffer.type.element_type for ld in lp.body.block.ops
            if isinstance(ld, loop.LoadOp) and not isinstance(ld.buffer.owner, loop.PrivateOp)]
    if not rows:
        return
    step = 16 // max(1, min(kernel.element_bytes(t) for t in rows))
    if step > 1 and lp.extent is not None and lp.extent % step == 0:
        unroll_by(lp, step)


def _scores(fu: FlashUpdate, scoring: list[Operation], at: list[SSAValue],
            raw: list[SSAValue], keys: int | None) -> tuple[list[SSAValue], list[dict]]:
    """The lane's scores, one a key of `at` (the first the loop's own ops', which read at[0];
    the others clones of the `scoring` ops), masked past the last of `keys` (a ragged step);
    and for each further key the map from the first key's values to its own."""
    b = Builder(InsertPoint.before(fu.new_max))
    scores, vmaps = [], []
    for e, key in enumerate(at):
        x = fu.x
        if e:
            vmap = {at[0]: key}
            for op in scoring:
                b.insert(op.clone(value_mapper=vmap))
            x = vmap.get(fu.x, fu.x)
            vmaps.append(vmap)
        if keys is not None:
            low = b.insert(arith.ConstantOp(FloatAttr(-math.inf, x.type))).result
            x = b.insert(arith.SelectOp(below(b, raw[e], keys), x, low)).result
        scores.append(x)
    return scores, vmaps


def _more_terms(fu: FlashUpdate, vmaps: list[dict], probs: list[SSAValue]) -> None:
    """One more accumulator loop for each further key of the lane (`vmaps`: the first key's
    values to that key's): the first's, with that key's values and p and no rescale (alpha
    applies once a step)."""
    after = fu.pv
    for vmap, p in zip(vmaps, probs):
        clone = fu.pv.clone(value_mapper={**vmap, fu.p: p})
        Rewriter.insert_op(clone, InsertPoint.after(after))
        after = clone
        for op in list(clone.body.block.ops):
            if isinstance(op, arith.MulfOp) and fu.alpha in op.operands:
                op.result.replace_all_uses_with(op.rhs if op.lhs is fu.alpha else op.lhs)
                Rewriter.erase_op(op)


def _split_head(row: FlashRow, fu: FlashUpdate, part: SSAValue, parts: int) -> None:
    """Every loop over the head dim walks the lane's part of it (d = part D/P + j, j < D/P),
    and the row's arrays (the accumulator, q) hold that part, indexed by j."""
    size = row.head_dim // parts
    arrays = {}
    for old in [op for op in row.ops if isinstance(op, loop.PrivateOp)]:
        new = loop.PrivateOp(MemRefType(old.result.type.element_type, [size]))
        new.result.name_hint = old.result.name_hint
        Rewriter.insert_op(new, InsertPoint.before(old))
        arrays[old.result] = new.result
    for lp in [*row.free, *(r for r, _ in row.reduces)]:
        b = Builder(InsertPoint.at_start(lp.body.block))
        d = add(b, b.insert(arith.MuliOp(part, const(b, size))).result, lp.iv)
        for use in list(lp.iv.uses):
            op = use.operation
            if op is not d.owner and not (isinstance(op, loop.LoadOp | loop.StoreOp)
                                          and op.buffer in arrays):
                op.operands[use.index] = d
        lp.ub = IntAttr(size)
    for old, new in arrays.items():
        old.replace_all_uses_with(new)
        Rewriter.erase_op(old.owner)
    fu.acc = arrays[fu.acc]


def _combined(b: Builder, value: SSAValue, **where) -> SSAValue:
    """`tile.combine add` of `value` over the lanes `where` names, at `b`; every other use of
    `value` reads the sum instead (returned)."""
    total = b.insert(tile.CombineOp(tile.CombineKind.ADD, value, **where)).result
    for use in list(value.uses):
        if use.operation is not total.owner:
            use.operation.operands[use.index] = total
    return total


def _finish_slices(fu: FlashUpdate, threads: tile.ForOp, split: tile.ForOp,
                   part: SSAValue | None, d: int, key_lane0: SSAValue | None,
                   l_: SSAValue) -> None:
    """Split-KV (passes/tile/key_slices.py): key lane 0 of each part stores its part of the
    accumulator, lane 0 the row's m and l, to the scratch [.., row, D + 2]; the last slice of
    the block reads every slice's, rescales them into the accumulator and l, and runs the
    final loop."""
    size = fu.acc.type.get_shape()[0]
    b = Builder(InsertPoint.before(fu.final))
    buf, at = ks.scratch(tile.enclosing_kernel(threads), threads, split, [d + 2])
    first = const(b, 0) if part is None else b.insert(arith.MuliOp(part, const(b, size))).result
    accs = [(b.insert(loop.LoadOp(fu.acc, [const(b, j)])).result, 0,
             lambda bb, j=j: add(bb, first, const(bb, j))) for j in range(size)]
    m = fu.key_loop.res[0]
    lane0 = b.insert(arith.CmpiOp(threads.iv, const(b, 0), "eq")).result
    row = ks.SliceRow(m, l_, lambda bb, s, col: at(s, col))
    tb, ((top, total),), new, ml = ks.combine(b, buf, split, d + 2, [row], accs, key_lane0, lane0)
    for j, v in enumerate(new):
        tb.insert(loop.StoreOp(v, fu.acc, [const(tb, j)]))
    fu.final.detach()
    tb.insert(fu.final)
    for op in fu.final.walk():
        for n, v in enumerate(op.operands):
            if v is l_ or v is m:
                op.operands[n] = total if v is l_ else top
    here = set(tb.insertion_point.block.walk()) | set(ml)
    late = list(dict.fromkeys(u.operation for v in (l_, m) for u in v.uses if u.operation
                              not in here and not fu.key_loop.is_ancestor(u.operation)))
    for op in [o for o in late if _final_only(o, fu.final, (l_, m))]:  # a clamp of l
        op.detach()
        Rewriter.insert_op(op, InsertPoint.before(fu.final))
        op.operands = [total if v is l_ else top if v is m else v for v in op.operands]
        late.remove(op)
    if late:  # (flash_row allows scalar code between the key loop and the final loop)
        raise PassOptionError(f"tile-attention-rows: key_splits: '{late[0].name}' reads the "
                              "row's l or m outside its final loop: no slice combine for it")


def _final_only(op: Operation, final: Operation, stats: tuple[SSAValue, ...]) -> bool:
    """A scalar op of the row on l or m (and values from outside the row) that only the final
    loop reads: the safe softmax's sum clamped to 1, which loop-simplify hoisted out of that
    loop. It can follow the combine."""
    block = op.parent_block()
    return not op.regions and len(op.results) == 1 \
        and all(final.is_ancestor(u.operation) for u in op.results[0].uses) \
        and all(v in stats or not isinstance(v.owner, Operation)
                or v.owner.parent_block() is not block for v in op.operands)


def _sum_lanes(fu: FlashUpdate, tx: SSAValue, lanes: int | None) -> tuple[SSAValue, SSAValue]:
    """After the key loop: the partial l and accumulators summed over the key lanes (`lanes`:
    those of one part of the head dim; every lane gets the totals); the final loop's stores
    made by key lane 0. Returns (that condition, the row's l)."""
    b = Builder(InsertPoint.after(fu.key_loop))
    total = _combined(b, fu.key_loop.res[1], lanes=lanes)
    for d in range(fu.acc.type.get_shape()[0]):
        at = const(b, d)
        part = b.insert(loop.LoadOp(fu.acc, [at])).result
        whole = b.insert(tile.CombineOp(tile.CombineKind.ADD, part, lanes=lanes)).result
        b.insert(loop.StoreOp(whole, fu.acc, [at]))
    first = b.insert(arith.CmpiOp(tx, const(b, 0), "eq")).result
    first.name_hint = "lane0"
    guard_stores([fu.final], first)
    return first, total
