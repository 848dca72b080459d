"""loop-online-softmax: softmax's max and sum of exp in one pass, and attention's weighted sum
carried along (flash attention), so a row of scores is read once.

After fusion a softmax row is two reduce loops over the same axis, the second using the first's
result, and an attention row adds a third one, over the same axis, inside the loop over the
value columns:

    %m = loop.for %s = 0 to S reduce iter(%a = -inf) { %x = X(s) ; yield max(%a, %x) }
    %l = loop.for %s = 0 to S reduce iter(%b = 0) { %x = X(s) ; yield %b + exp(%x - %m) }
    loop.for %j = 0 to E free {
      %o = loop.for %s = 0 to S reduce iter(%c = 0) { yield %c + exp(X(s) - %m) / %l * W(s, j) }
      ... %o ...
    }
  ->
    %acc = loop.private : memref<Exf32>
    loop.for %j = 0 to E free { loop.store %zero, %acc[%j] }
    %m, %l = loop.for %s = 0 to S reduce iter(%a = -inf, %b = 0) {
      %x = X(s) ; %mn = max(%a, %x) ; %alpha = exp(%a - %mn) ; %p = exp(%x - %mn)
      loop.for %j = 0 to E free { %acc[j] = %acc[j] * %alpha + %p * W(s, j) }
      yield %mn, %b * %alpha + %p
    }
    loop.for %j = 0 to E free { %o = %acc[%j] / %l ; ... %o ... }

The running max `m`, running sum `l` and the output row `acc` are rescaled by
`alpha = exp(m_old - m_new)` whenever the max grows; at the end `acc / l` is the weighted sum.
`m` starts at the lowest finite float, not -inf: a -inf score (a mask) then adds
exp(-inf - m) = 0 wherever it comes, where from -inf its exp(-inf + inf) would be NaN (a row
whose first scores are masked, or a thread's share of a row that is all masked). The one
difference it makes to a result: a row of -inf only whose max the program also returns gets
the lowest float for it, not -inf (its softmax is NaN either way, as PyTorch's).
Attention's safe softmax (torch_to_tir.softmax `safe`: a row its mask hides whole is 0) matches
too: its max clamped to the lowest float is the running max, and its sum clamped to 1 divides
the output row at the end (0 / 1 for such a row).
X(s) — the attention score — is now read once per (row, s), which is what lets a second
`loop-fuse` compute the scores' own reduction (q·k) right there: the S×S scores are never
written. The PV accumulator is float32 (f16/bf16 values are extended, the result rounded once;
a probability rounded to f16/bf16 before P·V, as eager attention does, stays float32).

Which rows: every attention row (`flash=true`) but one whose scores read only program inputs
(`softmax(x) @ v` on an input x: no q·k will join the loop, and a flash loop without one is
planned pointwise, 2153x the roofline by the model for [8, 4096] rows; its weighted sum stays a
reduction of its own, 182 us); a plain softmax row (max and sum only) when the
row has at least `min-extent` elements (shorter rows keep the two passes, whose reductions
tile-cooperative-reduce shares as they are; it combines the (m, l) pair too,
nest.online_pair).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, math
from xdsl.dialects.builtin import Float32Type, FloatAttr, MemRefType, ModuleOp
from xdsl.ir import Block, BlockArgument, Operation, OpResult, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from deplo.analysis.index import is_float_zero
from deplo.dialects import loop
from deplo.lowering.torch_to_tir import LOWEST
from deplo.passes.loop.merge_reductions import _defined_before, _outside_values, same_range

# ---------------------------------------------------------------------------------------------
# matching


def expr_key(v: SSAValue, lp: loop.ForOp):
    """A structural key of the value `v` computed in `lp`'s body: equal keys are the same
    function of (the loop's index, values from outside the loop)."""
    if isinstance(v, BlockArgument) and v.block is lp.body.block:
        return ("iv",) if v.index == 0 else ("acc", v.index - 1)
    op = v.owner
    if not isinstance(op, Operation) or not lp.is_ancestor(op):
        return ("outside", v)
    if op.regions:
        return ("region", op)
    assert isinstance(v, OpResult)
    props = tuple(sorted((k, str(p)) for k, p in op.properties.items()))
    return (op.name, props, v.index, tuple(expr_key(o, lp) for o in op.operands))


def _single_acc_update(lp: loop.ForOp, cls: type) -> tuple[SSAValue, Operation] | None:
    """(the other operand, the op) when the loop has one accumulator and yields `acc <op> x`."""
    if len(lp.accs) != 1:
        return None
    (acc,) = lp.accs
    (new,) = lp.body.block.last_op.operands
    op = new.owner
    if not isinstance(op, cls) or acc not in op.operands or not acc.has_one_use():
        return None
    return (op.operands[1] if op.operands[0] is acc else op.operands[0]), op


def _exp_of_diff(e: SSAValue, m: SSAValue) -> SSAValue | None:
    """x when e = exp(x - m) or exp(x - max(m, the lowest float)), else None."""
    op = e.owner
    if not isinstance(op, math.ExpOp):
        return None
    sub = op.operand.owner
    if not isinstance(sub, arith.SubfOp) or m not in (sub.rhs, _max_clamp(sub.rhs)):
        return None
    return sub.lhs


def _clamped(v: SSAValue, bound) -> SSAValue | None:
    """x when v = max(x, c) with `bound(c)` true of the constant c (attention's safe softmax,
    torch_to_tir.softmax: its max clamped to the lowest float, its sum to at least 1)."""
    op = v.owner
    if not isinstance(op, arith.MaximumfOp):
        return None
    for x, c in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
        if isinstance(c.owner, arith.ConstantOp) and isinstance(c.owner.value, FloatAttr) \
                and bound(c.owner.value.value.data):
            return x
    return None


def _max_clamp(v: SSAValue) -> SSAValue | None:
    """x when v = max(x, the lowest float or below): what the online max, started there,
    computes anyway."""
    return _clamped(v, lambda c: c <= LOWEST["f32"])  # at or below the running max's init


def _sum_clamp(v: SSAValue) -> SSAValue | None:
    """x when v = max(x, 1): a sum of exps that holds exp(0) is at least 1 already."""
    return _clamped(v, lambda c: c == 1.0)


@dataclass
class Softmax:
    """The max loop, the sum-of-exp loop, and the score X in each."""

    max_loop: loop.ForOp
    sum_loop: loop.ForOp
    x_in_sum: SSAValue
    exp_in_sum: SSAValue
    add_in_sum: Operation
    m_used: SSAValue  # what the exps subtract: the max loop's result, or it clamped

    @property
    def m_values(self) -> tuple[SSAValue, ...]:
        return (self.max_loop.res[0], self.m_used)


def match_softmax(mx: loop.ForOp, sm: loop.ForOp) -> Softmax | None:
    if not same_range(mx, sm):
        return None
    upd = _single_acc_update(mx, arith.MaximumfOp)
    add = _single_acc_update(sm, arith.AddfOp)
    if upd is None or add is None or not is_float_zero(sm.inits[0]):
        return None
    x, _ = upd
    e, add_op = add
    m = mx.res[0]
    x2 = _exp_of_diff(e, m)
    if x2 is None or expr_key(x2, sm) != expr_key(x, mx):
        return None
    used = e.owner.operand.owner.rhs  # m, or m clamped
    if used is not m and used.owner.parent_block() is not mx.parent_block():
        return None
    if sum(1 for u in used.uses if sm.is_ancestor(u.operation)) != 1:
        return None
    return Softmax(mx, sm, x2, e, add_op, used)


@dataclass
class WeightedSum:
    """sum_s exp(X(s) - m) / l * W(s, j) inside free loops over j."""

    pv: loop.ForOp
    nest: list[loop.ForOp]  # the free loops around it, outermost first
    weight: SSAValue  # W in the pv loop
    prob_first: bool  # mulf(prob, W) rather than mulf(W, prob)
    l_used: SSAValue  # what the exps are divided by: the sum loop's result, or it clamped


def match_weighted_sum(sm: Softmax, top: loop.ForOp) -> WeightedSum | None:
    """A perfect free nest `top` whose innermost body starts with the weighted-sum loop."""
    nest: list[loop.ForOp] = []
    cur: Operation = top
    while isinstance(cur, loop.ForOp) and cur.kind.data == loop.LoopKind.FREE:
        nest.append(cur)
        ops = [o for o in cur.body.block.ops if not isinstance(o, loop.YieldOp)]
        if not ops:
            return None
        cur = ops[0]
        if isinstance(cur, loop.ForOp) and cur.kind.data == loop.LoopKind.REDUCE:
            break
        if len(ops) != 1:
            return None
    pv = cur
    if not nest or not isinstance(pv, loop.ForOp) or pv.kind.data != loop.LoopKind.REDUCE:
        return None
    if not same_range(pv, sm.max_loop) or not is_float_zero(pv.inits[0]):
        return None
    upd = _single_acc_update(pv, arith.AddfOp)
    if upd is None or not isinstance(mul := upd[0].owner, arith.MulfOp):
        return None
    m, l = sm.max_loop.res[0], sm.sum_loop.res[0]
    if m.type != Float32Type():
        return None
    pair = tuple(mul.operands)
    for first, (prob, w) in ((True, pair), (False, pair[::-1])):
        # f16/bf16 attention rounds the float32 probability before the product (a bf16
        # product, or a round trip back to f32: transformers' eager `softmax(...).to(dtype)`);
        # the flash loop keeps it in float32 — one rounding fewer, well within bf16 tolerance
        p = prob.owner.input if isinstance(prob.owner, arith.ExtFOp) else prob
        p = p.owner.input if isinstance(p.owner, arith.TruncFOp) else p
        div = p.owner
        if not isinstance(div, arith.DivfOp) or l not in (div.rhs, _sum_clamp(div.rhs)):
            continue
        x = _exp_of_diff(div.lhs, m)
        if x is None or expr_key(x, pv) != expr_key(sm.x_in_sum, sm.sum_loop):
            continue
        slice_ = _slice(w, pv)
        if slice_ is None or any(v in (*sm.m_values, l, div.rhs, *pv.accs)
                                 or _max_clamp(v) is m for o in slice_ for v in o.operands):
            continue
        inner = {*(f.iv for f in nest)}
        outside = {v for o in slice_ for v in o.operands if not pv.is_ancestor(v.owner)}
        if any(v not in inner and not _defined_before(v, sm.sum_loop) for v in outside):
            continue
        return WeightedSum(pv, nest, w, first, div.rhs)
    return None


def _slice(v: SSAValue, lp: loop.ForOp) -> list[Operation] | None:
    """The ops of `lp`'s body that compute `v`, in order (None if one has regions)."""
    need: set[Operation] = set()
    stack = [v]
    while stack:
        cur = stack.pop()
        op = cur.owner
        if isinstance(op, Operation) and op.parent_block() is lp.body.block and op not in need:
            if op.regions:
                return None
            need.add(op)
            stack.extend(op.operands)
    return [o for o in lp.body.block.ops if o in need]


# ---------------------------------------------------------------------------------------------
# rewriting


def _free_nest(extents: list[int], names: list[str | None]) -> tuple[list[loop.ForOp], Block]:
    loops: list[loop.ForOp] = []
    for n, name in zip(extents, names):
        f = loop.ForOp(0, n, loop.LoopKind.FREE)
        f.iv.name_hint = name
        if loops:
            loops[-1].body.block.add_op(f)
        loops.append(f)
    for f in loops:
        f.body.block.add_op(loop.YieldOp())
    return loops, loops[-1].body.block


def rewrite(sm: Softmax, ws: WeightedSum | None, rewriter: PatternRewriter) -> None:
    mx, sl = sm.max_loop, sm.sum_loop
    before_max = _fits_before_max(sm, ws)  # decided before anything moves
    lowest = arith.ConstantOp(FloatAttr(LOWEST[str(mx.inits[0].type)], mx.inits[0].type))
    rewriter.insert(lowest, InsertPoint.before(mx))
    new = loop.ForOp(mx.lb.data, mx.ub.data, loop.LoopKind.REDUCE, [lowest.result, sl.inits[0]],
                     step=mx.step.data)
    new.iv.name_hint = sl.iv.name_hint
    m_acc, l_acc = new.accs
    m_acc.name_hint, l_acc.name_hint = "m", "l"
    body = new.body.block
    mapper: dict[SSAValue, SSAValue] = {sl.iv: new.iv, sl.accs[0]: l_acc}
    sub = sm.exp_in_sum.owner.operand.owner
    mn = p = None
    for op in sl.body.block.ops:
        if op is sm.add_in_sum or isinstance(op, loop.YieldOp):
            continue
        if op is sub:  # the running max replaces the final one from here on
            mx_op = arith.MaximumfOp(m_acc, mapper.get(sm.x_in_sum, sm.x_in_sum))
            body.add_op(mx_op)
            mn = mx_op.result
            mn.name_hint = "m_new"
            mapper[mx.res[0]] = mapper[sm.m_used] = mn
        body.add_op(op.clone(value_mapper=mapper))
    p = mapper[sm.exp_in_sum]
    alpha_diff = arith.SubfOp(m_acc, mn)
    alpha = math.ExpOp(alpha_diff.result)
    alpha.result.name_hint = "alpha"
    scaled = arith.MulfOp(l_acc, alpha.result)
    l_new = arith.AddfOp(scaled.result, p)
    body.add_ops([alpha_diff, alpha, scaled, l_new])
    if ws is not None:
        _carry_weighted_sum(sm, ws, new, alpha.result, p, rewriter)
    body.add_op(loop.YieldOp(mn, l_new.result))
    rewriter.insert(new, InsertPoint.before(mx if before_max else sl))
    if not before_max and sm.m_used is not mx.res[0]:  # the clamp now follows the merged loop
        clamp = sm.m_used.owner
        clamp.detach()
        rewriter.insert(clamp, InsertPoint.after(new))
    new.res[0].name_hint, new.res[1].name_hint = mx.res[0].name_hint, sl.res[0].name_hint
    rewriter.replace(sl, [], [new.res[1]])
    rewriter.replace(mx, [], [new.res[0]])
    for clamp in {u.operation for r in new.res for u in r.uses}:  # the safe softmax's, now unused
        if isinstance(clamp, arith.MaximumfOp) and not clamp.result.uses:
            rewriter.erase(clamp)


def _carry_weighted_sum(sm: Softmax, ws: WeightedSum, new: loop.ForOp, alpha: SSAValue,
                        p: SSAValue, rewriter: PatternRewriter) -> None:
    """The private output row: initialized before `new`, rescaled and accumulated in its body,
    divided by l where the weighted-sum loop was."""
    pv = ws.pv
    f32 = Float32Type()
    acc_t = pv.res[0].type
    extents = [f.extent for f in ws.nest]
    names = [f.iv.name_hint for f in ws.nest]
    buf = loop.PrivateOp(MemRefType(f32, extents))
    buf.result.name_hint = "acc"
    zero = arith.ConstantOp(FloatAttr(0.0, f32))
    init_loops, init_body = _free_nest(extents, names)
    init_body.insert_op_before(loop.StoreOp(zero.result, buf.result, [f.iv for f in init_loops]),
                               init_body.last_op)
    rewriter.insert([zero, buf, init_loops[0]], InsertPoint.before(sm.max_loop))
    # in the merged loop: acc[j] = acc[j] * alpha + p * W(s, j)
    upd_loops, upd_body = _free_nest(extents, names)
    mapper: dict[SSAValue, SSAValue] = {pv.iv: new.iv}
    mapper.update({f.iv: u.iv for f, u in zip(ws.nest, upd_loops)})
    ops: list[Operation] = [o.clone(value_mapper=mapper) for o in _slice(ws.weight, pv) or []]
    w = mapper.get(ws.weight, ws.weight)
    if w.type != f32:
        ops.append(ext := arith.ExtFOp(w, f32))
        w = ext.result
    idx = [u.iv for u in upd_loops]
    old = loop.LoadOp(buf.result, idx)
    term = arith.MulfOp(p, w) if ws.prob_first else arith.MulfOp(w, p)
    scaled = arith.MulfOp(old.result, alpha)
    total = arith.AddfOp(scaled.result, term.result)
    ops += [old, term, scaled, total, loop.StoreOp(total.result, buf.result, idx)]
    for o in ops:
        upd_body.insert_op_before(o, upd_body.last_op)
    new.body.block.add_op(upd_loops[0])
    # where the weighted sum was: acc[j] / l (rounded to the accumulator's type)
    at = InsertPoint.before(pv)
    read = loop.LoadOp(buf.result, [f.iv for f in ws.nest])
    result: list[Operation] = [read]
    l = sm.sum_loop.res[0]
    if ws.l_used is not l:  # the clamp beside its one use: nothing else reads l (key_slices)
        result.append(ws.l_used.owner.clone())
        l = result[-1].results[0]
    div = arith.DivfOp(read.result, l)
    result.append(div)
    if acc_t != f32:
        result.append(arith.TruncFOp(div.result, acc_t))
    rewriter.insert(result, at)
    rewriter.replace(pv, [], [result[-1].results[0]])


def _fits_before_max(sm: Softmax, ws: WeightedSum | None) -> bool:
    """Whether everything the merged loop will use (the sum loop's values but m, the weights'
    values but the loop indices) exists before the max loop."""
    values = set(_outside_values(sm.sum_loop))
    if ws is not None:
        inner = {ws.pv.iv, *(f.iv for f in ws.nest)}
        values |= {v for o in _slice(ws.weight, ws.pv) or [] for v in o.operands
                   if not ws.pv.is_ancestor(v.owner) and v not in inner}
    return all(v in sm.m_values or _defined_before(v, sm.max_loop) for v in values)


def _placeable(sm: Softmax, ws: WeightedSum | None) -> bool:
    """The merged loop goes before the max loop, or else before the sum loop when nothing
    between the two uses m."""
    if _fits_before_max(sm, ws):
        return True
    block = sm.max_loop.parent_block()
    between = False
    for op in block.ops:
        if op is sm.sum_loop:
            return True
        if between and op is not sm.m_used.owner \
                and any(v in sm.m_values for o in op.walk() for v in o.operands):
            return False
        between = between or op is sm.max_loop
    return False


def _program_inputs(kernel: loop.KernelOp) -> set[SSAValue]:
    """The kernel's arguments that every launch passes a function argument (a program input):
    buffers no kernel computes."""
    module = kernel.parent_op()
    launches = [o for o in module.walk() if isinstance(o, loop.LaunchOp)
                and o.callee.root_reference.data == kernel.sym_name.data] if module else []
    if not launches:
        return set()
    return {arg for k, arg in enumerate(kernel.args)
            if all(isinstance(la.args[k], BlockArgument)
                   and isinstance(la.args[k].owner.parent_op(), func.FuncOp) for la in launches)}


def _scores_are_inputs(sm: Softmax, inputs: set[SSAValue]) -> bool:
    """The scores read only program inputs: no q·k for a second loop-fuse to bring into the
    flash loop, which only a pointwise plan would then take (`softmax(x[8, 4096]) @ v`: 8
    blocks walking 4096 keys, 2153x its roofline by the model); apart, the weighted sum is a
    matmul with its own plans."""
    loads, todo, seen = [], [sm.x_in_sum], set()
    while todo:
        v = todo.pop()
        if v in seen or not isinstance(v, OpResult) or not sm.sum_loop.is_ancestor(v.owner):
            continue
        seen.add(v)
        if v.owner.regions:  # computed by a loop of its own (q·k already here)
            return False
        if isinstance(v.owner, loop.LoadOp):
            loads.append(v.owner)
        todo.extend(v.owner.operands)
    return bool(loads) and all(ld.buffer in inputs for ld in loads)


def _find(block: Block, min_extent: int, flash: bool, inputs: set[SSAValue] = frozenset()):
    reduces = [o for o in block.ops if isinstance(o, loop.ForOp)
               and o.kind.data == loop.LoopKind.REDUCE]
    for i, mx in enumerate(reduces):
        for sl in reduces[i + 1 :]:
            sm = match_softmax(mx, sl)
            if sm is None:
                continue
            ws = None
            if flash:
                after = False
                for op in block.ops:
                    if op is sl:
                        after = True
                    elif after and isinstance(op, loop.ForOp) \
                            and (ws := match_weighted_sum(sm, op)) is not None:
                        break
            if ws is not None and (not _placeable(sm, ws) or _scores_are_inputs(sm, inputs)):
                ws = None
            if ws is None and (mx.extent < min_extent or not _placeable(sm, None)):
                continue
            return sm, ws
    return None


class OnlineSoftmax(RewritePattern):
    def __init__(self, min_extent: int, flash: bool):
        self.min_extent, self.flash = min_extent, flash

    @op_type_rewrite_pattern
    def match_and_rewrite(self, kernel: loop.KernelOp, rewriter: PatternRewriter) -> None:
        done = True
        inputs = _program_inputs(kernel)
        while done:
            done = False
            blocks = [kernel.body.block] + [
                f.body.block for f in kernel.walk() if isinstance(f, loop.ForOp)
            ]
            for block in blocks:
                found = _find(block, self.min_extent, self.flash, inputs)
                if found is not None:
                    rewrite(*found, rewriter)
                    done = True
                    break


@dataclass(frozen=True)
class LoopOnlineSoftmaxPass(ModulePass):
    """Softmax's max and sum of exp as one online pass (rows of at least `min-extent`), and
    attention's weighted sum carried in the same pass with a private output row (`flash`)."""

    name = "loop-online-softmax"

    min_extent: int = 1024
    flash: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier([OnlineSoftmax(self.min_extent, self.flash)],
                                        dce_enabled=False),
            apply_recursively=False,
        ).rewrite_module(op)
