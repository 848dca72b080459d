"""What the loop passes that cut a kernel into several share (loop-split-reductions,
loop-chunk-scans, loop-split-nests): which kernels they may take, fresh names for the kernels
they add, the loops around a reduction, and slices of a loop's range."""

from __future__ import annotations

import math
from collections.abc import Callable

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import IndexType, ModuleOp
from xdsl.ir import Block, Operation, SSAValue, Use
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.rewriter import InsertPoint, Rewriter

from deplo.dialects import loop
from deplo.passes.symbols import fresh_symbol, symbol_names

INDEX = IndexType()


def fresh_name(kernel: loop.KernelOp, name: str) -> str:
    """`name`, or `name` with a number after it, that no symbol beside `kernel` has."""
    return fresh_symbol(symbol_names(kernel.parent_block()), name)


def launched_once(module: ModuleOp) -> list[tuple[loop.KernelOp, loop.LaunchOp]]:
    """The kernels launched exactly once, from a host function, with that launch: what the
    passes that cut a kernel into several (and rewrite its launch) may take."""
    kernels = {k.sym_name.data: k for k in module.walk() if isinstance(k, loop.KernelOp)}
    launches: dict[str, list[loop.LaunchOp]] = {}
    for launch in module.walk():
        if isinstance(launch, loop.LaunchOp):
            launches.setdefault(launch.callee.root_reference.data, []).append(launch)
    return [(kernel, launches[name][0]) for name, kernel in kernels.items()
            if len(launches.get(name, [])) == 1
            and isinstance(launches[name][0].parent_op(), func.FuncOp)]


def plain_free_path(op: Operation, kernel: loop.KernelOp) -> list[loop.ForOp] | None:
    """The loops around `op`, outermost first, when each is free and plain (0 to N by 1)."""
    path: list[loop.ForOp] = []
    while (parent := op.parent_op()) is not kernel:
        if not (isinstance(parent, loop.ForOp) and parent.kind.data == loop.LoopKind.FREE
                and parent.lb.data == 0 and parent.step.data == 1):
            return None
        path.insert(0, parent)
        op = parent
    return path


def clear_after(op: Operation) -> None:
    """Erase what follows `op` in its block (its terminator aside)."""
    for o in reversed(list(op.parent_block().ops)):
        if o is op:
            return
        if not isinstance(o, loop.YieldOp):
            Rewriter.erase_op(o, safe_erase=False)


def insert_at_end(block: Block, ops: list[Operation]) -> None:
    """`ops` at the end of `block`, before its terminator if it has one."""
    end = block.last_op
    Rewriter.insert_op(ops, InsertPoint.before(end) if isinstance(end, loop.YieldOp)
                       else InsertPoint.at_end(block))


def slice_indices(red: loop.ForOp, s: SSAValue | None, chunk: int, accesses_only: bool = False,
                  start: int = 0) -> None:
    """Each load and store of `red`'s iv reads `s * chunk + start + iv` instead (no `s`: `start +
    iv`, a tail past whole slices); an index taken as a value (argmax's) is that too, unless
    `accesses_only` (loop-chunk-scans: a comparison of positions within the chunk stays one)."""
    iv = red.iv

    def coordinate(dim) -> AffineExpr:
        at = dim(iv) if s is None else dim(s) * chunk + dim(iv)
        return at + start if start else at

    for access in list(dict.fromkeys(u.operation for u in iv.uses)):
        if accesses_only and not isinstance(access, loop.LoadOp | loop.StoreOp):
            continue
        if isinstance(access, arith.IndexCastOp):
            ops: list[Operation] = []
            at = iv
            if s is not None:
                size = arith.ConstantOp.from_int_and_width(chunk, INDEX)
                base = arith.MuliOp(s, size.result)
                ops += [size, base, add := arith.AddiOp(base.result, at)]
                at = add.result
            if start:
                first = arith.ConstantOp.from_int_and_width(start, INDEX)
                ops += [first, add := arith.AddiOp(at, first.result)]
                at = add.result
            Rewriter.insert_op(ops, InsertPoint.at_start(red.body.block))
            access.operands = [at]
            continue
        assert isinstance(access, loop.LoadOp | loop.StoreOp)
        old = list(access.indices)
        reindex(access, iv, old + ([s] if s is not None and s not in old else []), coordinate)


def reindex(access: loop.LoadOp | loop.StoreOp, iv: SSAValue, indices: list[SSAValue],
            coordinate: Callable) -> None:
    """`access` over `indices`, reading `coordinate(dim)` where it read `iv` (`dim(v)`: v's dim
    among the new indices): the rewrite each cut of a loop makes of the accesses it moves."""
    pos = {v: i for i, v in enumerate(indices)}

    def dim(v: SSAValue) -> AffineExpr:
        return AffineExpr.dimension(pos[v])

    exprs = [coordinate(dim) if v is iv else dim(v) for v in access.indices]
    results = tuple(r.replace_dims_and_symbols(exprs, []) for r in access.access_map().results)
    loop.reaccess(access, indices, AffineMap(len(indices), 0, results))


def index_use(u: Use) -> bool:
    """A use of a value as a load's or a store's index (not as a value)."""
    return isinstance(u.operation, loop.LoadOp) and u.index >= 1 \
        or isinstance(u.operation, loop.StoreOp) and u.index >= 2


def index_only(iv: SSAValue, but: Operation | None = None) -> bool:
    """`iv` is only an index of loads and stores (what slice_indices rewrites), `but` aside."""
    return all(u.operation is but or index_use(u) for u in iv.uses)


def _accesses(iv: SSAValue) -> list[loop.LoadOp | loop.StoreOp]:
    """The loads and stores indexed by `iv`, each once (`x[i, k, k]` uses it twice)."""
    ops = list(dict.fromkeys(u.operation for u in iv.uses))
    assert all(isinstance(o, loop.LoadOp | loop.StoreOp) for o in ops)
    return ops  # type: ignore[return-value]


def is_unit(lp: loop.ForOp) -> bool:
    """A free loop of one iteration whose iv only indexes loads and stores: keepdim's kept dim
    after a reduction, which inline_unit_loop removes."""
    return lp.kind.data == loop.LoopKind.FREE and lp.ub.data - lp.lb.data == 1 \
        and lp.step.data == 1 and index_only(lp.iv)


def inline_unit_loop(lp: loop.ForOp) -> None:
    """`lp`'s body in its place, each access reading the loop's one coordinate as a constant of
    its map (scf.for's single-iteration promotion, for our loops)."""
    for access in _accesses(lp.iv):
        reindex(access, lp.iv, [v for v in access.indices if v is not lp.iv],
                lambda dim: AffineExpr.constant(lp.lb.data))
    for op in list(lp.body.block.ops):
        if not isinstance(op, loop.YieldOp):
            op.detach()
            Rewriter.insert_op(op, InsertPoint.before(lp))
    Rewriter.erase_op(lp)


def perfect_free_nest(lp: loop.ForOp) -> list[loop.ForOp]:
    """`lp` and the free loops (0 to N by 1) each alone in the one before, outermost first."""
    nest = [lp]
    while True:
        ops = [o for o in nest[-1].body.block.ops if not isinstance(o, loop.YieldOp)]
        if len(ops) != 1 or not isinstance(inner := ops[0], loop.ForOp) \
                or inner.kind.data != loop.LoopKind.FREE or inner.lb.data or inner.step.data != 1:
            return nest
        nest.append(inner)


def flatten_free_nest(lp: loop.ForOp) -> loop.ForOp:
    """A perfect nest of free loops whose ivs only index loads and stores becomes one loop over
    their product, each access taking its coordinates apart (floordiv, mod): the row of a
    layer_norm over [64, 32, 32] is then one loop a slice can cut. Returns the loop."""
    nest = perfect_free_nest(lp)
    if len(nest) == 1:
        return lp
    extents = [n.ub.data for n in nest]
    flat = loop.ForOp(0, math.prod(extents), loop.LoopKind.FREE)
    flat.iv.name_hint = lp.iv.name_hint
    for k, n in enumerate(nest):
        inner, extent = math.prod(extents[k + 1:]), extents[k]

        def part(dim, inner=inner, extent=extent, outermost=not k) -> AffineExpr:
            e = dim(flat.iv) // inner if inner > 1 else dim(flat.iv)
            return e if outermost else e % extent

        for access in _accesses(n.iv):
            old = list(access.indices)
            reindex(access, n.iv, [v for v in old if v is not n.iv]
                    + ([flat.iv] if flat.iv not in old else []), part)
    for op in list(nest[-1].body.block.ops):
        op.detach()
        flat.body.block.add_op(op)
    Rewriter.replace_op(lp, flat)
    return flat
