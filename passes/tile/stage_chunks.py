"""tile-stage-chunks: each K chunk of a contraction's A and B tiles is copied once into shared
memory by the whole block, and the chunk's loads read the copy.

After tile-map-2d and tile-chunk-reduce the chunk loop runs inside thread loops that cover the
block; a buffer whose chunk slab is shared between threads (its coordinates do not depend on one
of the thread axes: A is the same for every thread.x, B for every thread.y) is staged at the top
of the chunk loop:

    %c = tile.for %k0 = 0 to 64 step 32 bind(serial) iter(...) {
      %d = tile.for %kk = 0 to 32 bind(serial) iter(...) { loop.load %x0[%i0, %k] ... }
    ->
    %c = tile.for %k0 = 0 to 64 step 32 bind(serial) iter(...) {
      %o = arith.muli %a0, %c64 : index
      %x0s = tile.stage %x0[%o, %k0] [64, 32] into shared copy(sync) buffers(1) pad(0)
          : memref<128x96xf32> -> memref<64x32xf32, 3 : i64>
      %d = tile.for %kk = 0 to 32 bind(serial) iter(...) {
        loop.load %x0s[%i0, %o, %kk] map (d0, d1, d2) -> (d0 - d1, d2) ...

The slab is found per dim from the span of every load's coordinate over the block (analysis.py:
block-uniform leaves plus a range over the thread ivs and the chunk's own loops); the loads of a
buffer must agree on the uniform part. A slab larger than the buffer's dim is cut to it; the part
of a last block's tile past the end reads as zero (tile.stage) and no clamped load reads it.
Buffers that are stored to stay global. A `tile.gather` (an implicit GEMM's B, its conv
window) is staged like a buffer: its chunk's copy computes each element (tile-to-kernel). With the plan's `transpose` (tile-register-tile's), a
slab whose innermost dim is the reduction ([rows][k]: A, a linear weight) is stored k-major,
`tile.stage ... transposed`: the rows (columns) of one k that a thread's register tile reads are
then consecutive words, read as 128-bit vectors (kernel-vectorize), and the lanes of a warp read
consecutive vectors. Carried out when the plan's `stage` is on; its facts
(`slabs`) and `dialects/tile_plan.staged_slabs` predict exactly these buffers, so the plan's
shared memory is checked before any pass runs. Which copy (sync or cp.async), buffers and
padding: tile-cp-async, tile-double-buffer, tile-pad-shared.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from deplo.analysis import index
from deplo.analysis import nest as an
from deplo.dialects import loop, tile
from deplo.dialects.tile_plan import Plan, staged_slabs
from deplo.passes.tile import rewrite as rw
from deplo.passes.tile.kernel_pass import KernelPass, PassOptionError


def span_context(c: an.Contraction, chunk: tile.ForOp) -> index.SpanContext:
    threads = c.thread_loops()
    region = threads[0].body.block
    ranges: dict[SSAValue, tuple[int, int]] = {}
    for lp in threads:
        ranges[lp.iv] = (0, (lp.extent or 1) - 1)
    for o in chunk.body.walk():
        if isinstance(o, tile.ForOp) and o.static_lb is not None:
            ranges[o.iv] = (o.static_lb, o.static_lb + ((o.extent or 1) - 1) * o.step.data)

    def uniform(v: SSAValue) -> bool:
        if v is chunk.iv:
            return True
        if isinstance(v, BlockArgument):
            return not region.is_ancestor(v.block)
        block = v.owner.parent_block()
        return block is None or not region.is_ancestor(block)

    return index.SpanContext(uniform, ranges, {lp.iv for lp in threads})


def access_spans(o: loop.LoadOp | tile.FragmentLoadOp, ctx: index.SpanContext) -> list[index.Span] | None:
    """Per dim, the span of what the load reads: a fragment covers its tile from its origin."""
    if isinstance(o, loop.LoadOp):
        return index.access_spans(o, ctx)
    spans = [index.span(v, ctx) for v in o.indices]
    if any(s is None for s in spans):
        return None
    rows, cols = o.kind.data.shape
    for d, extra in ((-2, rows - 1), (-1, cols - 1)):
        s = spans[d]
        spans[d] = index.Span(s.uniform, s.lo, s.hi + extra, s.deps)
    return spans  # type: ignore[return-value]


def shift_fragment(o: tile.FragmentLoadOp, buf: SSAValue, offsets, keep: list[bool]) -> None:
    """The fragment load from the staged copy: its origin minus the slab's offset (linear forms,
    so `(%k0 + %kk) - %k0` is `%kk`), unit dims dropped."""
    b = Builder(InsertPoint.before(o))
    indices = []
    for v, off, k in zip(o.indices, offsets, keep):
        if not k:
            continue
        terms, c = index.linear_of(v)
        terms = dict(terms)
        if isinstance(off, int):
            c -= off
        else:
            t2, c2 = index.linear_of(off)
            c -= c2
            for leaf, x in t2.items():
                terms[leaf] = terms.get(leaf, 0) - x
        terms = {leaf: x for leaf, x in terms.items() if x}
        indices.append(rw.linear_value(b, terms, c) if terms or c else rw.const(b, 0))
    new = tile.FragmentLoadOp(o.kind.data, buf, indices, o.lane)
    for old, r in zip(o.results, new.results):
        r.name_hint = old.name_hint
    Rewriter.replace_op(o, new)


@dataclass(frozen=True)
class TileStageChunksPass(KernelPass):
    """Stage, at the top of each K-chunk loop of a contraction on whole-block thread loops, the
    chunk slab of every input shared between threads (plan knob `stage`); with the register
    tile's `transpose`, a slab whose innermost dim is K ([rows][k]) is stored [k][rows]."""

    name = "tile-stage-chunks"

    stage: bool | None = None

    def carry_out(self, kernel: tile.KernelOp, plan: Plan) -> None:
        if not plan.knob("stage"):
            return
        c = an.find_contraction(kernel)
        if c is None or not c.covers_block():
            raise PassOptionError(f"{self.name}: kernel @{kernel.sym_name.data}: staging needs "
                                  "the contraction mapped to whole-block thread loops first "
                                  "(tile-map-2d or tile-tensor-core)")
        stored = an.stored_buffers(kernel)
        planned = max((math.prod(shape[:-1]) for shape in
                       staged_slabs(plan.facts_dict, plan.knob_dict)), default=0)
        wide = {lp.iv for lp in c.thread_loops() if (lp.extent or 0) > 1}
        for chunk, inner in an.chunk_loops(c.cell):
            ctx = span_context(c, chunk)
            groups: dict[SSAValue, list[loop.LoadOp | tile.FragmentLoadOp]] = {}
            for o in inner.body.walk():
                buf = o.buffer if isinstance(o, loop.LoadOp) else getattr(o, "source", None)
                if (
                    isinstance(o, loop.LoadOp | tile.FragmentLoadOp)
                    and (buf in kernel.args or isinstance(buf.owner, tile.GatherOp))
                    and buf not in stored
                ):
                    groups.setdefault(buf, []).append(o)
            b = Builder(InsertPoint.at_start(chunk.body.block))
            stages: list[Operation] = []
            for buf, loads in groups.items():
                spans = [access_spans(o, ctx) for o in loads]
                if any(s is None for s in spans):
                    continue
                merged = self.merge(spans)  # type: ignore[arg-type]
                if merged is None or not (wide - set().union(*(s.deps for s in merged))):
                    continue  # every thread reads its own elements: nothing to share
                assert isinstance(buf.type, MemRefType)
                shape = buf.type.get_shape()
                sizes = [  # a slab at a dynamic offset may be larger than the dim (zeros)
                    s.hi - s.lo + 1 if s.uniform else min(s.hi - s.lo + 1, n)
                    for s, n in zip(merged, shape)
                ]
                if any(
                    not s.uniform and not 0 <= s.lo <= n - z
                    for s, z, n in zip(merged, sizes, shape)
                ) or math.prod(sizes) > planned:
                    continue  # (past the plan's slabs: a row read at `c * size + j` spans
                    # whole rows of a reshape, which the plan's shared memory did not count)
                offsets: list[int | SSAValue] = [
                    rw.linear_value(b, s.uniform, s.lo) if s.uniform else s.lo for s in merged
                ]
                keep = [z != 1 for z in sizes]
                kept = [s for s, k in zip(merged, keep) if k]
                transposed = bool(plan.knob("transpose")) and len(kept) >= 2 \
                    and chunk.iv in kept[-1].uniform and chunk.iv not in kept[-2].uniform
                stage = tile.StageOp(buf, offsets, sizes, transposed=transposed)
                if buf.name_hint:
                    stage.result.name_hint = buf.name_hint + "s"
                stages.append(stage)
                for o in loads:
                    if isinstance(o, tile.FragmentLoadOp):
                        shift_fragment(o, stage.result, offsets, keep)
                        continue
                    new = rw.shifted_access(o, stage.result, offsets, keep, transposed)
                    assert new is not None  # spans exist only for linear coordinates
                    Rewriter.replace_op(o, new)
            for stage in stages:  # after the offsets, one after the other (one barrier)
                b.insert(stage)
            rw.drop_dead(chunk)

    @staticmethod
    def merge(spans: list[list[index.Span]]) -> list[index.Span] | None:
        out = list(spans[0])
        for s in spans[1:]:
            for d, (a, x) in enumerate(zip(out, s)):
                if not a.same_base(x):
                    return None
                out[d] = index.Span(a.uniform, min(a.lo, x.lo), max(a.hi, x.hi), a.deps | x.deps)
        return out
