"""Split-KV (the attention plan's `key_splits` N > 1), shared by tile-attention-mma and the rows
whose lanes own keys: a row's keys in N slices of whole steps on block.z, each slice's
unnormalized (O, m, l) stored to a scratch buffer the host allocates, and the last slice of
the row's block to arrive (`tile.split_last`, one counter a block of the x and y axes) reading
all N, in slice order, and finishing the row:

    M = max_s m_s      w_s = exp(m_s - M)      L = sum_s l_s w_s      O = sum_s O_s w_s

A slice past a causal stop runs no step: m keeps its init (the lowest float), l = 0, weight 0. Keys a slice masks for
some of its rows (a score of -big) also weigh 0 next to a slice where the row has a real key.
The sums read every slice from the buffer in slice order, so the result does not depend on
which block arrives last. One launch; the combine costs a store and N reads of each row's
D + 2 floats, which the model weighs against the shorter key loop (planner: `_key_splits`).
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.builder import Builder
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import Float32Type, IntAttr, MemRefType
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from deplo.dialects import tile
from deplo.passes.tile import rewrite as rw
from deplo.passes.tile.kernel_pass import PassOptionError


def around_slices(ops: list[Operation], splits: int, step: str) -> tile.ForOp:
    """`ops` (one block's row, consecutive) moved into a new block.z loop of `splits`. A serial
    loop around them would arrive at the slices' counters more than once: an error of `step`."""
    if any(isinstance(lp, tile.ForOp) and lp.binding == tile.Bind.SERIAL and lp.extent != 1
           for lp in rw.ancestors(ops[0])):
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
    around = [lp for lp in reversed(list(rw.ancestors(lanes)))
              if isinstance(lp, tile.ForOp) and lp is not split]
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


def last_slice(b: Builder, buf: SSAValue, split: tile.ForOp) -> Builder:
    """After the slice's stores: `scf.if` the last slice of the row's block to arrive; returns
    a builder inside it."""
    last = b.insert(tile.SplitLastOp(buf, split.iv, split.extent or 1)).result
    last.name_hint = "last"
    then = Block()
    then.add_op(scf.YieldOp())
    b.insert(scf.IfOp(last, [], Region(then)))
    return Builder(InsertPoint.before(then.last_op))
