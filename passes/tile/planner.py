"""The planner: which kernel classes a tile kernel can take (read off its loop nest, with the
facts each class is checked against), and the documented heuristics that fill in a plan's
knobs from those facts. `tile-plan` runs it on every kernel; a tile pass that meets a kernel
without a plan runs it first too.

Classes, in the heuristic's order of preference (dialects/tile_plan.py describes each):
1. `matmul` — a contraction (analysis/nest.py) with one reduce loop and two or more free
   loops around it, when it is large enough to fill 2-D tiles: at least 32 x 32 outputs and
   K >= 32 after any split, or when K is split.
2. `attention` — the block region (under the outer free loops mapped to blocks) is a flash row.
3. `row_reduce` — the block region's reductions can be shared by threads, the longest >= 64.
4. `pointwise` — anything (free loops on blocks and threads, reductions serial per thread).
Every kernel may also take any later class it has the shape for (the tuner's choice).

Heuristics (each a few lines below, in terms of the facts):
- the block tile and the split of K (`splits`): the pair `_tile_seconds` says is fastest — L2
  tile traffic, shared-memory wavefronts and the FMA/mma pipe on the busiest SM, the pipes at
  the rate its resident warps reach (`Gpu.pipe_rate`: a block of 1-2 warps an SM runs them at
  a fourteenth to a seventh, a twenty-second to an eleventh with tensor cores), a split paying
  its extra launch and partial sums' round trip. So a small output (k_proj: 128 x 256,
  K = 2048) is split until the SMs have warps to hide latency.
- tensor cores (`mma`) for every plain f16/bf16 product: 2 x 4 fragments per warp (a 32 x 32
  warp tile), 2 x 2 warps (64 x 64 per block), fewer where M or N is small.
- otherwise a register tile of 4 rows (M >= 64, 2 from 8) x 4 columns (likewise from N): 16
  accumulators keep a thread's registers well under 255 and give 8 loads per 16 FMAs; threads
  16 x 16, each reduced to the largest power of two not above the tiles of its axis.
- K chunks of 32 (16 when K < 64), staged in shared memory with rows padded by 16 bytes where a
  row is a multiple of 64 bytes (bank conflicts), double-buffered and copied with cp.async when
  that fits in 48 KB (fp32 [64 x 32] + [32 x 64] chunks are 8 KB each).
- row reductions, attention rows and pointwise kernels: 256 threads, at most the reduced (or
  head) dim rounded up to a warp; the slabs a block reads twice are staged (plain copies: a
  one-off stage has nothing to overlap with); the outer free loops on up to 3 grid axes.
- short innermost loops (<= 32 iterations) unrolled.
For big matmuls and attention these choices are a first guess: `matmul_shortlist` and
`attention_shortlist` list the alternatives the cost model chooses among by default
(tuning/ranked.py).
"""

from __future__ import annotations

import hashlib
import math

from xdsl.dialects.builtin import AnyFloat, MemRefType
from xdsl.ir import SSAValue
from xdsl.utils.exceptions import VerifyException

from deplo import hardware as hw
from deplo.analysis import nest
from deplo.dialects import loop, tile
from deplo.dialects.tile_plan import (
    CLASSES,
    HOISTED_Q,
    KNOBS,
    Plan,
    PlanError,
    Value,
    attention_stage_bytes,
    batched,
    block_tile,
    lane_step,
    reduce_length,
    rows_on_grid,
    shared_bytes,
    slab_parts,
    staged_slabs,
    value_text,
)
from deplo.hardware import H100_SXM

Facts = tuple[tuple[str, Value], ...]


# --------------------------------------------------------------------------------------------
# the structural key


def structural_key(kernel: loop.KernelOp | tile.KernelOp) -> str:
    """A stable name for what a kernel computes: a hash of its argument types and body with
    values numbered in order of definition, without names, loops and yields of Loop IR and of
    the trivial Tile IR schedule spelled alike. Equal for the same kernel in any program,
    process or run (the 28 decoder layers of one model share their kernels' keys)."""
    ids: dict[SSAValue, int] = {}
    lines = []

    def name(v: SSAValue) -> str:
        if v not in ids:
            ids[v] = len(ids)
        return f"%{ids[v]}"

    lines.append(",".join(f"{name(a)}:{a.type}" for a in kernel.body.block.args))
    for op in kernel.body.walk():
        kind = op.name.split(".")[-1] if op.name in _SAME_ACROSS_LEVELS else op.name
        props = sorted(
            (k, str(v)) for k, v in op.properties.items() if k not in _SCHEDULE_PROPERTIES
        )
        args = [f"{name(a)}:{a.type}" for r in op.regions for b in r.blocks for a in b.args]
        outs = [f"{name(r)}:{r.type}" for r in op.results]
        lines.append(f"{kind}({','.join(name(o) for o in op.operands)}){props}{args}->{outs}")
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]


_SAME_ACROSS_LEVELS = {"loop.for", "tile.for", "loop.yield", "tile.yield"}
_SCHEDULE_PROPERTIES = {"kind", "bind", "operandSegmentSizes"}


# --------------------------------------------------------------------------------------------
# facts per class


def matmul_facts(kernel: tile.KernelOp) -> Facts | None:
    """A contraction with one reduce loop and at least two free loops, all `0 to N step 1`."""
    c = nest.find_contraction(kernel)
    if c is None or len(c.reduces) != 1 or len(c.chain) < 2:
        return None
    red = c.reduces[0]
    loops = [*c.chain, red]
    if any(lp.static_lb != 0 or lp.step.data != 1 for lp in loops):
        return None
    i, j = c.chain[-2], c.chain[-1]
    batch = {lp.iv for lp in c.chain[:-2]}
    splittable = (
        len(red.inits) == 1
        and isinstance(red.inits[0].type, AnyFloat)
        and nest.combine_kinds(red) == [tile.CombineKind.ADD]
    )
    product = nest.match_product(red, i.iv, j.iv, batch)
    slabs = _slabs(kernel, red, {i.iv: "i", j.iv: "j", red.iv: "k"}, batch)
    gather = product is not None and product.gather is not None
    if gather:  # B's chunks, gathered (an implicit GEMM's window): a [k][j] slab of 16 bits
        slabs.append("kj2")
    accs = (("accumulators", len(red.inits)),) if len(red.inits) > 1 else ()
    step = nest.column_step(red, j.iv)
    return (
        ("chain", tuple(lp.ub.data for lp in c.chain)),
        ("k", red.ub.data),
        ("tensor_cores", product is not None),
        ("splittable", splittable),
        ("slabs", tuple(slabs)),
        *accs,  # sibling products in one K loop (gate and up): accumulators per output
        *((("column_step", step),) if step > 1 else ()),  # a strided conv's input window
        *((("gather", True),) if gather else ()),  # B gathered: tensor cores stage its chunks
    )


def _slabs(kernel: tile.KernelOp, red: tile.ForOp, role: dict, batch: set) -> list[str]:
    """The slab code (dialects/tile_plan.py) of each input the reduce loop loads at plain
    coordinates that do not depend on both i and j (what tile-stage-chunks may stage: one slab
    per buffer, its loads merged), in the order of the first load."""
    stored = nest.stored_buffers(kernel)
    seen: dict[SSAValue, str] = {}
    for ld in red.body.walk():
        if not (isinstance(ld, loop.LoadOp) and ld.buffer in kernel.args) or ld.buffer in stored:
            continue
        xs = nest.coords(ld)
        if xs is None or any(
            x not in role and x not in batch for x in xs if not isinstance(x, int)
        ):
            seen[ld.buffer] = ""
            continue
        dims = "".join(role[x] for x in xs if x in role)
        if ("i" in dims and "j" in dims) or seen.get(ld.buffer, dims) != dims:
            seen[ld.buffer] = ""
            continue
        assert isinstance(ld.buffer.type, MemRefType)
        seen.setdefault(ld.buffer, dims + str(tile.element_bytes(ld.buffer.type.element_type)))
    return [s for s in seen.values() if s]


def grid_region(kernel: tile.KernelOp, grid_dims: int = 3, leave_innermost: bool = True):
    """(the outer free loops tile-map-grid binds, innermost first; the block region under them)."""
    loops = nest.grid_loops(kernel, grid_dims, leave_innermost)
    return loops, nest.through_unit_loops(loops[0].body.block if loops else kernel.body.block)


def row_facts(kernel: tile.KernelOp) -> Facts | None:
    loops, region = grid_region(kernel, leave_innermost=False)
    r = nest.row_reduction(region)
    if r is None:
        return None
    contiguous = nest.row_contiguous(r, kernel.body.block.args)
    return (("rows", tuple(lp.extent for lp in reversed(loops))), ("extent", r.extent),
            *((("contiguous", contiguous),) if contiguous else ()))


def attention_facts(kernel: tile.KernelOp) -> Facts | None:
    loops, region = grid_region(kernel, leave_innermost=False)
    f = nest.flash_row(region)
    if f is None:
        return None
    rows = tuple(lp.extent for lp in reversed(loops))
    mma = nest.flash_mma(f, region) if loops else None
    if mma is not None and mma.row_iv.owner.parent_op() not in loops:
        mma = None  # one query row (decoding): nothing for a warp's 16 rows
    queries = mma.row_iv.owner.parent_op().extent if mma else None
    # (not the innermost grid loop: the query rows tile-attention-rows puts rows of on a block;
    # blocks of g heads need g to divide the heads too)
    group = max((math.gcd(nest.kv_group(f, lp.iv), lp.extent or 1) for lp in loops[1:]),
                default=1)
    return (("rows", rows), ("head_dim", f.head_dim), ("keys", f.keys),
            *((("own_keys", True),) if nest.flash_update(f) else ()),
            *((("tensor_cores", True), ("queries", queries)) if mma else ()),
            *((("kv_group", group),) if group > 1 else ()))


def pointwise_facts(kernel: tile.KernelOp) -> Facts:
    chain = nest.free_loop_chain(kernel)
    leaf = bool(chain) and chain[-1].static_lb == 0 and chain[-1].step.data == 1 \
        and not nest.has_free_loop(chain[-1])
    crossed = nest.crossed_read(kernel) if leaf else 0
    halo = nest.halo_rows(kernel) if leaf else 0
    return (("chain", tuple(lp.extent for lp in chain)), ("leaf", leaf),
            *((("crossed", crossed),) if crossed else ()),
            *((("halo", halo),) if halo else ()))


FACTS = {
    "matmul": matmul_facts,
    "attention": attention_facts,
    "row_reduce": row_facts,
    "pointwise": pointwise_facts,
}


def legal_classes(kernel: tile.KernelOp) -> list[tuple[str, Facts]]:
    """Every class the kernel has the shape for, with its facts, the heuristic's choice first."""
    out = []
    for kind, facts_of in FACTS.items():
        facts = facts_of(kernel)
        if facts is not None and _has_plan(kind, facts):
            out.append((kind, facts))
    preferred = next(kf for kf in out if _prefer(kernel, *kf))
    return [preferred, *(kf for kf in out if kf is not preferred)]


def _has_plan(kind: str, facts: Facts) -> bool:
    try:
        complete("", kind, facts, {})
    except PlanError:
        return False
    return True


def _prefer(kernel: tile.KernelOp, kind: str, facts: Facts) -> bool:
    f = dict(facts)
    if kind == "matmul":  # not a matrix-vector product over [n][k] weights (decoding's
        # projections: the rows of a row reduction read each weight row once, coalesced; the
        # model, one token through a 2048 x 256 projection: 245 -> 4 us), nor outputs too few
        # for tiles (matmul_knobs would not split them: one block walking all of K)
        if f["chain"][-2] == 1 and _k_rows(f) or not _product_of_two(kernel):
            return False
        # few outputs over a long K: tiles once K is split, unless a row reduction takes it —
        # a weight of [n][k] rows, each read once, coalesced (the model, 2 tokens through a
        # 2048 x 256 projection: 4.4 us so, 12.2 us split), a vector's outputs, a kernel
        # loop-split-reductions already split ([1, 4096] @ [4096, 32]: 4.3 us, 14.2 split)
        if _matmul_sized(f, 1):
            return True
        rows = row_facts(kernel)
        return bool(_sized_splits(f)) and not _k_rows(f) \
            and not (rows is not None and _prefer(kernel, "row_reduce", rows))
    if kind == "row_reduce":  # a long reduction: a row's, or each output's of a contraction
        # that is not the matmul's (a vector's, or outputs too few for tiles) when a thread
        # would walk 256+ of K alone, K contiguous in the weight; not columns enough for a
        # thread each
        if _many_columns(kernel):
            return False
        row = nest.row_reduction(grid_region(kernel)[1])
        if row is not None and (f["extent"] >= 64 or f["extent"] >= 16 and any(
                isinstance(op, tile.ForOp) and op.is_free for op in row.ops)):
            return True  # (a short row then written (softmax, layer_norm): as a pointwise
            # plan's threads over the written row, each would redo the row's reductions —
            # the model, softmax of [65536, 32]: 20.3 us so, 9.1 a warp a row; rows of 8
            # leave a warp three quarters idle: softmax of [262144, 8] 23.5 -> 26.5 us)
        mm = matmul_facts(kernel)
        m = dict(mm) if mm is not None else None
        # a batch of rows ([4, 128]: the region under every outer free loop, as row_facts
        # reads it) that is no product of two inputs went pointwise, a thread a row (the
        # model, a sum over [4, 128, 2048]: 122 -> 4.6 us)
        region = grid_region(kernel, leave_innermost=False)[1]
        if (m is None or len(m["slabs"]) < 2) and f["extent"] >= 64 \
                and nest.row_reduction(region) is not None:
            return True
        # ... or no tiles take the product at all ([8, 1024] @ [1024, 10]: a thread walking K
        # alone, 40 us by the model; a block's threads sharing it, 3.6)
        return m is not None and (f["extent"] >= 256 and _k_rows(m) or f["extent"] >= 128
                                  and not (_matmul_sized(m, 1) or _sized_splits(m)))
    return True


COLUMN_THREADS = 132 * 128  # outputs that give every SM 4 warps at a thread each


def _many_columns(kernel: tile.KernelOp) -> bool:
    """COLUMN_THREADS outputs or more whose reductions a thread each reads coalesced: a column
    reduction (nest.column_reads), or reads all the outputs of a row share (none along the
    innermost output: a chunked scan's masked sums within a chunk, the same addresses across a
    warp). Shared by a block, each of its threads reads a sector for one element (the model,
    H100: [64, 262144].sum(0) 184 us so, 26 a thread a column; with 8000 columns the block's
    50 us beat the thread's 105); a block an output of a scan of [4, 10^6]: 418 us, 38 a
    thread an output."""
    chain = nest.free_loop_chain(kernel)
    rows = nest.row_reduction(grid_region(kernel, leave_innermost=False)[1])
    return bool(chain) and rows is not None \
        and math.prod(lp.extent or 1 for lp in chain) >= COLUMN_THREADS \
        and all(nest.column_reads(lp, chain[-1].iv) or nest.shared_reads(lp, chain[-1].iv)
                for lp, _ in rows.reduces)


def _product_of_two(kernel: tile.KernelOp) -> bool:
    """The contraction's K loop loads twice or more (a product; `x @ x.T` reads one buffer
    twice). A reduction of one load over trailing dims (`x.mean((2, 3))` of [8, 512, 7, 7])
    has a matmul's loops but nothing to tile: as one, 8 blocks (the model: 26 -> 6.1 us as a
    thread an output)."""
    c = nest.find_contraction(kernel)
    return c is not None and sum(isinstance(op, loop.LoadOp)
                                 for op in c.reduces[0].body.walk()) >= 2


def _k_rows(f: dict) -> bool:
    """A contraction's weight is [n][k] (a linear layer's): a row of K is contiguous."""
    return any(slab_parts(code)[0] == "jk" for code in f["slabs"])


# --------------------------------------------------------------------------------------------
# heuristics


def _pow2_at_most(n: int, cap: int) -> int:
    """The largest power of two <= min(n, cap) (at least 1)."""
    p = 1
    while p * 2 <= min(n, cap):
        p *= 2
    return p


SMS = H100_SXM.sms  # the blocks of one wave (with one block an SM)
LAST_BLOCK_BYTES = 32 * 1024  # split-K partials a warp of the last block adds up (split_sum)


def _pow2_ceil(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


def _matmul_sized(f: dict, splits: int) -> bool:
    """At least 32 x 32 outputs (partial sums included) and K >= 32 per split: below that a
    pointwise schedule gives more blocks than 2-D tiles would fill, with too little reuse to
    stage."""
    return math.prod(f["chain"]) * splits >= 1024 and f["k"] // splits >= 32


MMA_TILES = ((2, 4, 4, 4), (2, 2, 4, 4), (2, 2, 2, 4), (1, 2, 2, 4), (2, 1, 2, 4),
             (1, 1, 2, 4), (1, 1, 2, 2), (1, 1, 1, 2), (1, 1, 1, 1))
"""Tensor-core tiles, largest first: warps_m, warps_n, frags_m, frags_n (128 x 128 down to
16 x 8 outputs a block; 4 x 4 fragments are a lane's 64 accumulators in registers)."""
MANY_WARP_TILES = ((4, 4, 2, 4), (4, 4, 2, 2), (4, 4, 1, 4), (4, 4, 2, 1), (4, 4, 1, 2),
                   (4, 4, 1, 1), (4, 2, 2, 4), (2, 4, 2, 4), (4, 2, 2, 2), (2, 4, 2, 2),
                   (4, 2, 1, 4), (2, 4, 1, 4), (4, 2, 2, 1), (2, 4, 2, 1), (4, 2, 1, 2),
                   (2, 4, 1, 2), (4, 2, 1, 1), (2, 4, 1, 1))
"""Tensor-core tiles of 8 or 16 warps with 1 to 8 fragments each, offered to the cost model
only (`matmul_shortlist`): an SM with more warps hides the ldmatrix and mma.sync latencies a few
warps of big fragments leave exposed (the H200's 0.25 instructions a cycle at 1.3 warps a
scheduler, docs/gpu-runs.md), against more shared-memory reads a fragment; the peaks rank them
roughly, the model with ptxas's registers chooses. (By the model: TinyLlama's bf16 k_proj at 512
tokens 11.5 -> 7.5 us, Qwen2.5's 17.5 -> 13.2; not yet timed on a GPU.)"""
SIMT_TILES = ((8, 8, 16, 16), (8, 8, 8, 16), (8, 8, 16, 8), (8, 8, 8, 8), (4, 4, 16, 16),
              (4, 4, 8, 16), (4, 4, 8, 8))
"""Register tiles x threads, largest first: 8 x 8 outputs a thread need 16 shared-memory loads
per 64 FMAs (4 x 4: 8 per 16, twice the shared-memory traffic per FMA)."""
HALF_TILES = ((8, 4, 16, 16), (8, 4, 8, 16), (4, 8, 16, 16), (4, 8, 16, 8))
"""Register tiles of 32 accumulators x threads, offered to the cost model only
(`matmul_shortlist`): the peaks rank them below 8 x 8 (12 shared-memory loads per 32 FMAs), but
they cannot see registers, and an 8 x 8 tile can take enough (ptxas: 175 for conv1d [8, 256,
1024] by 256 x 3, its input window read from global memory) that one block of 256 threads fits
an SM where two of 8 x 4 (80) do: its 256 blocks then run as two waves of 8 warps an SM (the
model: 127 -> 75 us). A cap on accumulators would lose where 8 x 8 fits (the ResNet 3x3 conv:
57 -> 73 us); the model, with ptxas's registers, chooses."""


def _blocks(f: dict, bm: int, bn: int) -> int:
    chain = f["chain"]
    return math.prod(chain[:-2]) * -(-chain[-2] // bm) * -(-chain[-1] // bn)


def _tile_seconds(f: dict, tile: tuple[int, int, int, int], splits: int, mma: bool) -> float:
    """A tile's time by the peaks, on the busiest SM (blocks over SMs rounded up: the tail of
    the last wave): its blocks' input tiles read through L2, the shared-memory wavefronts
    (ldmatrix: 4 an A fragment, 2 a B one, per 16 of K; SIMT: one a register row or column a
    K step) and the instructions the FMA pipe issues (mma.sync at its rate; SIMT: FFMAs and
    the shared loads feeding them, 4 a clock); a split adds its launch and round trip."""
    gpu = H100_SXM
    clock = gpu.clock_ghz * 1e9
    k = f["k"] // splits
    if mma:
        wm, wn, fm, fn = tile
        bm, bn, warps, eb = wm * 16 * fm, wn * 8 * fn, wm * wn, 2
        wavefronts, issue = (4 * fm + 2 * fn) * k / 16, fm * fn * k / 16 * 4096 / (
            gpu.mma_flops / SMS / clock)
    else:
        m, n, tm, tn = tile
        bm, bn, warps = m * tm, n * tn, max(1, tm * tn // hw.WARP)
        eb = max((slab_parts(c)[1] for c in f["slabs"]), default=4)
        wavefronts, issue = (m + n) * k, (m * n + m + n) * k / 4
    blocks = _blocks(f, bm, bn) * splits
    per_sm = -(-blocks // SMS) * warps  # warps of work on the busiest SM
    rate = gpu.pipe_rate(min(per_sm, gpu.max_threads_per_sm // hw.WARP), mma)  # few warps: latency
    l2 = blocks * (bm + bn) * k * eb / gpu.l2_bw
    smem = per_sm * wavefronts / (gpu.smem_wavefronts_per_sm * clock * rate)
    pipe = per_sm * issue / (clock * rate)
    extra = 0.0 if splits == 1 else \
        gpu.launch_us * 1e-6 + 8.0 * splits * math.prod(f["chain"]) / gpu.dram_bw
    return max(l2, smem, pipe) + extra


def _tiles(f: dict, fixed: dict, shortlist: bool = False) -> tuple[bool, list]:
    """Tensor cores or not, and the block tiles to choose from: (tile, rows, columns);
    `shortlist`: the cost model's too (MANY_WARP_TILES, HALF_TILES)."""
    rows, cols = f["chain"][-2], f["chain"][-1]
    implied = CLASSES["matmul"].implied(fixed).get("mma")
    mma = bool(f["tensor_cores"]) and _matmul_sized(f, 1) if implied is None else implied
    if mma:
        return mma, [(t, t[0] * 16 * t[2], t[1] * 8 * t[3])
                     for t in MMA_TILES + (MANY_WARP_TILES if shortlist else ())
                     if t[0] * 16 * t[2] <= max(16, _pow2_ceil(rows))
                     and t[1] * 8 * t[3] <= max(8, _pow2_ceil(cols))]
    if rows >= 64 and cols >= 64:
        accs = f.get("accumulators", 1)
        return mma, [(t, t[0] * t[2], t[1] * t[3])
                     for t in SIMT_TILES + (HALF_TILES if shortlist else ())
                     if t[0] * t[1] * accs <= 64]
    # small outputs: a register tile and threads sized to the extents
    m = 4 if rows >= 64 else 2 if rows >= 8 else 1
    n = 4 if cols >= 64 else 2 if cols >= 8 else 1
    tm, tn = _pow2_at_most(-(-rows // m), 16), _pow2_at_most(-(-cols // n), 16)
    return mma, [((m, n, tm, tn), m * tm, n * tn)]


def _splits(f: dict, mma: bool) -> list[int]:
    """The splits of K a matmul plan may take: slices of at least 128 and, with tensor cores, a
    multiple of 16; at most 128."""
    k = f["k"]
    if mma and f.get("gather"):
        return [1]  # (a gathered B is staged whole along K: tile_plan's violations)
    return [d for d in range(1, 129) if k % d == 0 and (not mma or (k // d) % 16 == 0)
            and (d == 1 or (f["splittable"] and k // d >= 128))] or [1]


def _sized_splits(f: dict, mma: bool = False) -> list[int]:
    """The splits with which the outputs fill tiles (`_matmul_sized`): few outputs over a long
    K ([48, 4096] @ [4096, 16]) are tiles once K is split, where a pointwise plan would walk
    all of K a thread (the model: 152 -> 8 us)."""
    return [d for d in _splits(f, mma) if _matmul_sized(f, d)]


def _ranked_pairs(f: dict, tiles: list, mma: bool,
                  splits: list[int] | None = None) -> list[tuple[tuple, int]]:
    """Every (tile, split of K) pair, fastest first by the peaks."""
    return sorted(((t[0], d) for t in tiles for d in splits or _splits(f, mma)),
                  key=lambda td: _tile_seconds(f, *td, mma))


TILE_KNOBS = {True: ("warps_m", "warps_n", "frags_m", "frags_n"),
              False: ("reg_m", "reg_n", "threads_m", "threads_n")}


def _accumulators(tile: tuple, mma: bool) -> int:
    """A thread's accumulators (a lane's fragments with tensor cores): what its registers grow
    with."""
    return tile[2] * tile[3] if mma else tile[0] * tile[1]


def _fastest_of_each_size(ranked: list, mma: bool) -> list[tuple[tuple, int]]:
    """The first (tile, split) pair in `ranked` of the largest register tile and of half of it:
    the peaks cannot see that the larger one's registers may halve the blocks an SM holds
    (HALF_TILES); smaller ones, with more shared-memory reads an FMA, are left out (each is
    another NVRTC compile to rank)."""
    largest = max(_accumulators(t, mma) for t, _ in ranked)
    firsts: dict[int, tuple] = {}
    for pair in ranked:
        if 2 * _accumulators(pair[0], mma) >= largest:
            firsts.setdefault(_accumulators(pair[0], mma), pair)
    return list(firsts.values())


def matmul_shortlist(f: dict, pairs: int = 4) -> list[dict]:
    """Partial plans for the cost model to choose from (tuning/ranked.py), each completed by
    the heuristic: its own plan, its split summed the other way (`split_sum`: the peaks above
    do not see it), the first (tile, split) pair of each of the `pairs` fastest times by
    the peaks (tiles that differ only in threads tie there; with tensor cores the many-warp
    tiles as well) and the fastest of each register-tile size, summed both ways. The peaks
    order tiles roughly; the model, with ptxas's registers, tells close ones apart."""
    out: list[dict] = [{}, {"split_sum": "kernel"}, {"split_sum": "last_block"}]
    mma, tiles = _tiles(f, {}, shortlist=True)
    if not _matmul_sized(f, 1):
        return out
    ranked = _ranked_pairs(f, tiles, mma)
    firsts: dict[float, tuple] = {}
    for pair in ranked:
        firsts.setdefault(round(_tile_seconds(f, *pair, mma), 9), pair)
    chosen = list(firsts.values())[:pairs]
    chosen += [p for p in _fastest_of_each_size(ranked, mma) if p not in chosen]
    for sizes, split in chosen:
        fixed = {"splits": split, "mma": mma, **dict(zip(TILE_KNOBS[mma], sizes))}
        out.append(fixed)
        if split > 1:
            out += [{**fixed, "split_sum": "kernel"}, {**fixed, "split_sum": "last_block"}]
    return out


def attention_shortlist(f: dict) -> list[dict]:
    """Partial attention plans for the cost model to choose from (tuning/ranked.py), each
    completed by the heuristic: the keys in 1, 2 or 4 slices and, on tensor cores, 8, 4 or 2
    warps a block. `_key_splits` guesses registers and waves; the model, with ptxas's registers,
    sees where more blocks repay split-KV's combine, where a SIMT row's lanes split the head
    dim in more parts (`_head_parts`; with the heuristic's lanes a row or as many as they
    take: a key's dot product is a chain of a lane's FMAs, short rows' latency: TinyLlama's
    fp32 causal GQA attention at 32 tokens 5.40 -> 4.83 us with 16 elements a lane, Qwen2.5's
    at 512 70.6 -> 65.7 with 16 and 8 lanes a row, where a non-grouped [2, 8, 32, 64] is
    slower: 6.31 -> 6.71), where fewer warps a block do (Qwen2.5's
    bf16 attention at 128 tokens: 2 warps, 10.7 -> 10.3 us), and where more do: 8 warps share
    each staged K/V tile between 128 query rows, half the copies into shared memory of 4
    (Qwen2.5's at 512 tokens: 32.0 -> 29.0 us). Warps of two row tiles (`frags_m` 2)
    are not offered: the model finds them slower on every suite case (TinyLlama's bf16
    attention at 512 tokens 12.4 -> 15.0 us at best; their ~240 registers halve the warps an
    SM, and its pipes run by warps, not by a warp's independent mma). Plans the class refuses
    are dropped by the caller."""
    own = attention_knobs(f, {})
    if own["mma"]:
        return [{}] + [{"key_splits": s, "warps": w} for w in (8, 4, 2) for s in (1, 2, 4)]
    return [{}] + [{"key_splits": s} for s in (1, 2, 4)] + \
        [{"head_parts": p} | t for p in (2, 4, 8)
         for t in ({}, {"threads": own["threads"], "lane_keys": own["lane_keys"]})]


SHORTLISTS = {"matmul": matmul_shortlist, "attention": attention_shortlist}
"""The kinds whose big kernels the cost model plans by default, and their candidates."""


def _rows_in_words(f: dict) -> bool:
    """Every input row a whole number of 4-byte words (K, or N for a [k][j] slab): what
    cp.async's pieces need (a bf16 row of K = 53 is not; tile-cp-async would keep it sync)."""
    for code in f["slabs"]:
        dims, eb = slab_parts(code)
        if (f["chain"][-1] if dims.endswith("j") else f["k"]) * eb % 4:
            return False
    return True


def _interleaved(f: dict) -> bool:
    """Neighbouring lanes take neighbouring outputs: for a linear layer's weight (a [n][k]
    slab), and where no slab runs along the columns (j), the operand along them read from
    global memory at coordinates no slab covers (a convolution's input window, at (c, j + k)):
    a thread's own run of reg_n columns puts a warp's lanes reg_n elements apart, reg_n times
    the sectors a load (the model, H100, conv1d [8, 256, 1024] by 256 x 3: 202 -> 127 us).
    Not where the columns step over elements (fact `column_step`, a strided conv): a thread's
    run then shares its sectors with no one either way, and its loads are no fewer (the model,
    the stem 7x7 stride-2 conv: 13.5 -> 13.9 us interleaved)."""
    dims = [slab_parts(code)[0] for code in f["slabs"]]
    return "jk" in dims or not any("j" in d for d in dims) and f.get("column_step", 1) == 1


def matmul_knobs(f: dict, fixed: dict) -> dict:
    """The matmul heuristic, decision by decision in the class's order; each decision in
    `fixed` is taken as given and the later ones are made around it. The tile and the split of
    K are the pair the peaks say is fastest (`_tile_seconds`: L2 tile traffic, shared-memory
    wavefronts, the FMA pipe, on the busiest SM); small outputs keep the small register tiles
    of the first heuristic."""
    knobs: dict[str, Value] = {}

    def pick(name: str, default: Value) -> Value:
        knobs[name] = fixed.get(name, default)
        return knobs[name]

    rows, cols = f["chain"][-2], f["chain"][-1]
    mma, tiles = _tiles(f, fixed)
    sized = _sized_splits(f, mma)
    tile, split = _ranked_pairs(f, tiles, mma, sized)[0] if sized else (tiles[0][0], 1)
    if "splits" in fixed:  # the best tile for the given split
        tile = min((t[0] for t in tiles), key=lambda t: _tile_seconds(f, t, fixed["splits"], mma))
    splits = pick("splits", split)
    pick("mma", mma and (splits == 1 or (f["k"] // splits) % 16 == 0))
    if knobs["mma"]:
        for name, v in zip(TILE_KNOBS[True], tile):
            pick(name, v)
    else:
        if mma:  # tensor cores were wanted but the split does not allow them
            tile = (4, 4, 16, 16)
        m, n, tm, tn = tile
        m, n = pick("reg_m", min(m, rows)), pick("reg_n", min(n, cols))
        pick("interleave", _interleaved(f))
        # [rows][k] fp32 slabs stored k-major: a thread's rows (columns) of one k are one
        # 128-bit read (the model: 10-30% faster fp32 projections, fewer issued loads)
        pick("transpose", any(slab_parts(code)[0][-1:] == "k" and len(slab_parts(code)[0]) > 1
                              for code in f["slabs"])
             and min(slab_parts(code)[1] for code in f["slabs"]) == 4)
        pick("threads_m", tm if m == tile[0] else _pow2_at_most(-(-rows // max(1, m)), 16))
        pick("threads_n", tn if n == tile[1] else _pow2_at_most(-(-cols // max(1, n)), 16))
    # the last block of each tile adds its splits' partials up (one launch less) when it has 4+
    # warps, each with at most 32 KB to read (16 KB with tensor cores: a lane's accumulators
    # are scattered 8-byte reads), in flight together about a launch's time, and the blocks
    # are one or two waves (the tails run together at the end); else a second kernel, every SM at
    # it; and not after a SIMT tile of 64 accumulators a thread, whose main loop has no
    # registers to spare (ptxas: 125 -> 130 with a residual's tail, one block an SM, not two).
    # The model: small projections 1.05-1.4x faster; slower with fewer warps, more bytes a
    # warp, or many waves whose tails read an epilogue input (SwiGLU's gate)
    bm, bn = block_tile(knobs)
    full = not knobs["mma"] and knobs["reg_m"] * knobs["reg_n"] >= 64
    warps = knobs["warps_m"] * knobs["warps_n"] if knobs["mma"] else \
        knobs["threads_m"] * knobs["threads_n"] // hw.WARP
    per_warp = LAST_BLOCK_BYTES // (2 if knobs["mma"] else 1)
    blocks = -(-rows // bm) * -(-cols // bn) * splits
    pick("split_sum", "last_block" if splits > 1 and not batched(f) and not full
         and blocks <= 2 * SMS and warps >= 4 and splits * bm * bn * 4 <= per_warp * warps
         else "kernel")
    k = reduce_length(f, knobs)
    chunk = (32 if k >= 64 else 16) if _matmul_sized(f, knobs["splits"]) else 0
    if knobs["mma"] and f.get("gather"):  # every chunk staged: no remainder loop (K = 144: 16)
        chunk = 32 if -(-k // 16) * 16 % 32 == 0 and k > 32 else 16
    kc = pick("k_chunk", chunk if chunk < k else 0)
    stage = pick("stage", bool(kc) and bool(f["slabs"]))
    pad = 0
    if stage and kc and f["slabs"]:
        rows_bytes = [s[-2] * s[-1] for s in staged_slabs(f, {**knobs, "pad": 0, "buffers": 1})
                      if len(s) > 2]
        eb = min(slab_parts(code)[1] for code in f["slabs"])
        if knobs.get("interleave") and not knobs.get("transpose"):
            pad = 1 if eb == 4 else 0  # lanes a row apart: an odd row stride, every lane a bank
        elif any(b % 64 == 0 for b in rows_bytes):
            pad = 16 // eb
    fits = [(2, pad, stage), (1, pad, stage), (1, 0, stage), (1, 0, False)]
    # the heuristic keeps to static shared memory; past it a plan's pinned stages only (or the
    # tuner's)
    budget = hw.MAX_SHARED_MEMORY_BYTES if fixed.keys() & {"k_chunk", "stage", "pad", "buffers"} \
        else hw.SHARED_MEMORY_BYTES
    for buffers, pad_, stage_ in fits:
        trial = {**knobs, "stage": stage_, "pad": pad_, "buffers": buffers}
        trial = {**trial, **{k: v for k, v in fixed.items() if k in ("stage", "pad", "buffers")}}
        trial["copy"] = fixed.get("copy", "cp_async" if trial["stage"] and _rows_in_words(f)
                                  else "sync")
        trial["unroll"] = fixed.get("unroll", 32)
        if not trial["stage"] and "transpose" in trial and "transpose" not in fixed:
            trial["transpose"] = False  # (nothing staged to store k-major)
        if not CLASSES["matmul"].violations(f, trial) and shared_bytes(f, trial) <= budget:
            return trial
    return trial


ROW_THREADS = 256  # a row's block (loop-split-reductions weighs a row on one block with it)


def row_vector(extent: int, size: int) -> int:
    """The most neighbours of a row (elements of `size` bytes, 0: not contiguous) a thread takes
    a step: up to 16 bytes, dividing the extent, the steps still filling a warp's lanes."""
    return max(v for v in (1, 2, 4, 8) if v == 1 or size and v * size <= 16
               and extent % v == 0 and extent // v >= hw.WARP)


def row_knobs(f: dict, limit: str, fixed: dict) -> dict:
    """A row a block of up to 256 threads; a row whose accesses walk its innermost dim (fact
    contiguous) in steps of up to 16 bytes (`vector`) where its extent allows and the steps
    still fill a warp's lanes, and then as many threads as the steps need (the model:
    [64, 16384].sum(1) on 64 blocks 9.7 -> 4.8 us, a warp keeping four times the bytes in
    flight; a bf16 softmax over rows of 128, 4.23 -> 3.90 us with 4 a step, 4.61 with 8, half
    a warp's lanes idle on its exps)."""
    vector = fixed.get("vector", row_vector(f[limit], f.get("contiguous", 0))) \
        if limit == "extent" else 1  # (attention's rows have no such knob)
    steps = vector if isinstance(vector, int) and vector >= 1 else 1  # (a bad one: a violation)
    threads = min(ROW_THREADS, -(-f[limit] // (hw.WARP * steps)) * hw.WARP)
    vec = {"vector": vector} if limit == "extent" else {}
    return {"grid_dims": min(3, len(f["rows"])), "threads": threads, **vec,
            "stage_inputs": "reused", "copy": "sync", "unroll": 32} | fixed


def attention_knobs(f: dict, fixed: dict) -> dict:
    """f16/bf16 rows tensor cores can run: mma, 4 warps a block (64 query rows) sharing each
    step's K and V tiles in shared memory (the model prefers the reuse to more, smaller
    blocks even where 4 warps leave SMs idle), 64 keys a step (32 past a head dim of 64: the
    scores and the accumulator share a lane's registers); unstaged where the head dim is not a
    whole number of fragments; the staged K and V tiles in two buffers, the next step's
    copied with cp.async while this one's are read (FlashAttention-2's overlap), where both fit
    in static shared memory and the keys are not in slices. Otherwise the lanes of a row own
    keys (`lane_keys` 1: no shuffle tree between one key and the next; one key a lane: the
    model prefers it to two, fewer registers), the head dim in `_head_parts` parts, 16 lanes
    a row for rows of up to 128 keys, 8 for longer (more rows a block, sharing K and V in
    L1), a warp where the rows are few and long (decoding); the keys in slices where the rows leave SMs idle
    (`_lane_key_splits`); a row that cannot (fact own_keys) a group of lanes splitting the
    head dim (`_row_threads`). As many rows a block (up to 128 threads) as still give every
    SM two blocks; K and V read through L1 (`stage_keys` 0: the model finds the rows of a
    block share them there as well)."""
    rows = f["rows"]
    queries, others = (rows[-1], math.prod(rows[:-1])) if rows else (1, 1)
    implied = CLASSES["attention"].implied(fixed)  # a SIMT knob given: no tensor cores
    if fixed.get("mma", implied.get("mma", f.get("tensor_cores", False) and bool(rows))):
        top = -(-f.get("queries", 1) // 16) * 16
        frags = fixed.get("frags_m", 1)
        warps = next((w for w in (4, 2, 1) if 16 * w * frags <= top), 1)
        knobs = {"grid_dims": min(3, len(rows)), "mma": True, "warps": warps, "frags_m": 1,
                 "key_block": 64 if f["head_dim"] <= 64 else 32,
                 "stage": f["head_dim"] % 16 == 0, "key_splits": 1,
                 "copy": "sync", "unroll": 32} | fixed
        if knobs["stage"] and "key_block" not in fixed \
                and attention_stage_bytes(f, {**knobs, "buffers": 1}) > hw.SHARED_MEMORY_BYTES:
            knobs["key_block"] = 16
        if "key_splits" not in fixed:
            knobs["key_splits"] = _key_splits(f, knobs)
        # the next step's K and V copied while this one's are read (cp.async, two buffers)
        # where both fit in static shared memory and the keys are one slice (the model: 5-8%
        # faster at 128 tokens, 4-8% at 512 on Qwen2.5; split-KV's slices, TinyLlama's at 512,
        # have half the steps to overlap and twice the blocks an SM sharing L1 with shared
        # memory: 9-15% slower)
        double = knobs["stage"] and knobs["key_splits"] == 1 and attention_stage_bytes(
            f, {**knobs, "buffers": 2}) <= hw.SHARED_MEMORY_BYTES
        return {**knobs, "buffers": 2 if double else 1,
                "copy": "cp_async" if double else "sync"} | fixed
    parts = fixed.get("head_parts", _head_parts(f["head_dim"]))
    own = fixed.get("lane_keys", int(  # (threads given alone: the head dim's)
        f.get("own_keys", False) and bool(parts) and "threads" not in fixed
        and not fixed.get("stage_keys", 0)))
    parts = max(1, parts) if own else 1
    # short rows: more lanes; long: more rows a block; few rows (decoding): a warp a row
    few = math.prod(rows) <= SMS
    lanes = 32 if few and f["keys"] >= 1024 else 16 if f["keys"] <= 128 or few else 8
    threads = fixed.get("threads", min(hw.WARP, max(lanes, 2 * parts),  # two keys a step
                                       _pow2_ceil(f["keys"]) * parts) if own
                        else _row_threads(f["head_dim"], others * queries))
    if "head_parts" not in fixed:  # parts that divide the threads a plan pinned
        parts = max(p for p in (1, 2, 4, 8) if p <= parts and threads % p == 0
                    and f["head_dim"] % p == 0)
    per = 1
    if threads < hw.WARP:
        options = [r for r in (32, 16, 8, 4, 2, 1) if r * threads <= 128 and r <= queries]
        full = [r for r in options if r * threads >= hw.WARP] or options[:1]
        per = next((r for r in full if others * -(-queries // r) >= 2 * SMS), full[-1])
    knobs = row_knobs(f, "head_dim", {"mma": False, "threads": threads, "rows": per,
                                      "stage_keys": 0, "lane_keys": own, "head_parts": parts,
                                      "group_heads": 1} | fixed)
    if "key_splits" not in knobs:
        knobs["key_splits"] = _lane_key_splits(f, knobs) if own else 1
    if "group_heads" not in fixed and "rows" not in fixed:
        knobs |= _grouped_heads(f, knobs)
    return knobs


def _grouped_heads(f: dict, knobs: dict) -> dict:
    """Grouped-query attention (fact kv_group G): the G query heads of a K/V head in one block
    (the largest divisor of G that keeps the block within 512 threads), a warp of rows each,
    so that the rows of every head read each key's K and V at the same time, once through L1;
    where the rows are one slice of the keys (not decoding's split-KV) and a row's lanes are
    one warp's at most; blocks of whole warps. The model: fp32 attention at 512 tokens
    1.2-1.3x faster (TinyLlama's 49.5 -> 38.9 us, Qwen2.5's 85.9 -> 70.6), the same or better at
    32 and 128."""
    if not f["rows"]:  # (one row, no grid loop: a cumsum's 1 x 1 softmax)
        return {}
    t = knobs["threads"]
    rows = max(1, min(hw.WARP // t, f["rows"][-1]))
    legal = [g for g in range(2, f.get("kv_group", 1) + 1) if t * rows * g <= 512
             and not CLASSES["attention"].violations(f, {**knobs, "group_heads": g, "rows": rows})]
    return {"group_heads": legal[-1], "rows": rows} if legal else {}


def _lane_key_splits(f: dict, knobs: dict) -> int:
    """Split-KV for rows whose lanes own keys: where the rows fill less than four blocks an SM
    (decoding: one query row a head), as many slices (up to 16) as keep within that, each of 8
    steps or more. The model, one decoded token over 2048 keys (a warp a row): TinyLlama's
    attention 357 -> 14 us with 16 slices, Qwen2.5's 24 us; prefill's rows fill the SMs."""
    rows = f["rows"]
    if not rows_on_grid(f, knobs):
        return 1
    blocks = math.prod(rows[:-1]) * -(-rows[-1] // knobs["rows"])
    steps = -(-f["keys"] // lane_step(knobs))
    return next((s for s in (16, 8, 4, 2) if blocks * s <= 4 * SMS and steps >= 8 * s), 1)


def _key_splits(f: dict, knobs: dict) -> int:
    """Split-KV on tensor cores: two slices of the keys where a row has 8 steps or more (4 a
    slice) and twice the blocks still fit on the SMs at once; else one. The model: TinyLlama's
    bf16 attention at 512 tokens 12.4 -> 11.9 us (the 1.2-1.3x once quoted here came from a
    model that read one key slice of the middle block); a second wave of blocks, or slices of 1-2
    steps, lose more to the combine (its partials' bytes, the last block's reads) than the
    shorter key loop gains. A lane's registers, estimated: the accumulator (D / 2), Q's
    fragments (D / 4), the scores (key_block / 2) and ~40 more (ptxas: 121 at D 64, 162 at
    128)."""
    steps = -(-f["keys"] // knobs["key_block"])
    if not rows_on_grid(f, knobs) or steps < 8:
        return 1
    queries = f.get("queries", 1)  # (on whichever of the grid's loops)
    frags = knobs.get("frags_m", 1)
    blocks = -(-queries // (16 * frags * knobs["warps"])) * (math.prod(f["rows"]) // queries)
    registers = frags * (f["head_dim"] // 2 + f["head_dim"] // 4 + knobs["key_block"] // 2) + 40
    resident = H100_SXM.registers_per_sm // (hw.WARP * knobs["warps"] * registers)
    return 2 if 2 * blocks <= resident * SMS else 1


def _head_parts(head_dim: int) -> int:
    """The parts of the head dim a key's lanes share with lane_keys: 32 elements a lane (the
    model's choice on TinyLlama's and Qwen2.5's 64 and 128, over 16 and 64), at most HOISTED_Q
    (past it a lane's accumulator spills), a multiple of 4 where one is (16-byte fp32 loads);
    a power of two dividing the head dim, or 0 where none does."""
    want = max(1, head_dim // 32)
    fits = [p for p in (1, 2, 4, 8) if head_dim % p == 0 and head_dim // p <= HOISTED_Q]
    wide = [p for p in fits if p >= want and head_dim // p % 4 == 0]  # 16-byte K / V loads
    return next(iter(wide), next((p for p in fits if p >= want), fits[-1] if fits else 0))


def _row_threads(head_dim: int, rows: int) -> int:
    """Lanes a flash row: 16 of the head dim each, more (down to 4 each, at most half a warp:
    a block holds several rows) while the rows on lanes stay under 64K threads: a row walks
    its keys one after another, so with few rows the GPU is latency bound and splitting a
    row's q.k wider shortens each key's step."""
    threads = min(hw.WARP, _pow2_ceil(max(1, head_dim // 16)))
    while threads < hw.WARP // 2 and 2 * threads <= max(1, head_dim // 4) \
            and rows * threads < 65536:
        threads *= 2
    return threads


def pointwise_knobs(f: dict, fixed: dict) -> dict:
    """256 threads; a long innermost loop is split over blocks, each thread taking up to 4
    elements while the grid still gives every SM two blocks; a short 1-D loop is one block of
    the warps it needs. An input read across its rows
    (fact `crossed`) gets a 2-D tile when the loops outside fit on block.z: a thread a column
    of the fewest rows whose elements fill a sector of that input, the columns in chunks of
    whole warps that divide them (a ragged tile's clamped index is no window to stage), where
    the tiles give every SM two blocks (fewer: the model finds the plain plan faster, [256,
    256].t() + y 3.6 us against 5.6)."""
    threads = fixed.get("threads", 256)
    chain = f["chain"]
    if f.get("crossed") and fixed.get("tile_rows", 1) and fixed.get("chunk", 1) \
            and fixed.get("grid_dims", 3) >= 2 and math.prod(chain[:-2]) <= hw.MAX_GRID[2]:
        rows = next((r for r in (8, 16, 32) if r * f["crossed"] >= hw.SECTOR
                     and chain[-2] % r == 0), 0)
        chunk = next((c for c in range(threads, 0, -hw.WARP) if chain[-1] % c == 0), 0)
        blocks = rows and chunk and math.prod(chain) // (rows * chunk)
        if rows and chunk and chain[-2] // rows <= hw.MAX_GRID[1] and blocks >= 2 * SMS:
            return {"grid_dims": 3, "leave_innermost": True, "chunk": chunk,
                    "tile_rows": rows, "threads": threads, "stage_inputs": "crossed",
                    "copy": "sync", "unroll": 32} | fixed
    if f.get("halo") and (tile := _halo_tile(chain, f["halo"], threads, fixed)):
        rows, chunk = tile
        return {"grid_dims": 3, "leave_innermost": True, "chunk": chunk, "tile_rows": rows,
                "threads": chunk, "stage_inputs": "reused", "copy": "sync",
                "unroll": 32} | fixed
    chunk = 0
    inner = chain[-1] if chain and chain[-1] is not None else 0  # (0: known at run time only)
    short = f["leaf"] and len(chain) == 1 and 0 < inner <= threads
    if short and not {"threads", "chunk"} & set(fixed):
        # a short 1-D loop: one block of the warps it needs (relu of 7 was 7 blocks of 1)
        threads = chunk = -(-inner // hw.WARP) * hw.WARP
    elif f["leaf"] and inner > threads:
        outer = math.prod(e or 1 for e in chain[:-1])
        per = 4
        while per > 1 and outer * -(-chain[-1] // (threads * per)) < 2 * SMS:
            per //= 2
        chunk = threads * per
    return {"grid_dims": 3, "leave_innermost": True, "chunk": chunk, "tile_rows": 0,
            "threads": threads, "stage_inputs": "reused", "copy": "sync", "unroll": 32} | fixed


HALO_SHARE = 8  # a tile's rows: up to this many times the halo rows it reads again


def _halo_tile(chain: tuple, halo: int, threads: int, fixed: dict) -> tuple[int, int] | None:
    """(rows, columns) of a 2-D output tile for an input whose next row reads `halo` input
    rows again (fact `halo`, a convolution's window less its stride): each block stages its
    rows' input and the halo once (tile-stage-inputs), so a tile of R rows of stride s reads
    (R s + halo) / (R s) of its input; R the most rows dividing the loop up to HALO_SHARE
    times the halo (3x3: 16, 1.125 reads an element), the columns one a thread in whole warps
    (ragged: the last clamped).
    None where a knob fixed elsewhere, the grid or the block count rules a tile out."""
    if not (fixed.get("tile_rows", 1) and fixed.get("chunk", 1) and fixed.get("grid_dims", 3) >= 2
            and len(chain) >= 2 and None not in chain[-2:]
            and math.prod(chain[:-2]) <= hw.MAX_GRID[2]):
        return None
    most = HALO_SHARE * halo
    rows = max((r for r in range(2, most + 1) if chain[-2] % r == 0), default=0)
    chunk = min(threads, -(-chain[-1] // hw.WARP) * hw.WARP)
    tiles = chain[-2] // rows if rows else 0
    blocks = math.prod(chain[:-2]) * tiles * -(-chain[-1] // chunk)
    if not rows or tiles > hw.MAX_GRID[1] or blocks < 2 * SMS:
        return None
    return rows, chunk


def heuristic(kind: str, facts: Facts, fixed: dict) -> dict:
    """The heuristic's knobs for a class and facts, around the `fixed` ones."""
    f = dict(facts)
    if kind == "matmul":
        return matmul_knobs(f, fixed)
    if kind == "attention":
        return attention_knobs(f, fixed)
    if kind == "row_reduce":
        return row_knobs(f, "extent", fixed)
    return pointwise_knobs(f, fixed)


# --------------------------------------------------------------------------------------------
# plans


def complete(kernel: str, kind: str, facts: Facts, fixed: dict[str, object],
             prefer: set[str] = frozenset()) -> Plan:
    """The plan of class `kind` with the `fixed` knobs (JSON or option values, converted to
    their knob's type) and the heuristic's choices around them for the rest; PlanError names
    the kernel and the knob of anything illegal (a knob in `prefer`, the ones a user wrote,
    before the rest)."""
    cls = CLASSES[kind]
    given: dict[str, Value] = {}
    for name, value in fixed.items():
        if name not in KNOBS:
            raise PlanError(kernel, name, "unknown knob")
        try:
            given[name] = KNOBS[name].convert(value)
        except ValueError as e:
            raise PlanError(kernel, name, str(e)) from None
    knobs = heuristic(kind, facts, given)
    names = cls.knob_names(knobs)
    missing = [n for n in names if n not in given]
    if missing and all(KNOBS[n].default is not None for n in missing):
        # a whole plan from before these knobs were added (a plan file, the tuning store):
        # they keep the kernel it was written (and measured) for
        given |= {n: KNOBS[n].default for n in missing}
        knobs = heuristic(kind, facts, given)
    plan = Plan(kind, facts, tuple((n, knobs[n]) for n in names))
    if bad := plan.violations():  # the rule broken first: it explains a knob out of place
        mine = [b for b in bad if b[0] in (prefer or given)]
        raise PlanError(kernel, *(mine or bad)[0])
    for name in given:
        if name not in names:
            raise PlanError(kernel, name, f"not a knob of this {kind} plan ({', '.join(names)})")
    return plan


def plan_kernel(kernel: tile.KernelOp, kind: str | None = None,
                fixed: dict[str, object] | None = None) -> Plan:
    """The kernel's plan: class `kind` (default: the heuristic's) around the `fixed` knobs."""
    name = kernel.sym_name.data
    classes = dict(legal_classes(kernel))
    kind = kind or next(iter(classes))
    if kind not in CLASSES:
        raise PlanError(name, "kind", f"unknown kind '{kind}'; expected one of "
                                      f"{', '.join(CLASSES)}")
    if kind not in classes:
        article = "an" if kind[0] in "aeiou" else "a"
        raise PlanError(name, "kind", f"the kernel cannot take {article} {kind} plan (it can take: "
                                      f"{', '.join(classes)})")
    return complete(name, kind, classes[kind], fixed or {})


def ensure_plan(kernel: tile.KernelOp, step: str | None = None,
                knobs: tuple[str, ...] = ()) -> Plan:
    """The kernel's plan, planned by the heuristic if it has none: with `step` (a pass whose
    options `knobs` were given), of the first legal class whose step it is and that has those
    knobs (the heuristic's class when none has)."""
    plan = kernel.the_plan
    if plan is not None:
        if not kernel.done_steps:
            _check_facts(kernel, plan)
        return plan
    kinds = [kind for kind, _ in legal_classes(kernel)]
    fits = [
        k for k in kinds
        if step in CLASSES[k].step_names() and set(knobs) <= set(_all_knobs(k))
    ]
    new = plan_kernel(kernel, (fits or kinds)[0])
    kernel.set_plan(new, structural_key(kernel) if kernel.key is None else None)
    return new


def _check_facts(kernel: tile.KernelOp, plan: Plan) -> None:
    """A plan that came with the IR (printed, then edited or written by hand) is carried out
    on the facts it states: before any step of it, they must be what its nest says (a `k`
    past the nest's K would split K into slices that read past it)."""
    read = FACTS[plan.kind](kernel)
    name = kernel.sym_name.data
    if read is None:
        raise VerifyException(f"kernel @{name}: its loop nest cannot take the {plan.kind} plan "
                              "it carries")
    stated = plan.facts_dict
    for fact, value in read:
        if fact in stated and stated[fact] != value or fact not in stated and \
                fact in CLASSES[plan.kind].facts:
            shown = value_text(stated[fact]) if fact in stated else "nothing"
            raise VerifyException(f"kernel @{name}: plan fact {fact} = {shown}, but its loop "
                                  f"nest has {value_text(value)} (facts are read off the "
                                  "nest; a plan changes its knobs)")


def _all_knobs(kind: str) -> list[str]:
    return [k for _, ks in CLASSES[kind].steps for k in ks]
