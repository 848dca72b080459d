"""tile-attention-rows: the threads of a block share the head dim of a flash-attention row.

After loop-online-softmax a block (one query row, from tile-map-grid) holds a `loop.private`
accumulator over the head dim D, free loops over D (its init and the final normalize/store),
and the serial key loop carrying the online (m, l): for each key a reduce loop over D (q . k),
uniform scalar code (the (m, l) update) and a free loop over D (the rescaled accumulator
update). The region's body runs on T threads:

    %acc = loop.private : memref<64xf32>
    tile.for %a3 = 0 to 64 bind(serial) { loop.store %z, %acc[%a3] }
    %m, %l = tile.for %r0 = 0 to 8 bind(serial) iter(%m = .., %l = ..) -> (f32, f32) {
      %s = tile.for %r1 = 0 to 64 bind(serial) iter(%acc_1 = %zero) -> f32 { ... }
      ... (m, l) update ...
      tile.for %a4 = 0 to 64 bind(serial) { ... %acc[%a4] ... }
    }
    tile.for %a5 = 0 to 64 bind(serial) { ... %acc[%a5] ... }
    ->
    tile.for %t = 0 to 64 bind(thread.x) {
      %acc = loop.private : memref<1xf32>
      tile.for %a3 = %t to 64 step 64 bind(serial) { loop.store %z, %acc[%a3, %t] map (d0, d1) -> (0) }
      %m, %l = tile.for %r0 = 0 to 8 bind(serial) iter(..) -> (f32, f32) {
        %p = tile.for %r1 = %t to 64 step 64 bind(serial) iter(%acc_1 = %zero) -> f32 { ... }
        %s = tile.combine add %p over thread.x : f32
        ... (m, l) update, computed by every thread ...
        tile.for %a4 = %t to 64 step 64 bind(serial) { ... }
      }
      tile.for %a5 = %t to 64 step 64 bind(serial) { ... }
    }

Every thread gets the combined score, so the (m, l) update is uniform; each thread owns the
slice t, t + T, ... of the accumulator, which shrinks to ceil(D / T) registers indexed by
`(a - t) floordiv T`. T is `threads` rounded to warps, at most D rounded up to a warp.
Fires only on that shape: a rank-1 `loop.private`, every loop over D (lb 0, step 1, no loop
inside), reduce loops only inside a serial accumulating loop, stores only inside the free loops
over D, and the private accessed only by the iv of the free loop around the access.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import MemRefType, ModuleOp
from xdsl.ir import Block, Operation
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from deplo.dialects import loop, tile
from deplo.passes.tile.cooperative_reduce import (
    combine_kinds,
    combine_op,
    identity,
    is_identity,
)
from deplo.passes.tile.map_threads import new_thread_loop, round_up, stride_loop, warp_threads


def _plain(lp: tile.ForOp, extent: int) -> bool:
    """A loop 0..extent step 1 with no loop inside."""
    return (
        lp.static_lb == 0
        and lp.step.data == 1
        and lp.extent == extent
        and not any(isinstance(o, tile.ForOp) for o in lp.body.walk())
    )


@dataclass(frozen=True)
class TileAttentionRowsPass(ModulePass):
    """Run each flash-attention row (block region) on `threads` threads over the head dim:
    strided q . k partials + `tile.combine add`, uniform (m, l), per-thread accumulator slices."""

    name = "tile-attention-rows"

    threads: int = 256

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in [k for k in op.walk() if isinstance(k, tile.KernelOp)]:
            self.map_kernel(kernel)

    def map_kernel(self, kernel: tile.KernelOp) -> None:
        if tile.has_thread_loops(kernel) or kernel.block_dims != (1, 1, 1):
            return
        plans = [p for region in tile.block_regions(kernel) if (p := self.plan(region))]
        if not plans:
            return
        threads = 0
        for plan in plans:
            t = min(warp_threads(self.threads), round_up(plan[3], tile.WARP))
            self.rewrite(*plan, t)
            threads = max(threads, t)
        kernel.set_launch(block=(threads, 1, 1))
        kernel.record(self)

    def plan(self, region: Block):
        """(ops, free loops over D, reduce loops with combiners, D), or None."""
        ops = [op for op in region.ops if not isinstance(op, tile.YieldOp)]
        if any(isinstance(op, tile.StageOp) for op in region.walk()):
            return None
        privates = [op for op in ops if isinstance(op, loop.PrivateOp)]
        if not privates or any(len(p.result.type.get_shape()) != 1 for p in privates):
            return None
        extents = {p.result.type.get_shape()[0] for p in privates}
        if len(extents) != 1:
            return None
        (d,) = extents
        free: list[tile.ForOp] = []
        reduces: list[tuple[tile.ForOp, list]] = []

        def inner(lp: tile.ForOp, in_key: bool) -> bool:
            if lp.binding != tile.Bind.SERIAL or not _plain(lp, d):
                return False
            if lp.inits:
                kinds = combine_kinds(lp)
                if not in_key or kinds is None:
                    return False
                reduces.append((lp, kinds))
            else:
                free.append(lp)
            return True

        for op in ops:
            if not isinstance(op, tile.ForOp):
                continue
            if op.is_free or not op.inits:
                if not inner(op, False):
                    return None
                continue
            # the key loop: serial, static, accumulating, one level of loops over D inside
            if op.binding != tile.Bind.SERIAL or op.static_lb is None:
                return None
            for o in op.body.block.ops:
                if isinstance(o, tile.ForOp):
                    if not inner(o, True):
                        return None
                elif o.regions:
                    return None
        if not reduces:
            return None
        for op in region.walk():
            if isinstance(op, loop.StoreOp) and op.parent_op() not in free:
                return None
            if isinstance(op, tile.CombineOp | scf.IfOp):
                return None
        for p in privates:
            for use in p.result.uses:
                acc = use.operation
                assert isinstance(acc, loop.LoadOp | loop.StoreOp)
                owner = acc.parent_op()
                if owner not in free or list(acc.indices) != [owner.iv] or acc.map:
                    return None
        return ops, free, reduces, d

    def rewrite(self, ops: list[Operation], free, reduces, d: int, threads: int) -> None:
        outer = new_thread_loop(threads)
        Rewriter.insert_op(outer, InsertPoint.before(ops[0]))
        yield_op = outer.body.block.last_op
        for op in ops:
            op.detach()
            outer.body.block.insert_op_before(op, yield_op)
        t = outer.iv
        per = -(-d // threads)
        for p in [op for op in ops if isinstance(op, loop.PrivateOp)]:
            old = p.result.type
            new_t = MemRefType(old.element_type, [per])
            if per == 1:
                amap = AffineMap(2, 0, (AffineExpr.constant(0),))
            else:
                d0, d1 = AffineExpr.dimension(0), AffineExpr.dimension(1)
                amap = AffineMap(2, 0, ((d0 - d1) // threads,))
            new_p = loop.PrivateOp(new_t)
            Rewriter.insert_op(new_p, InsertPoint.before(p))
            new_p.result.name_hint = p.result.name_hint
            for use in list(p.result.uses):
                acc = use.operation
                iv = acc.indices[0]
                if isinstance(acc, loop.LoadOp):
                    rep = loop.LoadOp(new_p.result, [iv, t], amap)
                    rep.result.name_hint = acc.result.name_hint
                else:
                    rep = loop.StoreOp(acc.value, new_p.result, [iv, t], amap)
                Rewriter.replace_op(acc, rep)
            Rewriter.erase_op(p)
        for lp, kinds in reduces:
            b = Builder(InsertPoint.before(lp))
            inits = list(lp.inits)
            for i, (kind, init) in enumerate(zip(kinds, inits)):
                if not is_identity(init, kind):
                    c = b.insert(arith.ConstantOp(identity(kind, init.type)))
                    c.result.name_hint = "id"
                    lp.operands[i] = c.result
            new = stride_loop(lp, t, threads, b)
            after = Builder(InsertPoint.after(new))
            for kind, init, res in zip(kinds, inits, new.res):
                uses = list(res.uses)
                total = after.insert(tile.CombineOp(kind, res)).result
                if not is_identity(init, kind):
                    total = after.insert(combine_op(kind, init, total)).results[0]
                if res.name_hint:
                    total.name_hint = res.name_hint
                    res.name_hint = "p"
                for use in uses:
                    use.operation.operands[use.index] = total
        for lp in free:
            stride_loop(lp, t, threads, Builder(InsertPoint.before(lp)))

