"""loop-split-reductions: a long reduction over few outputs runs on many blocks, in two kernels.

`x.sum()` over 4M floats is one row: the tile classes give a row to one block, so one SM of 132
walks 16 MB (the model, H100: 1581 us against a roofline of 7.3). The kernel becomes a kernel
of S partial reductions of E / S elements each (S rows more for the planner to spread over the
SMs) and the kernel itself, reducing the S partials before its epilogue:

    loop.kernel @sum(%x, %out) {                      loop.kernel @sum_part(%x, %out, %part) {
      %t = loop.for %r = 0 to E reduce                  loop.for %s = 0 to S free {
             iter(%a = %init) { .. %x[%r] .. }            %p = loop.for %r = 0 to E/S reduce iter(%a = %id)
      EPILOGUE(%t) }                            ->               { .. %x[%s * E/S + %r] .. }
                                                          loop.store %p, %part[%s] } }
                                                      loop.kernel @sum(%x, %out, %part) {
                                                        %t = loop.for %s = 0 to S reduce iter(%a = %init)
                                                               { combine(%a, %part[%s]) }
                                                        EPILOGUE(%t) }

A kernel qualifies when it holds one reduce loop, 0 to E by 1, under a perfect nest of free
loops (its outputs; at most MAX_OUTPUTS of them, else the outputs already fill the SMs), with
float accumulators each combined by addf, maximumf or minimumf with a value that uses none of
them (cosine_similarity's two sums of squares), argmax's (value, index) pair (nest.arg_pair) or an online softmax's (m, l) pair
(nest.online_pair), and an induction variable used only as an index of loads (and argmax's
index, which becomes the slice's first plus it). The kernel reducing the partials is the
loop's own body again over the slices, each partial where the value it stands for was
computed: argmax's partials, taken in slice order by the same strictly-better-or-NaN select,
keep PyTorch's first index. An (m, l) pair's partials combine as m' = max(m, m_s), l' = l
exp(m - m') + l_s exp(m_s - m'). The partials start from the identity (0 for a sum; max, min
and the pairs start from the init, which they absorb), so the init is counted once. S is the
largest power of two that leaves at least MIN_SLICE elements a slice and at most MAX_ROWS rows
of partials; below 4 slices nothing changes. The E mod S elements past the whole slices (a
prime E: 4000037.sum() was one block's, 1581 us against a roofline of 7.3) are the original
loop's again, after the partials and from their total, in the kernel reducing them: fewer
than S elements, in slice order (argmax's first index holds). A row's epilogue loops split
only over whole slices (`_sliceable`). The sum's order changes (slices,
then their sum): fp32 rounding, not a different result.

The epilogue may be scalar, or hold loops over the row (softmax's normalization, RMSNorm's
scaling: free, loop-free, plain indices, a multiple of S long, no store after the reduction
outside them, no load of what the kernel stores): then the
row's code goes under a free loop over the S slices, each iteration reducing the partials
(few, cache-resident) and running its slice of those loops, so the epilogue is not one block's
either (the model, softmax of [2, 152064]: 123 -> 9.5 us).

A column reduction (`x.sum(0)`: every load the reduce loop moves reads its row at the
innermost output's coordinate) splits whatever its outputs, 6 MB read or more, up to
COLUMN_OUTPUTS: a row reduction's threads sharing a column each read a sector for one
element. Its slices are the fewest dividing E of at most 32 rows, so a thread walks its slice
unrolled (the planner's pointwise plan, a column a thread); the slice loop goes outside the
outputs and the partials are [S, outputs], so its stores are coalesced too (the model, H100:
[4096, 4096].mean(0) 183 -> 32 us). It has no epilogue loops.

keepdim's kept dims, loops of one iteration after the reductions, are inlined first
(`cutting.inline_unit_loop`): a store of the result, as without keepdim.

A row of dependent reductions (logsumexp's max, then its sum of exp(x - max); a mean, then
the squares around it), each of which qualifies, is first split in sequence (`_fission`): a
kernel per reduction but the last stores its result, the later ones load it; each then splits
as above (2 launches a reduction), where there are at most MAX_OUTPUTS rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, memref
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import FloatAttr, IntAttr, MemRefType, ModuleOp, StringAttr
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from deplo import hardware as hw
from deplo.analysis import nest
from deplo.analysis.cost_model import SPECIAL
from deplo.dialects import loop
from deplo.passes.loop.cutting import (
    clear_after,
    flatten_free_nest,
    fresh_name,
    index_only,
    inline_unit_loop,
    insert_at_end,
    is_unit,
    launched_once,
    perfect_free_nest,
    plain_free_path,
    slice_indices,
)
from deplo.passes.tile.planner import ROW_THREADS, row_vector

MAX_OUTPUTS = 64  # outputs that leave most of 132 SMs idle when each is one block's row
MAX_ROWS = 4 * 132  # rows of partials: four blocks an SM at most
MIN_SLICE = 2048  # elements a slice: a block's 256 threads, 8 each
COMBINES = (arith.AddfOp, arith.MaximumfOp, arith.MinimumfOp)
# a column reduction (below): its slices are short enough for a thread to walk unrolled, long
# enough that the partials are a small share of the input; no split where the outputs alone
# give every SM's threads one (132 SMs x 1024), nor below 6 MB read or 4 slices, where the
# one kernel's extra L2 traffic costs less than the second launch (the model, H100:
# [1024, 1024] 8.0 us so, 10.9 split; [2048, 1024] 8 MB, 0.78x split)
COLUMN_SLICE = (4, 32)
COLUMN_OUTPUTS = 132 * 1024
COLUMN_BYTES = 6 << 20
COLUMN_SLICES = 4
SECTOR_ELEMENTS = 8  # outputs a 32-byte sector holds (fp32): fewer read a row near contiguously


def _reduce_loops(kernel: loop.KernelOp) -> list[loop.ForOp]:
    return [o for o in kernel.walk() if isinstance(o, loop.ForOp)
            and o.kind.data == loop.LoopKind.REDUCE]


def _free_path(red: loop.ForOp, kernel: loop.KernelOp) -> list[loop.ForOp] | None:
    """The free loops around `red`, outermost first, when each is plain (0 to N by 1), the only
    loop of its enclosing block and its last op (no epilogue outside the innermost); else
    None."""
    path = plain_free_path(red, kernel)
    for lp in path or []:
        if sum(isinstance(o, loop.ForOp) for o in lp.parent_block().ops) != 1:
            return None
        if lp.next_op is not None and not isinstance(lp.next_op, loop.YieldOp):
            return None
    return path


def _combines(red: loop.ForOp) -> list[Operation] | None:
    """Per accumulator, the op that folds one value into it (its only use), when each value is
    computed from none of them (cosine_similarity's two sums of squares in one loop)."""
    y = red.body.block.last_op
    if not isinstance(y, loop.YieldOp) or not red.accs:
        return None
    ops = []
    for k, acc in enumerate(red.accs):
        if not acc.has_one_use():
            return None
        (use,) = acc.uses
        op = use.operation
        if not isinstance(op, COMBINES) or y.operands[k] is not op.results[0]:
            return None
        other = op.operands[1 - use.index]
        if other in red.accs or nest.depends_on(other, set(red.accs), red.body.block):
            return None
        ops.append(op)
    return ops


def _candidates(red: loop.ForOp) -> list[SSAValue] | None:
    """What each accumulator takes in from an iteration, the values a slice's partials stand
    for in the kernel reducing them: each combine's other operand, argmax's (argmin's) element
    and its index (nest.arg_pair: strictly better, or NaN, replaces, so partials taken in slice
    order keep the first extreme), or an online softmax's element; None if none of these."""
    if (combines := _combines(red)) is not None:
        return [op.operands[1 - next(iter(acc.uses)).index]
                for op, acc in zip(combines, red.accs)]
    if nest.arg_pair(red) is not None:
        return [sel.owner.lhs for sel in red.body.block.last_op.operands]
    if nest.online_pair(red):
        upd = red.body.block.last_op.operands[0].owner
        return [upd.rhs if upd.lhs is red.accs[0] else upd.lhs]
    return None


def _online_combine(over: loop.ForOp, loads: list[loop.LoadOp]) -> None:
    """The body folding a slice's online softmax partials (m_s, l_s) into (m, l): m' = max(m,
    m_s), l' = l exp(m - m') + l_s exp(m_s - m'). A slice of -inf only has l_s = 0."""
    m, l_ = over.accs
    ms, ls = (ld.result for ld in loads)
    mn = arith.MaximumfOp(m, ms)
    da, db = arith.SubfOp(m, mn.result), arith.SubfOp(ms, mn.result)
    ea, eb = xmath.ExpOp(da.result), xmath.ExpOp(db.result)
    pa, pb = arith.MulfOp(l_, ea.result), arith.MulfOp(ls, eb.result)
    total = arith.AddfOp(pa.result, pb.result)
    mn.result.name_hint = "m_new"
    over.body.block.add_ops([mn, da, db, ea, eb, pa, pb, total,
                             loop.YieldOp(mn.result, total.result)])


def _feeds(values: list[SSAValue], block) -> set[Operation]:
    """The ops of `block` the values are computed by, transitively (the values' own included)."""
    out: set[Operation] = set()
    todo = [v.owner for v in values]
    while todo:
        op = todo.pop()
        if isinstance(op, Operation) and op.parent_block() is block and op not in out:
            out.add(op)
            todo += [o.owner for o in op.operands]
    return out


def _slices(extent: int, outputs: int, exact: bool) -> int:
    """S; `exact`: dividing E (a row with epilogue loops splits them over whole slices)."""
    s = 1
    while extent // (2 * s) >= MIN_SLICE and outputs * 2 * s <= MAX_ROWS \
            and (not exact or extent % (2 * s) == 0):
        s *= 2
    return s


def _column_slices(extent: int, outputs: int, element_bytes: int) -> int:
    """The fewest slices (a divisor of the extent) of at most COLUMN_SLICE[1] rows; 1 where the
    outputs fill the GPU, the input is small or no divisor leaves COLUMN_SLICE[0] rows a
    slice."""
    if outputs >= COLUMN_OUTPUTS or extent * outputs * element_bytes < COLUMN_BYTES:
        return 1
    s = next(s for s in range(1, extent + 1) if extent % s == 0 and extent // s <= COLUMN_SLICE[1])
    return s if extent // s >= COLUMN_SLICE[0] and s >= COLUMN_SLICES else 1


def _columnar(red: loop.ForOp, path: list[loop.ForOp]) -> int:
    """nest.column_reads over the innermost output, where it spans a sector or more (fewer
    outputs read a row near contiguously: a row split)."""
    if not path or path[-1].ub.data < SECTOR_ELEMENTS:
        return 0
    return nest.column_reads(red, path[-1].iv)


def _identity(red: loop.ForOp, before: Operation) -> list[SSAValue]:
    """Where a slice's partials start: 0 for a sum (the init is counted once, by the kernel
    reducing the partials); max, min and the pairs absorb their init."""
    combines = _combines(red) or [None] * len(red.inits)
    out = []
    for init, op in zip(red.inits, combines):
        if isinstance(op, arith.AddfOp):
            zero = arith.ConstantOp(FloatAttr(0.0, init.type))
            Rewriter.insert_op(zero, InsertPoint.before(before))
            init = zero.result
        out.append(init)
    return out


def _sliceable(red: loop.ForOp, epilogue: list[loop.ForOp], slices: int) -> bool:
    """The row's epilogue can run a slice a block: after the reduction, loops over the row
    (softmax's normalization, RMSNorm's scaling; a perfect nest, a layer_norm over [64, 32,
    32], flattened first) of plain indices, loop-free, each a multiple of the slices long; no
    store after the reduction outside them (each slice's block would store it again), and no load of a buffer the kernel stores (one loop writing what a later one
    reads elsewhere: another slice's block would write it)."""
    after = False
    for op in red.parent_block().ops:
        after = after or op is red
        if isinstance(op, loop.StoreOp) and after:
            return False
    kernel = red.parent_op()
    while not isinstance(kernel, loop.KernelOp):
        kernel = kernel.parent_op()
    stored = nest.stored_buffers(kernel)
    if any(isinstance(o, loop.LoadOp) and o.buffer in stored for o in kernel.walk()):
        return False  # a slice would read what another slice's block writes
    return all(
        lp.kind.data == loop.LoopKind.FREE and lp.lb.data == 0 and lp.step.data == 1
        and math.prod(n.ub.data for n in nest) % slices == 0 and red.is_before_in_block(lp)
        and all(index_only(n.iv) for n in nest)
        and not any(isinstance(o, loop.ForOp) for o in nest[-1].body.walk() if o is not nest[-1])
        for lp in epilogue for nest in [perfect_free_nest(lp)])


def _slice_epilogue(row, epilogue: list[loop.ForOp], slices: int) -> None:
    """The row's code under a free loop over the slices: each slice's block reduces the
    partials (few, cache-resident) and runs its slice of the epilogue loops."""
    s_loop = loop.ForOp(0, slices, loop.LoopKind.FREE)
    s_loop.iv.name_hint = "s"
    end = row.last_op if isinstance(row.last_op, loop.YieldOp) else None
    for op in [o for o in row.ops if o is not end]:
        op.detach()
        s_loop.body.block.add_op(op)
    s_loop.body.block.add_op(loop.YieldOp())
    insert_at_end(row, [s_loop])
    for lp in epilogue:
        chunk = lp.ub.data // slices
        lp.ub = IntAttr(chunk)
        slice_indices(lp, s_loop.iv, chunk)


def _partial_kernel(kernel: loop.KernelOp, slices: int, parts: list[MemRefType],
                    columnar: bool) -> loop.KernelOp:
    """@name_part: the kernel's clone whose reduce loop walks one slice a new free loop names,
    storing its partials instead of running the epilogue. The slice loop is the innermost free
    loop (a row's slices on their own rows of blocks), or the outermost for a column reduction
    (the output columns stay the innermost, on consecutive threads)."""
    part = kernel.clone()
    part.properties["sym_name"] = StringAttr(fresh_name(kernel, kernel.sym_name.data + "_part"))
    bufs = [part.body.block.insert_arg(t, len(part.body.block.args)) for t in parts]
    for b in bufs:
        b.name_hint = "part"
    (red,) = _reduce_loops(part)
    path = _free_path(red, part)
    assert path is not None
    clear_after(red)  # the epilogue goes
    chunk = red.ub.data // slices
    s_loop = loop.ForOp(0, slices, loop.LoopKind.FREE)
    s_loop.iv.name_hint = "s"
    wrapped = path[0] if columnar else red
    Rewriter.insert_op(s_loop, InsertPoint.before(wrapped))
    wrapped.detach()
    s_loop.body.block.add_ops([wrapped, loop.YieldOp()])
    red.ub = IntAttr(chunk)
    red.operands = _identity(red, s_loop)
    slice_indices(red, s_loop.iv, chunk)
    insert_at_end(red.parent_block(),
                  [loop.StoreOp(r, b, _part_at([lp.iv for lp in path], s_loop.iv, columnar))
                   for r, b in zip(red.res, bufs)])
    return part


def _part_at(outputs: list, s, columnar: bool) -> list:
    """Where a partial lives (its coordinates, or the partials' shape from the extents):
    [outputs..., slice], or [slice, outputs...] for columns."""
    return [s, *outputs] if columnar else [*outputs, s]


def _splittable(red: loop.ForOp, kernel: loop.KernelOp, weigh: bool = True
                ) -> tuple[list[loop.ForOp], int, bool] | None:
    """(the free loops around `red`, its slices, whether it reduces columns) when the reduce
    loop can be split and (`weigh`: not yet decided, as for a row already cut in fission's
    kernels) a row is faster split."""
    path = _free_path(red, kernel)
    takes = _candidates(red)
    if path is None or takes is None or len(set(takes)) != len(takes) \
            or red.lb.data or red.step.data != 1 \
            or not all(isinstance(u.operation, loop.LoadOp) and u.index >= 1
                       or isinstance(u.operation, arith.IndexCastOp) and len(takes) == 2
                       for u in red.iv.uses):
        return None
    outputs = math.prod(lp.ub.data for lp in path)
    if element_bytes := _columnar(red, path):
        slices = _column_slices(red.ub.data, outputs, element_bytes)
        if slices > 1:
            return path, slices, True
    row_loops = any(isinstance(o, loop.ForOp) and o.kind.data != loop.LoopKind.REDUCE
                    and not is_unit(o) for o in red.parent_block().ops)
    slices = _slices(red.ub.data, outputs, exact=row_loops)
    if outputs > MAX_OUTPUTS or slices < 4 or weigh and not _one_block_slower(red, kernel, outputs):
        return None
    return path, slices, False


def _one_block_slower(red: loop.ForOp, kernel: loop.KernelOp, outputs: int,
                      gpu: hw.Gpu = hw.H100_SXM) -> bool:
    """Whether a row on one block takes longer than the split, by the cost model's rules: the
    row's bytes at what one SM streams with the row plan's 256 threads (16-byte steps where its
    loads walk their innermost dim, hardware.Gpu.stream_bw), later passes (a further
    reduction, the epilogue's loops over the row) from L2, or its special functions on one
    SM's SFUs where they take longer (softmax's exps); against the split's 2 kernels a
    reduction for 1 and every pass's bytes over DRAM bandwidth. The model agrees:
    [64, 65536].sum(1) stays one kernel (9.7 us, 12.1 split) and [8, 65536] splits (7.3
    against 9.7); logsumexp of 16 rows of 65536 stays one (9.7, 16.1 split); a layer_norm
    over (16, 64, 64) of 2 rows splits."""
    reds = _reduce_loops(kernel)
    loads = {ld.buffer: ld for ld in red.body.walk()
             if isinstance(ld, loop.LoadOp) and red.iv in ld.indices}
    sizes = [max(1, ld.result.type.bitwidth // 8) for ld in loads.values()]
    if not sizes:
        return True
    extent, row_bytes = red.ub.data, red.ub.data * sum(sizes)
    walks = all((d := nest.iv_step(ld, red.iv)) and not any(d[:-1]) and d[-1] == 1
                for ld in loads.values())
    lanes = row_vector(extent, min(sizes) if walks else 0)  # (the row plan's vector)
    rows = reds[0].parent_block()
    passes = len(reds) + any(isinstance(o, loop.ForOp) and o not in reds and not is_unit(o)
                             for o in rows.ops)
    stream = gpu.stream_bw(ROW_THREADS // hw.WARP, hw.WARP * lanes * min(sizes))
    # the row's special functions (softmax's exp, twice) on one SM's SFUs: a long row of few
    # outputs is bound by them, not its bytes (the model, [16, 32768] softmax: sfu)
    specials = extent * sum(isinstance(o, SPECIAL) and o.parent_block() is not rows
                            for o in rows.walk()) / (gpu.sfu_per_sm * gpu.clock_ghz * 1e9
                                                     * gpu.pipe_rate(ROW_THREADS // hw.WARP))
    # the first pass from DRAM, the others from L2 (the cost model's: a row read again is
    # cached); the split: 2 kernels a reduction for 1, and every pass's bytes over DRAM
    one_block = max(specials, row_bytes / stream + (passes - 1) * row_bytes / (
        stream * gpu.dram_latency / gpu.l2_latency))
    split = (2 * len(reds) - 1) * (gpu.launch_us + gpu.ramp_us) * 1e-6 \
        + passes * outputs * row_bytes / (gpu.dram_bw * gpu.dram_efficiency)
    return split < one_block


def _fission(kernel: loop.KernelOp, launch: loop.LaunchOp) -> list[tuple[loop.KernelOp, loop.LaunchOp]]:
    """A row of dependent reductions (logsumexp's max, then its sum of exp(x - max)) in one
    kernel a reduction: each but the last stores its result in a buffer of its own, which the
    later ones load instead of computing it. [] when the row is not such a sequence of
    reductions that each split."""
    reds = _reduce_loops(kernel)
    block = reds[0].parent_block() if reds else None
    if len(reds) < 2 or any(r.parent_block() is not block for r in reds) \
            or any(_splittable(r, kernel) is None for r in reds) \
            or math.prod(lp.ub.data for lp in _free_path(reds[0], kernel)) > MAX_OUTPUTS \
            or any(isinstance(o, loop.ForOp) and o not in reds and o.is_before_in_block(reds[-1])
                   for o in block.ops):
        return []
    epilogue = _epilogue(reds[-1], reds)
    _, slices, columnar = _splittable(reds[-1], kernel)
    if epilogue and (columnar or not _sliceable(reds[-1], epilogue, slices)):
        return []  # the last reduction would stay one block's row: no faster for the cut
    path = _free_path(reds[0], kernel)
    shape = [lp.ub.data for lp in path]
    types = [[MemRefType(r.type, shape) for r in red.res] for red in reds[:-1]]
    allocs = [[memref.AllocOp.get(t.element_type, shape=shape) for t in ts] for ts in types]
    for k, stage in enumerate(allocs):
        for a in stage:
            a.memref.name_hint = f"{kernel.sym_name.data}_{k + 1}"
            Rewriter.insert_op(a, InsertPoint.before(launch))
    args = [*launch.args, *(a.memref for stage in allocs for a in stage)]
    for ts in types:
        for t in ts:
            kernel.body.block.insert_arg(t, len(kernel.body.block.args)).name_hint = "red"
    out = []
    for k in range(len(reds)):
        last = k == len(reds) - 1
        stage = kernel if last else kernel.clone()
        if not last:
            stage.properties["sym_name"] = StringAttr(
                fresh_name(kernel, f"{kernel.sym_name.data}_{k + 1}"))
        sreds = _reduce_loops(stage)
        bufs = stage.body.block.args[len(launch.args):]
        ivs = [lp.iv for lp in _free_path(sreds[0], stage)]
        n = 0
        for red in sreds[:k]:  # earlier reductions: their stored results
            loads = [loop.LoadOp(bufs[n + e], ivs) for e in range(len(red.res))]
            n += len(red.res)
            Rewriter.insert_op(loads, InsertPoint.before(red))
            for r, ld in zip(red.res, loads):
                r.replace_all_uses_with(ld.result)
            Rewriter.erase_op(red)
        if not last:  # this one's result stored, the rest of the row gone
            red = sreds[k]
            row = red.parent_block()
            clear_after(red)
            insert_at_end(row, [loop.StoreOp(r, bufs[n + e], ivs) for e, r in enumerate(red.res)])
            Rewriter.insert_op(stage, InsertPoint.before(kernel))
            new = loop.LaunchOp(stage.sym_name.data, args)
            Rewriter.insert_op(new, InsertPoint.before(launch))
        else:
            new = loop.LaunchOp(kernel.sym_name.data, args)
            Rewriter.replace_op(launch, new)
        out.append((stage, new))
    return out


def _epilogue(red: loop.ForOp, reds: list[loop.ForOp]) -> list[loop.ForOp]:
    """The loops beside the reductions in `red`'s row; none when each is keepdim's kept dim (of
    one iteration, after them), which is inlined: a store of the result, as without keepdim."""
    loops = [o for o in red.parent_block().ops if isinstance(o, loop.ForOp) and o not in reds]
    if not all(is_unit(lp) and red.is_before_in_block(lp) for lp in loops):
        return loops
    for lp in loops:
        inline_unit_loop(lp)
    return []


def _split(kernel: loop.KernelOp, launch: loop.LaunchOp, weigh: bool = True) -> bool:
    reds = _reduce_loops(kernel)
    if len(reds) != 1:
        return any([_split(k, ln, weigh=False) for k, ln in _fission(kernel, launch)])
    red = reds[0]
    found = _splittable(red, kernel, weigh)
    if found is None:
        return False
    path, slices, columnar = found
    epilogue = _epilogue(red, [red])
    if epilogue and (columnar or not _sliceable(red, epilogue, slices)):
        return False
    takes = _candidates(red)
    parts = [MemRefType(a.type, _part_at([lp.ub.data for lp in path], slices, columnar))
             for a in red.accs]
    part_kernel = _partial_kernel(kernel, slices, parts, columnar)
    Rewriter.insert_op(part_kernel, InsertPoint.before(kernel))
    # the kernel reduces the partials: the loop's body again, each partial where the value it
    # stands for was computed
    bufs = [kernel.body.block.insert_arg(t, len(kernel.body.block.args)) for t in parts]
    over = loop.ForOp(0, slices, loop.LoopKind.REDUCE, list(red.inits))
    over.iv.name_hint = "s"
    loads = [loop.LoadOp(b, _part_at([lp.iv for lp in path], over.iv, columnar)) for b in bufs]
    vmap: dict[SSAValue, SSAValue] = {t: ld.result for t, ld in zip(takes, loads)}
    for old, new in zip(red.accs, over.accs):
        new.name_hint = old.name_hint
        vmap[old] = new
    over.body.block.add_ops(loads)
    if nest.online_pair(red):
        _online_combine(over, loads)
    else:
        skip = _feeds(takes, red.body.block)
        for op in red.body.block.ops:
            if op not in skip:
                over.body.block.add_op(op.clone(value_mapper=vmap))
    Rewriter.insert_op(over, InsertPoint.before(red))
    if tail := red.ub.data % slices:  # the elements past whole slices, after their partials
        red.operands = list(over.res)
        slice_indices(red, None, 0, start=red.ub.data - tail)
        red.ub = IntAttr(tail)
    else:
        for old, new in zip(red.res, over.res):
            old.replace_all_uses_with(new)
        Rewriter.erase_op(red)
    if epilogue:
        _slice_epilogue(path[-1].body.block if path else kernel.body.block,
                        [flatten_free_nest(lp) for lp in epilogue], slices)
    # the host: the partials' buffers, the partial launch, then the kernel with them
    allocs = [memref.AllocOp.get(t.element_type, shape=t.get_shape()) for t in parts]
    for b, alloc in zip(bufs, allocs):
        b.name_hint = "part"
        alloc.memref.name_hint = part_kernel.sym_name.data
        Rewriter.insert_op(alloc, InsertPoint.before(launch))
    args = [*launch.args, *(a.memref for a in allocs)]
    Rewriter.insert_op(loop.LaunchOp(part_kernel.sym_name.data, args), InsertPoint.before(launch))
    Rewriter.replace_op(launch, loop.LaunchOp(kernel.sym_name.data, args))
    return True


@dataclass(frozen=True)
class LoopSplitReductionsPass(ModulePass):
    """A long reduction over few outputs: partials over slices on their own rows, then the
    kernel reduces the partials."""

    name = "loop-split-reductions"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel, launch in launched_once(op):
            _split(kernel, launch)
