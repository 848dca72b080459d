"""Split-KV (the attention plan's `key_splits` N > 1), shared by tile-attention-mma and the rows
whose lanes own keys: a row's keys in N slices of whole steps on block.z, each slice's
unnormalized (O, m, l) stored to a scratch buffer the host allocates, and the last slice of
the row's block to arrive (`tile.split_last`, one counter a block of the x and y axes) reading
all N, in slice order, and finishing the row:

    M = max_s m_s      w_s = exp(m_s - M)      L = sum_s l_s w_s      O = sum_s O_s w_s

A slice past a causal stop runs no step: m keeps its init (the lowest float), l = 0, weight 0.
Keys a slice masks for some of its rows (a score of -big) also weigh 0 next to a slice where
the row has a real key.
The sums read every slice from the buffer in slice order, so the result does not depend on
which block arrives last. One launch; the combine costs a store and N reads of each row's
D + 2 floats, which the model weighs against the shorter key loop (planner: `_key_splits`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import Float32Type, IntAttr, MemRefType
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from deplo.dialects import loop, tile
from deplo.passes.tile import rewrite as rw
from deplo.passes.tile.kernel_pass import PassOptionError


def around_slices(ops: list[Operation], splits: int, step: str) -> tile.ForOp:
    """`ops` (one block's row, consecutive) moved into a new block.z loop of `splits`. A serial
    loop around them would arrive at the slices' counters more than once: an error of `step`."""
    if any(isinstance(lp, tile.ForOp) and lp.binding == tile.Bind.SERIAL and lp.extent != 1
           for lp in tile.enclosing_loops(ops[0])):
        raise PassOptionError(f"{step}: key_splits {splits}: a serial loop around the query "
                              "rows would arrive at the slices' counters more than once (map "
                              "it to the grid)")
    split = rw.thread_loop(splits, tile.Bind.BLOCK_Z, "ks")
    Rewriter.insert_op(split, InsertPoint.before(ops[0]))
    for op in ops:
        op.detach()
        split.body.block.insert_op_before(op, split.body.block.last_op)
    return split


def slice_keys(kl: tile.ForOp, split: tile.ForOp, keys: int) -> tile.ForOp:
    """Key loop `kl` (lb 0, static ub, its step) rebuilt for the slice of block.z loop `split`:
    `span` keys (whole steps) from `base`, to the loop's stop (or the last key) less `base`;
    its body sees the global key (iv + base). Returns the new loop."""
    step, slices = kl.step.data, split.extent or 1
    span = -(-kl.ub.data // step // slices) * step
    b = Builder(InsertPoint.before(kl))
    base = rw.mul(b, split.iv, span)
    base.name_hint = "kbase"
    stop = rw.const(b, keys)  # a causal stop may pass the last key (more queries than keys)
    if kl.dyn_ub is not None:
        stop = b.insert(arith.MinSIOp(kl.dyn_ub, stop)).result
    stop = b.insert(arith.SubiOp(stop, base)).result
    uses = list(kl.iv.uses)
    key = rw.add(Builder(InsertPoint.at_start(kl.body.block)), kl.iv, base)
    for use in uses:
        use.operation.operands[use.index] = key
    kl.ub = IntAttr(span)
    return rw.bound_loop(kl, stop)


def scratch(kernel: tile.KernelOp, lanes: Operation, split: tile.ForOp,
            dims: list[int]) -> tuple[SSAValue, Callable[..., list[SSAValue]]]:
    """The slices' buffer, fp32 [slice, one dim a loop around `lanes` (blocks, rows), *dims],
    and a function from (slice, *indices in dims) to the indices of an entry."""
    around = [lp for lp in reversed(tile.enclosing_loops(lanes)) if lp is not split]
    t = MemRefType(Float32Type(), [split.extent or 1, *(lp.extent or 1 for lp in around), *dims])
    buf = rw.add_scratch(kernel, t, "slices")
    return buf, lambda s, *idx: [s, *(lp.iv for lp in around), *idx]


def weights(b: Builder, ms: list[SSAValue], ls: list[SSAValue]):
    """(M, L, the slices' weights) from the slices' m and l."""
    top = rw.tree(b, arith.MaximumfOp, ms)
    ws = [rw.exp_minus(b, m, top) for m in ms]
    return top, weighted(b, ls, ws), ws


def weighted(b: Builder, values: list[SSAValue], ws: list[SSAValue]) -> SSAValue:
    """sum_s values_s w_s."""
    return rw.tree(b, arith.AddfOp, [b.insert(arith.MulfOp(v, w)).result
                                     for v, w in zip(values, ws)])


@dataclass
class SliceRow:
    """A row a thread finishes: its m and l after the key loop, and where its entries are:
    (builder, slice, column) -> the scratch's indices."""

    m: SSAValue
    l: SSAValue
    at: Callable[[Builder, SSAValue, SSAValue], list[SSAValue]]


def combine(b: Builder, buf: SSAValue, split: tile.ForOp, width: int, rows: list[SliceRow],
            accs: list[tuple[SSAValue, int, Callable[[Builder], SSAValue]]],
            acc_guard: SSAValue | None, ml_guard: SSAValue):
    """Each accumulator (value, its row, its column) stored (where `acc_guard`), each row's m
    and l at columns width - 2 and width - 1 (where `ml_guard`: one thread a row); then the
    last slice's branch reads every slice's and rescales them. Returns (a builder inside the
    branch, each row's (M, L), the accumulators combined, the m and l stores)."""
    at = [rows[r].at(b, split.iv, col(b)) for _, r, col in accs]
    stores = [b.insert(loop.StoreOp(v, buf, idx)) for (v, _, _), idx in zip(accs, at)]
    if acc_guard is not None:
        rw.guard_stores(stores, acc_guard)
    ml = [(v, row.at(b, split.iv, rw.const(b, width - 2 + j)))
          for row in rows for j, v in enumerate((row.m, row.l))]
    ml = [b.insert(loop.StoreOp(v, buf, idx)) for v, idx in ml]  # adjacent: one guard
    rw.guard_stores(ml, ml_guard)
    tb = last_slice(b, buf, split)
    slices = [rw.const(tb, s) for s in range(split.extent or 1)]

    def read(s: SSAValue, r: int, col: SSAValue) -> SSAValue:
        return tb.insert(loop.LoadOp(buf, rows[r].at(tb, s, col))).result

    stats = [weights(tb, [read(s, r, rw.const(tb, width - 2)) for s in slices],
                     [read(s, r, rw.const(tb, width - 1)) for s in slices])
             for r in range(len(rows))]
    new = [weighted(tb, [read(s, r, col(tb)) for s in slices], stats[r][2])
           for _, r, col in accs]
    return tb, [(m, total) for m, total, _ in stats], new, ml


def last_slice(b: Builder, buf: SSAValue, split: tile.ForOp) -> Builder:
    """After the slice's stores: `scf.if` the last slice of the row's block to arrive; returns
    a builder inside it."""
    last = b.insert(tile.SplitLastOp(buf, split.iv, split.extent or 1)).result
    last.name_hint = "last"
    then = Block()
    then.add_op(scf.YieldOp())
    b.insert(scf.IfOp(last, [], Region(then)))
    return Builder(InsertPoint.before(then.last_op))
