"""tile-tensor-core: an fp16 / bf16 matmul runs on tensor cores: warps of 32 lanes each compute a
tile of outputs with `mma.sync.m16n8k16` (fp32 accumulators) on fragments of A and B.

The contraction must be a plain product: one reduce loop whose body is
`acc + extf(A[.., i, k]) * extf(B[.., k, j])` (or B[.., j, k], a linear layer's weight), A and B
of the same 16-bit type. It is mapped at once to blocks (block.y/x over tiles of rows/columns,
a batch to block.z), warps (thread.y) and lanes (thread.x):

    tile.kernel @mm(...) grid(2, 1, 1) block(32, 4, 1)
    tile.for %i = 0 to 1 bind(block.y) { tile.for %j = 0 to 2 bind(block.x) {
      tile.for %w = 0 to 4 bind(thread.y) { tile.for %l = 0 to 32 bind(thread.x) {
        %r0 = <first row of warp w> ; %c0 = <first column of warp w>
        %acc:32 = tile.for %k = 0 to 96 step 16 bind(serial) iter(%zero x 32) {
          %a0, %a1, %a2, %a3 = tile.fragment_load a %A[%r0, %k] lane(%l) ...   (frags-m of them)
          %b0, %b1 = tile.fragment_load b_kn %B[%k, %c0] lane(%l) ...         (frags-n of them)
          %d0, %d1, %d2, %d3 = tile.mma f16 %a0, ..., %b0, %b1, %acc0, ...      (frags-m x frags-n)
        }
        the epilogue once per accumulator element: row r0 + 16 fm + l / 4 (+ 8), column
        c0 + 8 fn + 2 (l % 4) (+ 1), clamped for loads, stores guarded

K is walked up to a multiple of 16: fragments read zero past the end of A and B, so there is no
remainder. Later passes chunk K (tile-chunk-reduce, steps of 16), stage the chunks
(tile-stage-chunks: fragments then come from shared memory with `ldmatrix`), pad, double-buffer,
cp.async and unroll as for the fp32 schedule. A no-op on fp32 and on anything else.

Heuristic (0): on matmul-sized contractions, 2 x 4 fragments per warp (a 32 x 32 warp tile, 32
accumulators a lane) and 2 x 2 warps (64 x 64 per block, 128 threads); fewer where M or N is small.
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import FloatAttr, IntAttr, ModuleOp
from xdsl.ir import SSAValue
from xdsl.ir.affine import AffineConstantExpr, AffineDimExpr
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from deplo.dialects import loop, tile
from deplo.passes.tile import analysis as an
from deplo.passes.tile.map_2d import thread_loop

K = tile.FragmentKind


@dataclass
class Product:
    """The matched `acc + A * B` reduce loop."""

    loop: tile.ForOp
    a: loop.LoadOp
    b: loop.LoadOp
    b_kind: K
    type: object


def coords(ld: loop.LoadOp) -> list[SSAValue | int] | None:
    """The coordinates of a load when each is a plain index operand or a constant."""
    out: list[SSAValue | int] = []
    for e in ld.access_map().results:
        if isinstance(e, AffineDimExpr):
            out.append(ld.indices[e.position])
        elif isinstance(e, AffineConstantExpr):
            out.append(e.value)
        else:
            return None
    return out


def match_product(
    lp: tile.ForOp, i: SSAValue, j: SSAValue, k_free: set[SSAValue]
) -> Product | None:
    if len(lp.inits) != 1 or lp.static_lb != 0 or lp.step.data != 1:
        return None
    body = [o for o in lp.body.block.ops if not isinstance(o, tile.YieldOp)]
    (nxt,) = lp.body.block.last_op.operands
    add = nxt.owner
    if not isinstance(add, arith.AddfOp) or lp.accs[0] not in add.operands:
        return None
    prod = add.rhs if add.lhs is lp.accs[0] else add.lhs
    mul = prod.owner
    if not isinstance(mul, arith.MulfOp):
        return None
    loads = []
    for v in (mul.lhs, mul.rhs):
        ext = v.owner
        if not isinstance(ext, arith.ExtFOp) or not isinstance(ext.input.owner, loop.LoadOp):
            return None
        loads.append(ext.input.owner)
    if len(body) != 6 or len({ld.buffer.type.element_type for ld in loads}) != 1:
        return None
    t = loads[0].buffer.type.element_type
    if t not in tile.HALF_TYPES:
        return None
    k = lp.iv
    a = b = None
    kind = None
    for ld in loads:
        c = coords(ld)
        if c is None or any(
            x is not k and x is not i and x is not j and not isinstance(x, int) and x not in k_free
            for x in c
        ):
            return None
        if c[-2:] == [i, k] and j not in c:
            a = ld
        elif c[-2:] == [k, j] and i not in c:
            b, kind = ld, K.B_KN
        elif c[-2:] == [j, k] and i not in c:
            b, kind = ld, K.B_NK
    if a is None or b is None or a is b:
        return None
    return Product(lp, a, b, kind, t)


@dataclass(frozen=True)
class TileTensorCorePass(ModulePass):
    """Map an fp16 / bf16 matmul to warps of mma.sync m16n8k16: warps-m x warps-n warps per
    block, frags-m x frags-n 16 x 8 accumulator tiles per warp (0 picks the heuristic)."""

    name = "tile-tensor-core"

    warps_m: int = 0
    warps_n: int = 0
    frags_m: int = 0
    frags_n: int = 0

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in [k for k in op.walk() if isinstance(k, tile.KernelOp)]:
            self.map_kernel(kernel)

    def shape(self, c: an.Contraction, m: int, n: int) -> tuple[int, int, int, int] | None:
        given = (self.warps_m, self.warps_n, self.frags_m, self.frags_n)
        if not all(given) and not an.is_matmul_sized(c):
            return None
        fm = self.frags_m or (2 if m > 16 else 1)
        fn = self.frags_n or (4 if n > 16 else 2 if n > 8 else 1)
        wm = self.warps_m or (2 if m > 16 * fm else 1)
        wn = self.warps_n or (2 if n > 8 * fn else 1)
        if wm * wn * 32 > tile.MAX_BLOCK_THREADS:
            return None
        return wm, wn, fm, fn

    def map_kernel(self, kernel: tile.KernelOp) -> None:
        c = an.find_contraction(kernel)
        if c is None or kernel.block_dims != (1, 1, 1) or len(axes := c.serial_axes()) < 2:
            return
        if any(lp.binding != tile.Bind.SERIAL for lp in c.chain) or len(c.reduces) != 1:
            return
        i, j = axes[-2], axes[-1]
        outer = {lp.iv for lp in c.chain if lp is not i and lp is not j}
        prod = match_product(c.reduces[0], i.iv, j.iv, outer)
        if prod is None:
            return
        m, n, kext = i.ub.data, j.ub.data, prod.loop.ub.data
        picked = self.shape(c, m, n)
        if picked is None:
            return
        wm, wn, fm, fn = picked
        bm, bn = wm * 16 * fm, wn * 8 * fn
        gy, gx = -(-m // bm), -(-n // bn)
        if gy > tile.MAX_GRID[1]:
            return
        an.sink_chain_ops(c.chain[c.chain.index(i) :], c.cell)
        ops = [o for o in c.cell.ops if not isinstance(o, tile.YieldOp)]
        red = prod.loop  # its body reads only i, j, k and the batch (match_product)
        epilogue = [o for o in ops if o is not red]
        w = thread_loop(wm * wn, tile.Bind.THREAD_Y, "w")
        lane_loop = thread_loop(32, tile.Bind.THREAD_X, "l")
        Rewriter.insert_op(w, InsertPoint.before(c.cell.last_op))
        Rewriter.insert_op(lane_loop, InsertPoint.before(w.body.block.last_op))
        inner = lane_loop.body.block
        anchor = inner.last_op
        b = Builder(InsertPoint.before(anchor))
        lane = lane_loop.iv
        wi = b.insert(arith.DivSIOp(w.iv, an.const(b, wn))).result if wm > 1 else an.const(b, 0)
        wj = b.insert(arith.RemSIOp(w.iv, an.const(b, wn))).result if wn > 1 else an.const(b, 0)
        row0 = an.add(b, an.mul(b, i.iv, bm), an.mul(b, wi, 16 * fm))
        col0 = an.add(b, an.mul(b, j.iv, bn), an.mul(b, wj, 8 * fn))
        row0.name_hint, col0.name_hint = "row0", "col0"
        # the K loop: steps of 16 up to a multiple of 16
        init = red.inits[0]
        zero = (
            init if _is_zero(init) else b.insert(arith.ConstantOp(FloatAttr(0.0, init.type))).result
        )
        accs0 = [zero] * (fm * fn * 4)
        kp = -(-kext // 16) * 16
        kloop = tile.ForOp(0, kp, tile.Bind.SERIAL, accs0, None, 16)
        kloop.iv.name_hint = red.iv.name_hint or "k"
        for x in kloop.accs:
            x.name_hint = "acc"
        for x in kloop.res:
            x.name_hint = "c"
        b.insert(kloop)
        kb = Builder(InsertPoint.at_end(kloop.body.block))
        kv = kloop.iv
        lead_a = [x for x in coords(prod.a)[:-2]]
        lead_b = [x for x in coords(prod.b)[:-2]]

        def idx(x) -> SSAValue:
            return an.const(kb, x) if isinstance(x, int) else x

        frag_a = []
        for a in range(fm):
            r = an.add(kb, row0, an.const(kb, 16 * a)) if a else row0
            ld = kb.insert(
                tile.FragmentLoadOp(K.A, prod.a.buffer, [*map(idx, lead_a), r, kv], lane)
            )
            frag_a.append(list(ld.results))
            for x in ld.results:
                x.name_hint = f"fa{a}"
        frag_b = []
        for f in range(fn):
            col = an.add(kb, col0, an.const(kb, 8 * f)) if f else col0
            rc = [kv, col] if prod.b_kind is K.B_KN else [col, kv]
            ld = kb.insert(
                tile.FragmentLoadOp(prod.b_kind, prod.b.buffer, [*map(idx, lead_b), *rc], lane)
            )
            frag_b.append(list(ld.results))
            for x in ld.results:
                x.name_hint = f"fb{f}"
        outs = []
        for n_, (a, f) in enumerate(itertools.product(range(fm), range(fn))):
            cs = list(kloop.accs[4 * n_ : 4 * n_ + 4])
            mma = kb.insert(tile.MmaOp(prod.type, frag_a[a], frag_b[f], cs))
            outs.extend(mma.results)
            for x in mma.results:
                x.name_hint = "d"
        kb.insert(tile.YieldOp(*outs))
        # the epilogue, once per accumulator element
        g = b.insert(arith.DivSIOp(lane, an.const(b, 4))).result
        tq = b.insert(arith.RemSIOp(lane, an.const(b, 4))).result
        t2 = an.mul(b, tq, 2)
        g.name_hint, t2.name_hint = "g", "t2"
        replicas = []
        rg, cg = an.add(b, row0, g), an.add(b, col0, t2)
        rg.name_hint, cg.name_hint = "rg", "cg"

        def plus(v: SSAValue, k: int) -> SSAValue:
            return an.add(b, v, an.const(b, k)) if k else v

        for n_, (a, f) in enumerate(itertools.product(range(fm), range(fn))):
            for e in range(4):
                row, col = plus(rg, 16 * a + 8 * (e // 2)), plus(cg, 8 * f + e % 2)
                oks = [an.below(b, v, x) for v, x, blk in ((row, m, bm), (col, n, bn)) if x % blk]
                ok = oks[0] if len(oks) == 1 else None
                if len(oks) == 2:
                    ok = b.insert(arith.AndIOp(*oks)).result
                value = kloop.res[4 * n_ + e]
                if not _is_zero(init):
                    value = b.insert(arith.AddfOp(init, value)).result
                vmap = {
                    i.iv: an.clamp(b, row, m) if m % bm else row,
                    j.iv: an.clamp(b, col, n) if n % bn else col,
                    red.res[0]: value,
                }
                replicas.append(an.Replica(vmap, ok))
        an.replicate(epilogue, replicas, anchor)
        for o in reversed(ops):
            Rewriter.erase_op(o)
        an.compact_all(lane_loop)
        an.cse(inner, an.stored_buffers(kernel))
        i.ub, j.ub = IntAttr(gy), IntAttr(gx)
        i.bind = tile.BindAttr(tile.Bind.BLOCK_Y)
        j.bind = tile.BindAttr(tile.Bind.BLOCK_X)
        gz = 1
        batch = [lp for lp in c.chain[: c.chain.index(i)] if lp in axes]
        if batch and batch[-1].ub.data <= tile.MAX_GRID[2]:
            batch[-1].bind = tile.BindAttr(tile.Bind.BLOCK_Z)
            gz = batch[-1].ub.data
        kernel.set_launch(grid=(gx, gy, gz), block=(32, wm * wn, 1))
        kernel.record(dataclasses.replace(self, warps_m=wm, warps_n=wn, frags_m=fm, frags_n=fn))


def _is_zero(v: SSAValue) -> bool:
    op = v.owner
    return (
        isinstance(op, arith.ConstantOp)
        and isinstance(op.value, FloatAttr)
        and op.value.value.data == 0.0
    )
