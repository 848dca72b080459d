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
`(a - t) floordiv T`. T is the plan's `threads`, at most D rounded up to a warp; below a warp
(4 lanes a row: 16 of D each for D = 64) the combine is a shuffle tree inside each group of T
lanes, with no shared memory and no barrier.

A block may hold several rows (the plan's `rows`, R): the query-row loop on block.x counts
groups of R rows and a thread.y loop of R runs one row each (the row index clamped, the
stores guarded where R does not divide the rows); the block is T x R threads, and its rows
read the same keys and values, close together in time (L1):

    tile.for %a2 = 0 to 128 bind(block.x) { ROW(%a2) }
    ->
    tile.for %a2 = 0 to 16 bind(block.x) {
      tile.for %ty = 0 to 8 bind(thread.y) { %r = %a2 * 8 + %ty ; ROW(%r) }

Causal attention skips the keys no row of the block sees: where a key loop's scores are
`select(key <= row, s, -big)` (analysis/nest.py, `causal_limit`), the loop stops at the
block's last row + 1, `tile.for %r0 = 0 to min(%kub, 128)` — exact, since a masked key adds
nothing once key 0 has set the running max, and uniform across the block (the shuffles and
barriers of the combine stay convergent). The
region must have that shape (analysis/nest.py, `flash_row`): a rank-1 `loop.private`, every loop over D (lb 0, step 1, no loop
inside), reduce loops only inside a serial accumulating loop, stores only inside the free loops
over D, and the private accessed only by the iv of the free loop around the access.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.dialects.builtin import IntAttr, MemRefType
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.rewriter import InsertPoint, Rewriter

from deplo import hardware as hw
from deplo.analysis.nest import FlashRow, block_regions, causal_limit, defined_inside, flash_row
from deplo.dialects import loop, tile
from deplo.dialects.tile_plan import Plan
from deplo.passes.tile.kernel_pass import KernelPass, PassOptionError
from deplo.passes.tile.rewrite import (
    add,
    below,
    bound_loop,
    clamp,
    const,
    guard_stores,
    mul,
    on_threads,
    share_reductions,
    slice_loop,
    stride_loop,
    thread_loop,
)


@dataclass(frozen=True)
class TileAttentionRowsPass(KernelPass):
    """Run each flash-attention row (block region) on `threads` threads over the head dim:
    strided q . k partials + `tile.combine add`, uniform (m, l), per-thread accumulator slices."""

    name = "tile-attention-rows"

    threads: int | None = None
    rows: int | None = None

    def carry_out(self, kernel: tile.KernelOp, plan: Plan) -> None:
        found = [(r, row) for r in block_regions(kernel) if (row := flash_row(r))]
        if not found:
            raise PassOptionError(f"{self.name}: kernel @{kernel.sym_name.data}: its attention "
                                  "plan does not match its loops (no flash-attention row)")
        threads, per_block = 0, plan.knob("rows", 1)
        grid = list(kernel.grid_dims)
        for region, row in found:
            t = min(plan.knob("threads"), -(-row.head_dim // hw.WARP) * hw.WARP)
            outer = region.parent_op()
            if isinstance(outer, tile.ForOp) and outer.binding == tile.Bind.BLOCK_X:
                grid[0] = split_rows(row, outer, per_block)
            rewrite(row, t)
            threads = max(threads, t)
        kernel.set_launch(grid=grid, block=(threads, per_block, 1))


def split_rows(row: FlashRow, rows_loop: tile.ForOp, rows: int) -> int:
    """Put `rows` query rows in a block (a thread.y loop) and stop causal key loops at the
    block's last row; returns the new extent of the block.x loop."""
    extent = rows_loop.extent
    assert extent is not None
    iv = rows_loop.iv
    b = Builder(InsertPoint.before(row.ops[0]))
    for kl in row.key_loops:
        limit = causal_limit(kl)
        if limit is None:
            continue
        x, inclusive = limit
        if x is iv:  # the block's last query row
            last = clamp(b, add(b, mul(b, iv, rows), const(b, rows - 1)), extent) \
                if rows > 1 else iv
        elif not defined_inside(x, rows_loop.body.block):
            last = x  # an outer block index (rows on block.y): the same for the whole block
        else:
            continue
        stop = add(b, last, const(b, inclusive)) if inclusive else last
        stop.name_hint = "kub"
        row.ops[row.ops.index(kl)] = bound_loop(kl, stop)
    if rows == 1:
        return extent
    uses = [u for u in iv.uses if u.operation in row.ops or _inside(u.operation, row.ops)]
    ty = thread_loop(rows, tile.Bind.THREAD_Y, "ty")
    Rewriter.insert_op(ty, InsertPoint.before(row.ops[0]))
    end = ty.body.block.last_op
    for op in row.ops:
        op.detach()
        ty.body.block.insert_op_before(op, end)
    b = Builder(InsertPoint.at_start(ty.body.block))
    index = add(b, mul(b, iv, rows), ty.iv)
    index.name_hint = iv.name_hint
    if extent % rows:  # the rows past the end compute the last row again; only it stores
        guard = below(b, index, extent)
        index = clamp(b, index, extent)
        outputs = [op for root in row.ops for op in root.walk()
                   if isinstance(op, loop.StoreOp) and not isinstance(op.buffer.owner, loop.PrivateOp)]
        guard_stores(outputs, guard)
    for u in uses:
        u.operation.operands[u.index] = index
    rows_loop.ub = IntAttr(-(-extent // rows))
    return rows_loop.ub.data


def _inside(op, ops) -> bool:
    parent = op.parent_op()
    while parent is not None:
        if parent in ops:
            return True
        parent = parent.parent_op()
    return False


def rewrite(row: FlashRow, threads: int) -> None:
    outer = on_threads(row.ops, threads)
    t = outer.iv
    per = -(-row.head_dim // threads)
    sliced = per > 1 and row.head_dim % threads == 0
    share_reductions(row.reduces, t, threads, sliced)
    for lp in row.free:
        if sliced:
            slice_loop(lp, t, threads)
        else:
            stride_loop(lp, t, threads, Builder(InsertPoint.before(lp)))
    for p in [op for op in row.ops if isinstance(op, loop.PrivateOp)]:
        old = p.result.type
        new_p = loop.PrivateOp(MemRefType(old.element_type, [per]))
        Rewriter.insert_op(new_p, InsertPoint.before(p))
        new_p.result.name_hint = p.result.name_hint
        for use in list(p.result.uses):
            acc = use.operation
            if sliced:  # slot j of the thread's slice
                indices, amap = [_enclosing_loop(acc).iv], None
            elif per == 1:
                indices, amap = [acc.indices[0], t], AffineMap(2, 0, (AffineExpr.constant(0),))
            else:
                d0, d1 = AffineExpr.dimension(0), AffineExpr.dimension(1)
                indices, amap = [acc.indices[0], t], AffineMap(2, 0, ((d0 - d1) // threads,))
            if isinstance(acc, loop.LoadOp):
                rep = loop.LoadOp(new_p.result, indices, amap)
                rep.result.name_hint = acc.result.name_hint
            else:
                rep = loop.StoreOp(acc.value, new_p.result, indices, amap)
            Rewriter.replace_op(acc, rep)
        Rewriter.erase_op(p)


def _enclosing_loop(op) -> tile.ForOp:
    parent = op.parent_op()
    while not isinstance(parent, tile.ForOp):
        parent = parent.parent_op()
    return parent
