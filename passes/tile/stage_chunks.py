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
Buffers that are stored to, and slabs over `max-bytes` of shared memory in total, stay global.
Which copy (sync or cp.async), buffers and padding: tile-cp-async, tile-double-buffer,
tile-pad-shared.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects.builtin import MemRefType, ModuleOp
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from deplo.dialects import loop, tile
from deplo.passes.tile import analysis as an


def chunk_loops(cell: Block) -> list[tuple[tile.ForOp, tile.ForOp]]:
    """(chunk loop, inner loop) pairs: a static serial reduce loop holding a serial reduce loop."""
    out = []
    for lp in cell.ops:
        if not (isinstance(lp, tile.ForOp) and lp.inits and lp.static_lb is not None):
            continue
        if any(isinstance(o, tile.StageOp) for o in lp.body.block.ops):
            continue
        inner = [o for o in lp.body.block.ops if isinstance(o, tile.ForOp) and o.inits]
        if len(inner) == 1 and inner[0].static_lb is not None:
            out.append((lp, inner[0]))
    return out


def span_context(c: an.Contraction, chunk: tile.ForOp) -> an.SpanContext:
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

    return an.SpanContext(uniform, ranges, {lp.iv for lp in threads})


def access_spans(o: loop.LoadOp | tile.FragmentLoadOp, ctx: an.SpanContext) -> list[an.Span] | None:
    """Per dim, the span of what the load reads: a fragment covers its tile from its origin."""
    if isinstance(o, loop.LoadOp):
        return an.access_spans(o, ctx)
    spans = [an.span(v, ctx) for v in o.indices]
    if any(s is None for s in spans):
        return None
    rows, cols = o.kind.data.shape
    for d, extra in ((-2, rows - 1), (-1, cols - 1)):
        s = spans[d]
        spans[d] = an.Span(s.uniform, s.lo, s.hi + extra, s.deps)
    return spans  # type: ignore[return-value]


def shift_fragment(o: tile.FragmentLoadOp, buf: SSAValue, offsets, keep: list[bool]) -> None:
    """The fragment load from the staged copy: its origin minus the slab's offset (linear forms,
    so `(%k0 + %kk) - %k0` is `%kk`), unit dims dropped."""
    b = Builder(InsertPoint.before(o))
    indices = []
    for v, off, k in zip(o.indices, offsets, keep):
        if not k:
            continue
        terms, c = an.linear_of(v)
        terms = dict(terms)
        if isinstance(off, int):
            c -= off
        else:
            t2, c2 = an.linear_of(off)
            c -= c2
            for leaf, x in t2.items():
                terms[leaf] = terms.get(leaf, 0) - x
        terms = {leaf: x for leaf, x in terms.items() if x}
        indices.append(an.linear_value(b, terms, c) if terms or c else an.const(b, 0))
    new = tile.FragmentLoadOp(o.kind.data, buf, indices, o.lane)
    for old, r in zip(o.results, new.results):
        r.name_hint = old.name_hint
    Rewriter.replace_op(o, new)


@dataclass(frozen=True)
class TileStageChunksPass(ModulePass):
    """Stage, at the top of each K-chunk loop of a contraction on whole-block thread loops, the
    chunk slab of every input shared between threads (up to `max-bytes` in total)."""

    name = "tile-stage-chunks"

    max_bytes: int = tile.SHARED_MEMORY_BYTES

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in [k for k in op.walk() if isinstance(k, tile.KernelOp)]:
            self.stage_kernel(kernel)

    def stage_kernel(self, kernel: tile.KernelOp) -> None:
        c = an.find_contraction(kernel)
        if c is None or not c.covers_block():
            return
        stored = an.stored_buffers(kernel)
        budget = min(self.max_bytes, tile.SHARED_MEMORY_BYTES) - kernel.staged_bytes()
        changed = False
        wide = {lp.iv for lp in c.thread_loops() if (lp.extent or 0) > 1}
        for chunk, inner in chunk_loops(c.cell):
            ctx = span_context(c, chunk)
            groups: dict[SSAValue, list[loop.LoadOp | tile.FragmentLoadOp]] = {}
            for o in inner.body.walk():
                buf = o.buffer if isinstance(o, loop.LoadOp) else getattr(o, "source", None)
                if (
                    isinstance(o, loop.LoadOp | tile.FragmentLoadOp)
                    and buf in kernel.args
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
                ):
                    continue
                nbytes = tile.staged_type(buf.type, sizes, 0)
                nbytes = math.prod(nbytes.get_shape()) * tile.element_bytes(buf.type.element_type)
                if nbytes > budget:
                    continue
                budget -= nbytes
                offsets: list[int | SSAValue] = [
                    an.linear_value(b, s.uniform, s.lo) if s.uniform else s.lo for s in merged
                ]
                stage = tile.StageOp(buf, offsets, sizes)
                if isinstance(buf, BlockArgument) and buf.name_hint:
                    stage.result.name_hint = buf.name_hint + "s"
                stages.append(stage)
                keep = [z != 1 for z in sizes]
                for o in loads:
                    if isinstance(o, tile.FragmentLoadOp):
                        shift_fragment(o, stage.result, offsets, keep)
                        continue
                    new = an.shifted_access(o, stage.result, offsets, keep)
                    assert new is not None  # spans exist only for linear coordinates
                    Rewriter.replace_op(o, new)
            for stage in stages:  # after the offsets, one after the other (one barrier)
                b.insert(stage)
            changed |= bool(stages)
            an.drop_dead(chunk)
        if changed:
            kernel.record(self)

    @staticmethod
    def merge(spans: list[list[an.Span]]) -> list[an.Span] | None:
        out = list(spans[0])
        for s in spans[1:]:
            for d, (a, x) in enumerate(zip(out, s)):
                if not a.same_base(x):
                    return None
                out[d] = an.Span(a.uniform, min(a.lo, x.lo), max(a.hi, x.hi), a.deps | x.deps)
        return out
