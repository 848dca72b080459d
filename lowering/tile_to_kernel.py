"""tile -> kernel: the schedule materialized as thread ids, guards, shared buffers, barriers and
shuffles (Kernel IR: `kernel` + `scf` + `arith` + `memref`).

    tile.for %a = 0 to 32 bind(block.x) { B }    ->  %a = kernel.block_id x ; B
    tile.for %a = 0 to 16 bind(thread.x) { B }   ->  %t = kernel.thread_id x
      (block(32, 1, 1))                              scf.if (%t < 16) { B }
    tile.for %k = %t to 2048 step 256 bind(serial) iter(...)  ->  scf.for %k = %t to %c2048 step %c256 iter_args(...)
    loop.load %x[%i, %j] map (d0, d1) -> (d1, d0 floordiv 4)  ->  arith index math ; memref.load
    tile.stage ...       ->  kernel.shared ; a copy loop strided over the block's threads
                             (or kernel.cp_async + commit + wait) ; kernel.barrier
    tile.combine add %p  ->  kernel.shuffle xor tree in each warp ; lane 0 of each warp writes a
                             kernel.shared slot ; kernel.barrier ; every thread adds the slots up
    tile.launch @k(...)  ->  kernel.launch @k(...)

Barriers are reached by every thread of the block: the tile verifier keeps `tile.stage` out of
thread-bound loops and puts `tile.combine` only in thread loops that cover the whole block, so
no barrier ends up under a thread guard. A `loop.store` outside every thread-bound loop of a
multi-thread block is done by thread 0 only. A stage inside a loop waits (a barrier) before
overwriting its buffer, unless it has several (`buffers(n)`: iteration t fills buffer t mod n;
with cp.async the copies of the next n - 1 iterations are in flight, lower_prefetched_stage).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import (
    AnyFloat,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    NoneAttr,
    UnitAttr,
)
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
    AffineMap,
)
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from deplo import hardware as hw
from deplo import origin
from deplo.analysis.index import (
    AFFINE_OPS,
    known_multiple,
    may_overhang,
    stage_vector,
    value_bounds,
)
from deplo.analysis.nest import repeating_loops
from deplo.dialects import kernel, loop, tile
from deplo.dialects.loop import trip_count
from deplo.lowering.legality import ConversionError, check_converted
from deplo.lowering.scalar_ops import extreme_op

INDEX = IndexType()
AXIS = (kernel.Dim.X, kernel.Dim.Y, kernel.Dim.Z)
COMBINE = {  # (float op, integer op) per combine kind
    tile.CombineKind.ADD: (arith.AddfOp, arith.AddiOp),
    tile.CombineKind.MUL: (arith.MulfOp, arith.MuliOp),
}


class _KernelLowering:
    """Builds one kernel.func from one tile.kernel, op by op, with a map old value -> new value."""

    def __init__(self, k: tile.KernelOp, slots: list[int] | None = None):
        self.k = k
        self.slots = [0] if slots is None else slots  # the program's next free arrival counter
        self.arrivals: dict[tuple[SSAValue, SSAValue], SSAValue] = {}
        self.grid, self.block = k.grid_dims, k.block_dims
        self.threads = math.prod(self.block)
        self.func = kernel.FuncOp(k.sym_name.data, [a.type for a in k.args], self.grid, self.block)
        origin.set_kernel(self.func, origin.of_op(k))
        self.vmap: dict[SSAValue, SSAValue] = dict(zip(k.args, self.func.args))
        for old, new in zip(k.args, self.func.args):
            new.name_hint = old.name_hint
        self.staged: dict[SSAValue, tuple[SSAValue, list[SSAValue]]] = {}
        self.cache: dict[object, SSAValue] = {}
        self.prelude_end: Operation | None = None
        self.b = Builder(InsertPoint.at_end(self.func.body.block))
        self.in_thread_loop = 0

    def run(self) -> kernel.FuncOp:
        self.lower_ops(self.k.body.block)
        return self.func

    # --- helpers -------------------------------------------------------------------------
    def emit(self, op: Operation) -> SSAValue:
        self.b.insert(op)
        return op.results[0] if op.results else None  # type: ignore[return-value]

    def prelude(self, key: object, make) -> SSAValue:
        """A value computed once at the top of the kernel (constants, ids)."""
        if key not in self.cache:
            op: Operation = make()
            block = self.func.body.block
            where = (
                InsertPoint.after(self.prelude_end)
                if self.prelude_end
                else InsertPoint.at_start(block)
            )
            Builder(where).insert(op)
            self.prelude_end = op
            self.cache[key] = op.results[0]
        return self.cache[key]

    def const(self, n: int) -> SSAValue:
        v = self.prelude(("c", n), lambda: arith.ConstantOp(IntegerAttr(n, INDEX)))
        v.name_hint = f"c{n}" if n >= 0 else f"cm{-n}"
        return v

    def thread_id(self, axis: int) -> SSAValue:
        if self.block[axis] == 1:
            return self.const(0)
        v = self.prelude(("tid", axis), lambda: kernel.ThreadIdOp(AXIS[axis]))
        v.name_hint = "tid_" + AXIS[axis].value
        return v

    def block_id(self, axis: int) -> SSAValue:
        v = self.prelude(("bid", axis), lambda: kernel.BlockIdOp(AXIS[axis]))
        v.name_hint = "bid_" + AXIS[axis].value
        return v

    def linear_tid(self) -> SSAValue:
        """tid.x + bx * (tid.y + by * tid.z), computed once at the top of the kernel."""
        bx, by, bz = self.block
        if by == bz == 1:
            return self.thread_id(0)
        row = self.prelude("bx*yz", lambda: arith.MuliOp(self.const(bx), self.yz()))
        lt = self.prelude("lt", lambda: arith.AddiOp(self.thread_id(0), row))
        lt.name_hint = "lt"
        return lt

    def yz(self) -> SSAValue:
        """tid.y + by * tid.z: which row of x threads this thread is in."""
        if self.block[2] == 1:
            return self.thread_id(1)
        z = self.prelude(
            "by*tz", lambda: arith.MuliOp(self.const(self.block[1]), self.thread_id(2))
        )
        return self.prelude("yz", lambda: arith.AddiOp(self.thread_id(1), z))

    def add(self, a: SSAValue, b: SSAValue) -> SSAValue:
        if _is_const(b, 0):
            return a
        if _is_const(a, 0):
            return b
        return self.emit(arith.AddiOp(a, b))

    def mul(self, a: SSAValue, b: SSAValue) -> SSAValue:
        if _is_const(b, 1):
            return a
        if _is_const(a, 1):
            return b
        if _is_const(a, 0) or _is_const(b, 0):
            return self.const(0)
        return self.emit(arith.MuliOp(a, b))

    def affine(self, expr: AffineExpr, dims: list[SSAValue]) -> SSAValue:
        if isinstance(expr, AffineDimExpr):
            return dims[expr.position]
        if isinstance(expr, AffineConstantExpr):
            return self.const(expr.value)
        assert isinstance(expr, AffineBinaryOpExpr), f"unsupported affine expression {expr}"
        lhs, rhs = self.affine(expr.lhs, dims), self.affine(expr.rhs, dims)
        if expr.kind == AffineBinaryOpKind.Add:
            return self.add(lhs, rhs)
        if expr.kind == AffineBinaryOpKind.Mul:
            return self.mul(lhs, rhs)
        return self.emit(AFFINE_OPS[expr.kind](lhs, rhs))

    def coords(self, amap: AffineMap, indices) -> list[SSAValue]:
        dims = [self.vmap[i] for i in indices]
        return [self.affine(r, dims) for r in amap.results]

    def nested(self, block: Block):
        """Lower into `block` (then come back)."""
        return _Nested(self, block)

    def guarded(self, cond: SSAValue, body) -> None:
        """scf.if cond { body() }"""
        then = Block()
        self.emit(scf.IfOp(cond, [], Region(then)))
        with self.nested(then):
            body()
            self.emit(scf.YieldOp())

    def combine(self, kind: tile.CombineKind, a: SSAValue, b: SSAValue) -> SSAValue:
        if kind in (tile.CombineKind.MAX, tile.CombineKind.MIN):
            return self.emit(extreme_op(kind.value, a.type)(a, b))
        floating = isinstance(a.type, AnyFloat)
        return self.emit(COMBINE[kind][0 if floating else 1](a, b))

    # --- ops -----------------------------------------------------------------------------
    def lower_ops(self, block: Block) -> None:
        for op in block.ops:
            self.lower(op)

    def lower(self, op: Operation) -> None:
        if isinstance(op, tile.ForOp):
            return self.lower_for(op)
        if isinstance(op, tile.YieldOp):
            self.emit(scf.YieldOp(*(self.vmap[v] for v in op.values)))
            return
        if isinstance(op, tile.StageOp):
            return self.lower_stage(op)
        if isinstance(op, tile.GatherOp):
            return  # (its stages compute its elements; issue_copy)
        if isinstance(op, tile.CombineOp):
            return self.lower_combine(op)
        if isinstance(op, tile.SplitLastOp):
            return self.lower_split_last(op)
        if isinstance(op, loop.LoadOp):
            return self.lower_load(op)
        if isinstance(op, loop.StoreOp):
            return self.lower_store(op)
        if isinstance(op, loop.PrivateOp):  # per-thread storage: a local array
            t = op.result.type
            self.vmap[op.result] = self.emit(memref.AllocaOp.get(t.element_type, shape=t.get_shape()))
            self.vmap[op.result].name_hint = op.result.name_hint
            return
        if isinstance(op, scf.IfOp):
            return self.lower_if(op)
        if isinstance(op, tile.FragmentLoadOp):
            return self.lower_fragment_load(op)
        if isinstance(op, tile.MmaOp):
            new = self.emit(kernel.MmaOp(op.type, [self.vmap[a] for a in op.args])).owner
            self.vmap.update(zip(op.res, new.results))
            return
        if isinstance(op, tile.PackHalvesOp):
            self.vmap[op.result] = self.emit(kernel.PackHalvesOp(self.vmap[op.lo],
                                                                 self.vmap[op.hi]))
            return
        if op.regions or op.dialect_name() in ("tile", "loop", "kernel"):
            raise ConversionError(
                f"tile-to-kernel: cannot convert '{op.name}' inside a tile.kernel"
            )
        self.b.insert(op.clone(value_mapper=self.vmap))

    def lower_split_last(self, op: tile.SplitLastOp) -> None:
        """Splits a block walks itself (a serial loop) end with the last one: `split == n - 1`.
        Splits on block.z arrive at a counter per (block.x, block.y); the copies of a register
        tile share the first arrival (all their partials are stored before it)."""
        key = (op.partials, op.split)
        owner = op.split.owner
        on_z = isinstance(owner, Block) and isinstance(lp := owner.parent_op(), tile.ForOp) \
            and lp.binding == tile.Bind.BLOCK_Z
        if not on_z:
            last = self.emit(arith.CmpiOp(self.vmap[op.split], self.const(op.splits.data - 1),
                                          "eq"))
            last.name_hint = "last"
            self.vmap[op.result] = last
            return
        parent = op.parent_op()
        while isinstance(parent, tile.ForOp) and parent.iv is not op.split:
            if parent.binding in (tile.Bind.SERIAL, tile.Bind.UNROLL) and parent.extent != 1:
                raise ConversionError(
                    f"tile-to-kernel: kernel @{self.k.sym_name.data}: tile.split_last counts "
                    "one arrival a block, but a serial loop repeats it: map the rows and "
                    "columns to threads first (tile-map-2d or tile-tensor-core)")
            parent = parent.parent_op()
        if key not in self.arrivals:
            gx, gy, _ = self.grid
            tiles = gx * gy
            base = self.slots[0]
            self.slots[0] += tiles
            if self.slots[0] > kernel.ARRIVAL_SLOTS:
                raise ConversionError(f"tile-to-kernel: kernel @{self.k.sym_name.data}: more "
                                      f"than {kernel.ARRIVAL_SLOTS} split-K arrival counters")
            slot = self.add(self.const(base), self.block_id(0))
            slot = self.add(slot, self.mul(self.const(gx), self.block_id(1)))
            slot.name_hint = "slot"
            last = self.emit(kernel.ArriveLastOp(slot, op.splits.data))
            last.name_hint = "last"
            self.arrivals[key] = last
        self.vmap[op.result] = self.arrivals[key]

    def lower_if(self, op: scf.IfOp) -> None:
        """A guard of the schedule (`scf.if %in { loop.store ... }`): its regions lowered in place."""
        regions = []
        for old in (op.true_region, op.false_region):
            region = Region([Block()] if old.blocks else [])
            if old.blocks:
                with self.nested(region.block):
                    self.lower_ops(old.block)
            regions.append(region)
        new = self.emit(scf.IfOp(self.vmap[op.cond], op.result_types, *regions))
        for old_res, res in zip(op.results, new.owner.results if new else []):
            self.vmap[old_res] = res

    def lower_fragment_load(self, op: tile.FragmentLoadOp) -> None:
        """An `ldmatrix` where the tile is in shared memory with 16-byte aligned rows (each lane
        addresses one row of an 8 x 8 matrix), else two loads per register packed with
        kernel.pack_halves, masked (zero past the end of the buffer) only in a dim the tile may
        leave (analysis.value_bounds). g = lane / 4, t = lane % 4."""
        kind = op.kind.data
        if op.source in self.staged:
            buf, prefix = self.staged[op.source]
        else:
            buf, prefix = self.global_buffer(op.source), []
        t = op.source.type
        assert isinstance(t, MemRefType)
        rows_n, cols_n = t.get_shape()[-2:]
        lead = [self.vmap[i] for i in op.indices[:-2]]
        row0, col0 = (self.vmap[i] for i in op.indices[-2:])
        lane = self.vmap[op.lane]
        K = tile.FragmentKind

        def at(v: SSAValue, k: int) -> SSAValue:
            return self.add(v, self.const(k)) if k else v

        def lane_div(d: int) -> SSAValue:
            return self.emit(arith.DivSIOp(lane, self.const(d)))

        def lane_rem(d: int) -> SSAValue:
            return self.emit(arith.RemSIOp(lane, self.const(d)))

        aligned = (
            op.source in self.staged
            and (cols_n * 2) % 16 == 0
            and known_multiple(op.indices[-1]) % 8 == 0
        )
        if aligned:
            if kind is K.A:  # x4: rows 0..15 of columns 0..7 (lanes 0..15), then 8..15
                r, c = at(row0, 0), at(col0, 0)
                r = self.add(r, lane_rem(16))
                c = self.add(c, self.mul(lane_div(16), self.const(8)))
            elif kind is K.A_KM:  # x4 trans: matrix q = lane / 8 is (m 8 (q % 2), k 8 (q / 2))
                q = lane_div(8)
                r = self.add(row0, self.add(lane_rem(8), self.mul(lane_div(16), self.const(8))))
                c = self.add(col0, self.mul(self.emit(arith.RemSIOp(q, self.const(2))),
                                            self.const(8)))
            elif kind is K.B_KN:  # x2 trans: rows k 0..15 (lanes 0..15)
                r, c = self.add(row0, lane_rem(16)), col0
            else:  # x2: rows n 0..7 of k 0..7 (lanes 0..7), then of k 8..15 (lanes 8..15)
                r = self.add(row0, lane_rem(8))
                half = self.emit(arith.RemSIOp(lane_div(8), self.const(2)))
                c = self.add(col0, self.mul(half, self.const(8)))
            new = self.emit(
                kernel.LdmatrixOp(buf, [*prefix, *lead, r, c], kind.registers, kind.transposed)
            ).owner
            self.vmap.update(zip(op.res, new.results))
            return
        g, tt = lane_div(4), lane_rem(4)
        t2 = self.mul(tt, self.const(2))
        # the fragment's rows and columns past row0 and col0 (A, A_KM: 16 x 16, B_KN: k 16 x n
        # 8, B_NK: n 8 x k 16); a dim the fragment provably stays inside needs no mask
        row_span, col_span = (16, 8) if kind is K.B_KN else (8, 16) if kind is K.B_NK else (16, 16)
        guard = [not _inside(op.indices[-2], row_span, rows_n),
                 not _inside(op.indices[-1], col_span, cols_n)]
        zero = self.emit(arith.ConstantOp(FloatAttr(0.0, t.element_type))) if any(guard) else None

        def element(r: SSAValue, c: SSAValue) -> tuple[SSAValue, SSAValue | None]:
            """The element's load and, past a dim it may leave, whether it is inside."""
            checks, at_ = [], []
            for v, n, guarded in ((r, rows_n, guard[0]), (c, cols_n, guard[1])):
                if guarded:
                    checks.append(self.emit(arith.CmpiOp(v, self.const(n), "ult")))
                    v = self.emit(arith.MinSIOp(v, self.const(n - 1)))
                at_.append(v)
            ok = None if not checks else checks[0] if len(checks) == 1 else \
                self.emit(arith.AndIOp(*checks))
            return self.emit(memref.LoadOp.get(buf, [*prefix, *lead, *at_])), ok

        pairs = []
        for j in range(kind.registers):
            if kind is K.A:  # (g + 8 (j % 2), 2t + 8 (j / 2)) and the next column
                r, c = self.add(row0, at(g, 8 * (j % 2))), self.add(col0, at(t2, 8 * (j // 2)))
                pairs.append((element(r, c), element(r, at(c, 1))))
            elif kind is K.A_KM:  # the same (m, k) stored [k][m]: and the next row
                r, c = self.add(row0, at(t2, 8 * (j // 2))), self.add(col0, at(g, 8 * (j % 2)))
                pairs.append((element(r, c), element(at(r, 1), c)))
            elif kind is K.B_KN:  # (k = 2t + 8j, n = g) and the next k
                r, c = self.add(row0, at(t2, 8 * j)), self.add(col0, g)
                pairs.append((element(r, c), element(at(r, 1), c)))
            else:  # (n = g, k = 2t + 8j) and the next k
                r, c = self.add(row0, g), self.add(col0, at(t2, 8 * j))
                pairs.append((element(r, c), element(r, at(c, 1))))
        # every load is issued before the first use waits for one; unmasked, kernel-vectorize
        # pairs a register's two halves into one 32-bit load
        regs = [self.emit(kernel.PackHalvesOp(*(
            v if ok is None else self.emit(arith.SelectOp(ok, v, zero)) for v, ok in pair)))
            for pair in pairs]
        self.vmap.update(zip(op.res, regs))

    def lower_for(self, lp: tile.ForOp) -> None:
        bind = lp.binding
        if lp.extent == 1:  # one iteration: no loop
            self.vmap[lp.iv] = self.const(lp.static_lb)
            self.vmap.update(zip(lp.accs, (self.vmap[v] for v in lp.inits)))
            for op in lp.body.block.ops:
                if not isinstance(op, tile.YieldOp):
                    self.lower(op)
            yielded = lp.body.block.last_op
            self.vmap.update(zip(lp.res, (self.vmap[v] for v in yielded.operands)))
            return
        if not (bind.is_block or bind.is_thread):
            lb = self.vmap[lp.dyn_lb] if lp.dyn_lb is not None else self.const(lp.static_lb)
            inits = [self.vmap[v] for v in lp.inits]
            body = Block(arg_types=[INDEX, *(v.type for v in inits)])
            new = scf.ForOp(lb, self.upper_bound(lp), self.const(lp.step.data), inits, Region(body))
            if bind == tile.Bind.UNROLL:
                new.attributes["unroll"] = UnitAttr()  # `#pragma unroll`
            if repeating_loops(lp) and any(isinstance(o, tile.StageOp) and o.buffers.data > 1
                                           for o in lp.body.block.ops):
                # run again by a loop around it: its first copies (the prologue's, or the first
                # iteration's into buffer 0) must wait for every thread's last read of the run
                # before, in whichever buffer it ended
                self.emit(kernel.BarrierOp())
            self.prefetch_prologue(lp)
            self.emit(new)
            for old, arg in zip(lp.body.block.args, body.args):
                self.vmap[old] = arg
                arg.name_hint = old.name_hint
            with self.nested(body):
                self.lower_ops(lp.body.block)
            for old, res in zip(lp.res, new.results):
                self.vmap[old] = res
                res.name_hint = old.name_hint
            return
        axis = bind.axis
        ident = self.block_id(axis) if bind.is_block else self.thread_id(axis)
        dims = self.grid if bind.is_block else self.block
        lb, step = lp.static_lb or 0, lp.step.data
        iv = self.add(self.mul(ident, self.const(step)), self.const(lb))
        self.vmap[lp.iv] = iv
        if iv is not ident and lp.iv.name_hint:
            iv.name_hint = lp.iv.name_hint
        extent = lp.extent or 0
        self.in_thread_loop += bind.is_thread

        def body():
            for op in lp.body.block.ops:
                if not isinstance(op, tile.YieldOp):
                    self.lower(op)

        if extent < dims[axis]:
            cond = self.emit(arith.CmpiOp(ident, self.const(extent), "ult"))
            self.guarded(cond, body)
        else:
            body()
        self.in_thread_loop -= bind.is_thread

    def lower_load(self, op: loop.LoadOp) -> None:
        if op.buffer in self.staged:
            buf, prefix = self.staged[op.buffer]
        else:
            buf, prefix = self.global_buffer(op.buffer), []
        idx = prefix + self.coords(op.access_map(), op.indices)
        new = self.emit(memref.LoadOp.get(buf, idx))
        new.name_hint = op.result.name_hint
        self.vmap[op.result] = new

    def global_buffer(self, v: SSAValue) -> SSAValue:
        if isinstance(v.owner, tile.GatherOp):
            raise ConversionError("tile-to-kernel: a tile.gather is read only through its "
                                  "stages (tile-stage-chunks; the plan's stage = true)")
        return self.vmap[v]

    def gathered(self, g: tile.GatherOp, idx: list[SSAValue]) -> SSAValue:
        """A `tile.gather`'s element at `idx`: its region's ops, lowered with its arguments
        bound to `idx`."""
        saved = dict(self.vmap)
        self.vmap.update(zip(g.body.block.args, idx))
        for o in g.body.block.ops:
            if isinstance(o, tile.YieldOp):
                value = self.vmap[o.values[0]]
                break
            self.lower(o)
        self.vmap = saved
        return value

    def lower_store(self, op: loop.StoreOp) -> None:
        def store():
            idx = self.coords(op.access_map(), op.indices)
            self.emit(memref.StoreOp.get(self.vmap[op.value], self.vmap[op.buffer], idx))

        if self.in_thread_loop or self.threads == 1 or isinstance(op.buffer.owner, loop.PrivateOp):
            return store()  # (every thread keeps its own copy of a loop.private buffer)
        cond = self.emit(arith.CmpiOp(self.linear_tid(), self.const(0), "eq"))
        self.guarded(cond, store)

    def stage_buffer(self, op: tile.StageOp) -> SSAValue:
        rtype = op.result.type
        assert isinstance(rtype, MemRefType)
        shape = list(rtype.get_shape())
        n = op.buffers.data
        stype = MemRefType(
            rtype.element_type, [n, *shape] if n > 1 else shape, NoneAttr(), tile.SHARED_SPACE
        )
        buf = self.prelude(("stage", op), lambda: kernel.SharedOp(stype))
        buf.name_hint = op.result.name_hint
        return buf

    def lower_stage(self, op: tile.StageOp) -> None:
        buf = self.stage_buffer(op)
        loops = repeating_loops(op)
        if _prefetched(op):
            return self.lower_prefetched_stage(op, buf, loops[0])
        prefix: list[SSAValue] = []
        if op.buffers.data > 1:
            prefix = [self.slot(loops[0], op.buffers.data) if loops else self.const(0)]
        elif loops and not isinstance(op.prev_op, tile.StageOp):
            self.emit(kernel.BarrierOp())  # the previous iteration may still read the buffer
        self.staged[op.result] = (buf, prefix)
        offsets = [
            self.const(o) if isinstance(o, int) else self.vmap[o] for o in op.mixed_offsets()
        ]
        if self.issue_copy(op, buf, prefix, offsets):
            self.emit(kernel.CpAsyncCommitOp())
            self.emit(kernel.CpAsyncWaitOp(0))
        if not isinstance(op.next_op, tile.StageOp):  # consecutive stages share one barrier
            self.emit(kernel.BarrierOp())

    def lower_prefetched_stage(self, op: tile.StageOp, buf: SSAValue, lp: tile.ForOp) -> None:
        """A cp.async stage of loop `lp` with n buffers, a pipeline n - 1 iterations deep:
        iteration t reads buffer t mod n, which the prologue (see prefetch_prologue) or
        iteration t - n + 1 filled. The first such stage of the body waits for every stage's
        refill (barrier: t - 1 read buffer (t + n - 1) mod n), issues iteration t + n - 1's
        copies into it (unless past the last), commits (a group every iteration, empty or
        not), waits for all but the n - 1 newest groups (t's is then complete), and waits at
        a barrier for the copies of every thread."""
        n = op.buffers.data
        self.staged[op.result] = (buf, [self.slot(lp, n)])
        if isinstance(op.prev_op, tile.StageOp) and _prefetched(op.prev_op):
            return
        self.emit(kernel.BarrierOp())
        ahead = self.emit(arith.AddiOp(self.vmap[lp.iv], self.const((n - 1) * lp.step.data)))
        more = self.emit(arith.CmpiOp(ahead, self.upper_bound(lp), "slt"))
        then = Block()
        self.emit(scf.IfOp(more, [], Region(then)))
        with self.nested(then):
            self.issue_iteration(lp, ahead)
            self.emit(scf.YieldOp())
        self.emit(kernel.CpAsyncCommitOp())
        self.emit(kernel.CpAsyncWaitOp(n - 1))
        self.emit(kernel.BarrierOp())

    def upper_bound(self, lp: tile.ForOp) -> SSAValue:
        if lp.dyn_ub is None:
            return self.const(lp.ub.data)
        return self.emit(arith.MinSIOp(self.vmap[lp.dyn_ub], self.const(lp.ub.data)))

    def prefetch_prologue(self, lp: tile.ForOp) -> None:
        """Before a loop with prefetched stages of n buffers: the copies of its first n - 1
        iterations, a group each (empty past the loop's end, so that every wait in the loop
        counts the same groups)."""
        stages = [o for o in lp.body.block.ops if isinstance(o, tile.StageOp) and _prefetched(o)]
        if not stages:
            return
        for t in range(stages[0].buffers.data - 1):
            at = lp.static_lb + t * lp.step.data
            if at < lp.ub.data and lp.dyn_ub is None:
                self.issue_iteration(lp, self.const(at))
            elif at < lp.ub.data:  # a dynamic bound (a causal key loop): copy what it runs
                then = Block()
                self.emit(scf.IfOp(self.emit(arith.CmpiOp(self.const(at), self.upper_bound(lp),
                                                          "slt")), [], Region(then)))
                with self.nested(then):
                    self.issue_iteration(lp, self.const(at))
                    self.emit(scf.YieldOp())
            self.emit(kernel.CpAsyncCommitOp())

    def issue_iteration(self, lp: tile.ForOp, iv: SSAValue) -> None:
        """Issue the copies of every prefetched stage of `lp` for the iteration at `iv`: their
        offsets are recomputed from `iv` (the scalar ops of the body they depend on)."""
        saved = dict(self.vmap)
        self.vmap[lp.iv] = iv
        body = lp.body.block
        needed = set().union(*(_offset_ops(o) or () for o in body.ops
                               if isinstance(o, tile.StageOp) and _prefetched(o)))
        for o in body.ops:
            if isinstance(o, tile.StageOp) and _prefetched(o):
                offsets = [
                    self.const(x) if isinstance(x, int) else self.vmap[x]
                    for x in o.mixed_offsets()
                ]
                at = [self.slot(lp, o.buffers.data, iv)]
                self.issue_copy(o, self.stage_buffer(o), at, offsets)
            elif o in needed:
                self.lower(o)
        self.vmap = saved

    def issue_copy(
        self, op: tile.StageOp, buf: SSAValue, prefix: list[SSAValue], offsets: list[SSAValue]
    ) -> int:
        """The block's copy of the slab into `buf` (its buffer `prefix`): a loop strided over the
        threads, in pieces of 16 bytes where aligned; cp.async pieces when `copy(cp_async)`
        (returns their element count, 0 for loads and stores). Pieces past the end of the
        source (a dynamic offset) are zero-filled instead."""
        rtype = op.result.type
        assert isinstance(rtype, MemRefType)
        gather = op.source.owner if isinstance(op.source.owner, tile.GatherOp) else None
        src = self.vmap[op.source] if gather is None else None
        sizes = op.size_list
        vec = self.cp_async_vector(op) if op.copy.data == tile.CopyKind.CP_ASYNC else 0
        # sync: 16-byte pieces when aligned (loaded whole; a transposed stage stores them
        # element by element); a gather's elements one by one, each computed
        step = 1 if gather else vec or stage_vector(op, 16, source_only=op.is_transposed) or 1
        chunk_sizes = sizes[:-1] + [sizes[-1] // step]
        total = math.prod(chunk_sizes)
        body = Block(arg_types=[INDEX])
        self.emit(
            scf.ForOp(
                self.linear_tid(), self.const(total), self.const(self.threads), [], Region(body)
            )
        )
        with self.nested(body):
            i = body.args[0]
            i.name_hint = "i"
            coords: list[SSAValue] = [self.const(0)] * len(sizes)
            digits = copy_order(op, chunk_sizes, step)
            for n in reversed(range(len(digits))):  # the slowest digit first
                d, extent, scale = digits[n]
                stride = math.prod(e for _, e, _ in digits[:n])
                c = i if stride == 1 else self.emit(arith.DivSIOp(i, self.const(stride)))
                if n < len(digits) - 1:
                    c = self.emit(arith.RemSIOp(c, self.const(extent)))
                c = self.mul(c, self.const(scale)) if scale > 1 else c
                coords[d] = c if _is_const(coords[d], 0) else self.add(coords[d], c)
            if step > 1:
                coords[-1] = self.mul(coords[-1], self.const(step))
            gidx = [self.add(o, c) for o, c in zip(offsets, coords)]
            overhang = may_overhang(op)
            if op.is_wrapped:  # (the coordinates it may take past an end, mod the dim)
                gidx = [self.wrap(g, n) if over else g
                        for g, n, over in zip(gidx, op.source.type.get_shape(), overhang)]
            kept = [c for c, s in zip(coords, sizes) if s != 1] or [self.const(0)]
            pieces: dict[tuple[SSAValue, int], SSAValue] = {}

            def step_in(idx: list[SSAValue], k: int) -> list[SSAValue]:
                """The coordinates of element k of the piece at `idx` (innermost + k)."""
                if (idx[-1], k) not in pieces:
                    pieces[idx[-1], k] = self.add(idx[-1], self.const(k))
                return idx[:-1] + [pieces[idx[-1], k]]

            def piece(idx: list[SSAValue], k: int) -> list[SSAValue]:
                if idx is gidx:
                    return step_in(gidx, k)
                return prefix + op.smem_indices(step_in(kept, k))

            sidx = prefix + op.smem_indices(kept)

            def copy() -> None:
                pieces.clear()  # (the indices of one branch are not defined in the other)
                if vec:
                    nbytes = vec * tile.element_bytes(rtype.element_type)
                    self.emit(kernel.CpAsyncOp(src, gidx, buf, sidx, nbytes))
                    return
                assert not (vec and gather), "tile-cp-async leaves a gather's stage sync"
                for k in range(step):  # a piece of `step` elements (kernel-vectorize merges it)
                    v = self.emit(memref.LoadOp.get(src, piece(gidx, k))) if gather is None \
                        else self.gathered(gather, piece(gidx, k))
                    self.emit(memref.StoreOp.get(v, buf, piece(kept, k)))

            def zero() -> None:  # the part of a slab past the end of the source reads as zero
                t = rtype.element_type
                z = FloatAttr(0.0, t) if isinstance(t, AnyFloat) else IntegerAttr(0, t)
                zv = self.emit(arith.ConstantOp(z))
                pieces.clear()
                for k in range(step):
                    self.emit(memref.StoreOp.get(zv, buf, piece(kept, k)))

            src_shape = op.source.type.get_shape()
            checks = [
                self.emit(arith.CmpiOp(g, self.const(n), "ult"))
                for g, n, over in zip(gidx, src_shape, overhang)
                if over and not op.is_wrapped
            ]
            if checks:
                cond = checks[0]
                for c in checks[1:]:
                    cond = self.emit(arith.AndIOp(cond, c))
                then, other = Block(), Block()
                self.emit(scf.IfOp(cond, [], Region(then), Region(other)))
                for blk, fill in ((then, copy), (other, zero)):
                    with self.nested(blk):
                        fill()
                        self.emit(scf.YieldOp())
            else:
                copy()
            self.emit(scf.YieldOp())
        return vec

    def wrap(self, g: SSAValue, n: int) -> SSAValue:
        """(g + n) mod n: a wrapped stage's source coordinate, g in [-n, 2n)."""
        return self.emit(arith.RemSIOp(self.add(g, self.const(n)), self.const(n)))

    def cp_async_vector(self, op: tile.StageOp) -> int:
        """Elements per cp.async (4, 8 or 16 bytes, aligned on both sides), 0 for a plain copy."""
        return next((v for nbytes in (16, 4) if (v := stage_vector(op, nbytes))), 0)

    def slot(self, lp: tile.ForOp, n: int, iv: SSAValue | None = None) -> SSAValue:
        """((iv - lb) / step) % n of a serial loop: which of a stage's n buffers it fills."""
        iv = self.vmap[lp.iv] if iv is None else iv
        lb = self.vmap[lp.dyn_lb] if lp.dyn_lb is not None else self.const(lp.static_lb)
        k = self.emit(arith.SubiOp(iv, lb))
        if lp.step.data != 1:
            k = self.emit(arith.DivSIOp(k, self.const(lp.step.data)))
        return self.emit(arith.RemSIOp(k, self.const(n)))

    def shuffle_xor(self, v: SSAValue, off: int, width: int, mask: int | None) -> SSAValue:
        """v from lane ^ off; an integer narrower than 32 bits (uint8 carried in i16, int8)
        crosses as i32, as shfl.sync moves 32-bit registers."""
        t = v.type
        narrow = isinstance(t, IntegerType) and t.width.data < 32
        if narrow:
            v = self.emit(arith.ExtSIOp(v, IntegerType(32)))
        other = self.emit(kernel.ShuffleOp(kernel.ShuffleMode.XOR, v, off, width, mask))
        return self.emit(arith.TruncIOp(other, t)) if narrow else other

    def lower_combine(self, op: tile.CombineOp) -> None:
        kind = op.kind.data
        v = self.vmap[op.value]
        bx, by, bz = self.block
        group = op.lanes.value.data if op.lanes is not None else None  # within groups of lanes
        width = min(bx, hw.WARP, group or hw.WARP)
        lanes = bx * by * bz  # a block smaller than a warp: only its lanes exist
        mask = (1 << lanes) - 1 if lanes < hw.WARP else None
        off, stride = width // 2, op.stride.value.data if op.stride is not None else 1
        while off >= stride:
            other = self.shuffle_xor(v, off, width, mask)
            v = self.combine(kind, v, other)
            off //= 2
        if bx > hw.WARP and group is None:  # (a strided combine stays in a warp: verifier)
            warps = bx // hw.WARP
            stype = MemRefType(v.type, [warps * by * bz], NoneAttr(), tile.SHARED_SPACE)
            buf = self.prelude(("combine", op), lambda: kernel.SharedOp(stype))
            buf.name_hint = "partials"
            lt = self.linear_tid()
            warp = self.emit(arith.DivSIOp(lt, self.const(hw.WARP)))
            lane = self.emit(arith.RemSIOp(lt, self.const(hw.WARP)))
            first = self.emit(arith.CmpiOp(lane, self.const(0), "eq"))
            self.guarded(first, lambda: self.emit(memref.StoreOp.get(v, buf, [warp])))
            self.emit(kernel.BarrierOp())
            base = self.const(0)
            if by * bz > 1:
                base = self.mul(self.yz(), self.const(warps))
            v = self.emit(memref.LoadOp.get(buf, [base]))
            for w in range(1, warps):
                other = self.emit(memref.LoadOp.get(buf, [self.add(base, self.const(w))]))
                v = self.combine(kind, v, other)
            if repeating_loops(op):
                self.emit(kernel.BarrierOp())  # the next iteration overwrites the partials
        v.name_hint = op.result.name_hint
        self.vmap[op.result] = v


class _Nested:
    def __init__(self, low: _KernelLowering, block: Block):
        self.low, self.block = low, block

    def __enter__(self):
        self.saved = self.low.b
        self.low.b = Builder(InsertPoint.at_end(self.block))

    def __exit__(self, *exc):
        self.low.b = self.saved


def copy_order(op: tile.StageOp, pieces: list[int], step: int) -> list[tuple[int, int, int]]:
    """How a block's threads enumerate the pieces of a slab: digits (dim, extent, scale) of the
    linear index, fastest first; dim d's piece is the sum of its digits times their scales.
    Row-major (the innermost dim fastest: neighbouring lanes, neighbouring addresses), except
    that a transposed stage walks one 32-byte sector of a row, then the next row: the lanes of
    a warp still read whole sectors, and write the shared columns of several rows at once, in
    different banks (a row-major walk writes down one shared column: a bank conflict per lane)."""
    dims = [d for d, n in enumerate(pieces) if n > 1]
    digits = [(d, pieces[d], 1) for d in reversed(dims)]
    if not op.is_transposed or len(dims) < 2:
        return digits
    inner, row = dims[-1], dims[-2]
    eb = tile.element_bytes(op.result.type.element_type)  # type: ignore[union-attr]
    per = math.gcd(max(1, 32 // (step * eb)), pieces[inner])
    if per == pieces[inner]:
        return digits
    return [(inner, per, 1), (row, pieces[row], 1), (inner, pieces[inner] // per, per),
            *digits[2:]]


def _prefetched(op: tile.StageOp) -> bool:
    """A cp.async stage of several buffers at the top level of a serial loop with a static
    lower bound (its upper one static, or the least of a static one and a value from outside:
    a causal key loop), whose offsets come from scalar ops of that body or from outside it, and
    whose loop's other such stages have as many buffers: its loop prefetches the copies of the
    iterations ahead (lower_prefetched_stage: one pipeline, one count of groups)."""
    lp = op.parent_op()
    if not (
        isinstance(lp, tile.ForOp)
        and op.copy.data == tile.CopyKind.CP_ASYNC
        and op.buffers.data > 1
        and all(o.buffers.data in (1, op.buffers.data) for o in lp.body.block.ops
                if isinstance(o, tile.StageOp) and o.copy.data == tile.CopyKind.CP_ASYNC)
        and lp.binding in (tile.Bind.SERIAL, tile.Bind.UNROLL)
        and lp.static_lb is not None
        and trip_count(lp.static_lb, lp.ub.data, lp.step.data) > 1
        and next((v for n in (16, 4) if (v := stage_vector(op, n))), 0)
    ):
        return False
    return _offset_ops(op) is not None


def _offset_ops(op: tile.StageOp) -> set[Operation] | None:
    """The ops of the loop body around `op` its offsets are computed by (what a prefetch
    recomputes for another iteration), or None where one is not a scalar arith op of that body
    or comes from a block nested in it."""
    body = op.parent_block()
    assert body is not None
    found: set[Operation] = set()
    todo = [o for o in op.mixed_offsets() if not isinstance(o, int)]
    while todo:
        owner = todo.pop().owner
        if isinstance(owner, Operation) and owner.parent_block() is body:
            if owner.dialect_name() != "arith" or owner.regions:
                return None
            if owner not in found:
                found.add(owner)
                todo.extend(owner.operands)
        elif isinstance(owner, Block) and owner is not body and body.is_ancestor(owner):
            return None
    return found


def _is_const(v: SSAValue, n: int) -> bool:
    op = v.owner
    return (
        isinstance(op, arith.ConstantOp)
        and isinstance(op.value, IntegerAttr)
        and op.value.value.data == n
    )


class LowerKernel(RewritePattern):
    """tile.kernel @k(...) grid(g) block(b) schedule [...] { ... } -> kernel.func @k(...) grid(g) block(b) { ... }"""

    def __init__(self):
        self.slots = [0]  # arrival counters handed out to the module's kernels so far

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.KernelOp, rewriter: PatternRewriter) -> None:
        rewriter.replace(op, _KernelLowering(op, self.slots).run())


class LowerLaunch(RewritePattern):
    """tile.launch @k(...) -> kernel.launch @k(...)"""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tile.LaunchOp, rewriter: PatternRewriter) -> None:
        rewriter.replace(op, kernel.LaunchOp(op.callee.root_reference.data, list(op.args)))


@dataclass(frozen=True)
class TileToKernelPass(ModulePass):
    """Lower every tile.kernel to a kernel.func and tile.launch to kernel.launch."""

    name = "tile-to-kernel"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier([LowerKernel(), LowerLaunch()], dce_enabled=False),
            apply_recursively=False,
        ).rewrite_module(op)
        check_converted(op, "tile", self.name)
        check_converted(op, "loop", self.name)


def _inside(start: SSAValue, span: int, n: int) -> bool:
    """Whether `start .. start + span - 1` lies in `0 .. n - 1` for every value `start` takes
    (a fragment whose tile rows divide the buffer's: its loads need no mask)."""
    bounds = value_bounds(start)
    return bounds is not None and bounds[0] >= 0 and bounds[1] + span <= n
