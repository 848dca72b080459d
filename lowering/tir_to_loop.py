"""tir-to-loop: lift every tir op into its own loop nest (`loop.kernel`) and a host function.

    %s = tir.elementwise add(%x, %b) : tensor<16x64xf32>
  ->
    loop.kernel @add(%x: memref<16x64xf32>, %b: memref<16x64xf32>, %out: memref<16x64xf32>) {
      loop.for %a0 = 0 to 16 free { loop.for %a1 = 0 to 64 free {
        %0 = loop.load %x[%a0, %a1] ... ; %1 = loop.load %b[%a0, %a1] ...
        %2 = arith.addf %0, %1 : f32 ; loop.store %2, %out[%a0, %a1] ... } }
    }
    func.func @main(...) { %s = memref.alloc() ; loop.launch @add(%x, %b, %s) ; ... }

A reduction keeps its free dims as `free` loops and its reduced dims as nested `reduce` loops
carrying the accumulator. Each kernel writes one buffer (its last argument) at the identity map
of its free loops: `loop-fuse` relies on that shape to inline or hoist producers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import IndexType, IntegerType, MemRefType, ModuleOp, TensorType
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint
from xdsl.utils.exceptions import DiagnosticException

from deplo import origin
from deplo.dialects import loop, tir
from deplo.lowering.legality import check_converted
from deplo.lowering.scalar_ops import (
    ELEMENTWISE,
    REDUCE_COMBINE,
    arg_combine,
    cast,
    compare,
    const,
)


def memref_of(t: Attribute) -> MemRefType:
    assert isinstance(t, TensorType), t
    return MemRefType(t.element_type, t.get_shape())


@dataclass
class KernelBuilder:
    """Builds one loop.kernel: constants at the top, then the loop nest."""

    kernel: loop.KernelOp
    top: Builder

    @staticmethod
    def create(name: str, arg_types: Sequence[Attribute], arg_names: Sequence[str]):
        k = loop.KernelOp(name, list(arg_types))
        for arg, n in zip(k.args, arg_names):
            arg.name_hint = n
        return KernelBuilder(k, Builder(InsertPoint.at_end(k.body.block)))

    def const(self, value: float, t: Attribute) -> SSAValue:
        return const(self.top, value, t)

    def free_nest(self, shape: Sequence[int], body: Callable[[Builder, list[SSAValue]], None]):
        """A perfect nest of free loops over `shape`; body(builder, ivs) fills the innermost."""
        b, ivs = self.top, []
        for i, n in enumerate(shape):
            f = loop.ForOp(0, n, loop.LoopKind.FREE)
            f.iv.name_hint = f"a{i}"
            b.insert(f)
            ivs.append(f.iv)
            b = Builder(InsertPoint.at_end(f.body.block))
        body(b, ivs)
        if shape:  # close every loop with an empty yield
            for_op = ivs[-1].owner.parent_op() if ivs else None
            while isinstance(for_op, loop.ForOp):
                for_op.body.block.add_op(loop.YieldOp())
                for_op = for_op.parent_op()
                if not isinstance(for_op, loop.ForOp):
                    break


def _store_identity(b: Builder, value: SSAValue, out: SSAValue, ivs: list[SSAValue]) -> None:
    b.insert(loop.StoreOp(value, out, ivs))


def lower_elementwise(kb: KernelBuilder, op: tir.ElementwiseOp) -> None:
    *ins, out = kb.kernel.args

    def body(b: Builder, ivs: list[SSAValue]) -> None:
        xs = [b.insert(loop.LoadOp(x, ivs)).result for x in ins]
        _store_identity(b, ELEMENTWISE[op.kind.data](b, *xs), out, ivs)

    kb.free_nest(op.result.type.get_shape(), body)


def lower_index_map(kb: KernelBuilder, op: tir.IndexMapOp) -> None:
    x, out = kb.kernel.args

    def body(b: Builder, ivs: list[SSAValue]) -> None:
        v = b.insert(loop.LoadOp(x, ivs, op.map.data)).result
        _store_identity(b, v, out, ivs)

    kb.free_nest(op.result.type.get_shape(), body)


def lower_full(kb: KernelBuilder, op: tir.FullOp) -> None:
    (out,) = kb.kernel.args
    value = kb.const(op.value.value.data, op.result.type.element_type)
    kb.free_nest(op.result.type.get_shape(), lambda b, ivs: _store_identity(b, value, out, ivs))


def lower_reduce(kb: KernelBuilder, op: tir.ReduceOp) -> None:
    """Free loops over the kept dims, nested reduce loops over the reduced ones carrying the
    accumulator (arg kinds: the best value and its index); an empty reduction stores the
    identity."""
    x, out = kb.kernel.args
    kind = op.kind.data
    in_shape = op.input.type.get_shape()
    dims = op.reduced_dims
    kept = [i for i in range(len(in_shape)) if i not in dims]
    inits = [kb.const(tir.reduce_identity(kind, op.input.type.element_type), op.input.type.element_type)]
    if kind in tir.ARG_KINDS:
        inits.append(kb.const(0, op.result.type.element_type))
    if any(in_shape[d] == 0 for d in dims):
        kb.free_nest(op.result.type.get_shape(),
                     lambda b, ivs: _store_identity(b, inits[-1], out, ivs))
        return

    def body(b: Builder, ivs: list[SSAValue]) -> None:
        # nested reduce loops, one per reduced dim; the innermost loads and combines
        loops, rivs, accs = [], [], inits
        inner = b
        for j, d in enumerate(dims):
            r = loop.ForOp(0, in_shape[d], loop.LoopKind.REDUCE, accs)
            r.iv.name_hint = f"r{j}"
            for a in r.accs:
                a.name_hint = "acc"
            inner.insert(r)
            loops.append(r)
            rivs.append(r.iv)
            accs = list(r.accs)
            inner = Builder(InsertPoint.at_end(r.body.block))
        coords: list[SSAValue] = [None] * len(in_shape)  # type: ignore[list-item]
        for i, v in zip(kept, ivs):
            coords[i] = v
        for d, v in zip(dims, rivs):
            coords[d] = v
        val = inner.insert(loop.LoadOp(x, coords)).result
        if kind in tir.ARG_KINDS:
            nxt = arg_combine(inner, kind, *accs, val, rivs[-1])
        else:
            nxt = [REDUCE_COMBINE[kind](inner, accs[0], val)]
        for r in reversed(loops):
            r.body.block.add_op(loop.YieldOp(*nxt))
            nxt = list(r.res)
        _store_identity(b, nxt[-1], out, ivs)

    kb.free_nest(op.result.type.get_shape(), body)


def lower_scan(kb: KernelBuilder, op: tir.ScanOp) -> None:
    """y[.., i, ..] as a reduction over every j of the dim, j > i contributing the identity: the
    same combination order as a serial scan, in the canonical form of a reduction kernel
    (free loops over the result, one reduce loop) that every later pass handles; O(n^2) work
    per row, parallel over i."""
    x, out = kb.kernel.args
    kind, dim = op.kind.data, op.dim.value.data
    t = op.result.type
    init = kb.const(tir.reduce_identity(kind, t.element_type), t.element_type)

    def body(b: Builder, ivs: list[SSAValue]) -> None:
        r = b.insert(loop.ForOp(0, t.get_shape()[dim], loop.LoopKind.REDUCE, [init]))
        r.iv.name_hint, r.accs[0].name_hint = "r0", "acc"
        inner = Builder(InsertPoint.at_end(r.body.block))
        v = inner.insert(loop.LoadOp(x, [*ivs[:dim], r.iv, *ivs[dim + 1:]])).result
        keep = inner.insert(arith.CmpiOp(r.iv, ivs[dim], "sle")).result
        v = inner.insert(arith.SelectOp(keep, v, init)).result
        inner.insert(loop.YieldOp(REDUCE_COMBINE[kind](inner, r.accs[0], v)))
        _store_identity(b, r.res[0], out, ivs)

    kb.free_nest(t.get_shape(), body)


def pointwise(scalar: Callable[[Builder, Operation, list[SSAValue]], SSAValue]) -> Callable:
    """The lowering of an op computed element by element from its operands at the same index:
    `scalar(builder, op, loaded operands)` gives the value stored."""

    def lower(kb: KernelBuilder, op: Operation) -> None:
        *ins, out = kb.kernel.args

        def body(b: Builder, ivs: list[SSAValue]) -> None:
            xs = [b.insert(loop.LoadOp(x, ivs)).result for x in ins]
            _store_identity(b, scalar(b, op, xs), out, ivs)

        kb.free_nest(op.results[0].type.get_shape(), body)

    return lower


def lower_gather(kb: KernelBuilder, op: tir.GatherOp) -> None:
    """Each index value is loaded at its map, `arith.index_cast` to `index`, and used as an
    extra `loop.load` operand of the table: the table map takes (ivs..., index values...)."""
    table, *indices, out = kb.kernel.args
    amap = tir.gather_access_map(op.map.data)

    def body(b: Builder, ivs: list[SSAValue]) -> None:
        values = []
        for idx, im in zip(indices, op.index_maps):
            v = b.insert(loop.LoadOp(idx, ivs, im.data)).result
            values.append(b.insert(arith.IndexCastOp(v, IndexType())).result)
        _store_identity(b, b.insert(loop.LoadOp(table, [*ivs, *values], amap)).result, out, ivs)

    kb.free_nest(op.result.type.get_shape(), body)


def lower_concat(kb: KernelBuilder, op: tir.ConcatOp) -> None:
    """One free nest per input, each storing its region of the output (offset along the dim).
    A kernel of several nests is never inlined by `loop-fuse`: a concat is materialized."""
    *ins, out = kb.kernel.args
    dim, rank = op.dim.value.data, op.result.type.get_num_dims()
    for x, offset in zip(ins, op.offsets()):
        if 0 in x.type.get_shape():
            continue
        exprs = [AffineExpr.dimension(i) + (offset if i == dim else 0) for i in range(rank)]
        amap = AffineMap(rank, 0, tuple(exprs))

        def body(b: Builder, ivs: list[SSAValue], x=x, amap=amap) -> None:
            v = b.insert(loop.LoadOp(x, ivs)).result
            b.insert(loop.StoreOp(v, out, ivs, amap))

        kb.free_nest(x.type.get_shape(), body)


def lower_iota(kb: KernelBuilder, op: tir.IotaOp) -> None:
    """start + step * iv[dim], computed in the element type (`index_cast`, then `sitofp` for
    floats)."""
    (out,) = kb.kernel.args
    elt = op.result.type.element_type
    dim = op.dim.value.data
    start, step = op.start.value.data, op.step.value.data
    is_int = isinstance(elt, IntegerType)
    c_start = kb.const(start, elt) if start != 0 else None
    c_step = kb.const(step, elt) if step != 1 else None

    def body(b: Builder, ivs: list[SSAValue]) -> None:
        v = b.insert(arith.IndexCastOp(ivs[dim], elt if is_int else IntegerType(64))).result
        if not is_int:
            v = b.insert(arith.SIToFPOp(v, elt)).result
        if c_step is not None:
            v = b.insert(arith.MuliOp(v, c_step) if is_int else arith.MulfOp(v, c_step)).result
        if c_start is not None:
            v = b.insert(arith.AddiOp(v, c_start) if is_int else arith.AddfOp(v, c_start)).result
        _store_identity(b, v, out, ivs)

    kb.free_nest(op.result.type.get_shape(), body)


LOWER: dict[type[Operation], Callable] = {
    tir.ElementwiseOp: lower_elementwise,
    tir.IndexMapOp: lower_index_map,
    tir.FullOp: lower_full,
    tir.ReduceOp: lower_reduce,
    tir.ScanOp: lower_scan,
    tir.GatherOp: lower_gather,
    tir.ConcatOp: lower_concat,
    tir.IotaOp: lower_iota,
    tir.CompareOp: pointwise(lambda b, op, xs: compare(b, op.kind.data, *xs)),
    tir.SelectOp: pointwise(lambda b, op, xs: b.insert(arith.SelectOp(*xs)).result),
    tir.CastOp: pointwise(lambda b, op, xs: cast(b, xs[0], op.result.type.element_type)),
}


def _kernel_name(op: Operation, used: set[str]) -> str:
    hint = op.results[0].name_hint or op.name.removeprefix("tir.")
    base = hint.replace(".", "_")
    name, i = base, 1
    while name in used:
        name = f"{base}_{i}"
        i += 1
    used.add(name)
    return name


def lower_function(module: ModuleOp, fn: func.FuncOp) -> None:
    """Rewrite `fn` (over tensors) into a host function over memrefs, kernels before it."""
    old = fn.body.block
    arg_types = [memref_of(a.type) for a in old.args]
    new_block = Block(arg_types=arg_types)
    host = Builder(InsertPoint.at_end(new_block))
    values: dict[SSAValue, SSAValue] = {}
    for a, n in zip(old.args, new_block.args):
        n.name_hint = a.name_hint
        values[a] = n
    used = {o.sym_name.data for o in module.ops if isinstance(o, loop.KernelOp)}
    kernel_ip = InsertPoint.before(fn)
    for op in list(old.ops):
        if isinstance(op, func.ReturnOp):
            outs = [values[v] for v in op.arguments]
            host.insert(func.ReturnOp(*outs))
            continue
        if isinstance(op, func.CallOp):  # a layer function: lowered on its own, called here
            call = host.insert(func.CallOp(op.callee.root_reference.data,
                                           [values[v] for v in op.operands],
                                           [memref_of(r.type) for r in op.results]))
            for old_r, new_r in zip(op.results, call.results):
                new_r.name_hint = old_r.name_hint
                values[old_r] = new_r
            continue
        lower = LOWER.get(type(op))
        if lower is None:
            raise DiagnosticException(f"tir-to-loop: cannot lift '{op.name}' into a loop nest")
        ins = [values[v] for v in op.operands]
        out_t = memref_of(op.results[0].type)
        buf = host.insert(memref.AllocOp([], [], out_t)).memref
        buf.name_hint = op.results[0].name_hint
        values[op.results[0]] = buf
        if 0 in out_t.get_shape():  # nothing to compute: the (empty) buffer is the result
            continue
        name = _kernel_name(op, used)
        kb = KernelBuilder.create(
            name, [*(v.type for v in ins), out_t], [*(v.name_hint or "in" for v in ins), "out"]
        )
        lower(kb, op)
        origin.set_kernel(kb.kernel, origin.of_op(op))
        Builder(kernel_ip).insert(kb.kernel)
        host.insert(loop.LaunchOp(name, [*ins, buf]))
    ret = new_block.last_op
    fn.body.detach_block(old)
    fn.body.add_block(new_block)
    fn.function_type = func.FunctionType.from_lists(
        arg_types, [v.type for v in ret.operands]  # type: ignore[union-attr]
    )


@dataclass(frozen=True)
class TirToLoopPass(ModulePass):
    """Lift Tensor IR into one loop nest per op plus a host function that launches them."""

    name = "tir-to-loop"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in [o for o in op.ops if isinstance(o, func.FuncOp)]:
            types = [*fn.function_type.inputs.data, *fn.function_type.outputs.data]
            if types and not any(isinstance(t, TensorType) for t in types):
                continue  # over memrefs already: a lower level's program (no kernels) passes
            lower_function(op, fn)
        check_converted(op, "tir", self.name)
