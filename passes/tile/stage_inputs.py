"""tile-stage-inputs: the slabs of its inputs a block reads are copied once into shared memory,
and those loads read the copy (plan knob `stage_inputs`: `reused` stages the inputs that two or
more load ops read, `crossed` those read across their rows first, then the reused ones, `all`
every input, `none` nothing).

    tile.for %a1 = 0 to 32 bind(block.x) {
      tile.for %t = 0 to 256 bind(thread.x) {
        ... tile.for %a2 = %t to 2048 step 256 ... loop.load %x[%a0, %a1, %a2] ...
        ... tile.for %a3 = %t to 2048 step 256 ... loop.load %x[%a0, %a1, %a3] ...
    ->
    tile.for %a1 = 0 to 32 bind(block.x) {
      %xs = tile.stage %x[%a0, %a1, 0] [1, 1, 2048] into shared copy(sync) buffers(1) pad(0)
          : memref<1x32x2048xf32> -> memref<2048xf32, 3 : i64>
      tile.for %t = 0 to 256 bind(thread.x) {
        ... loop.load %xs[%a2] ... loop.load %xs[%a3] ...

The slab is found per dim from the loads of one block-level region (analysis/nest.py,
`region_slabs`): a coordinate made of values defined outside the region is fixed for the
block (size 1), a coordinate that is an induction variable of a loop inside the region spans
that loop's range over all threads; every load of the buffer must agree on the fixed
coordinates. Inputs are staged in the order of their first load while the kernel's shared
memory stays within the 48 KB budget (a slab that does not fit stays in global memory).

A coordinate `base * scale + iv` (a loop tile-map-grid split over blocks: `base` the block's
chunk, `iv` its loop inside) spans a window from the chunk's start. A slab read across its rows
(a transpose, `x.t() + y`: the thread's loop moves a coordinate before the innermost, a serial
loop the innermost; tile-map-grid's `tile_rows` tile) is crossed: its copy reads the rows
coalesced, and its rows are padded by one element so that the threads reading down a column
hit 32 banks.

A coordinate `(i * s + taps) mod n` or `i * s + taps` (a convolution's input: `i` the output
position, `taps` the ivs of the kernel window's loops inside the block; nest.tapped) spans i's
slab times s, moved by the taps' least and greatest shift; its load reads each element as often
as its taps overlap (a 3x3 window: 9 times, so one load op is a reused one). A `mod n` coordinate
(a padded conv reads (i + k - p) mod n and masks the pad) is staged `wrapped`: the slab starts
before 0 or ends past n, its copy taking those coordinates mod n, so the copy holds exactly what
the loads read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.dialects.builtin import AffineMapAttr, IndexType, IntegerAttr, MemRefType
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.ir.affine import AffineDimExpr, AffineExpr, AffineMap
from xdsl.rewriter import InsertPoint, Rewriter

from deplo import hardware as hw
from deplo.analysis.nest import (
    Fixed,
    Range,
    Slab,
    Window,
    block_regions,
    defined_inside,
    region_slabs,
    share_vector,
    slab_size,
    tap_overlap,
    tapped,
    window_parts,
)
from deplo.dialects import loop, tile
from deplo.dialects.tile_plan import Plan
from deplo.passes.tile.kernel_pass import KernelPass


def staged_load(load: loop.LoadOp, staged: SSAValue, slab: list[Fixed | Range | Window],
                region: Block) -> loop.LoadOp:
    """The load of `load`'s element from the staged copy of `slab`."""
    m = load.access_map()
    indices = list(load.indices)
    results: list[AffineExpr] = []
    shape = load.buffer.type.get_shape()  # type: ignore[attr-defined]

    def position(v: SSAValue, dim: Fixed | Range | Window, at: int, s: int = 1) -> AffineExpr:
        """Where index `v` (load index `at`) times `s` lies in the slab's dim, before any
        taps."""
        if isinstance(dim, Window):
            if v is dim.base:  # a fixed position moved by taps: the window starts at it
                return AffineExpr.constant(-dim.lo)
            parts = window_parts(v, region)
            if parts is None:  # a clamped index (nest.clamped): from the window's start
                indices.append(dim.base)
                return AffineExpr.dimension(at) * s - AffineExpr.dimension(len(indices) - 1) \
                    * dim.scale - dim.lo
            indices.append(parts[2])
            return AffineExpr.dimension(len(indices) - 1) * s - dim.lo
        assert isinstance(dim, tuple)
        return AffineExpr.dimension(at) * s - dim[0]

    for expr, dim, n in zip(m.results, slab, shape):
        if slab_size(dim) == 1:
            continue  # (the stage drops a unit dim)
        if isinstance(expr, AffineDimExpr):
            results.append(position(load.indices[expr.position], dim, expr.position))
        else:
            t = tapped(expr, load, n, region)
            assert t is not None
            results.append(position(load.indices[t.pos], dim, t.pos, t.stride) + t.taps)
    if not results:
        results = [AffineExpr.constant(0)]
    full = AffineMap(len(indices), 0, tuple(results))
    used = full.used_dims()
    compact = full.drop_dims([i not in used for i in range(len(indices))])
    return loop.LoadOp(staged, [v for i, v in enumerate(indices) if i in used],
                       AffineMapAttr(compact))


def _on_threads(v: SSAValue) -> bool:
    """`v` is a thread loop's iv, or a strided share of one (tile-map-threads)."""
    if not isinstance(v, BlockArgument) or not isinstance(lp := v.block.parent_op(), tile.ForOp):
        return False
    return lp.binding.is_thread or isinstance(lp.dyn_lb, SSAValue) and _on_threads(lp.dyn_lb)


def _crossed(s: Slab, region: Block) -> bool:
    """Each load reads the innermost dim by a serial loop and another dim by the threads: a
    warp's lanes in as many rows."""
    def moving(ld: loop.LoadOp, e: AffineExpr) -> SSAValue | None:
        if not isinstance(e, AffineDimExpr):
            return None
        v = ld.indices[e.position]
        parts = window_parts(v, region)
        return parts[2] if parts else v

    for ld in s.loads:
        if not ld.access_map().results:  # a 0-d buffer: one element, no rows
            return False
        *outer, last = ld.access_map().results
        inner = moving(ld, last)
        if inner is None or _on_threads(inner) or not defined_inside(inner, region) \
                or not any((v := moving(ld, e)) is not None and _on_threads(v) for e in outer):
            return False
    return len(s.slab) >= 2


def _reads(s: Slab, region: Block) -> float:
    """How many times the block reads each element of the slab: its loads, the V loads of a
    share in steps of V neighbours (nest.share_vector) counting once (each reads a quarter of
    the row: w in RMSNorm's scaling is read once, not 4 times), a load moved by taps as many
    times as its taps overlap (a 3x3 convolution's window reads each input 9 times)."""
    return sum((1 / share_vector(ld.parent_op()) if isinstance(ld.parent_op(), tile.ForOp)
                else 1) * tap_overlap(ld, region) for ld in s.loads)


def _offset(dim: Fixed | Range | Window, ops: list[Operation]) -> int | SSAValue:
    """Where the slab starts along a dim; a window's start is computed (`ops`) before the
    stage."""
    if not isinstance(dim, Window):
        return dim[0] if isinstance(dim, tuple) else dim
    start = dim.base
    if dim.scale != 1:
        scale = arith.ConstantOp(IntegerAttr(dim.scale, IndexType()))
        ops += [scale, mul := arith.MuliOp(dim.base, scale.result)]
        start = mul.result
    if dim.lo:
        lo = arith.ConstantOp(IntegerAttr(dim.lo, IndexType()))
        ops += [lo, add := arith.AddiOp(start, lo.result)]
        start = add.result
    return start


def _in_bounds(s: Slab, sizes: list[int], shape: Sequence[int]) -> bool:
    """Whether the slab's static coordinates lie in the buffer: a wrapped slab's may pass an
    end by less than the dim (its copy takes them mod the dim, as the loads did)."""
    for d, z, n in zip(s.slab, sizes, shape):
        if isinstance(d, int) and not 0 <= d <= n - 1:
            return False
        if isinstance(d, tuple) and not (-n < d[0] and d[0] + z < 2 * n if s.wrapped
                                         else 0 <= d[0] <= n - z):
            return False
    return True


@dataclass(frozen=True)
class TileStageInputsPass(KernelPass):
    """Stage the input slabs each block reads (`stage_inputs`: none, reused or all) in shared
    memory (`tile.stage` at block level), within the shared-memory budget."""

    name = "tile-stage-inputs"

    stage_inputs: str | None = None

    def carry_out(self, kernel: tile.KernelOp, plan: Plan) -> None:
        mode = plan.knob("stage_inputs")
        min_loads = {"none": 0, "reused": 2, "crossed": 2, "all": 1}[mode]
        if not min_loads:
            return
        budget = hw.SHARED_MEMORY_BYTES - kernel.staged_bytes()
        for region in block_regions(kernel):
            last = None  # stages go first in the region, in order
            slabs = [(s, mode == "crossed" and _crossed(s, region))
                     for s in region_slabs(kernel, region)]
            for s, crossed in sorted(slabs, key=lambda sc: not sc[1]):
                if _reads(s, region) < min_loads and not crossed or not s.slab:
                    continue  # (a 0-d input is one scalar: nothing to share)
                sizes = [slab_size(d) for d in s.slab]
                assert isinstance(s.buffer.type, MemRefType)
                shape = s.buffer.type.get_shape()
                if not _in_bounds(s, sizes, shape):
                    continue
                pad = 1 if crossed else 0
                if tile.StageOp(s.buffer, [0] * len(sizes), sizes, pad=pad).smem_bytes > budget:
                    continue
                ops: list[Operation] = []
                stage = tile.StageOp(s.buffer, [_offset(d, ops) for d in s.slab], sizes, pad=pad,
                                     wrapped=s.wrapped)
                budget -= stage.smem_bytes
                if isinstance(s.buffer, BlockArgument) and s.buffer.name_hint:
                    stage.result.name_hint = s.buffer.name_hint + "s"
                where = InsertPoint.after(last) if last else InsertPoint.at_start(region)
                Rewriter.insert_op([*ops, stage], where)
                last = stage
                for o in s.loads:
                    Rewriter.replace_op(o, staged_load(o, stage.result, s.slab, region))
