"""tile-tensor-core: an fp16 / bf16 matmul runs on tensor cores: warps of 32 lanes each compute a
tile of outputs with `mma.sync.m16n8k16` (fp32 accumulators) on fragments of A and B.

The contraction must be a plain product (analysis/nest.py, `match_product`): one reduce loop
whose body is `acc + extf(A[.., i, k]) * extf(B[.., k, j])` (or B[.., j, k], a linear layer's
weight), A and B of the same 16-bit type. With the plan's `mma` on it is mapped at once to
blocks (block.y/x over tiles of rows/columns, a batch to block.z), warps (thread.y, `warps_m` x
`warps_n`) and lanes (thread.x), each warp `frags_m` x `frags_n` 16 x 8 accumulator tiles:

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
cp.async and unroll as for the fp32 schedule.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.dialects.builtin import FloatAttr, IndexType, IntAttr, MemRefType
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from deplo.analysis.index import is_float_zero
from deplo.analysis.nest import coords, find_contraction, match_product, stored_buffers
from deplo.dialects import tile
from deplo.dialects.tile_plan import Plan
from deplo.passes.tile import rewrite as rw
from deplo.passes.tile.kernel_pass import KernelPass, PassOptionError

K = tile.FragmentKind


@dataclass(frozen=True)
class TileTensorCorePass(KernelPass):
    """Map an fp16 / bf16 matmul to warps of mma.sync m16n8k16: warps_m x warps_n warps per
    block, frags_m x frags_n 16 x 8 accumulator tiles per warp (plan knob `mma` on)."""

    name = "tile-tensor-core"

    mma: bool | None = None
    warps_m: int | None = None
    warps_n: int | None = None
    frags_m: int | None = None
    frags_n: int | None = None

    def carry_out(self, kernel: tile.KernelOp, plan: Plan) -> None:
        if not plan.knob("mma"):
            return
        c = find_contraction(kernel)
        i, j = rw.serial_rows_cols(self.name, kernel, c)
        outer = {lp.iv for lp in c.chain if lp is not i and lp is not j}
        prod = match_product(c.reduces[0], i.iv, j.iv, outer) if len(c.reduces) == 1 else None
        if prod is None:
            raise PassOptionError(f"{self.name}: kernel @{kernel.sym_name.data}: expected a "
                                  "plain f16/bf16 product (its plan's facts say so)")
        m, n, kext = i.ub.data, j.ub.data, prod.loop.ub.data
        wm, wn = plan.knob("warps_m"), plan.knob("warps_n")
        fm, fn = plan.knob("frags_m"), plan.knob("frags_n")
        bm, bn = wm * 16 * fm, wn * 8 * fn
        gy, gx = -(-m // bm), -(-n // bn)
        rw.sink_chain_ops(c.chain[c.chain.index(i) :], c.cell)
        ops = [o for o in c.cell.ops if not isinstance(o, tile.YieldOp)]
        red = prod.loop  # its body reads only i, j, k and the batch (match_product)
        epilogue = [o for o in ops if o is not red]
        w = rw.thread_loop(wm * wn, tile.Bind.THREAD_Y, "w")
        lane_loop = rw.thread_loop(32, tile.Bind.THREAD_X, "l")
        Rewriter.insert_op(w, InsertPoint.before(c.cell.last_op))
        Rewriter.insert_op(lane_loop, InsertPoint.before(w.body.block.last_op))
        inner = lane_loop.body.block
        anchor = inner.last_op
        b = Builder(InsertPoint.before(anchor))
        lane = lane_loop.iv
        wi = b.insert(arith.DivSIOp(w.iv, rw.const(b, wn))).result if wm > 1 else rw.const(b, 0)
        wj = b.insert(arith.RemSIOp(w.iv, rw.const(b, wn))).result if wn > 1 else rw.const(b, 0)
        row0 = rw.add(b, rw.mul(b, i.iv, bm), rw.mul(b, wi, 16 * fm))
        col0 = rw.add(b, rw.mul(b, j.iv, bn), rw.mul(b, wj, 8 * fn))
        row0.name_hint, col0.name_hint = "row0", "col0"
        k_base = _copy_slice(prod.k_base, c.cell, b) if prod.k_base is not None else None
        # the K loop: steps of 16 up to a multiple of 16
        init = red.inits[0]
        zero = init if is_float_zero(init) else \
            b.insert(arith.ConstantOp(FloatAttr(0.0, init.type))).result
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
        kv = kloop.iv if prod.k_base is None else rw.add(kb, k_base, kloop.iv)
        lead_a = [x for x in coords(prod.a)[:-2]]
        if prod.gather is not None:  # an implicit GEMM: B's elements as a tile.gather
            lead_b = [lp.iv for lp in c.chain if lp.iv in prod.gather_ivs]
            b_source = gather_op(kloop, prod, lead_b, j.iv, kext, n)
        else:
            lead_b = [x for x in coords(prod.b)[:-2]]
            b_source = prod.b.buffer

        def idx(x) -> SSAValue:
            return rw.const(kb, x) if isinstance(x, int) else x

        frag_a = []
        for a in range(fm):
            r = rw.add(kb, row0, rw.const(kb, 16 * a)) if a else row0
            rk = [kv, r] if prod.a_kind is K.A_KM else [r, kv]
            ld = kb.insert(
                tile.FragmentLoadOp(prod.a_kind, prod.a.buffer, [*map(idx, lead_a), *rk], lane)
            )
            frag_a.append(list(ld.results))
            for x in ld.results:
                x.name_hint = f"fa{a}"
        frag_b = []
        for f in range(fn):
            col = rw.add(kb, col0, rw.const(kb, 8 * f)) if f else col0
            rc = [kv, col] if prod.b_kind is K.B_KN else [col, kv]
            ld = kb.insert(
                tile.FragmentLoadOp(prod.b_kind, b_source, [*map(idx, lead_b), *rc], lane)
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
        g, t2 = rw.accumulator_lane(b, lane)
        replicas = []
        rg, cg = rw.add(b, row0, g), rw.add(b, col0, t2)
        rg.name_hint, cg.name_hint = "rg", "cg"

        def plus(v: SSAValue, k: int) -> SSAValue:
            return rw.add(b, v, rw.const(b, k)) if k else v

        for n_, (a, f) in enumerate(itertools.product(range(fm), range(fn))):
            for e in range(4):
                row, col = plus(rg, 16 * a + 8 * (e // 2)), plus(cg, 8 * f + e % 2)
                oks = [rw.below(b, v, x) for v, x, blk in ((row, m, bm), (col, n, bn)) if x % blk]
                ok = oks[0] if len(oks) == 1 else None
                if len(oks) == 2:
                    ok = b.insert(arith.AndIOp(*oks)).result
                value = kloop.res[4 * n_ + e]
                if not is_float_zero(init):
                    value = b.insert(arith.AddfOp(init, value)).result
                vmap = {
                    i.iv: rw.clamp(b, row, m) if m % bm else row,
                    j.iv: rw.clamp(b, col, n) if n % bn else col,
                    red.res[0]: value,
                }
                replicas.append(rw.Replica(vmap, ok))
        rw.replicate(epilogue, replicas, anchor)
        for o in reversed(ops):
            Rewriter.erase_op(o)
        rw.compact_all(lane_loop)
        rw.cse(inner, stored_buffers(kernel))
        i.ub, j.ub = IntAttr(gy), IntAttr(gx)
        i.bind = tile.BindAttr(tile.Bind.BLOCK_Y)
        j.bind = tile.BindAttr(tile.Bind.BLOCK_X)
        gz = rw.map_batch_to_z(kernel, c.chain, i)
        kernel.set_launch(grid=(gx, gy, gz), block=(32, wm * wn, 1))


def _copy_slice(v: SSAValue, cell, b: Builder) -> SSAValue:
    """`v`, recomputed at `b` from what it is computed from in `cell` (the cell's ops are
    erased: a split-K slice's K offset must survive them)."""
    return _recomputed(v, {}, b.insert, lambda op: op.parent_block() is cell)


def _recomputed(v: SSAValue, vmap: dict, insert, copies=lambda op: True) -> SSAValue:
    """`v` computed again by clones of the ops it comes from that `copies` takes (`vmap`: the
    values already replaced, each clone's results added), each clone passed to `insert`."""
    if v in vmap:
        return vmap[v]
    op = v.owner
    if not isinstance(op, Operation) or not copies(op):
        return v  # (a kernel argument, or a value computed outside)
    new = op.clone()
    for k, operand in enumerate(op.operands):
        new.operands[k] = _recomputed(operand, vmap, insert, copies)
    insert(new)
    vmap.update(zip(op.results, new.results))
    return vmap[v]


def gather_op(kloop: tile.ForOp, prod, lead: list[SSAValue], j: SSAValue, kext: int,
              n: int) -> SSAValue:
    """A gathered B (`match_product`'s `gather`: an implicit GEMM's window) as a `tile.gather`
    [*lead, K, n] just before the new K loop (beside it in the cell: what reads the
    contraction's chain sees no loop and no stage there): the ops that compute it in the K
    loop (and the scalar ops before it they read), copied into its region with the batch
    loops, k and j its arguments. Its elements past K or n are never computed (tile.stage's
    zero fill)."""
    shape = [_loop_of(v).extent for v in lead] + [kext, n]
    block = Block(arg_types=[IndexType()] * len(shape))
    names = [*(v.name_hint for v in lead), prod.loop.iv.name_hint or "k", j.name_hint]
    for a, name in zip(block.args, names):
        a.name_hint = name
    vmap: dict[SSAValue, SSAValue] = dict(zip([*lead, prod.loop.iv, j], block.args))
    block.add_op(tile.YieldOp(_recomputed(prod.gather, vmap, block.add_op)))
    g = tile.GatherOp(Region(block), MemRefType(prod.type, shape))
    g.result.name_hint = "window"
    Rewriter.insert_op(g, InsertPoint.before(kloop))
    return g.result


def _loop_of(iv: SSAValue) -> tile.ForOp:
    assert isinstance(iv, BlockArgument)
    lp = iv.block.parent_op()
    assert isinstance(lp, tile.ForOp), "a gathered B's batch index is a loop's"
    return lp
