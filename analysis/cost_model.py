"""An analytical model of sm_90 (H100 SXM; H200 as a second parameter set): from the Kernel IR
of a kernel, what it asks of each unit of the GPU, and a predicted time in microseconds.

How a kernel is read (`work`): its ops are evaluated for every thread of one block at once
(numpy arrays over the block's threads), loops not iterated but counted — each op weighs the
trip counts of the loops around it, per thread, and `scf.if` masks the threads that skip it.
Index values are exact for the first iteration of every loop and for the block in the middle
of the grid (so trip counts that depend on the block, causal key loops, are average ones; where
they depend on block.z and on x or y, split-KV's slices of a causal walk, the mean over block.z;
on an axis of two blocks, the mean of both), which is where the addresses of one warp access
are read: the 32 lanes' byte addresses give the 32-byte sectors the access touches
(coalescing) and, in shared memory, the bank conflicts (the most distinct words in one of the
32 banks). Per block it sums: global sectors (L2 traffic), shared-memory wavefronts,
warp instructions per pipe (FP32, special functions, tensor-core mma.sync), all instructions
issued, the bytes one warp has in flight, and one warp's cycles through the kernel when every
instruction waits for its operands.

How a time is predicted (`predict`): occupancy from ptxas's registers, the static shared memory
and the block size; the busiest SM's share of the blocks (waves); per unit, that SM's work
over the unit's rate; memory at the bandwidth the GPU reaches with this many SMs busy and this
many bytes in flight (Little's law: bytes in flight / latency); one warp's own dependent
latencies, issuing in order (`chain_cycles`), times the waves; the slowest unit bounds the
kernel, plus one launch. DRAM bytes are the buffers' footprints (L2 keeps what a kernel reuses,
unless the footprints exceed it; then still a block's re-reads of its own bytes, where the
resident blocks' reuse windows fit it). The model is validated on kernels whose behaviour is
known from first principles (test/python/cost_model) and refit only from GPU measurements.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace

import numpy as np
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import IntegerAttr, MemRefType, ModuleOp
from xdsl.ir import Block, BlockArgument, Operation, SSAValue

from deplo.dialects import kernel
from deplo.hardware import GPUS, H100_SXM, SECTOR, WARP, Gpu  # noqa: F401 (re-exported)

# --------------------------------------------------------------------------------------------
# what a kernel asks of the GPU


@dataclass
class Work:
    """Per block (warp instructions and bytes), and the buffers it touches."""

    load_sectors: float = 0.0  # 32-byte global sectors loads request (L1 traffic / 32)
    store_sectors: float = 0.0  # stores write through to L2
    # per data a block loads (a buffer's sectors of one iteration, however many load ops read
    # them: softmax's three passes over a row): [its distinct sectors over the block's run, the
    # sectors its loads ask L2 for when L1 keeps nothing across iterations]. The latter counts
    # an iteration's sectors once for the whole block: its warps read them at about the same
    # time, the first brings the line into L1 for the rest.
    loads: dict[tuple, list[float]] = field(default_factory=dict)
    smem_wavefronts: float = 0.0
    fp32: float = 0.0  # warp instructions on the FP32 pipe
    sfu: float = 0.0
    mma: float = 0.0  # mma.sync m16n8k16 per block
    issued: float = 0.0  # all warp instructions
    # one warp's cycles through the kernel issuing in order (chain_cycles), with every global
    # load served by L1 and by L2: predict mixes them by the share of loads L1 does not keep
    chain_l1: float = 0.0
    chain_l2: float = 0.0
    flops: float = 0.0  # floating-point operations (mma: 2 * 16 * 8 * 16)
    inflight_bytes: float = 0.0  # useful bytes of one warp's largest global access
    async_bytes: float = 0.0  # bytes one warp's cp.async copies put in flight at once (a stage)
    touched: dict[str, int] = field(default_factory=dict)  # buffer -> bytes of its memref
    written: set[str] = field(default_factory=set)  # the buffers it stores into
    # global buffer -> (distinct sectors one block reads or writes, the block ids they vary with)
    per_buffer: dict[str, tuple[float, frozenset]] = field(default_factory=dict)
    # global buffer -> per re-read of bytes the block touched before in other loops (a
    # normalization's passes over its row): (its sectors, the block's sectors from the first
    # read through it: what L2 must hold for it to hit, `_reuse_window`)
    rereads: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    # the accesses counted, in order (a dict: `_repeats` asks for one at a time)
    touches: dict[_Touch, None] = field(default_factory=dict)
    # what the last block of every `arrivals` to kernel.arrive_last does after it (a split-K
    # tile finished in the kernel): it runs after the rest, on one block a tile
    tail: Work | None = None
    arrivals: int = 1
    # a fused kernel (kernel.part): each part's work per block and grid; the fields above then
    # hold what the launch touches and writes as a whole
    parts: list[tuple[Work, tuple[int, ...]]] = field(default_factory=list)


@dataclass(frozen=True)
class _Touch:
    """One access's share of a block's footprint (`_fold_touches`)."""

    key: str  # its buffer
    store: bool  # a store's sectors go back to DRAM even where a load read them first
    covers: tuple  # (its first iteration's sectors, how its loops move them, the block ids
    # they vary with)
    loops: frozenset  # the loops it moves with
    sectors: float  # distinct sectors over the block's run


FLOAT_FP32 = (arith.AddfOp, arith.SubfOp, arith.MulfOp, arith.MaximumfOp, arith.MinimumfOp,
              arith.MaxnumfOp, arith.MinnumfOp, arith.NegfOp, arith.CmpfOp, arith.SelectOp,
              arith.ExtFOp, arith.TruncFOp)
SPECIAL = (xmath.ExpOp, xmath.RsqrtOp, xmath.SqrtOp, xmath.TanhOp, xmath.SinOp, xmath.CosOp,
           xmath.LogOp, xmath.ErfOp, xmath.PowFOp, arith.DivfOp, xmath.ExpM1Op, xmath.Log1pOp,
           xmath.Log2Op, xmath.AtanOp, xmath.SinhOp, xmath.CoshOp, xmath.TanOp, xmath.Exp2Op,
           xmath.Log10Op, xmath.AsinOp, xmath.AcosOp, xmath.AsinhOp, xmath.AcoshOp,
           xmath.AtanhOp, xmath.Atan2Op)


class _Block:
    """Index values of every thread of one block, evaluated op by op."""

    def __init__(self, func: kernel.FuncOp, grid: tuple[int, ...],
                 at: tuple[int | None, ...] = (None, None, None)):
        bx, by, bz = func.block_dims
        t = np.arange(bx * by * bz)
        self.tid = (t % bx, (t // bx) % by, t // (bx * by))
        self.threads = len(t)
        self.block = func.block_dims
        self.grid = grid  # the kernel's, or its part's
        self.at = at  # per axis, the block's index where not the middle one
        self.vals: dict[SSAValue, np.ndarray] = {}
        self.deps: dict[SSAValue, frozenset] = {}  # the loops a value varies with
        self.trips: dict[Operation, float] = {}  # per loop, its most iterations on a thread

    def get(self, v: SSAValue) -> np.ndarray:
        return self.vals.get(v, np.zeros(self.threads, np.int64))

    def eval(self, op: Operation) -> None:
        g = self.get
        if op.results:
            dep = frozenset().union(*(self.deps.get(o, frozenset()) for o in op.operands))
            for r in op.results:
                self.deps[r] = dep
        axis = {"x": 0, "y": 1, "z": 2}
        if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
            self.vals[op.result] = np.full(self.threads, op.value.value.data, np.int64)
        elif isinstance(op, kernel.ThreadIdOp):
            self.vals[op.result] = self.tid[axis[op.dimension.data.value]].astype(np.int64)
        elif isinstance(op, kernel.BlockIdOp):  # a block from the middle of the grid: its
            # trip counts are the average ones where they depend on the block (causal keys)
            a = axis[op.dimension.data.value]
            mid = self.grid[a] // 2 if self.at[a] is None else self.at[a]
            self.vals[op.result] = np.full(self.threads, mid, np.int64)
            self.deps[op.result] = frozenset({axis[op.dimension.data.value]})
        elif isinstance(op, kernel.BlockDimOp | kernel.GridDimOp):
            dims = self.block if isinstance(op, kernel.BlockDimOp) else self.grid
            self.vals[op.result] = np.full(self.threads, dims[axis[op.dimension.data.value]], np.int64)
        elif type(op) in _INT_OPS and op.results:
            with np.errstate(all="ignore"):
                out = _INT_OPS[type(op)](*(g(o) for o in op.operands), op)
            self.vals[op.results[0]] = np.asarray(out, np.int64)


def _div(a, b, op):
    return np.where(b != 0, a // np.where(b == 0, 1, b), 0)


def _cmp(a, b, op):
    pred = op.predicate.value.data
    return [a == b, a != b, a < b, a <= b, a > b, a >= b, a < b, a <= b, a > b, a >= b][pred]


_INT_OPS = {
    arith.AddiOp: lambda a, b, op: a + b,
    arith.SubiOp: lambda a, b, op: a - b,
    arith.MuliOp: lambda a, b, op: a * b,
    arith.DivSIOp: _div,
    arith.FloorDivSIOp: _div,
    arith.CeilDivSIOp: lambda a, b, op: -_div(-a, b, op),
    arith.RemSIOp: lambda a, b, op: np.where(b != 0, a % np.where(b == 0, 1, b), 0),
    arith.MinSIOp: lambda a, b, op: np.minimum(a, b),
    arith.MaxSIOp: lambda a, b, op: np.maximum(a, b),
    arith.CmpiOp: _cmp,
    arith.AndIOp: lambda a, b, op: a & b,
    arith.OrIOp: lambda a, b, op: a | b,
    arith.IndexCastOp: lambda a, op: a,
    arith.SelectOp: lambda c, a, b, op: np.where(c != 0, a, b),
}


def _is_private(v: SSAValue) -> bool:
    """A thread's own array (`memref.alloca`: registers once nvcc unrolls the loops over it)."""
    return isinstance(v.owner, memref.AllocaOp)


def _is_shared(v: SSAValue) -> bool:
    t = v.type
    return isinstance(t, MemRefType) and not (t.memory_space is None) and \
        str(t.memory_space) == "3 : i64"


def _address(blk: _Block, buf: SSAValue, indices) -> tuple[np.ndarray, int]:
    """Byte address of each thread's access (row-major strides) and the element size."""
    t = buf.type
    assert isinstance(t, MemRefType)
    shape = t.get_shape()
    eb = max(1, t.element_type.bitwidth // 8) if hasattr(t.element_type, "bitwidth") else 4
    offset = np.zeros(blk.threads, np.int64)
    for i, d in zip(indices, shape):
        offset = offset * d + blk.get(i)
    return offset * eb, eb


def _per_warp(mask: np.ndarray):
    return [slice(w, w + WARP) for w in range(0, len(mask), WARP)]


def work(func: kernel.FuncOp) -> Work:
    """What one block of `func` asks of the GPU (see the module docstring); a fused kernel's
    parts each their own (Work.parts)."""
    parts = func.parts()
    if not parts:
        return _block_work(func, func.body.block, func.grid_dims)
    return fused_work([(_block_work(func, p.body.block, p.grid_dims), p.grid_dims)
                       for p in parts])


def fused_work(parts: list[tuple[Work, tuple[int, ...]]]) -> Work:
    """The work of one launch of kernels fused as parts (their works and grids): what it
    touches and writes as a whole (L2 residency), each part's own for `predict`."""
    w = Work(parts=parts)
    for pw, _ in parts:
        w.touched |= pw.touched
        w.written |= pw.written | (pw.tail.written if pw.tail else set())
        w.load_sectors += pw.load_sectors
        w.store_sectors += pw.store_sectors
    return w


MAX_Z_SAMPLES = 8


def _block_work(func: kernel.FuncOp, body: Block, grid: tuple[int, ...]) -> Work:
    """The middle block's work, or the mean of a few blocks where the middle one is not an
    average one:
    - an x or y of 2 blocks: the middle block is the last, often a ragged tail (a row of 1027
      columns in two blocks of 1024), so the mean of both;
    - a loop whose trips depend on block.z and on x or y (split-KV's key slices, whose causal
      stop is the query block's): the mean over every block.z, as the middle slice of the
      middle query block has an almost empty causal walk."""
    w, blk = _one_block_work(func, body, grid)
    dims = tuple(grid) + (1,) * (3 - len(grid))
    middle = tuple(d // 2 for d in dims)
    z_varies = 1 < dims[2] <= MAX_Z_SAMPLES and any(  # a bound of block.z and of x or y
        {2} < (blk.deps.get(lp.lb, frozenset()) | blk.deps.get(lp.ub, frozenset())) & {0, 1, 2}
        for lp in blk.trips)
    samples = list(itertools.product(*([0, 1] if dims[a] == 2 else [middle[a]] for a in (0, 1)),
                                     range(dims[2]) if z_varies else [middle[2]]))
    if len(samples) == 1:
        return w
    return _mean_work([w if at == middle else _one_block_work(func, body, grid, at)[0]
                       for at in samples])  # (the middle block's is w)


def _mean_work(works: list[Work]) -> Work:
    """The mean of blocks' works: their counts averaged, what they touch and write joined."""
    out = replace(works[0], loads={}, per_buffer={
        key: (sum(w.per_buffer.get(key, (0.0,))[0] for w in works) / len(works), deps)
        for key, (_, deps) in works[0].per_buffer.items()}, rereads={
        key: [(sectors / len(works), window) for w in works for sectors, window in
              w.rereads.get(key, ())] for key in works[0].rereads})
    for f in fields(Work):
        vals = [getattr(w, f.name) for w in works]
        if isinstance(vals[0], float):
            setattr(out, f.name, sum(vals) / len(vals))
    for w in works:
        for key, (foot, full) in w.loads.items():
            acc = out.loads.setdefault(key, [0.0, 0.0])
            acc[0] += foot / len(works)
            acc[1] += full / len(works)
        out.touched |= w.touched
        out.written |= w.written
        out.tail = out.tail or w.tail
    return out


def _one_block_work(func: kernel.FuncOp, body: Block, grid: tuple[int, ...],
                    at: tuple[int | None, ...] = (None, None, None)) -> tuple[Work, _Block]:
    blk = _Block(func, grid, at)
    w = Work()
    inside = {id(op) for op in body.walk()}
    for a in func.body.block.args:  # the buffers it reads or writes
        if isinstance(a.type, MemRefType) and any(id(u.operation) in inside for u in a.uses):
            n = math.prod(a.type.get_shape())
            w.touched[buffer_key(a)] = n * max(1, getattr(
                a.type.element_type, "bitwidth", 32) // 8)
    _walk(body, blk, np.ones(blk.threads), np.ones(blk.threads, bool), w)
    for x in (w, w.tail):
        if x is not None:
            _fold_touches(x)
    w.chain_l1, w.chain_l2 = _chains(body, blk)
    return w, blk


def _walk(block: Block, blk: _Block, trips: np.ndarray, active: np.ndarray, w: Work) -> None:
    for op in block.ops:
        blk.eval(op)
        weight = trips * active
        warps = [weight[s] for s in _per_warp(weight)]
        per_warp = sum(float(x.max()) for x in warps if len(x))  # a warp runs if a lane does
        if isinstance(op, scf.ForOp):
            lb, ub, step = blk.get(op.lb), blk.get(op.ub), blk.get(op.step)
            n = np.maximum(0, -(-(ub - lb) // np.maximum(step, 1)))
            blk.vals[op.body.block.args[0]] = lb
            blk.deps[op.body.block.args[0]] = blk.deps.get(op.lb, frozenset()) | {op}
            blk.trips[op] = float(n.max()) if len(n) else 0.0
            _walk(op.body.block, blk, trips * n, active & (n > 0), w)
            w.issued += per_warp * 2  # the loop's compare and branch (once per iteration: below)
            continue
        if isinstance(op, kernel.ArriveLastOp):
            blk.vals[op.result] = np.ones(blk.threads, np.int64)
            w.arrivals = op.count.value.data
            continue
        if isinstance(op, scf.IfOp) and isinstance(op.cond.owner, kernel.ArriveLastOp):
            w.tail = w.tail or Work(touched=dict(w.touched))
            _walk(op.true_region.block, blk, trips, active, w.tail)
            w.tail.chain_l1, w.tail.chain_l2 = _chains(op.true_region.block, blk)
            w.issued += per_warp
            continue
        if isinstance(op, scf.IfOp):
            cond = blk.get(op.cond) != 0
            _walk(op.true_region.block, blk, trips, active & cond, w)
            if op.false_region.blocks:
                _walk(op.false_region.block, blk, trips, active & ~cond, w)
            w.issued += per_warp
            continue
        if not _free(op):
            w.issued += per_warp
        if isinstance(op, memref.LoadOp | memref.StoreOp):
            store = isinstance(op, memref.StoreOp)
            if not _is_private(op.memref):
                _access(w, blk, op.memref, op.indices, 1, weight, active, store)
        elif isinstance(op, kernel.VectorLoadOp | kernel.VectorStoreOp) \
                and not _is_private(op.memref):
            store = isinstance(op, kernel.VectorStoreOp)
            n = len(op.values) if store else len(op.res)
            _access(w, blk, op.memref, op.indices, n, weight, active, store)
        elif isinstance(op, kernel.CpAsyncOp):
            n = op.bytes.value.data // kernel.element_bytes(op.src.type.element_type)
            _access(w, blk, op.src, op.src_indices, n, weight, active)
            # a stage's copies go out back to back: its loop's trips, in flight together
            copy_loop = op.parent_op()
            per = blk.trips.get(copy_loop, 1.0) if isinstance(copy_loop, scf.ForOp) else 1.0
            w.async_bytes += per * WARP * op.bytes.value.data
            _access(w, blk, op.dst, op.dst_indices, n, weight, active, True)
        elif isinstance(op, kernel.LdmatrixOp):
            w.smem_wavefronts += per_warp * len(op.res)  # one 8x8 matrix per wavefront
        elif isinstance(op, kernel.MmaOp):
            w.mma += per_warp
            w.flops += per_warp * 2 * 16 * 8 * 16
        elif isinstance(op, SPECIAL):
            w.sfu += per_warp
            w.flops += float(weight.sum())
        elif isinstance(op, FLOAT_FP32) and op.results and _is_float(op.results[0]):
            if not _fused(op):  # (a NaN-propagating max/min is two compares and a select)
                w.fp32 += per_warp * (3 if isinstance(op, arith.MaximumfOp | arith.MinimumfOp)
                                      else 1)
            if isinstance(op, arith.AddfOp | arith.SubfOp | arith.MulfOp):
                w.flops += float(weight.sum())
        for region in op.regions:  # other region ops: their bodies as straight-line code
            for b in region.blocks:
                _walk(b, blk, trips, active, w)


def _free(op: Operation) -> bool:
    """Ops that cost no issue slot of their own once compiled: integer index arithmetic (folded
    into addressing and strength-reduced by nvcc), constants, ids, a multiply fused into the
    add that uses it (FFMA), and a thread's array element that is a register."""
    return (type(op) in _INT_OPS or isinstance(op, arith.ConstantOp | kernel.ThreadIdOp
                                                    | kernel.BlockIdOp | kernel.SharedOp)
            or _fused(op) or _in_register(op))


def _in_register(op: Operation) -> bool:
    """A load or store of a thread's array (`memref.alloca`) at an index known once nvcc has
    unrolled the loops around it (constants and the ivs of loops marked `unroll`, through
    index arithmetic): the element is a register, read or renamed in place, no instruction."""
    if not isinstance(op, memref.LoadOp | memref.StoreOp) or not _is_private(op.memref):
        return False
    todo, seen = list(op.indices), set()
    while todo:
        v = todo.pop()
        if v in seen:
            continue
        seen.add(v)
        if isinstance(v, BlockArgument):
            loop_op = v.owner.parent_op()
            if not (isinstance(loop_op, scf.ForOp) and v is loop_op.body.block.args[0]
                    and "unroll" in loop_op.attributes):
                return False
        elif isinstance(v.owner, arith.ConstantOp):
            continue
        elif type(v.owner) in _INT_OPS:
            todo.extend(v.owner.operands)
        else:
            return False
    return True


def _fused(op: Operation) -> bool:
    if not isinstance(op, arith.MulfOp) or not op.result.has_one_use():
        return False
    return isinstance(op.result.get_user_of_unique_use(), arith.AddfOp | arith.SubfOp)


def buffer_key(buf: SSAValue) -> str:
    """A kernel argument as Work.touched names it."""
    return f"{buf.index}:{buf.name_hint or ''}" if hasattr(buf, "index") else str(id(buf))


def _is_float(v: SSAValue) -> bool:
    return "f" in str(v.type) and "i" not in str(v.type)[:1]


def _access(w: Work, blk: _Block, buf: SSAValue, indices, n: int, weight, active,
            store: bool = False) -> None:
    """Sectors (global) or wavefronts (shared) of one access of `n` consecutive elements per
    thread, for every warp, times each warp's trip count."""
    addr, eb = _address(blk, buf, indices)
    width = n * eb
    shared = _is_shared(buf)
    first: set[int] = set()
    touched: set[int] = set()
    most = 0.0
    for s in _per_warp(weight):
        lanes = active[s]
        times = float(weight[s].max()) if len(weight[s]) else 0.0
        if not times or not lanes.any():
            continue
        a = addr[s][lanes]
        if shared:
            words = np.unique((a[:, None] + np.arange(0, width, 4)[None, :]).ravel() // 4)
            conflict = max(np.bincount(words % 32).max(), 1)
            w.smem_wavefronts += times * max(conflict, -(-len(words) * 4 // 128))
        else:
            sectors = np.unique((a[:, None] + np.arange(0, width, SECTOR)[None, :]).ravel()
                                // SECTOR)
            if store:
                w.store_sectors += times * len(sectors)
                w.written.add(buffer_key(buf))
            else:
                w.load_sectors += times * len(sectors)
                first.update(sectors.tolist())
                most = max(most, times)
            touched.update(sectors.tolist())
            w.inflight_bytes = max(w.inflight_bytes, float(len(sectors) * SECTOR))
    if not touched:
        return
    # the block's distinct sectors: one iteration's, times the loops the access moves with
    varying = frozenset().union(*(blk.deps.get(i, frozenset()) for i in indices))
    spreads = [_spread(blk, buf, indices, addr, lp, active) for lp in varying
               if isinstance(lp, Operation)]
    moves = math.prod(factor for factor, _ in spreads)
    key = buffer_key(buf)
    dims = frozenset(d for d in varying if isinstance(d, int))
    covers = (frozenset(touched), frozenset(m for _, m in spreads), dims)
    touch = _Touch(key, store, covers, varying - dims, len(touched) * moves)
    if _repeats(w, touch):
        return  # L1 serves a load's copy, L2 merges a store's; the sectors are counted
    if first:
        entry = w.loads.setdefault((key, frozenset(first)), [len(first) * moves, 0.0])
        entry[1] += most * len(first)
    w.touches[touch] = None


def _repeats(w: Work, touch: _Touch) -> bool:
    """Whether an access touches what an earlier one of the block did, moving with the same
    loops (its buffer, first iteration's sectors, spread and loops): the unrolled copies of one
    access, a thread's neighbours loaded or stored one by one (a flattened `i floordiv c,
    i mod c` the lowering could not vectorize: sum's 4 loads of x a step, instance_norm's 4
    stores of out). The same warp asks for the same sectors a few instructions apart: they are
    a block's sectors once, in L2 traffic and in DRAM footprint."""
    return touch in w.touches


def _fold_touches(w: Work) -> None:
    """The block's footprint per buffer from its touches: the first access to some bytes
    counts them (per_buffer); another loop's access to the same bytes (its first iteration's
    sectors, spread and block ids alike: a normalization's second and third pass over its
    row) is a re-read, which `predict` charges to DRAM only where L2 cannot hold its window."""
    first: dict[tuple, int] = {}
    touches = list(w.touches)
    for i, t in enumerate(touches):
        at = first.setdefault((t.key, t.store, t.covers), i)
        if at < i:
            w.rereads.setdefault(t.key, []).append((t.sectors, _reuse_window(touches, at, i)))
            continue
        had, dims = w.per_buffer.get(t.key, (0.0, frozenset()))
        w.per_buffer[t.key] = (had + t.sectors, dims | t.covers[2])


def _reuse_window(touches: list[_Touch], at: int, i: int) -> float:
    """The block's distinct sectors from its first read of some bytes (touches[at]) to its
    re-read of them (touches[i]), and those of the accesses moving with the re-read's loops
    after it (interleaved with it: its row's stores): at most what the block brings into L2
    before a re-read, however the iterations interleave."""
    later = [u for u in touches[i + 1:] if u.loops & touches[i].loops]
    distinct = {(u.key, u.covers): u.sectors for u in touches[at:i] + later}
    return sum(distinct.values())


EXACT_TRIPS = 8  # iterations few enough to count each one's sectors, not extrapolate the first step


def _spread(blk: _Block, buf: SSAValue, indices, addr: np.ndarray, lp: Operation,
            active: np.ndarray) -> tuple[float, object]:
    """How many times over a loop's iterations multiply the sectors one iteration of an
    access touches: its trip count, less where the address moves by under a sector an
    iteration (a lane walking its own row 16 bytes at a time touches each sector twice); a
    short loop's iterations counted one by one, where the first step need not be the rest's.
    And how the loop moves the access (its trips and the lanes' least and most step, where
    known, else the loop itself): two loops moving the same sectors alike cover the same
    bytes (`_fold_touches`)."""
    trips = blk.trips.get(lp, 1.0)
    if trips <= 1 or not isinstance(lp, scf.ForOp):
        return trips, lp
    iv = lp.body.block.args[0]
    order: list[Operation] = []
    seen: set[Operation] = set()

    def visit(v: SSAValue) -> bool:  # the index ops that vary with the loop, operands first;
        # False where the index moves through what the evaluator cannot redo (an inner loop's
        # iv started from this one, a loaded index)
        if lp not in blk.deps.get(v, ()):
            return True
        op = v.owner
        if not isinstance(op, Operation):
            return v is iv
        if op in seen:
            return True
        seen.add(op)
        if not (type(op) in _INT_OPS or isinstance(op, arith.ConstantOp)):
            return False
        ok = all([visit(o) for o in op.operands])
        order.append(op)
        return ok

    if not all([visit(i) for i in indices]):
        return trips, lp
    saved = {r: blk.vals.get(r) for op in order for r in op.results} | {iv: blk.vals.get(iv)}
    start = blk.get(iv)
    seen_sectors = set((addr[active] // SECTOR).tolist())
    first = len(seen_sectors)
    step, motion = 0.0, (0.0, 0.0)
    for i in range(1, int(trips) if trips <= EXACT_TRIPS else 2):
        blk.vals[iv] = start + i * blk.get(lp.step)
        for op in order:
            blk.eval(op)
        moved, _ = _address(blk, buf, indices)
        seen_sectors.update((moved[active] // SECTOR).tolist())
        step = float(np.abs(moved - addr).max()) if len(addr) else 0.0
        motion = (float((moved - addr).min()), float((moved - addr).max())) if len(addr) \
            else motion
    for r, v in saved.items():
        if v is None:
            blk.vals.pop(r, None)
        else:
            blk.vals[r] = v
    motion = (trips, *motion)
    if trips <= EXACT_TRIPS:  # every iteration's sectors (a pool's window: rows, then columns)
        return len(seen_sectors) / max(1, first), motion
    return (trips if step >= SECTOR else min(trips, 1.0 + (trips - 1.0) * step / SECTOR)), motion


# --------------------------------------------------------------------------------------------
# one warp's dependent latencies


# cycles from issue to result, sm_90 (Jia et al., arXiv 1804.06826 and 1903.07486, for the
# arithmetic; Luo et al., arXiv 2501.12084, for shared memory, shuffles and mma.sync on Hopper)
LAT_FP32 = 4  # FFMA/FADD/FMUL and conversions
LAT_SFU = 20  # MUFU (ex2, rsqrt, sin) and the multiply around it
LAT_DIV = 30  # fp32 division: reciprocal and a Newton step
LAT_SHARED = 30  # LDS, ldmatrix
LAT_SHUFFLE = 25  # SHFL
LAT_MMA = 32  # mma.sync m16n8k16
SMALL_LOOP = 32  # instructions a loop body issues at most for nvcc to unroll it by itself


def _latency(op: Operation, l2: bool, gpu: Gpu = H100_SXM) -> float:
    """Cycles until `op`'s results can be used; a global load's is L1's (`l2` False) or
    L2's (DRAM misses are the memory units' business)."""
    if isinstance(op, memref.LoadOp | kernel.VectorLoadOp):
        if _is_private(op.memref):
            return LAT_FP32  # a register
        if _is_shared(op.memref):
            return LAT_SHARED
        return gpu.l2_latency if l2 else gpu.l1_latency
    if isinstance(op, kernel.LdmatrixOp):
        return LAT_SHARED
    if isinstance(op, kernel.ShuffleOp):
        return LAT_SHUFFLE
    if isinstance(op, kernel.MmaOp):
        return LAT_MMA
    if isinstance(op, arith.DivfOp):
        return LAT_DIV
    if isinstance(op, SPECIAL):
        return LAT_SFU
    return LAT_FP32 if op.results and _is_float(op.results[0]) else 1


def _chains(block: Block, blk: _Block) -> tuple[float, float]:
    """`chain_cycles` with every global load served by L1, and by L2 (Work.chain_l1/_l2)."""
    return chain_cycles(block, blk, False), chain_cycles(block, blk, True)


def chain_cycles(block: Block, blk: _Block, l2: bool, gpu: Gpu = H100_SXM) -> float:
    """One warp's cycles through `block`, issuing in order: an instruction waits for its
    operands (GPUs issue a warp's instructions in program order, so a use stalls the warp until
    its load or shuffle is back, whatever follows it); a loop's first iteration waits for what
    came before it, the others each take a steady iteration's time (carried values from the one
    before), the waits shared by the iterations unrolling lays side by side; an `scf.if` its
    longer branch. A lower bound of the warp's time however many warps share the scheduler."""
    ready: dict[SSAValue, float] = {}
    commits: list[float] = []  # when each cp.async group was committed
    issued = [0.0]  # instructions issued so far (a cycle each)

    def carry(yielded: Sequence[SSAValue], into: Sequence[SSAValue], t: float) -> None:
        for v, arg in zip(yielded, into):
            ready[arg] = ready.get(v, t)

    def loop(op: scf.ForOp, start: float) -> float:
        """The first iteration waits for what came before the loop; a second, steady one
        (its carried values from the first) is the time of each of the others."""
        body, trips = op.body.block, blk.trips.get(op, 1.0)
        if trips <= 0:
            carry(op.iter_args, op.results, start)
            return start
        yielded = body.last_op.operands if isinstance(body.last_op, scf.YieldOp) else ()
        end = run(body, start)
        if trips > 1:
            carry(yielded, body.args[1:], end)
            mid = issued[0]
            one = run(body, end) - end
            n = issued[0] - mid
            busy = min(one, n)
            # unrolled iterations overlap their waits: a loop marked `unroll` entirely, a
            # small one `mlp` iterations at a time (nvcc unrolls small loops 4x); but not a
            # carried value's own chain (a sum's adds), which no unrolling shortens
            overlap = max(1.0, trips if "unroll" in op.attributes else
                          min(trips, gpu.mlp) if n <= SMALL_LOOP else 1.0)
            end += (trips - 1) * max(busy + (one - busy) / overlap, recurrence(body))
            issued[0] = mid + (trips - 1) * n
        carry(yielded, op.results, end)
        return end

    def recurrence(body: Block) -> float:
        """The latency from the carried values to what the body yields in their place: an
        iteration cannot be shorter (a sum's add after add)."""
        dist = {a: 0.0 for a in body.args[1:]}
        for op in body.ops:
            if isinstance(op, scf.YieldOp):
                return max([dist[v] for v in op.operands if v in dist], default=0.0)
            ins = [dist[o] for o in op.operands if o in dist]
            if ins:
                lat = 0.0 if op.regions or _free(op) else _latency(op, l2, gpu)
                for r in op.results:
                    dist[r] = max(ins) + lat
        return 0.0

    def run(b: Block, t: float) -> float:
        for op in b.ops:
            if isinstance(op, scf.YieldOp):
                continue  # its operands: the loop's or the if's (carry)
            start = max([t, *(ready.get(o, 0.0) for o in op.operands)])
            if isinstance(op, kernel.CpAsyncCommitOp):
                commits.append(start)
            if isinstance(op, kernel.CpAsyncWaitOp) and len(commits) > op.pending.value.data:
                start = max(start, commits[-1 - op.pending.value.data] + gpu.l2_latency)
            if isinstance(op, scf.ForOp):
                t = loop(op, start)
            elif isinstance(op, scf.IfOp):
                if isinstance(op.cond.owner, kernel.ArriveLastOp):
                    continue  # the tail: the last block's, predicted apart (Work.tail)
                # a lower bound: the longer branch (a divergent warp runs both)
                t = start
                for region in (op.true_region, op.false_region):
                    if region.blocks:
                        b_ = region.block
                        t = max(t, run(b_, start))
                        if isinstance(b_.last_op, scf.YieldOp):
                            for v, r in zip(b_.last_op.operands, op.results):
                                ready[r] = max(ready.get(r, 0.0), ready.get(v, start))
            elif _free(op) and not op.regions:
                for r in op.results:
                    ready[r] = start
                continue
            else:
                for region in op.regions:
                    for rb in region.blocks:
                        start = run(rb, start)
                t = start + 1
                issued[0] += 1
                lat = _latency(op, l2, gpu)
                for r in op.results:
                    ready[r] = start + lat
        return t

    return run(block, 0.0)


# --------------------------------------------------------------------------------------------
# occupancy, waves, time


@dataclass
class Prediction:
    us: float
    bound: str  # the unit that dominates: dram, l2, smem, fp32, sfu, mma, issue, latency, launch
    units: dict[str, float]  # microseconds each unit would take alone
    blocks_per_sm: int
    waves: int
    dram_bytes: float
    l2_bytes: float
    flops: float


def occupancy(gpu: Gpu, threads: int, registers: int, smem: int) -> int:
    """Resident blocks per SM: the least of the thread, block, register and shared-memory
    limits (registers allocated per warp in units of 256, CUDA occupancy calculator)."""
    warps = -(-threads // WARP)
    regs_per_warp = -(-max(registers, 16) * WARP // 256) * 256
    limits = [gpu.max_threads_per_sm // (warps * WARP), gpu.max_blocks_per_sm,
              gpu.registers_per_sm // max(1, regs_per_warp * warps)]
    if smem:  # 1 KB reserved per block (cuda_occupancy.h), 128-byte granules
        limits.append(gpu.smem_per_sm // (-(-smem // 128) * 128 + 1024))
    return max(0, min(limits))


def predict(w: Work, grid, block, registers: int = 32, smem: int = 0,
            gpu: Gpu = H100_SXM) -> Prediction:
    """Time of one launch of a kernel whose blocks each do `w`; a fused kernel's blocks do its
    parts' works (Work.parts): the pipes' demand is the blocks' average, the DRAM and L2 bytes
    the parts' sum, a wave of resident blocks as long as their average chain (at least the
    longest), and the parts' split-K tails run side by side."""
    parts = w.parts or [(w, tuple(grid))]
    sizes = [math.prod(g) for _, g in parts]
    blocks = sum(sizes)
    threads = math.prod(block)
    bps = max(1, occupancy(gpu, threads, registers, smem))
    per_sm = -(-blocks // gpu.sms)  # blocks on the busiest SM
    waves = -(-blocks // (bps * gpu.sms))
    resident = min(bps, per_sm)
    active_sms = min(gpu.sms, blocks)
    clock = gpu.clock_ghz * 1e9

    def mean(per_part) -> float:  # over the blocks of the launch
        if len(per_part) == 1:  # (exactly a plain kernel's figure)
            return per_part[0]
        return sum(n * x for n, x in zip(sizes, per_part)) / blocks

    l2_sectors, dram, chains = [], 0.0, []
    for (pw, pgrid), n in zip(parts, sizes):
        # L1 keeps what a load reads again in later iterations while its footprint fits beside
        # shared memory and the other loads it keeps (the smallest footprints first), under
        # the room left, not filling it: a working set of the whole cache evicts itself
        room = (gpu.l1_bytes - resident * smem) / max(1, resident)
        sectors = pw.store_sectors
        for foot, full in sorted(pw.loads.values()):
            if foot < full and foot * SECTOR < room:
                sectors += foot
                room -= foot * SECTOR
            else:
                sectors += full
        l2_sectors.append(sectors)
        part_l2 = sectors * SECTOR * n
        footprint = sum(pw.touched.values())
        dram += min(part_l2, footprint) if footprint <= gpu.l2_bytes else \
            min(part_l2, _streamed_bytes(pw, pgrid, min(n, bps * gpu.sms), gpu))
        # a warp's own dependent latencies, its global loads at L1's or L2's as L1 keeps them
        to_l2 = min(1.0, (sectors - pw.store_sectors) / pw.load_sectors) \
            if pw.load_sectors else 0.0
        chains.append(pw.chain_l1 + to_l2 * (pw.chain_l2 - pw.chain_l1))
    l2_bytes = sum(x * SECTOR * n for x, n in zip(l2_sectors, sizes))
    # Little's law: an SM moves at most the bytes its warps keep in flight, per latency
    per_warp = mean([max(max(pw.inflight_bytes, SECTOR), pw.async_bytes / gpu.mlp)
                     for pw, _ in parts])  # (an access's bytes; mlp of them in flight)
    warps = resident * -(-threads // WARP)  # resident on one SM
    dram_bw = min(gpu.dram_bw * gpu.dram_efficiency, active_sms * gpu.stream_bw(warps, per_warp))
    l2_bw = min(gpu.l2_bw, active_sms * gpu.stream_bw(warps, per_warp)
                * gpu.dram_latency / gpu.l2_latency)
    works = [pw for pw, _ in parts]
    units = {  # the waves of resident blocks on an SM run one after another
        "latency": max(-(-per_sm // resident) * mean(chains), max(chains)) / clock,
        "dram": dram / dram_bw,
        "l2": l2_bytes / l2_bw,
        "l1": per_sm * mean([x.load_sectors + x.store_sectors for x in works])
        / (gpu.l1_sectors_per_sm * clock),
        "smem": per_sm * mean([x.smem_wavefronts for x in works])
        / (gpu.smem_wavefronts_per_sm * clock),
        "fp32": per_sm * mean([x.fp32 for x in works]) * WARP / (gpu.fp32_per_sm * clock),
        "sfu": per_sm * mean([x.sfu for x in works]) * WARP / (gpu.sfu_per_sm * clock),
        "mma": per_sm * mean([x.mma for x in works]) * 2 * 16 * 8 * 16
        / (gpu.mma_flops / gpu.sms),
        "issue": per_sm * mean([x.issued for x in works]) / (gpu.issue_per_sm * clock),
    }
    # an SM's pipes run at their rate only with enough warps to hide latency
    hidden = gpu.pipe_rate(warps, tensor_cores=any(x.mma > 0 for x in works))
    for pipe in ("l1", "smem", "fp32", "sfu", "mma", "issue"):
        units[pipe] /= hidden
    units = {k: float(v) * 1e6 for k, v in units.items()}
    bound = max(units, key=units.get)
    us = _fixed_us(w, gpu) + units[bound]
    tails = []
    for (pw, _), n in zip(parts, sizes):
        if pw.tail is None:
            continue
        # then the last block of each tile, one a tile, all at once; what the kernel wrote or
        # read before (the partials) is in L2 by then: the tail's DRAM bytes are those of
        # buffers only it touches (the epilogue's inputs, the outputs)
        tiles = max(1, n // max(1, pw.arrivals))
        fresh = {k: v for k, v in pw.tail.touched.items() if k not in pw.per_buffer}
        tail_w = replace(pw.tail, touched=fresh)
        tail = predict(tail_w, (tiles, 1, 1), block, registers, smem, gpu)
        tails.append(tail.us - _fixed_us(tail_w, gpu))  # launch and ramp are the kernel's
        dram, l2_bytes = dram + tail.dram_bytes, l2_bytes + tail.l2_bytes
    us += max(tails, default=0.0)
    flops = sum((pw.flops + (pw.tail.flops / max(1, pw.arrivals) if pw.tail else 0)) * n
                for (pw, _), n in zip(parts, sizes))
    return Prediction(us, bound if units[bound] > 0 else "launch",
                      units, bps, waves, dram, l2_bytes, flops)


def _fixed_us(w: Work, gpu: Gpu) -> float:
    """A launch, and the ramp of a kernel that touches global memory (hardware.py)."""
    return gpu.launch_us + (gpu.ramp_us if w.load_sectors or w.store_sectors else 0.0)


def _streamed_bytes(w: Work, grid, wave: int, gpu: Gpu) -> float:
    """DRAM bytes when the buffers outgrow L2: the blocks resident together (a wave, in launch
    order, block.x fastest) share what they read, each wave brings its own tiles in again; a
    buffer small beside L2 stays there and is read once."""
    ids = np.arange(wave)
    coords = (ids % grid[0], ids // grid[0] % grid[1], ids // (grid[0] * grid[1]))
    waves = math.prod(grid) / wave
    total = 0.0
    for key, (sectors, dims) in w.per_buffer.items():
        size = w.touched.get(key, 0)
        if size <= gpu.l2_bytes / 4:
            total += size
            continue
        sectors += _missed_rereads(w.rereads.get(key, ()), wave, gpu)
        if dims:
            picked = np.stack([coords[d] for d in sorted(dims)])
            distinct = len(np.unique(picked, axis=1).T)
        else:
            distinct = 1
        total += max(size, distinct * sectors * SECTOR * waves) if dims else size
    return total


def _missed_rereads(rereads, wave: int, gpu: Gpu) -> float:
    """A block's re-read sectors that come from DRAM again: those whose window (the block's
    sectors from the first read through the re-read), for every block resident at once, is
    more than L2 holds (gpu.l2_bytes: the Hopper whitepaper's 50 MB, the room `predict` gives a
    footprint). Conservative: every resident block's window is counted whole and as its own
    lines, so lines blocks share (which L2 may also copy into its other partition) take no
    more room than counted. The rest hit L2, at its bandwidth (the `loads` L2 traffic already
    counts every pass)."""
    return sum(sectors for sectors, window in rereads if wave * window * SECTOR > gpu.l2_bytes)


def predict_func(f: kernel.FuncOp, ptxas=None, gpu: Gpu = H100_SXM,
                 w: Work | None = None) -> Prediction:
    """One kernel.func with its ptxas report's registers and shared memory, where there is one
    (else 32 registers a thread and the shared buffers it declares); `w`: its work if known
    (`program_works`: with what earlier launches left in L2)."""
    return predict(w or work(f), f.grid_dims, f.block_dims, ptxas.registers if ptxas else 32,
                   block_shared_bytes(f, ptxas), gpu)


def estimate_registers(scope: Operation) -> int:
    """A thread's registers where there is no ptxas report yet (a pass): a register tile's
    accumulators, carried by its K loop, dominate (NVRTC 13.0 on TinyLlama's layer: 8 carried
    -> 58 registers, 16 -> 66, 64 -> 128); anything else the model's default 32."""
    carried = max((len(op.iter_args) for op in scope.walk() if isinstance(op, scf.ForOp)),
                  default=0)
    return min(255, 48 + carried * 5 // 4) if carried >= 4 else 32


def block_shared_bytes(f: kernel.FuncOp, ptxas=None) -> int:
    """A block's shared memory: ptxas's static bytes (else the buffers it declares) and the
    launch's dynamic bytes (ptxas reports static shared memory only: a kernel past 48 KB has
    its buffers dynamic)."""
    dynamic = f.dynamic_shared_bytes()
    return ptxas.smem_bytes + dynamic if ptxas else max(f.shared_bytes(), dynamic)


def reading_l2(w: Work, in_l2: frozenset[str]) -> Work:
    """`w` with the buffers of `in_l2` out of its DRAM footprint (L2 serves them)."""
    if not in_l2:
        return w

    def drop(x: Work) -> dict[str, int]:
        return {k: v for k, v in x.touched.items() if k not in in_l2}

    return replace(w, touched=drop(w), tail=w.tail and replace(w.tail, touched=drop(w.tail)),
                   parts=[(reading_l2(pw, in_l2), g) for pw, g in w.parts])


def l2_resident(module: ModuleOp, works: dict[str, Work], gpu: Gpu = H100_SXM,
                entry: str = "main") -> dict[str, frozenset[str]]:
    """Per kernel, the arguments every launch of it reads from L2: buffers an earlier launch
    wrote (split-K partials, a layer's activations), each at most half of L2, with no more
    than L2 moved by the launches since (what they read and wrote). Launches are followed in
    program order from `entry`, through func.call; a module without it (a kernel planned alone)
    runs its kernels once each in order. The program's inputs (weights) come from DRAM."""
    funcs = {f.sym_name.data: f for f in module.ops if isinstance(f, func.FuncOp)}
    kernels = {f.sym_name.data: f for f in module.ops if isinstance(f, kernel.FuncOp)}
    moved: dict[SSAValue, float] = {}  # buffer written -> bytes moved by launches since
    out: dict[str, frozenset[str]] = {}

    def launch(name: str, values: list[SSAValue]) -> None:
        f, w = kernels.get(name), works.get(name)
        if f is None or w is None:
            return
        keys = [buffer_key(a) for a in f.body.block.args]
        here = frozenset(k for k, v in zip(keys, values) if v in moved
                         and moved[v] + w.touched.get(k, 0) <= gpu.l2_bytes
                         and w.touched.get(k, 0) <= gpu.l2_bytes / 2)
        out[name] = out[name] & here if name in out else here
        for v in moved:
            moved[v] += sum(w.touched.values())
        writes = w.written | (w.tail.written if w.tail else set())  # the tail stores outputs
        for k, v in zip(keys, values):
            if k in writes:
                moved[v] = 0.0

    def visit(name: str, env: dict[SSAValue, SSAValue], depth: int = 0) -> None:
        for op in funcs[name].walk():
            if isinstance(op, kernel.LaunchOp):
                launch(op.callee.string_value(), [env.get(v, v) for v in op.args])
            elif isinstance(op, func.CallOp) and depth < 8 and \
                    op.callee.root_reference.data in funcs:
                callee = funcs[op.callee.root_reference.data]
                inner = dict(zip(callee.body.block.args, (env.get(v, v) for v in op.arguments)))
                visit(op.callee.root_reference.data, inner, depth + 1)

    if entry in funcs:
        visit(entry, {})
    elif kernels:  # one kernel planned alone (the tuner): its launches in module order on the
        # same buffers where the signatures agree (a split-K product and its sum kernel)
        first = next(iter(kernels.values())).body.block.args
        for name, f in kernels.items():
            if [a.type for a in f.body.block.args] == [a.type for a in first]:
                launch(name, list(first))
    return out


def program_works(module: ModuleOp, gpu: Gpu = H100_SXM) -> tuple[dict[str, Work],
                                                                 dict[str, frozenset[str]]]:
    """Each kernel.func's work, what earlier launches left in L2 out of its DRAM footprint,
    and those buffers per kernel (`l2_resident`)."""
    funcs = [op for op in module.ops if isinstance(op, kernel.FuncOp)]
    works = {f.sym_name.data: work(f) for f in funcs}
    in_l2 = l2_resident(module, works, gpu)
    return {n: reading_l2(w, in_l2.get(n, frozenset())) for n, w in works.items()}, in_l2


def predict_module(module: ModuleOp, ptxas: dict | None = None,
                   gpu: Gpu = H100_SXM) -> dict[str, Prediction]:
    """Prediction per kernel.func of a Kernel IR module (ptxas: name -> report), what earlier
    launches of its @main left in L2 read from there."""
    works, _ = program_works(module, gpu)
    return {f.sym_name.data: predict_func(f, (ptxas or {}).get(f.sym_name.data), gpu,
                                          works[f.sym_name.data])
            for f in module.ops if isinstance(f, kernel.FuncOp)}


# --------------------------------------------------------------------------------------------
# programs: launches (the algorithm's FLOPs and floors: analysis/roofline.py)


def launch_counts(module: ModuleOp, entry: str = "main") -> dict[str, int]:
    """Launches of each kernel per call of `entry`, through func.call (a decoder layer called
    once per layer counts once per call), at any level (loop/tile/kernel/cuda launch ops)."""
    funcs = {f.sym_name.data: f for f in module.ops if isinstance(f, func.FuncOp)}

    def count(name: str) -> dict[str, int]:
        out: dict[str, int] = {}
        for op in funcs[name].walk():
            if op.name.endswith(".launch"):
                k = op.callee.root_reference.data if hasattr(op.callee, "root_reference") \
                    else op.callee.string_value()
                out[k] = out.get(k, 0) + 1
            elif isinstance(op, func.CallOp) and op.callee.root_reference.data in funcs:
                for k, n in count(op.callee.root_reference.data).items():
                    out[k] = out.get(k, 0) + n
        return out

    return count(entry) if entry in funcs else {}
