"""tile-map-threads: the innermost free loop at block level runs on the threads of the block.

Short loops (extent <= threads) are bound directly; the block is the extent rounded up to a
warp, and the ids past the extent skip the body:

    tile.for %a1 = 0 to 16 bind(serial) { ... }   ->   tile.for %a1 = 0 to 16 bind(thread.x) { ... }
                                                       (block(32, 1, 1))
Longer loops are strided, every thread takes every T-th iteration:

    tile.for %a3 = 0 to 2048 bind(serial) { ... }
    ->
    tile.for %t = 0 to 256 bind(thread.x) {
      tile.for %a3 = %t to 2048 step 256 bind(serial) { ... }
    }

A no-op on kernels that already have a thread-bound loop (e.g. after tile-cooperative-reduce).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp
from xdsl.ir import Block, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from deplo.dialects import tile


def round_up(n: int, m: int) -> int:
    return -(-n // m) * m


def warp_threads(threads: int) -> int:
    """The option rounded down to a whole number of warps (at least one, at most 1024)."""
    return min(tile.MAX_BLOCK_THREADS, max(tile.WARP, threads // tile.WARP * tile.WARP))


def thread_start(builder: Builder, t: SSAValue, lb: int, step: int) -> SSAValue:
    """`lb + t * step`, the first iteration of thread `t` in a strided loop."""
    if step != 1:
        c = builder.insert(arith.ConstantOp(IntegerAttr(step, IndexType()))).result
        t = builder.insert(arith.MuliOp(t, c)).result
    if lb != 0:
        c = builder.insert(arith.ConstantOp(IntegerAttr(lb, IndexType()))).result
        t = builder.insert(arith.AddiOp(t, c)).result
    return t


def stride_loop(lp: tile.ForOp, t: SSAValue, threads: int, builder: Builder) -> tile.ForOp:
    """`tile.for %a = lb to ub step s` -> `tile.for %a = lb + t*s to ub step s*threads` (same
    body, same accumulators), built at `builder`; uses of the old results move to the new, and
    the old loop is erased."""
    lb, step = lp.static_lb, lp.step.data
    assert lb is not None
    start = thread_start(builder, t, lb, step)
    body = Rewriter.move_region_contents_to_new_regions(lp.body)
    new = tile.ForOp(start, lp.ub.data, lp.binding, list(lp.inits), body, step * threads)
    new.attributes |= lp.attributes
    builder.insert(new)
    for old, res in zip(lp.res, new.res):
        old.replace_all_uses_with(res)
    Rewriter.erase_op(lp)
    return new


def new_thread_loop(extent: int) -> tile.ForOp:
    body = Region(Block(arg_types=[IndexType()]))
    body.block.add_op(tile.YieldOp())
    loop = tile.ForOp(0, extent, tile.Bind.THREAD_X, [], body)
    loop.iv.name_hint = "t"
    return loop


def innermost_free_loops(block: Block) -> list[tile.ForOp]:
    """Free loops at block level that hold no other free loop and sit in no accumulating loop."""
    found: list[tile.ForOp] = []

    def visit(b: Block) -> None:
        for op in b.ops:
            if not isinstance(op, tile.ForOp) or op.inits:
                continue
            inner = [o for o in op.body.walk() if isinstance(o, tile.ForOp) and o.is_free]
            if op.is_free and op.static_lb is not None and not inner:
                if not any(isinstance(o, tile.StageOp) for o in op.body.walk()):
                    found.append(op)
            else:
                visit(op.body.block)

    visit(block)
    return found


@dataclass(frozen=True)
class TileMapThreadsPass(ModulePass):
    """Bind the innermost free loop of each block-level region to thread.x, strided when it is
    longer than `threads`, and set the block size."""

    name = "tile-map-threads"

    threads: int = 256

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in [k for k in op.walk() if isinstance(k, tile.KernelOp)]:
            self.map_kernel(kernel)

    def map_kernel(self, kernel: tile.KernelOp) -> None:
        if tile.has_thread_loops(kernel) or kernel.block_dims != (1, 1, 1):
            return
        threads = warp_threads(self.threads)
        block_x = 0
        for region in tile.block_regions(kernel):
            for lp in innermost_free_loops(region):
                extent = lp.extent
                assert extent is not None
                if extent <= threads:
                    lp.bind = tile.BindAttr(tile.Bind.THREAD_X)
                    block_x = max(block_x, round_up(extent, tile.WARP))
                    continue
                outer = new_thread_loop(threads)
                Rewriter.insert_op(outer, InsertPoint.before(lp))
                builder = Builder(InsertPoint.before(outer.body.block.last_op))
                stride_loop(lp, outer.iv, threads, builder)
                block_x = max(block_x, threads)
        if block_x == 0:
            return
        kernel.set_launch(block=(min(block_x, tile.MAX_BLOCK_THREADS), 1, 1))
        kernel.record(self)
