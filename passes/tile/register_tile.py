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

The loops are the innermost two of the contraction's chain (the rows and the columns); m and n
are the plan's `reg_m` and `reg_n`. `interleave` strides a thread's rows (columns) by the
threads; with `transpose` (tile-stage-chunks then stores [rows][k] slabs k-major, so a thread
reads its rows of one k as consecutive words) by 16-byte groups of them, so that a thread reads
128-bit vectors and the lanes of a warp neighbouring vectors. Extents that m or n do not divide
are clamped (`arith.minsi`, loads stay in bounds) and the stores guarded (`scf.if`), see
passes/tile/rewrite.py. Scalar ops between the loops are moved into the body first.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.dialects.builtin import IntAttr
from xdsl.ir import SSAValue
from xdsl.rewriter import InsertPoint

from deplo.analysis.nest import find_contraction, stored_buffers
from deplo.dialects import tile
from deplo.dialects.kernel import VECTOR_BYTES
from deplo.dialects.tile_plan import Plan, slab_parts
from deplo.passes.tile.kernel_pass import KernelPass
from deplo.passes.tile.rewrite import (
    Replica,
    add,
    below,
    clamp,
    compact_all,
    const,
    cse,
    erase_ops,
    mul,
    replicate,
    serial_rows_cols,
    sink_chain_ops,
)


def split_axis(b: Builder, lp: tile.ForOp, f: int, threads: int = 1, vector: int = 1
               ) -> tuple[list[SSAValue], list[SSAValue | None]]:
    """Strip-mine `lp` (0 to N) by f: its iv now counts tiles of f; returns, per r < f, the
    (clamped) index and the guard `index < N` (None when nothing passes N). Blocked, tile t
    holds f t + r; interleaved among `threads` (> 1) tiles, tile t holds
    (t / T) T f + r T + t % T — the tiles of T neighbouring threads alternate, so a warp's
    lanes read neighbouring rows (a linear weight's rows: no shared-memory bank conflicts);
    in groups of `vector` (v), (t / T) T f + (r / v) T v + (t % T) v + r % v — the lanes read
    neighbouring 16-byte vectors of a transposed stage (v is f when f < v; single elements
    when f is not a multiple of v, whose groups would overlap)."""
    if f == 1:
        return [lp.iv], [None]
    vector = min(vector, f) if threads > 1 and f % min(vector, f) == 0 else 1
    extent = lp.ub.data
    group = f * threads
    lp.ub = IntAttr(-(-extent // f) if threads == 1 else -(-extent // group) * threads)
    if threads == 1:
        base, lane = mul(b, lp.iv, f), None
    else:
        q = b.insert(arith.DivSIOp(lp.iv, const(b, threads))).result
        lane = b.insert(arith.RemSIOp(lp.iv, const(b, threads))).result
        base = add(b, mul(b, q, group), mul(b, lane, vector))
    values: list[SSAValue] = []
    guards: list[SSAValue | None] = []
    hint = lp.iv.name_hint or "i"
    for r in range(f):
        step = r if lane is None else (r // vector) * threads * vector + r % vector
        raw = base if r == 0 else add(b, base, const(b, step))
        if extent % group:
            guards.append(below(b, raw, extent))
            raw = clamp(b, raw, extent)
        else:
            guards.append(None)
        raw.name_hint = f"{hint}r{r}"
        values.append(raw)
    return values, guards


@dataclass(frozen=True)
class TileRegisterTilePass(KernelPass):
    """Give each thread a reg_m x reg_n tile of outputs (unroll-and-jam of the rows and columns
    of a contraction into its reduce loop)."""

    name = "tile-register-tile"

    reg_m: int | None = None
    reg_n: int | None = None
    interleave: bool | None = None
    transpose: bool | None = None

    def carry_out(self, kernel: tile.KernelOp, plan: Plan) -> None:
        m, n = plan.knob("reg_m"), plan.knob("reg_n")
        if m == n == 1:
            return
        c = find_contraction(kernel)
        i, j = serial_rows_cols(self.name, kernel, c)
        sink_chain_ops(c.chain[c.chain.index(i) :], c.cell)
        ops = [o for o in c.cell.ops if not isinstance(o, tile.YieldOp)]
        b = Builder(InsertPoint.before(ops[0]))
        spread = plan.knob("interleave")
        # a transposed stage's rows read as 16-byte vectors: lanes interleave by those
        vector = VECTOR_BYTES // min(slab_parts(code)[1] for code in plan.facts_dict["slabs"]) \
            if plan.knob("transpose") and plan.facts_dict.get("slabs") else 1
        rows, row_guards = split_axis(b, i, m, plan.knob("threads_m") if spread else 1, vector)
        cols, col_guards = split_axis(b, j, n, plan.knob("threads_n") if spread else 1, vector)
        replicas = []
        for (r, gr), (s, gs) in itertools.product(zip(rows, row_guards), zip(cols, col_guards)):
            guard = gr if gs is None else gs if gr is None else None
            if gr is not None and gs is not None:
                guard = b.insert(arith.AndIOp(gr, gs)).result
                guard.name_hint = "in"
            replicas.append(Replica({i.iv: r, j.iv: s}, guard))
        replicate(ops, replicas, c.cell.last_op)
        erase_ops(ops)
        compact_all(c.chain[0])
        cse(c.cell, stored_buffers(kernel))
