"""tile-chunk-reduce: a contraction's reduce loop walks K in chunks of k (the unit a later
tile-stage-chunks copies into shared memory at once).

    %s = tile.for %k = 0 to 53 bind(serial) iter(%acc = %zero) -> f32 { BODY(%k) }
    ->
    %c = tile.for %k0 = 0 to 32 step 16 bind(serial) iter(%acc = %zero) -> f32 {     (2 chunks)
      %d = tile.for %kk = 0 to 16 bind(serial) iter(%acc2 = %acc) -> f32 {
        %k = arith.addi %k0, %kk : index
        BODY(%k)
      }
      tile.yield %d : f32
    }
    %s = tile.for %k = 32 to 53 bind(serial) iter(%acc = %c) -> f32 { BODY(%k) }  (the rest)

Whole chunks only: the K % k remainder is peeled into its own loop, so no chunk reads past K.
A loop with a step (tile-tensor-core's steps of 16) is chunked by k elements, a multiple of the
step. k is the plan's `k_chunk` (0: no chunks); it applies to the innermost reduce loops of a
contraction's cell (static bounds, more than k elements). The heuristic takes 32 when K >= 64,
else 16 (fp32 [64 x 32] A and [32 x 64] B chunks are 8 KB each, double-buffered 32 KB of 48).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType
from xdsl.ir import Block, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from deplo.analysis.nest import find_contraction
from deplo.dialects import tile
from deplo.dialects.tile_plan import Plan
from deplo.passes.tile.kernel_pass import KernelPass

INDEX = IndexType()


def clone_body(lp: tile.ForOp, into: Block, iv: SSAValue, accs) -> list[SSAValue]:
    """Clone `lp`'s body (iv and accumulators replaced) into `into`; returns the yielded values."""
    vmap = {lp.iv: iv, **dict(zip(lp.accs, accs))}
    for op in lp.body.block.ops:
        if isinstance(op, tile.YieldOp):
            return [vmap.get(v, v) for v in op.values]
        into.add_op(op.clone(value_mapper=vmap))
    raise AssertionError("a tile.for body ends with tile.yield")


def new_loop(lb: int | SSAValue, ub: int, step: int, inits, hint: str) -> tuple[tile.ForOp, Block]:
    block = Block(arg_types=[INDEX, *(SSAValue.get(v).type for v in inits)])
    lp = tile.ForOp(lb, ub, tile.Bind.SERIAL, list(inits), Region(block), step)
    lp.iv.name_hint = hint
    return lp, block


def chunk(lp: tile.ForOp, k: int) -> None:
    """Chunks of k (a multiple of the loop's step) and the remainder."""
    lb, ub, s = lp.static_lb, lp.ub.data, lp.step.data
    assert lb is not None and k % s == 0
    main = (lp.extent or 0) // (k // s) * k
    hint = lp.iv.name_hint or "k"
    outer, ob = new_loop(lb, lb + main, k, list(lp.inits), hint + "o")
    inner, ib = new_loop(0, k, s, list(ob.args[1:]), hint + "i")
    for old, new, new2 in zip(lp.accs, ob.args[1:], ib.args[1:]):
        new.name_hint = new2.name_hint = old.name_hint
    kv = Builder(InsertPoint.at_end(ib)).insert(arith.AddiOp(ob.args[0], ib.args[0])).result
    kv.name_hint = hint
    ib.add_op(tile.YieldOp(*clone_body(lp, ib, kv, ib.args[1:])))
    ob.add_op(inner)
    ob.add_op(tile.YieldOp(*inner.res))
    for r in (*inner.res, *outer.res):
        r.name_hint = "chunk"
    Rewriter.insert_op(outer, InsertPoint.before(lp))
    results = list(outer.res)
    if lb + main < ub:
        rest, rb = new_loop(lb + main, ub, s, results, hint)
        for old, new in zip(lp.accs, rb.args[1:]):
            new.name_hint = old.name_hint
        rb.add_op(tile.YieldOp(*clone_body(lp, rb, rb.args[0], rb.args[1:])))
        Rewriter.insert_op(rest, InsertPoint.before(lp))
        results = list(rest.res)
    for old, new in zip(lp.res, results):
        old.replace_all_uses_with(new)
        new.name_hint = old.name_hint
    Rewriter.erase_op(lp)


@dataclass(frozen=True)
class TileChunkReducePass(KernelPass):
    """Split each reduce loop of a contraction into chunks of `k_chunk` iterations plus a
    remainder loop."""

    name = "tile-chunk-reduce"

    k_chunk: int | None = None

    def carry_out(self, kernel: tile.KernelOp, plan: Plan) -> None:
        k = plan.knob("k_chunk")
        c = find_contraction(kernel)
        if not k or c is None:
            return
        for lp in c.reduces:
            if (
                lp.binding == tile.Bind.SERIAL
                and lp.static_lb is not None
                and k % lp.step.data == 0
                and (lp.extent or 0) * lp.step.data > k
                and not any(isinstance(o, tile.ForOp) for o in lp.body.walk())
            ):
                chunk(lp, k)
