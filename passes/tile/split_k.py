"""tile-split-k: a matmul with few outputs and a long K is split into `splits` slices of K that
run on their own blocks; a second kernel adds the partial sums and applies the epilogue.

    tile.kernel @mm(%a, %b, %out) {                     tile.kernel @mm(%a, %b, %out, %part) {
      tile.for %i { tile.for %j {                          tile.for %s = 0 to 4 bind(serial) {
        %acc = tile.for %k = 0 to 4096 iter(%zero) {        tile.for %i { tile.for %j {
          ... A[i, k] * B[k, j] ...                  ->        %acc = tile.for %k = 0 to 1024 iter(%zero) {
        }                                                        %kg = %s * 1024 + %k ; ... A[i, kg] * B[kg, j]
        EPILOGUE(%acc) ; store %out[i, j]                    }
                                                             loop.store %acc, %part[%s, %i, %j]
                                                    tile.kernel @mm_sum(%a, %b, %out, %part) {
                                                      tile.for %i { tile.for %j {
                                                        %acc = tile.for %s = 0 to 4 iter(%zero) { + %part[%s, %i, %j] }
                                                        EPILOGUE(%acc) ; store %out[i, j]

The partials go to an fp32 buffer [splits, chain extents...] that the host function allocates;
it launches @mm then @mm_sum. A second kernel rather than atomics: the sum is deterministic, the
output needs no zeroing, and any epilogue (bias, residual, relu, a cast to fp16) stays exact. The
split loop is the outermost free axis of @mm, so tile-map-2d puts it on block.z and the other
schedule passes apply to both kernels as to any contraction (the split loop sits just outside the
rows, where a batch would be: tile-map-2d and tile-tensor-core put it on block.z).

Applies to a contraction on serial loops (`0 to N step 1`) whose one reduce loop adds into a
float accumulator, when `splits` divides K; a no-op elsewhere and on kernels already split.

Heuristic (splits=0): when 64 x 64 output tiles give fewer than 32 blocks (H100 has 132 SMs) and
K >= 1024: the largest divisor of K not above min(128 / blocks, K / 256) (at least 256 of K per
split); no split below 2.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import AnyFloat, FloatAttr, IntAttr, MemRefType, ModuleOp, StringAttr
from xdsl.ir import Block, Region
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from deplo.dialects import loop, tile
from deplo.passes.tile import analysis as an
from deplo.passes.tile.cooperative_reduce import combine_kinds


def pick_splits(c: an.Contraction, k: int) -> int:
    outputs = an.output_elements(c)
    blocks = max(1, outputs // (64 * 64))
    if blocks >= 32 or k < 1024:
        return 0
    limit = min(128 // blocks, k // 256)
    return max((s for s in range(2, limit + 1) if k % s == 0), default=0)


@dataclass(frozen=True)
class TileSplitKPass(ModulePass):
    """Split the K loop of tall-skinny contractions into `splits` slices on their own blocks,
    partial sums reduced by a second kernel (0 picks the heuristic)."""

    name = "tile-split-k"

    splits: int = 0

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in [k for k in op.walk() if isinstance(k, tile.KernelOp)]:
            self.split_kernel(op, kernel)

    def split_kernel(self, module: ModuleOp, kernel: tile.KernelOp) -> None:
        if any(s.startswith(self.name) for s in kernel.schedule_list):
            return
        c = an.find_contraction(kernel)
        if c is None or len(c.reduces) != 1 or kernel.block_dims != (1, 1, 1):
            return
        if any(
            lp.binding != tile.Bind.SERIAL or lp.static_lb != 0 or lp.step.data != 1
            for lp in c.chain
        ):
            return
        red = c.reduces[0]
        k = red.extent or 0
        if red.static_lb != 0 or red.step.data != 1 or len(red.inits) != 1:
            return
        acc_t = red.inits[0].type
        if not isinstance(acc_t, AnyFloat) or combine_kinds(red) != [tile.CombineKind.ADD]:
            return
        splits = self.splits or pick_splits(c, k)
        if splits < 2 or k % splits:
            return
        launches = [
            o
            for o in module.walk()
            if isinstance(o, tile.LaunchOp) and o.callee.root_reference.data == kernel.sym_name.data
        ]
        if len(launches) != 1:
            return
        part_t = MemRefType(acc_t, [splits, *(lp.ub.data for lp in c.chain)])
        total = kernel.clone()
        total.sym_name = StringAttr(kernel.sym_name.data + "_sum")
        Rewriter.insert_op(total, InsertPoint.after(kernel))
        self.partial_kernel(kernel, c, red, splits, part_t)
        tc = an.find_contraction(total)
        assert tc is not None
        self.sum_kernel(total, tc, tc.reduces[0], splits, part_t)
        launch = launches[0]
        b = Builder(InsertPoint.before(launch))
        part = b.insert(memref.AllocOp([], [], part_t)).memref
        part.name_hint = "partials"
        args = [*launch.args, part]
        b1 = tile.LaunchOp(kernel.sym_name.data, args)
        Rewriter.replace_op(launch, b1)
        Rewriter.insert_op(tile.LaunchOp(total.sym_name.data, args), InsertPoint.after(b1))
        recorded = dataclasses.replace(self, splits=splits)
        kernel.record(recorded)
        total.record(recorded)

    @staticmethod
    def partial_kernel(kernel, c: an.Contraction, red: tile.ForOp, splits: int, part_t) -> None:
        """@mm: a split loop around the rows (tile-map-2d's block.z); each slice of K from zero;
        the partial stored."""
        part = kernel.body.block.insert_arg(part_t, len(kernel.args))
        part.name_hint = "partials"
        axes = c.serial_axes()
        outer = axes[-2] if len(axes) >= 2 else c.chain[0]
        body = Block(arg_types=[an.INDEX])
        split = tile.ForOp(0, splits, tile.Bind.SERIAL, [], Region(body))
        split.iv.name_hint = "split"
        Rewriter.insert_op(split, InsertPoint.before(outer))
        outer.detach()
        body.add_op(outer)
        body.add_op(tile.YieldOp())
        per = (red.extent or 0) // splits
        red.ub = IntAttr(per)
        base = an.mul(Builder(InsertPoint.before(red)), split.iv, per)
        base.name_hint = "k0"
        uses = list(red.iv.uses)
        kg = an.add(Builder(InsertPoint.at_start(red.body.block)), base, red.iv)
        kg.name_hint = red.iv.name_hint
        for u in uses:
            u.operation.operands[u.index] = kg
        init = red.inits[0]
        if not (
            isinstance(init.owner, arith.ConstantOp)
            and init.owner.value == FloatAttr(0.0, init.type)
        ):
            zero = arith.ConstantOp(FloatAttr(0.0, init.type))
            Rewriter.insert_op(zero, InsertPoint.before(red))
            red.operands[len(red.operands) - 1] = zero.result
        store = loop.StoreOp(red.res[0], part, [split.iv, *(lp.iv for lp in c.chain)])
        Rewriter.insert_op(store, InsertPoint.after(red))
        for op in reversed([o for o in c.cell.ops][list(c.cell.ops).index(store) + 1 :]):
            if not isinstance(op, tile.YieldOp):
                Rewriter.erase_op(op)
        an.drop_dead(kernel)

    @staticmethod
    def sum_kernel(total, c: an.Contraction, red: tile.ForOp, splits: int, part_t) -> None:
        """@mm_sum: the reduce loop replaced by the sum of the partials over the splits."""
        part = total.body.block.insert_arg(part_t, len(total.args))
        part.name_hint = "partials"
        body = Block(arg_types=[an.INDEX, red.inits[0].type])
        s = tile.ForOp(0, splits, tile.Bind.SERIAL, [red.inits[0]], Region(body))
        s.iv.name_hint, body.args[1].name_hint = "split", "acc"
        b = Builder(InsertPoint.at_end(body))
        p = b.insert(loop.LoadOp(part, [s.iv, *(lp.iv for lp in c.chain)])).result
        n = b.insert(arith.AddfOp(body.args[1], p)).result
        b.insert(tile.YieldOp(n))
        Rewriter.insert_op(s, InsertPoint.before(red))
        red.res[0].replace_all_uses_with(s.res[0])
        s.res[0].name_hint = red.res[0].name_hint
        Rewriter.erase_op(red)
        an.drop_dead(total)
