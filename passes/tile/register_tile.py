"""tile-register-tile: each thread computes an m x n tile of a matmul's outputs in registers.

The two innermost serial free loops of a contraction (i over M, j over N) are strip-mined by m
and n, and the body is unrolled m x n times and jammed: one reduce loop carries the m * n
accumulators, so a value of A read for row i is reused for n columns and a value of B for m rows
(the repeated loads are merged):

    tile.for %i = 0 to 64 bind(serial) {
      tile.for %j = 0 to 80 bind(serial) {
        %s = tile.for %k = 0 to 96 bind(serial) iter(%acc = %zero) -> f32 { A[i,k] * B[k,j] ... }
        loop.store %s, %out[%i, %j]
    ->
    tile.for %i = 0 to 16 bind(serial) {
      tile.for %j = 0 to 20 bind(serial) {
        %i0 = arith.muli %i, %c4 ; %i1 = arith.addi %i0, %c1 ; ...     (rows 4i .. 4i+3)
        %s:16 = tile.for %k = 0 to 96 bind(serial) iter(%acc = %zero, ... x16) -> (f32, ...) {
          4 loads of A, 4 loads of B, 16 multiply-adds }
        16 stores

Extents that m or n do not divide are clamped (`arith.minsi`, loads stay in bounds) and the
stores guarded (`scf.if`), see passes/tile/analysis.py. Scalar ops between the loops are moved
into the body first. A no-op on kernels that are not contractions or have fewer than two serial
free axes (e.g. already mapped to blocks and threads), and on kernels already register-tiled.

Heuristic (m=0 / n=0): on matmul-sized contractions (analysis.is_matmul_sized), 4 rows when
M >= 64 else 2, likewise 4 / 2 columns from N: 16 (or fewer) accumulators per thread keep a
fp32 thread's registers well under the 255 limit while giving 2 loads per 1 FMA -> 8 per 16.
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import IntAttr, ModuleOp
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint

from deplo.dialects import tile
from deplo.passes.tile import analysis as an


def split_axis(b: Builder, lp: tile.ForOp, f: int) -> tuple[list[SSAValue], list[SSAValue | None]]:
    """Strip-mine `lp` (0 to N) by f: its iv now counts groups of f; returns, per r < f, the
    (clamped) index f * iv + r and the guard `f * iv + r < N` (None when f divides N)."""
    if f == 1:
        return [lp.iv], [None]
    extent = lp.ub.data
    lp.ub = IntAttr(-(-extent // f))
    base = an.mul(b, lp.iv, f)
    values: list[SSAValue] = []
    guards: list[SSAValue | None] = []
    hint = lp.iv.name_hint or "i"
    for r in range(f):
        raw = base if r == 0 else an.add(b, base, an.const(b, r))
        if extent % f:
            guards.append(an.below(b, raw, extent))
            raw = an.clamp(b, raw, extent)
        else:
            guards.append(None)
        raw.name_hint = f"{hint}r{r}"
        values.append(raw)
    return values, guards


@dataclass(frozen=True)
class TileRegisterTilePass(ModulePass):
    """Give each thread an m x n tile of outputs (unroll-and-jam of the two innermost serial
    free axes of a contraction into its reduce loops). 0 picks the heuristic."""

    name = "tile-register-tile"

    m: int = 0
    n: int = 0

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in [k for k in op.walk() if isinstance(k, tile.KernelOp)]:
            self.tile_kernel(kernel)

    def factors(self, c: an.Contraction, rows: int, cols: int) -> tuple[int, int]:
        if self.m and self.n:
            return self.m, self.n
        auto = an.is_matmul_sized(c)

        def pick(given: int, extent: int) -> int:
            if given:
                return given
            if not auto:
                return 1
            return 4 if extent >= 64 else 2 if extent >= 8 else 1

        return pick(self.m, rows), pick(self.n, cols)

    def tile_kernel(self, kernel: tile.KernelOp) -> None:
        if any(s.startswith(self.name) for s in kernel.schedule_list):
            return  # one register tile per kernel
        c = an.find_contraction(kernel)
        if c is None or len(axes := c.serial_axes()) < 2:
            return
        i, j = axes[-2], axes[-1]
        m, n = self.factors(c, i.ub.data, j.ub.data)
        m, n = max(1, min(m, i.ub.data)), max(1, min(n, j.ub.data))
        if m == n == 1:
            return
        an.sink_chain_ops(c.chain[c.chain.index(i) :], c.cell)
        ops = [o for o in c.cell.ops if not isinstance(o, tile.YieldOp)]
        b = Builder(InsertPoint.before(ops[0]))
        rows, row_guards = split_axis(b, i, m)
        cols, col_guards = split_axis(b, j, n)
        replicas = []
        for (r, gr), (s, gs) in itertools.product(zip(rows, row_guards), zip(cols, col_guards)):
            guard = gr if gs is None else gs if gr is None else None
            if gr is not None and gs is not None:
                guard = b.insert(arith.AndIOp(gr, gs)).result
                guard.name_hint = "in"
            replicas.append(an.Replica({i.iv: r, j.iv: s}, guard))
        an.replicate(ops, replicas, c.cell.last_op)
        an.erase_ops(ops)
        an.compact_all(c.chain[0])
        an.cse(c.cell, an.stored_buffers(kernel))
        kernel.record(dataclasses.replace(self, m=m, n=n))
