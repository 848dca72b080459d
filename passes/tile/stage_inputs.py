"""tile-stage-inputs: a slab of an input that a block reads more than once is copied once into
shared memory, and those loads read the copy.

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

The slab is found per dim from the loads of one block-level region: a coordinate made of values
defined outside the region is fixed for the block (size 1), a coordinate that is an induction
variable of a loop inside the region spans that loop's range over all threads. Every load of
the buffer must agree on the fixed coordinates. A buffer is staged when at least `min-loads`
load ops read it, it is never stored to, and the slabs fit in `max-bytes`.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import AffineMapAttr, MemRefType, ModuleOp
from xdsl.ir import Block, BlockArgument, SSAValue
from xdsl.ir.affine import AffineConstantExpr, AffineDimExpr, AffineExpr, AffineMap
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from deplo.dialects import loop, tile

Fixed = int | SSAValue  # a coordinate that is the same for the whole block
Range = tuple[int, int]  # [lo, hi) spanned by the block's loops


def defined_inside(v: SSAValue, region: Block) -> bool:
    """Whether `v` may differ between the threads or iterations of one block's region (the
    region's own arguments, e.g. the block loop's induction variable, do not)."""
    if isinstance(v, BlockArgument):
        return v.block is not region and region.is_ancestor(v.block)
    block = v.owner.parent_block()
    return block is not None and region.is_ancestor(block)


def iv_range(v: SSAValue) -> Range | None:
    """The values an induction variable takes over all threads of the block."""
    if not isinstance(v, BlockArgument) or v.index != 0:
        return None
    lp = v.block.parent_op()
    if not isinstance(lp, tile.ForOp):
        return None
    if lp.static_lb is not None:
        extent = lp.extent or 0
        return lp.static_lb, lp.static_lb + (extent - 1) * lp.step.data + 1
    # a strided share: tile.for %a = %t to N step S, %t the iv of a thread loop
    outer = lp.dyn_lb
    if isinstance(outer, BlockArgument) and outer.index == 0:
        tl = outer.block.parent_op()
        if isinstance(tl, tile.ForOp) and tl.binding.is_thread and tl.step.data == 1:
            return tl.static_lb or 0, lp.ub.data
    return None


def slab_of(load: loop.LoadOp, region: Block) -> list[Fixed | Range] | None:
    """Per buffer dim: the fixed coordinate or the range this load reads in one block."""
    out: list[Fixed | Range] = []
    for expr in load.access_map().results:
        if isinstance(expr, AffineConstantExpr):
            out.append(expr.value)
            continue
        if not isinstance(expr, AffineDimExpr):
            return None
        v = load.indices[expr.position]
        if not defined_inside(v, region):
            out.append(v)
        elif (r := iv_range(v)) is not None:
            out.append(r)
        else:
            return None
    return out


def merge(slabs: list[list[Fixed | Range]]) -> list[Fixed | Range] | None:
    """One slab covering all loads, or None when their fixed coordinates differ."""
    merged = list(slabs[0])
    for slab in slabs[1:]:
        for d, (a, b) in enumerate(zip(merged, slab)):
            if isinstance(a, tuple) and isinstance(b, tuple):
                merged[d] = (min(a[0], b[0]), max(a[1], b[1]))
            elif isinstance(a, tuple) or isinstance(b, tuple) or not (a is b or a == b):
                return None
    return merged


def staged_load(load: loop.LoadOp, staged: SSAValue, slab: list[Fixed | Range]) -> loop.LoadOp:
    """The load of `load`'s element from the staged copy of `slab`."""
    m = load.access_map()
    results: list[AffineExpr] = []
    for expr, dim in zip(m.results, slab):
        if isinstance(dim, tuple) and dim[1] - dim[0] != 1:
            results.append(expr - dim[0])
    if not results:
        results = [AffineExpr.constant(0)]
    full = AffineMap(m.num_dims, 0, tuple(results))
    used = full.used_dims()
    compact = full.drop_dims([i not in used for i in range(m.num_dims)])
    indices = [v for i, v in enumerate(load.indices) if i in used]
    return loop.LoadOp(staged, indices, AffineMapAttr(compact))


@dataclass(frozen=True)
class TileStageInputsPass(ModulePass):
    """Stage the input slabs each block reads more than once in shared memory (`tile.stage`
    at block level, `copy` = sync|cp_async), up to `max-bytes` per kernel."""

    name = "tile-stage-inputs"

    max_bytes: int = tile.SHARED_MEMORY_BYTES
    copy: str = "sync"
    min_loads: int = 2

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        copy = tile.CopyKind(self.copy)
        for kernel in [k for k in op.walk() if isinstance(k, tile.KernelOp)]:
            self.stage_kernel(kernel, copy)

    def stage_kernel(self, kernel: tile.KernelOp, copy: tile.CopyKind) -> None:
        stored = {o.buffer for o in kernel.body.walk() if isinstance(o, loop.StoreOp)}
        budget = min(self.max_bytes, tile.SHARED_MEMORY_BYTES) - kernel.staged_bytes()
        changed = False
        for region in tile.block_regions(kernel):
            anchor = region.first_op
            loads: dict[SSAValue, list[loop.LoadOp]] = {}
            for o in region.walk():
                if (
                    isinstance(o, loop.LoadOp)
                    and o.buffer in kernel.args
                    and o.buffer not in stored
                ):
                    loads.setdefault(o.buffer, []).append(o)
            for buf, group in loads.items():
                if len(group) < self.min_loads:
                    continue
                slabs = [slab_of(o, region) for o in group]
                if any(s is None for s in slabs) or (slab := merge(slabs)) is None:  # type: ignore[arg-type]
                    continue
                offsets = [d[0] if isinstance(d, tuple) else d for d in slab]
                sizes = [d[1] - d[0] if isinstance(d, tuple) else 1 for d in slab]
                shape = buf.type.get_shape() if isinstance(buf.type, MemRefType) else ()
                if any(
                    isinstance(o, int) and not 0 <= o <= n - s
                    for o, s, n in zip(offsets, sizes, shape)
                ):
                    continue
                stage = tile.StageOp(buf, offsets, sizes, copy)
                if stage.smem_bytes > budget:
                    continue
                budget -= stage.smem_bytes
                if isinstance(buf, BlockArgument) and buf.name_hint:
                    stage.result.name_hint = buf.name_hint + "s"
                assert anchor is not None
                Rewriter.insert_op(stage, InsertPoint.before(anchor))
                for o in group:
                    Rewriter.replace_op(o, staged_load(o, stage.result, slab))
                changed = True
        if changed:
            kernel.record(self)
