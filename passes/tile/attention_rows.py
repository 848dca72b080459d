"""tile-attention-rows: the threads of a block run flash-attention rows — each row's lanes
owning keys (the plan's `lane_keys` > 0: passes/tile/attention_keys.py, the heuristic's where
the row has the fact own_keys), or, as this docstring goes on to show, sharing its head dim.

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
row's q is read once, before the key loop, into a private over the head dim (`%q_r`, the
thread's slice in registers like the accumulator's), not again for every key.

With the plan's `stage_keys` (B > 0) the key loop walks B keys a step and the block copies each
step's K and V tiles (B x D, the loads indexed by the key and a loop over D with the leading
coordinates uniform over the block) into shared memory, where the step's keys read them:

    tile.for %k0 = 0 to min(%kub, ceil(S / B) B) step B bind(serial) iter(%m, %l) {
      %ks = tile.stage %k[.., %k0, 0] [1, .., B, D] ; %vs = tile.stage %v[..]
      tile.for %r0 = %k0 to min(%k0 + B, S) bind(serial) iter(..) { .. %ks[%r0 - %k0, %d] .. }

The outer loop keeps the causal stop (uniform, as the copy's barrier needs); keys past it in
the last step are masked as before, keys past S read zero and are never visited. The
region must have that shape (analysis/nest.py, `flash_row`): a rank-1 `loop.private`, every loop over D (lb 0, step 1, no loop
inside), reduce loops only inside a serial accumulating loop, stores only inside the free loops
over D, and the private accessed only by the iv of the free loop around the access.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.dialects.builtin import IntAttr, MemRefType
from xdsl.ir import Block, BlockArgument, SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
    AffineMap,
)
from xdsl.rewriter import InsertPoint, Rewriter

from deplo import hardware as hw
from deplo.analysis.index import const_value
from deplo.analysis.nest import (
    FlashRow,
    block_regions,
    causal_limit,
    defined_inside,
    flash_row,
    flash_update,
    kv_group,
    stored_buffers,
    tail_coords,
)
from deplo.dialects import loop, tile
from deplo.dialects.tile_plan import HOISTED_Q, Plan
from deplo.passes.tile import key_slices as ks
from deplo.passes.tile.attention_keys import own_keys
from deplo.passes.tile.kernel_pass import KernelPass, PassOptionError
from deplo.passes.tile.rewrite import (
    access_at,
    add,
    below,
    bound_loop,
    clamp,
    compact_access,
    const,
    guard_stores,
    mul,
    on_threads,
    share_reductions,
    slice_loop,
    stride_loop,
)


@dataclass(frozen=True)
class TileAttentionRowsPass(KernelPass):
    """Run each flash-attention row (block region) on `threads` threads: with `lane_keys` each
    lane owning keys (attention_keys.own_keys); else over the head dim, strided q . k partials +
    `tile.combine add`, uniform (m, l), per-thread accumulator slices."""

    name = "tile-attention-rows"

    threads: int | None = None
    rows: int | None = None
    stage_keys: int | None = None
    lane_keys: int | None = None
    head_parts: int | None = None
    key_splits: int | None = None
    group_heads: int | None = None

    def carry_out(self, kernel: tile.KernelOp, plan: Plan) -> None:
        found = [(r, row) for r in block_regions(kernel) if (row := flash_row(r))]
        if not found:
            raise PassOptionError(f"{self.name}: kernel @{kernel.sym_name.data}: its attention "
                                  "plan does not match its loops (no flash-attention row)")
        threads, per_block = 0, plan.knob("rows", 1)
        grid = list(kernel.grid_dims)
        stored = stored_buffers(kernel)
        lane_keys, parts = plan.knob("lane_keys", 0), plan.knob("head_parts", 1)
        splits, heads = plan.knob("key_splits"), plan.knob("group_heads", 1)
        for region, row in found:
            if heads > 1:
                axis, extent = group_heads(row, region, heads)
                grid[axis] = extent
            if not lane_keys or row.head_dim // parts <= HOISTED_Q:
                for kl in row.key_loops:
                    hoist_query(row, kl, stored)
            split = ks.around_slices(row.ops, splits, self.name) if splits > 1 else None
            outer = region.parent_op()
            while isinstance(outer, tile.ForOp) and outer.extent == 1 and not outer.binding.is_block:
                outer = outer.parent_op()  # (nest.through_unit_loops)
            if isinstance(outer, tile.ForOp) and outer.binding == tile.Bind.BLOCK_X:
                grid[0] = split_rows(row, outer, per_block)
            if lane_keys:
                t = plan.knob("threads")  # lanes over keys: not capped by the head dim
                fu = flash_update(row)
                if fu is None:
                    raise PassOptionError(
                        f"{self.name}: kernel @{kernel.sym_name.data}: lane_keys needs one key "
                        "loop with one q . k and the standard online update")
                own_keys(row, fu, t, lane_keys, parts, split)
                threads = max(threads, t)
                continue
            t = min(plan.knob("threads"), -(-row.head_dim // hw.WARP) * hw.WARP)
            if plan.knob("stage_keys", 0):
                row.key_loops = [stage_keys(row, kl, plan.knob("stage_keys"), region)
                                 for kl in row.key_loops]
            rewrite(row, t)
            threads = max(threads, t)
        if splits > 1:
            grid[2] = splits
        kernel.set_launch(grid=grid, block=(threads, per_block, heads))


def group_heads(row: FlashRow, region: Block, heads: int) -> tuple[int, int]:
    """Run `heads` query heads of one K/V head in a block, on thread.z (grouped-query
    attention: the grid loop whose iv reads K and V at `h floordiv G`, G a multiple of
    `heads`): their rows read each key's K and V at the same time, once through L1 for all of
    them. The heads' loop walks groups; inside, `h = hb heads + tz`. Returns (the grid axis of
    that loop, its new extent)."""
    grid = [lp for lp in tile.enclosing_loops(row.ops[0]) if lp.binding.is_block]
    lp = next((lp for lp in grid[1:] if kv_group(row, lp.iv) > 1
               and kv_group(row, lp.iv) % heads == 0), None)  # (grid[0]: the query rows)
    if lp is None or lp.extent is None or lp.extent % heads:
        raise PassOptionError(f"tile-attention-rows: group_heads {heads}: no grid loop over "
                              f"query heads reads K and V by groups of {heads}")
    _, head, uses = _on_axis(row.ops, lp.iv, heads, tile.Bind.THREAD_Z, "tz")
    for use in uses:
        use.operation.operands[use.index] = head
    lp.ub = IntAttr(lp.extent // heads)
    axis = {tile.Bind.BLOCK_X: 0, tile.Bind.BLOCK_Y: 1, tile.Bind.BLOCK_Z: 2}[lp.binding]
    return axis, lp.ub.data


def split_rows(row: FlashRow, rows_loop: tile.ForOp, rows: int) -> int:
    """Put `rows` query rows in a block (a thread.y loop) and stop causal key loops at the
    block's last row; returns the new extent of the block.x loop."""
    extent = rows_loop.extent
    assert extent is not None
    iv = rows_loop.iv
    b = Builder(InsertPoint.before(row.ops[0]))
    for n, kl in enumerate(row.key_loops):
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
        row.ops[row.ops.index(kl)] = row.key_loops[n] = bound_loop(kl, stop)
    if rows == 1:
        return extent
    b, index, uses = _on_axis(row.ops, iv, rows, tile.Bind.THREAD_Y, "ty")
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


def _on_axis(ops: list, iv: SSAValue, n: int, bind: tile.Bind, hint: str):
    """`ops` moved into a new thread loop of `n` (`bind`): (a builder at its start, the index
    `iv n + its iv` there, the uses of `iv` in `ops` that are to read it)."""
    uses = [u for u in iv.uses if u.operation in ops or _inside(u.operation, ops)]
    lp = on_threads(ops, n, bind, hint)
    b = Builder(InsertPoint.at_start(lp.body.block))
    index = add(b, mul(b, iv, n), lp.iv)
    index.name_hint = iv.name_hint
    return b, index, uses


def hoist_query(row: FlashRow, kl: tile.ForOp, stored: set[SSAValue]) -> None:
    """The loads of a q . k product that do not move with the key (the row's q) are read once,
    before the key loop, into a per-row array over the head dim (a thread's slice of it is
    registers, like the accumulator's), not again for every key."""
    for lp, _ in row.reduces:
        if not kl.is_ancestor(lp):
            continue
        for ld in [o for o in lp.body.block.ops if isinstance(o, loop.LoadOp)]:
            used = [ld.indices[n] for n in sorted(ld.access_map().used_dims())]
            if ld.buffer in stored or not any(v is lp.iv for v in used) or any(
                    v is not lp.iv and kl.is_ancestor(_owner(v)) for v in used):
                continue
            ld = compact_access(ld)  # the key iv may be an operand its map ignores
            mtype = MemRefType(ld.result.type, [row.head_dim])
            private = loop.PrivateOp(mtype)
            private.result.name_hint = (ld.buffer.name_hint or "x") + "r"
            fill = tile.ForOp(0, row.head_dim, tile.Bind.SERIAL)
            fb = Builder(InsertPoint.at_start(fill.body.block))
            value = fb.insert(ld.clone(value_mapper={lp.iv: fill.iv})).result
            fb.insert(loop.StoreOp(value, private.result, [fill.iv]))
            fb.insert(tile.YieldOp())
            Rewriter.insert_op([private, fill], InsertPoint.before(kl))
            at = row.ops.index(kl)
            row.ops[at:at] = [private, fill]
            row.free.append(fill)
            new = loop.LoadOp(private.result, [lp.iv])
            new.result.name_hint = ld.result.name_hint
            Rewriter.replace_op(ld, new)


def stage_keys(row: FlashRow, kl: tile.ForOp, step: int, region: Block) -> tile.ForOp:
    """The key loop walks `step` keys at a time; each step's tiles of the inputs it reads by key
    and head dim (K, V) are copied into shared memory by the block, and the key loop reads them
    there. The outer loop keeps the causal stop (uniform over the block, as the copy needs);
    the inner one runs the step's keys, those past the stop masked as before."""
    staged = [(ld, c) for ld in kl.walk() if isinstance(ld, loop.LoadOp)
              and (c := _key_tile(ld, kl, row.head_dim, region)) is not None]
    if not staged:
        return kl
    keys, key = kl.ub.data, kl.iv
    outer = tile.ForOp(0, -(-keys // step) * step, tile.Bind.SERIAL, list(kl.inits), None, step,
                       kl.dyn_ub)
    outer.iv.name_hint = "k0"
    Rewriter.insert_op(outer, InsertPoint.before(kl))
    ob = Builder(InsertPoint.at_end(outer.body.block))
    k0 = outer.iv
    body = Rewriter.move_region_contents_to_new_regions(kl.body)
    tiles: dict[tuple, SSAValue] = {}
    local = Builder(InsertPoint.at_start(body.block)).insert(
        arith.SubiOp(key, k0)).result  # the key's row in the step's tile
    for ld, (key_first, d_iv) in staged:
        # the same tile wherever the access differs only in the key and head-dim ivs (q = k = v)
        marks = {key: "key", d_iv: "d"}
        sig = (ld.buffer, tuple(_expr_of(e, ld, marks) for e in ld.access_map().results))
        if sig not in tiles:
            zero = const(ob, 0)
            offsets = [c if (c := const_value(o)) is not None else o
                       for o in access_at(ob, ld, {key: k0, d_iv: zero})]
            if not zero.uses:
                Rewriter.erase_op(zero.owner)
            sizes = [1] * (len(offsets) - 2) + ([step, row.head_dim] if key_first
                                                else [row.head_dim, step])
            st = ob.insert(tile.StageOp(ld.buffer, offsets, sizes))
            st.result.name_hint = (ld.buffer.name_hint or "x") + "s"
            tiles[sig] = st.result
        at = [local, d_iv] if key_first else [d_iv, local]
        new = loop.LoadOp(tiles[sig], at)
        new.result.name_hint = ld.result.name_hint
        Rewriter.replace_op(ld, new)
    inner = tile.ForOp(k0, keys, tile.Bind.SERIAL, list(outer.accs), body, 1,
                       add(ob, k0, const(ob, step)))
    ob.insert(inner)
    ob.insert(tile.YieldOp(*inner.res))
    for old, res in zip(kl.res, outer.res):
        old.replace_all_uses_with(res)
    row.ops[row.ops.index(kl)] = outer
    Rewriter.erase_op(kl)
    return outer


def _key_tile(ld: loop.LoadOp, kl: tile.ForOp, head_dim: int,
              region: Block) -> tuple[bool, SSAValue] | None:
    """(whether the key is the first of the two, the head-dim iv) where `ld` reads a global
    input at [uniform..., key, d] or [uniform..., d, key] — the key of `kl`, d of a loop over
    the head dim inside it, the leading coordinates the same for the whole block (defined
    outside its `region`) — else None."""
    if not isinstance(ld.buffer, BlockArgument) or not isinstance(ld.buffer.owner.parent_op(),
                                                                   tile.KernelOp):
        return None
    lead = {v for v in ld.indices if not defined_inside(v, region)}
    c = tail_coords(ld, lead)
    if c is None or kl.iv not in c[-2:]:
        return None
    d = c[-1] if c[-2] is kl.iv else c[-2]
    if not isinstance(d, BlockArgument):
        return None
    lp = d.owner.parent_op()
    if not (isinstance(lp, tile.ForOp) and lp.iv is d and kl.is_ancestor(lp)
            and lp.static_lb == 0 and lp.step.data == 1 and lp.extent == head_dim):
        return None
    return c[-2] is kl.iv, d


def _expr_of(e: AffineExpr, ld: loop.LoadOp, marks: dict) -> object:
    """A coordinate of `ld` as a hashable tree over its index values (those in `marks` by
    their mark): equal for two loads that read the same element."""
    if isinstance(e, AffineDimExpr):
        v = ld.indices[e.position]
        return marks.get(v, v)
    if isinstance(e, AffineConstantExpr):
        return e.value
    assert isinstance(e, AffineBinaryOpExpr)
    return e.kind, _expr_of(e.lhs, ld, marks), _expr_of(e.rhs, ld, marks)


def _owner(v: SSAValue):
    return v.owner.parent_op() if isinstance(v, BlockArgument) else v.owner


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
            loop.reaccess(acc, indices, amap, new_p.result)
        Rewriter.erase_op(p)


def _enclosing_loop(op) -> tile.ForOp:
    parent = op.parent_op()
    while not isinstance(parent, tile.ForOp):
        parent = parent.parent_op()
    return parent
