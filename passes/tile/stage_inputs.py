"""tile-stage-inputs: the slabs of its inputs a block reads are copied once into shared memory,
and those loads read the copy (plan knob `stage_inputs`: `reused` stages the inputs that two or
more load ops read, `all` every input, `none` nothing).

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
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import AffineMapAttr, MemRefType
from xdsl.ir import BlockArgument, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.rewriter import InsertPoint, Rewriter

from deplo import hardware as hw
from deplo.analysis.nest import Fixed, Range, block_regions, region_slabs
from deplo.dialects import loop, tile
from deplo.dialects.tile_plan import Plan
from deplo.passes.tile.kernel_pass import KernelPass


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
class TileStageInputsPass(KernelPass):
    """Stage the input slabs each block reads (`stage_inputs`: none, reused or all) in shared
    memory (`tile.stage` at block level), within the shared-memory budget."""

    name = "tile-stage-inputs"

    stage_inputs: str | None = None

    def carry_out(self, kernel: tile.KernelOp, plan: Plan) -> None:
        min_loads = {"none": 0, "reused": 2, "all": 1}[plan.knob("stage_inputs")]
        if not min_loads:
            return
        budget = hw.SHARED_MEMORY_BYTES - kernel.staged_bytes()
        for region in block_regions(kernel):
            last = None  # stages go first in the region, in order
            for s in region_slabs(kernel, region):
                if len(s.loads) < min_loads or not s.slab:
                    continue  # (a 0-d input is one scalar: nothing to share)
                offsets = [d[0] if isinstance(d, tuple) else d for d in s.slab]
                sizes = [d[1] - d[0] if isinstance(d, tuple) else 1 for d in s.slab]
                assert isinstance(s.buffer.type, MemRefType)
                shape = s.buffer.type.get_shape()
                if any(
                    isinstance(o, int) and not 0 <= o <= n - z
                    for o, z, n in zip(offsets, sizes, shape)
                ):
                    continue
                stage = tile.StageOp(s.buffer, offsets, sizes)
                if stage.smem_bytes > budget:
                    continue
                budget -= stage.smem_bytes
                if isinstance(s.buffer, BlockArgument) and s.buffer.name_hint:
                    stage.result.name_hint = s.buffer.name_hint + "s"
                where = InsertPoint.after(last) if last else InsertPoint.at_start(region)
                Rewriter.insert_op(stage, where)
                last = stage
                for o in s.loads:
                    Rewriter.replace_op(o, staged_load(o, stage.result, s.slab))
