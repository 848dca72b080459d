"""tile-attention-mma: flash attention in f16 / bf16 on tensor cores (the plan's `mma`).

The flash row (analysis/nest.py, `flash_mma`: q . k a plain 16-bit product, the online update,
`acc = acc * alpha + p * V[key]`) is rebuilt for warps of `mma.sync.m16n8k16`, as FlashAttention-2
does it: each warp owns 16 query rows and walks the keys `key_block` at a time. (With
`frags_m` F > 1 a warp owns F tiles of 16 rows, 16F from %row0: each K and V fragment feeds one
mma of every tile, fewer shared-memory reads an mma for more registers; below, F = 1.)

    tile.for %rb = 0 to ceil(S / 16W) bind(block.x) {
      tile.for %w = 0 to W bind(thread.y) { tile.for %l = 0 to 32 bind(thread.x) {
        %row0 = %rb * 16W + %w * 16
        %q.. = tile.fragment_load a %q[.., %row0, 16 kk] lane(%l)         (D / 16, kept)
        %m0, %m1, %l0, %l1, %o.. = tile.for %k0 = 0 to S step B bind(serial) iter(...) {
          S = Q K^T: per 8 keys f, 4 scores a lane (rows g, g + 8; keys 2t, 2t + 1):
            %s.. = tile.mma %q.., tile.fragment_load b_nk %k[.., %k0 + 8f, 16 kk] ..
          x = the row's scalar chain on each score (scale, causal select, mask loads; what
            needs no score, a mask's loads, goes out before the mma)
          the block's max of each row: a lane's own, then `tile.combine max .. lanes 4`
          m' = max(m, max); p = exp(x - m'); alpha = exp(m - m'); l = l alpha + sum p
          O = O alpha + P V: P packed to A fragments in registers (the accumulator layout of
            two 8-key tiles is the A layout of 16 keys), V as b_kn fragments
        }
        l = tile.combine add %l lanes 4; the final loop once per accumulator element
      }}
    }

With the plan's `key_splits` N > 1 the keys are N slices on block.z and the last slice of a
row block combines the slices' (O, m, l) (split-KV, passes/tile/key_slices.py).

A lane's registers, per row tile: D / 2 accumulators, D / 8 Q fragments, B / 2 scores. Causal key loops stop
after the warp's last row (each warp its own bound: nothing here synchronizes the block); keys
past the end of a partial last step are masked, rows past the end compute and do not store.
The fragments are read from global memory (the rows of a block share them in L1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.dialects.builtin import Float32Type, FloatAttr, IntAttr
from xdsl.ir import SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from deplo.analysis.index import const_value
from deplo.analysis.nest import (
    FlashMma,
    block_regions,
    causal_limit,
    defined_inside,
    flash_mma,
    flash_row,
    stored_buffers,
)
from deplo.dialects import loop, tile
from deplo.dialects.tile_plan import STAGE_PAD, Plan
from deplo.passes.tile import key_slices as ks
from deplo.passes.tile import rewrite as rw
from deplo.passes.tile.kernel_pass import KernelPass, PassOptionError

K = tile.FragmentKind


@dataclass(frozen=True)
class TileAttentionMmaPass(KernelPass):
    """Run an f16/bf16 flash-attention row on warps of mma.sync: `warps` warps a block,
    `frags_m` tiles of 16 query rows each, `key_block` keys a step (plan knob `mma` on)."""

    name = "tile-attention-mma"

    mma: bool | None = None
    warps: int | None = None
    key_block: int | None = None
    stage: bool | None = None
    key_splits: int | None = None
    frags_m: int | None = None

    def carry_out(self, kernel: tile.KernelOp, plan: Plan) -> None:
        if not plan.knob("mma"):
            return
        found = []
        for region in block_regions(kernel):
            row = flash_row(region)
            fm = flash_mma(row, region) if row is not None else None
            rows = fm.row_iv.owner.parent_op() if fm is not None else None
            if isinstance(rows, tile.ForOp) and rows.binding.is_block \
                    and rows.static_lb == 0 and rows.step.data == 1:
                found.append((rows, fm))
        if len(found) != 1:
            raise PassOptionError(f"{self.name}: kernel @{kernel.sym_name.data}: its attention "
                                  "plan has mma on, but its loops are not one f16/bf16 flash "
                                  "row with its query rows on a block axis")
        rows, fm = found[0]
        _Rewrite(kernel, rows, fm, plan.knob("warps"), plan.knob("key_block"),
                 plan.knob("stage"), plan.knob("key_splits"), plan.knob("frags_m") or 1).run()


class _Rewrite:
    def __init__(self, kernel: tile.KernelOp, rows: tile.ForOp, fm: FlashMma, warps: int,
                 key_block: int, stage: bool, splits: int = 1, frags: int = 1):
        self.kernel, self.rows, self.fm = kernel, rows, fm
        self.warps, self.bk, self.staged, self.splits = warps, key_block, stage, splits
        self.frags = frags  # 16-row tiles a warp: each K and V fragment feeds this many mma
        self.per_warp = 16 * frags
        self.per_block = self.per_warp * warps
        self.seq = rows.ub.data  # query rows
        self.keys = fm.key_loop.ub.data
        self.d = fm.row.head_dim
        self.type = fm.qk.type
        self.late = rw.uses_of(fm.chain, [fm.qk.loop.res[0]])  # the chain's ops that need s

    def run(self) -> None:
        fm, rows = self.fm, self.rows
        per_block = self.per_block
        rows.ub = IntAttr(-(-self.seq // per_block))  # (self.seq keeps the query rows)
        w = rw.thread_loop(self.warps, tile.Bind.THREAD_Y, "w")
        lanes = rw.thread_loop(32, tile.Bind.THREAD_X, "l")
        # the key slices on block.z, around the warps
        self.split = ks.around_slices(fm.row.ops, self.splits, "tile-attention-mma") \
            if self.splits > 1 else None
        Rewriter.insert_op(w, InsertPoint.before(fm.row.ops[0]))
        Rewriter.insert_op(lanes, InsertPoint.before(w.body.block.last_op))
        b = Builder(InsertPoint.before(lanes.body.block.last_op))
        lane = lanes.iv
        row0 = rw.add(b, rw.mul(b, rows.iv, per_block), rw.mul(b, w.iv, self.per_warp))
        row0.name_hint = "row0"
        self.g, self.t2 = rw.accumulator_lane(b, lane)
        self.row0, self.lane = row0, lane
        q, d_iv = fm.qk.a, fm.qk.loop.iv
        self.q = [[self.frag(b, K.A, q.buffer, rw.access_at(
            b, q, {rows.iv: self.tile_row(b, t), d_iv: rw.const(b, 16 * kk)}))
            for kk in range(-(-self.d // 16))] for t in range(self.frags)]
        key_loop = self.key_loop(b)
        n = 2 * self.frags
        m_fin, l_fin, o = key_loop.res[0:n], key_loop.res[n:2 * n], list(key_loop.res[2 * n:])
        ls = [b.insert(tile.CombineOp(tile.CombineKind.ADD, v, lanes=4)).result for v in l_fin]
        if self.split is not None:
            b, m_fin, ls, o = self.combine_slices(b, m_fin, ls, o)
        self.epilogue(b, o, m_fin, ls)
        rw.erase_ops(fm.row.ops)
        rw.compact_all(lanes)
        rw.cse(lanes.body.block, stored_buffers(self.kernel))
        grid = list(self.kernel.grid_dims)
        grid[rows.binding.axis] = rows.ub.data
        if self.split is not None:
            grid[2] = self.splits
        self.kernel.set_launch(grid=grid, block=(32, self.warps, 1))

    # --- pieces --------------------------------------------------------------------------
    def frag(self, b: Builder, kind: K, buf: SSAValue, idx: list[SSAValue]):
        return list(b.insert(tile.FragmentLoadOp(kind, buf, idx, self.lane)).results)

    def tile_row(self, b: Builder, t: int) -> SSAValue:
        """The first query row of the warp's 16-row tile t."""
        return rw.add(b, self.row0, rw.const(b, 16 * t)) if t else self.row0

    def row_of(self, b: Builder, t: int, e: int) -> SSAValue:
        """The query row of accumulator element e of row tile t (0, 1: row g; 2, 3: g + 8)."""
        r = rw.add(b, self.tile_row(b, t), self.g)
        return rw.add(b, r, rw.const(b, 8)) if e >= 2 else r

    def stop(self, b: Builder) -> SSAValue | None:
        """Where this warp's key loop may stop (causal), or None; with staged K and V the
        block's (its warps copy the tiles together)."""
        limit = causal_limit(self.fm.key_loop)
        if limit is None:
            return None
        x, inclusive = limit
        if x is self.rows.iv:
            first, span = (rw.mul(b, self.rows.iv, self.per_block), self.per_block) \
                if self.staged else (self.row0, self.per_warp)
            last = rw.clamp(b, rw.add(b, first, rw.const(b, span - 1)), self.seq)
        elif not defined_inside(x, self.fm.row_iv.owner):
            last = x  # the same for every row (an outer block index)
        else:
            return None
        stop = rw.add(b, last, rw.const(b, inclusive)) if inclusive else last
        stop.name_hint = "kub"
        return stop

    def key_loop(self, b: Builder) -> tile.ForOp:
        """The key loop: its carried values are each row tile's m of rows g and g + 8,
        then their l, then the tiles' accumulators."""
        fm, bk, d, tiles = self.fm, self.bk, self.d, range(self.frags)
        kl = fm.key_loop
        f32 = Float32Type()
        zero = b.insert(arith.ConstantOp(FloatAttr(0.0, f32))).result
        nd, n = -(-d // 8), 2 * self.frags
        inits = [kl.inits[0]] * n + [kl.inits[1]] * n + [zero] * (4 * nd * self.frags)
        loop_ = tile.ForOp(0, -(-self.keys // bk) * bk, tile.Bind.SERIAL, inits, None, bk,
                           self.stop(b))
        loop_.iv.name_hint = "k0"
        b.insert(loop_)
        kb = Builder(InsertPoint.at_end(loop_.body.block))
        k0 = loop_.iv
        accs = list(loop_.accs)
        m = [accs[2 * t : 2 * t + 2] for t in tiles]
        l_ = [accs[n + 2 * t : n + 2 * t + 2] for t in tiles]
        o = [accs[2 * n + 4 * nd * t : 2 * n + 4 * nd * (t + 1)] for t in tiles]
        # K and V: this step's tiles in shared memory, or read where they are
        d_iv, pv_iv = fm.qk.loop.iv, fm.v.parent_op().iv
        k_at = self.tile_of(kb, fm.qk.b, d_iv, k0)
        v_at = self.tile_of(kb, fm.v, pv_iv, k0)
        # the chain's work that does not need the scores (the mask's loads) before the mma
        early = [[[self.score_inputs(kb, k0, t, f, e) for e in range(4)]
                  for f in range(bk // 8)] for t in tiles]
        # S = Q K^T, 8 keys a tile; each K fragment serves every row tile
        scores = [[[zero] * 4 for _ in range(bk // 8)] for _ in tiles]
        for f in range(bk // 8):
            for kk in range(len(self.q[0])):
                kf = self.frag(kb, fm.qk.b_kind, *k_at(rw.const(kb, 8 * f), rw.const(kb, 16 * kk)))
                for t in tiles:
                    scores[t][f] = list(kb.insert(
                        tile.MmaOp(self.type, self.q[t][kk], kf, scores[t][f])).results)
        new_m, new_l, a = [], [], []
        for t in tiles:
            mt, lt, at = self.online_update(kb, m[t], l_[t], o[t], [
                [self.score(kb, *early[t][f][e], scores[t][f][e]) for e in range(4)]
                for f in range(bk // 8)])
            new_m += mt
            new_l += lt
            a.append(at)
        # O += P V: two 8-key score tiles are one 16-key A fragment; each V fragment serves
        # every row tile
        for kc in range(bk // 16):
            for fd in range(nd):
                vf = self.frag(kb, fm.v_kind, *v_at(rw.const(kb, 16 * kc), rw.const(kb, 8 * fd)))
                for t in tiles:
                    o[t][4 * fd : 4 * fd + 4] = kb.insert(
                        tile.MmaOp(self.type, a[t][kc], vf, o[t][4 * fd : 4 * fd + 4])).results
        kb.insert(tile.YieldOp(*new_m, *new_l, *[v for ot in o for v in ot]))
        if self.split is not None:  # this block's slice of the keys
            loop_ = ks.slice_keys(loop_, self.split, self.keys)
        for v in loop_.res:
            v.name_hint = "o"
        return loop_

    def online_update(self, kb: Builder, m: list, l_: list, o: list, x: list):
        """One row tile's step of the online softmax on its scores `x` [key tile][element]:
        the new (m, l) of rows g and g + 8, the accumulators `o` scaled in place, and P as
        A fragments, one a 16 keys."""
        bk = self.bk
        new_m, alpha = [], []
        for r in range(2):
            mine = rw.tree(kb, arith.MaximumfOp, [x[f][e] for f in range(bk // 8)
                                                for e in (2 * r, 2 * r + 1)])
            most = kb.insert(tile.CombineOp(tile.CombineKind.MAX, mine, lanes=4)).result
            mn = kb.insert(arith.MaximumfOp(m[r], most)).result
            new_m.append(mn)
            alpha.append(rw.exp_minus(kb, m[r], mn))
        p = [[rw.exp_minus(kb, x[f][e], new_m[e // 2]) for e in range(4)] for f in range(bk // 8)]
        new_l = []
        for r in range(2):
            total = rw.tree(kb, arith.AddfOp, [p[f][e] for f in range(bk // 8)
                                             for e in (2 * r, 2 * r + 1)])
            scaled = kb.insert(arith.MulfOp(l_[r], alpha[r])).result
            new_l.append(kb.insert(arith.AddfOp(scaled, total)).result)
        o[:] = [kb.insert(arith.MulfOp(v, alpha[(n % 4) // 2])).result for n, v in enumerate(o)]
        half = [[kb.insert(arith.TruncFOp(v, self.type)).result for v in tile_] for tile_ in p]
        a = []
        for kc in range(bk // 16):
            lo, hi = half[2 * kc], half[2 * kc + 1]
            a.append([kb.insert(tile.PackHalvesOp(*pair)).result
                      for pair in ((lo[0], lo[1]), (lo[2], lo[3]), (hi[0], hi[1]), (hi[2], hi[3]))])
        return new_m, new_l, a

    def tile_of(self, kb: Builder, ld: loop.LoadOp, d_iv: SSAValue, k0: SSAValue):
        """The fragments of `ld`'s operand this step: a function from (key, column) offsets in
        the step's tile to (buffer, indices). With `stage`, the step's key_block x D tile is
        copied into shared memory by the block (rows padded; fragments then come from
        ldmatrix); else they are read where they are."""
        key_iv = self.fm.key_loop.iv
        keys_first = any(ld.indices[d] is key_iv for d in ld.access_map().results[-2].used_dims())
        if not self.staged:
            def at(key: SSAValue, col: SSAValue):
                return ld.buffer, rw.access_at(kb, ld, {key_iv: rw.add(kb, k0, key), d_iv: col})
            return at
        zero = rw.const(kb, 0)
        offsets = [c if (c := const_value(o)) is not None else o
                   for o in rw.access_at(kb, ld, {key_iv: k0, d_iv: zero})]
        sizes = [1] * (len(offsets) - 2) + ([self.bk, self.d] if keys_first else [self.d, self.bk])
        st = kb.insert(tile.StageOp(ld.buffer, offsets, sizes, pad=STAGE_PAD))
        if ld.buffer.name_hint:
            st.result.name_hint = ld.buffer.name_hint + "s"
        return lambda key, col: (st.result, [key, col] if keys_first else [col, key])

    def score_inputs(self, kb: Builder, k0: SSAValue, t: int, f: int,
                     e: int) -> tuple[SSAValue, dict]:
        """(the key, the value map) of score f, e of row tile t, with the ops of the row's chain that do not
        use the score (a mask's loads) already cloned: they go out before the step's mma."""
        fm = self.fm
        key = rw.add(kb, rw.add(kb, k0, rw.const(kb, 8 * f)), self.t2)
        if e % 2:
            key = rw.add(kb, key, rw.const(kb, 1))
        row = self.row_of(kb, t, e)
        vmap = {fm.key_loop.iv: rw.clamp(kb, key, self.keys) if self.keys % self.bk else key,
                fm.row_iv: rw.clamp(kb, row, self.seq) if self.seq % self.per_block else row}
        for op in fm.chain:
            if op not in self.late:
                kb.insert(op.clone(value_mapper=vmap))
        return key, vmap

    def score(self, kb: Builder, key: SSAValue, vmap: dict, s: SSAValue) -> SSAValue:
        """The rest of the row's chain on score `s` (score_inputs' key and map)."""
        fm = self.fm
        vmap[fm.qk.loop.res[0]] = s
        for op in fm.chain:
            if op.results and op.results[0] not in vmap:
                kb.insert(op.clone(value_mapper=vmap))
        x = vmap.get(fm.x, fm.x)
        if self.keys % self.bk:  # keys past the end of the last step
            ok = rw.below(kb, key, self.keys)
            masked = kb.insert(arith.ConstantOp(FloatAttr(-math.inf, x.type))).result
            x = kb.insert(arith.SelectOp(ok, x, masked)).result
        return x

    def combine_slices(self, b: Builder, m: list[SSAValue], ls: list[SSAValue],
                       o: list[SSAValue]) -> tuple[Builder, list, list, list]:
        """Split-KV (passes/tile/key_slices.py): the lane's accumulators, and one lane a quad
        the rows' m and l (the quad's alike), to the scratch [.., warp's row, Dp + 2]; the last
        slice combines. Returns a builder inside its branch and the combined values."""
        dp = 8 * -(-self.d // 8)
        lanes = self.lane.owner.parent_op()
        buf, at = ks.scratch(self.kernel, lanes, self.split, [self.per_warp, dp + 2])

        def row(i: int) -> ks.SliceRow:  # rows g and g + 8 of the warp's row tile i // 2
            return ks.SliceRow(m[i], ls[i], lambda bb, s, col: at(
                s, rw.add(bb, self.g, rw.const(bb, 8 * i)) if i else self.g, col))

        accs = [(v, self.stat_of(i), lambda bb, i=i: self.col_of(bb, i)) for i, v in enumerate(o)]
        quad0 = b.insert(arith.CmpiOp(self.t2, rw.const(b, 0), "eq")).result
        tb, stats, new_o, _ = ks.combine(b, buf, self.split, dp + 2,
                                         [row(i) for i in range(len(m))], accs, None, quad0)
        return tb, [s[0] for s in stats], [s[1] for s in stats], new_o

    def tile_of_acc(self, n: int) -> tuple[int, int]:
        """(row tile, index within the tile's accumulators) of the lane's accumulator n."""
        per_tile = 4 * -(-self.d // 8)
        return n // per_tile, n % per_tile

    def stat_of(self, n: int) -> int:
        """The (m, l) pair of accumulator n: its row tile's row g or g + 8."""
        t, i = self.tile_of_acc(n)
        return 2 * t + i % 4 // 2

    def col_of(self, b: Builder, n: int) -> SSAValue:
        """The head-dim column of accumulator n (8-column tile n // 4 of its row tile;
        columns 2t, 2t + 1)."""
        n = self.tile_of_acc(n)[1]
        col = rw.add(b, rw.const(b, 8 * (n // 4)), self.t2)
        return rw.add(b, col, rw.const(b, 1)) if n % 2 else col

    def epilogue(self, b: Builder, acc: list[SSAValue], m: list[SSAValue],
                 ls: list[SSAValue]) -> None:
        """The final loop over the head dim, once per accumulator element of the lane (before
        the builder's insertion point)."""
        fm = self.fm
        old = fm.key_loop
        final = fm.final
        acc_loads = [o for o in final.body.block.ops
                     if isinstance(o, loop.LoadOp) and o.buffer.owner in fm.row.ops]
        body = [o for o in final.body.block.ops
                if o not in acc_loads and not isinstance(o, tile.YieldOp)]
        replicas = []
        for n in range(len(acc)):
            t, i = self.tile_of_acc(n)
            row, col = self.row_of(b, t, i % 4), self.col_of(b, n)
            oks = []
            if self.seq % self.per_block:
                oks.append(rw.below(b, row, self.seq))
            if self.d % 8:
                oks.append(rw.below(b, col, self.d))
            ok = oks[0] if oks else None
            if len(oks) == 2:
                ok = b.insert(arith.AndIOp(*oks)).result
            vmap = {fm.row_iv: rw.clamp(b, row, self.seq) if oks else row,
                    final.iv: rw.clamp(b, col, self.d) if self.d % 8 else col,
                    old.res[0]: m[self.stat_of(n)], old.res[1]: ls[self.stat_of(n)]}
            vmap |= {ld.result: acc[n] for ld in acc_loads}
            for op in fm.final_inputs:
                b.insert(op.clone(value_mapper=vmap))
            replicas.append(rw.Replica(vmap, ok))
        anchor = b.insertion_point.insert_before
        assert anchor is not None
        rw.replicate(body, replicas, anchor)
