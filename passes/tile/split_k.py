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
it launches @mm then @mm_sum. With the plan's `split_sum = last_block` there is no second
kernel: each split stores its partials, and the last split of each block tile to arrive
(tile.split_last: one counter a tile) adds them up, in split order, and finishes the outputs:

      loop.store %acc, %part[%s, %i, %j]
      %last = tile.split_last %part[%s] of 4 : memref<4x64x64xf32>
      scf.if %last {
        %t = tile.for %s2 = 0 to 4 iter(%zero) { + %part[%s2, %i, %j] }
        EPILOGUE(%t) ; store %out[i, j]

That saves a launch and the second kernel's whole pass over the partials; the last block's
reads are its tile's splits only. Same sums in the same order: the result is bit-identical.
Either way, partial sums rather than atomics: the sum is deterministic, the output needs no
zeroing, and any epilogue (bias, residual, relu, a cast to fp16) stays exact. The
split loop sits just outside the rows, where a batch would be, so tile-map-2d and
tile-tensor-core put it on block.z. @mm keeps its plan; @mm_sum gets the planner's plan of its
own (a contraction over the splits: usually pointwise).

Carries out a matmul plan's `splits` (1: nothing to do); the plan's facts say K is one float sum
that `splits` divides.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import FloatAttr, IntAttr, MemRefType, ModuleOp, StringAttr
from xdsl.ir import Block, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from deplo.analysis.nest import Contraction, find_contraction
from deplo.dialects import loop, tile
from deplo.dialects.tile_plan import Plan
from deplo.passes.tile import planner
from deplo.passes.tile.kernel_pass import KernelPass
from deplo.passes.tile.rewrite import INDEX, add, add_scratch, drop_dead, mul


@dataclass(frozen=True)
class TileSplitKPass(KernelPass):
    """Split the K loop of a contraction into `splits` slices on their own blocks, partial sums
    reduced by a second kernel or, `split_sum = last_block`, by the last block of each tile."""

    name = "tile-split-k"

    splits: int | None = None
    split_sum: str | None = None

    def carry_out(self, kernel: tile.KernelOp, plan: Plan) -> None:
        splits = plan.knob("splits")
        if splits == 1:
            return
        c = find_contraction(kernel)
        assert c is not None and len(c.reduces) == 1  # the plan's facts say so
        acc_t = c.reduces[0].inits[0].type
        part_t = MemRefType(acc_t, [splits, *(lp.ub.data for lp in c.chain)])
        if plan.knob("split_sum") == "last_block":
            partial_kernel(kernel, c, splits, part_t, finish=True)
            return
        total = kernel.clone()
        total.sym_name = StringAttr(kernel.sym_name.data + "_sum")
        Rewriter.insert_op(total, InsertPoint.after(kernel))
        partial_kernel(kernel, c, splits, part_t)
        tc = find_contraction(total)
        assert tc is not None
        sum_kernel(total, tc, splits, part_t)
        module = kernel.parent_op()
        assert isinstance(module, ModuleOp)
        for launch in [o for o in module.walk() if isinstance(o, tile.LaunchOp)
                       and o.callee.root_reference.data == kernel.sym_name.data]:
            sum_launch = tile.LaunchOp(total.sym_name.data, launch.args)
            Rewriter.insert_op(sum_launch, InsertPoint.after(launch))
        key = kernel.structural_key
        total.reset_plan()
        kind = next(iter(dict(planner.legal_classes(total))))
        fixed = {"splits": 1} if kind == "matmul" else {}  # its own split would never happen
        total.set_plan(planner.plan_kernel(total, kind, fixed), f"{key}-sum" if key else None)


def partial_kernel(kernel: tile.KernelOp, c: Contraction, splits: int, part_t,
                   finish: bool = False) -> None:
    """@mm: a split loop around the rows (tile-map-2d's block.z); each slice of K from zero;
    the partial stored. `finish`: the epilogue stays, run by the last split on the sum of the
    partials (tile.split_last)."""
    red = c.reduces[0]
    part = add_scratch(kernel, part_t, "partials")
    rows = c.chain[-2]
    body = Block(arg_types=[INDEX])
    split = tile.ForOp(0, splits, tile.Bind.SERIAL, [], Region(body))
    split.iv.name_hint = "split"
    Rewriter.insert_op(split, InsertPoint.before(rows))
    rows.detach()
    body.add_op(rows)
    body.add_op(tile.YieldOp())
    per = (red.extent or 0) // splits
    red.ub = IntAttr(per)
    base = mul(Builder(InsertPoint.before(red)), split.iv, per)
    base.name_hint = "k0"
    uses = list(red.iv.uses)
    kg = add(Builder(InsertPoint.at_start(red.body.block)), base, red.iv)
    kg.name_hint = red.iv.name_hint
    for u in uses:
        u.operation.operands[u.index] = kg
    init = red.inits[0]
    if not (
        isinstance(init.owner, arith.ConstantOp) and init.owner.value == FloatAttr(0.0, init.type)
    ):
        zero = arith.ConstantOp(FloatAttr(0.0, init.type))
        Rewriter.insert_op(zero, InsertPoint.before(red))
        red.operands[len(red.operands) - 1] = zero.result
    store = loop.StoreOp(red.res[0], part, [split.iv, *(lp.iv for lp in c.chain)])
    Rewriter.insert_op(store, InsertPoint.after(red))
    epilogue = [o for o in list(c.cell.ops)[list(c.cell.ops).index(store) + 1 :]
                if not isinstance(o, tile.YieldOp)]
    if finish:
        finish_in_last_split(c, store, split.iv, init, part, epilogue)
    else:
        for op in reversed(epilogue):
            Rewriter.erase_op(op)
    drop_dead(kernel)


def finish_in_last_split(c: Contraction, store: loop.StoreOp, split: SSAValue, init: SSAValue,
                         part: SSAValue, epilogue: list) -> None:
    """After the partial's store: the last split to arrive sums the partials of its outputs
    (from the original init, in split order: @mm_sum's sums) and runs the epilogue on them."""
    red = c.reduces[0]
    splits = part.type.get_shape()[0]  # type: ignore[union-attr]
    last = tile.SplitLastOp(part, split, splits)
    last.result.name_hint = "last"
    Rewriter.insert_op(last, InsertPoint.after(store))
    then = Block()
    s = sum_of_splits(c, part, init)
    then.add_op(s)
    s.res[0].name_hint = "total"
    red.res[0].replace_uses_with_if(s.res[0], lambda u: u.operation is not store)
    for op in epilogue:
        op.detach()
        then.add_op(op)
    then.add_op(scf.YieldOp())
    Rewriter.insert_op(scf.IfOp(last.result, [], Region(then)), InsertPoint.after(last))


def sum_kernel(total: tile.KernelOp, c: Contraction, splits: int, part_t) -> None:
    """@mm_sum: the reduce loop replaced by the sum of the partials over the splits."""
    red = c.reduces[0]
    part = total.body.block.insert_arg(part_t, len(total.args))
    part.name_hint = "partials"
    s = sum_of_splits(c, part, red.inits[0])
    Rewriter.insert_op(s, InsertPoint.before(red))
    red.res[0].replace_all_uses_with(s.res[0])
    s.res[0].name_hint = red.res[0].name_hint
    Rewriter.erase_op(red)
    drop_dead(total)


def sum_of_splits(c: Contraction, part: SSAValue, init: SSAValue) -> tile.ForOp:
    """`init` plus the partials of the contraction's output over the splits, in split order."""
    splits = part.type.get_shape()[0]  # type: ignore[union-attr]
    body = Block(arg_types=[INDEX, init.type])
    s = tile.ForOp(0, splits, tile.Bind.SERIAL, [init], Region(body))
    s.iv.name_hint, body.args[1].name_hint = "split", "acc"
    b = Builder(InsertPoint.at_end(body))
    p = b.insert(loop.LoadOp(part, [s.iv, *(lp.iv for lp in c.chain)])).result
    b.insert(tile.YieldOp(b.insert(arith.AddfOp(body.args[1], p)).result))
    return s
