"""loop-split-nests: a kernel of several big top-level nests becomes a kernel per nest.

A materialized `cat` (and `pad`, a cat with constant parts) is one kernel with a nest per part,
side by side at the top of the kernel body. No tile class maps sibling nests to a grid: the
planner sees no free chain and plans one block for all of it (the model, cat of two
[1024, 512]: 831 us, 166x its roofline). As a kernel each, every nest gets its own grid:

    loop.kernel @cat(%x0, %x1, %out) {             loop.kernel @cat(%x0, %x1, %out) {
      loop.for %i .. { .. %out[%i, %j] .. }     ->     loop.for %i .. { .. %out[%i, %j] .. } }
      loop.for %i .. { .. %out[%i, %j + 512] .. }  loop.kernel @cat_1(%x0, %x1, %out) {
    }                                                loop.for %i .. { .. %out[%i, %j + 512] .. } }

A pad first (`merge_pad`): its parts but one store constants, so the nests become one over the
output, each element selecting its part by its coordinate along the dim, the input read at the
wrapped coordinate `(i - off) mod n` as loop-fuse's inline-concat reads a cat:

    loop.for %a = 0 to 1 { store %zero, %out[.., %a] }
    loop.for %a = 0 to 5 { %v = x[.., %a] ; store %v, %out[.., %a + 1] }
    loop.for %a = 0 to 1 { store %zero, %out[.., %a + 6] }
  ->
    loop.for %a = 0 to 7 {
      %v = x[.., (%a + 4) mod 5]
      %s = select(%a < 1, %zero, select(%a < 6, %v, %zero)) ; store %s, %out[.., %a] }

The launches keep the nests' order (a later nest may read or overwrite what an earlier one
wrote; apart, the launches are ordered as the nests were). A nest of fewer than MIN_NEST
iterations (pad's border rows) stays grouped with its small neighbours: one block does it
well, and each launch costs its own latency. A kernel splits only into two or more groups and
only when its top level holds nothing but free loops and constants.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir.affine import AffineExpr
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from deplo.dialects import loop
from deplo.passes.loop.cutting import fresh_name, launched_once
from deplo.passes.loop.fuse import substitute_access
from deplo.passes.loop.fusion_rules import concat_parts, index_constant, wrapped_coordinate

MIN_NEST = 8192  # iterations a nest needs for a kernel of its own (32 a thread of one block)


def _iterations(lp: loop.ForOp) -> int:
    """The nest's iterations: its extent times its body's loops' (a row's reductions too)."""
    inner = [o for o in lp.body.block.ops if isinstance(o, loop.ForOp)]
    return lp.extent * max(1, sum(_iterations(i) for i in inner))


def _groups(kernel: loop.KernelOp) -> list[list[int]] | None:
    """The top-level nests' positions, grouped: each big nest alone, small neighbours together."""
    tops = list(kernel.body.block.ops)
    if not all(isinstance(o, arith.ConstantOp) or isinstance(o, loop.ForOp)
               and o.kind.data == loop.LoopKind.FREE for o in tops):
        return None
    groups: list[list[int]] = []
    small = False
    for k, op in enumerate(tops):
        if not isinstance(op, loop.ForOp):
            continue
        big = _iterations(op) >= MIN_NEST
        if big or not small or not groups:
            groups.append([k])
        else:
            groups[-1].append(k)
        small = not big
    return groups if len(groups) > 1 and any(
        _iterations(tops[g[0]]) >= MIN_NEST for g in groups) else None


def _keep(kernel: loop.KernelOp, group: list[int]) -> None:
    for k, op in reversed(list(enumerate(kernel.body.block.ops))):
        if isinstance(op, loop.ForOp) and k not in group:
            Rewriter.erase_op(op)


def _split(kernel: loop.KernelOp, launch: loop.LaunchOp) -> None:
    groups = _groups(kernel)
    if groups is None:
        return
    after = launch
    for n, group in enumerate(groups[1:], 1):
        part = kernel.clone()
        part.properties["sym_name"] = StringAttr(fresh_name(kernel, f"{kernel.sym_name.data}_{n}"))
        _keep(part, group)
        Rewriter.insert_op(part, InsertPoint.after(kernel))
        nxt = loop.LaunchOp(part.sym_name.data, list(launch.args))
        Rewriter.insert_op(nxt, InsertPoint.after(after))
        after = nxt
    _keep(kernel, groups[0])


def merge_pad(kernel: loop.KernelOp) -> bool:
    """A pad — a concat whose parts all store constants but one — as one nest over the output:
    each element selects its part's value by its coordinate along the dim, the data part read
    at the wrapped coordinate (in bounds everywhere, exact where selected), the constants free.
    One launch with a full grid, where the nests were launches of their own or, small, one
    block for all of them (the model: a conv's pad of [2, 16, 7, 5], 27.8 -> 3 us). A cat of
    two inputs stays nests: read everywhere, every part would cost its bytes again."""
    cat = concat_parts(kernel, ivs_as_values=True)
    if cat is None or sum(any(isinstance(o, loop.LoadOp) for op in p.body for o in op.walk())
                          for p in cat.parts) > 1:
        return False
    shape = kernel.args[cat.out_index].type.get_shape()
    nests = [p.ivs[0].owner.parent_op() for p in cat.parts]
    for c in [op for op in kernel.body.block.ops if isinstance(op, arith.ConstantOp)]:
        c.detach()  # (constants may sit between the nests: all before the first)
        kernel.body.block.insert_op_before(c, nests[0])
    b = Builder(InsertPoint.before(nests[0]))
    ivs = []
    for k, n in enumerate(shape):
        f = b.insert(loop.ForOp(0, n, loop.LoopKind.FREE))
        f.iv.name_hint = f"a{k}"
        f.body.block.add_op(loop.YieldOp())
        ivs.append(f.iv)
        b = Builder(InsertPoint.before(f.body.block.last_op))
    at = ivs[cat.dim]
    values = []
    for part in cat.parts:
        mapper = {v: ivs[k] for k, v in enumerate(part.ivs) if k != cat.dim}
        wrapped = wrapped_coordinate(AffineExpr.dimension(0), part.offset,
                                     part.extents[cat.dim])
        subst = {part.ivs[cat.dim]: ([at], wrapped)}
        for op in part.body:
            clone = b.insert(op.clone(value_mapper=mapper))
            for ld in [o for o in clone.walk() if isinstance(o, loop.LoadOp)]:
                if part.ivs[cat.dim] in ld.indices:
                    idx, m = substitute_access(list(ld.indices), ld.access_map(), subst, mapper)
                    Rewriter.replace_op(ld, new := loop.LoadOp(ld.buffer, idx, m))
                    mapper.update({k: new.result for k, v in mapper.items() if v is ld.result})
        values.append(mapper.get(part.stored, part.stored))
    value = values[-1]
    for part, v in zip(reversed(cat.parts[1:]), reversed(values[:-1])):
        below = b.insert(arith.CmpiOp(at, index_constant(kernel, part.offset), "ult"))
        value = b.insert(arith.SelectOp(below.result, v, value)).result
    b.insert(loop.StoreOp(value, kernel.args[cat.out_index], ivs))
    for nest in nests:
        Rewriter.erase_op(nest)
    return True


@dataclass(frozen=True)
class LoopSplitNestsPass(ModulePass):
    """Several big top-level nests in one kernel (cat, pad): a kernel and a launch each."""

    name = "loop-split-nests"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in [k for k in op.ops if isinstance(k, loop.KernelOp)]:
            merge_pad(kernel)
        for kernel, launch in launched_once(op):
            _split(kernel, launch)

