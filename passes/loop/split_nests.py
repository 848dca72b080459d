"""loop-split-nests: a kernel of several big top-level nests becomes a kernel per nest.

A materialized `cat` (and `pad`, a cat with constant parts) is one kernel with a nest per part,
side by side at the top of the kernel body. No tile class maps sibling nests to a grid: the
planner sees no free chain and plans one block for all of it (the model, cat of two
[1024, 512]: 831 us, 166x its roofline). As a kernel each, every nest gets its own grid:

    loop.kernel @cat(%x0, %x1, %out) {             loop.kernel @cat(%x0, %x1, %out) {
      loop.for %i .. { .. %out[%i, %j] .. }     ->     loop.for %i .. { .. %out[%i, %j] .. } }
      loop.for %i .. { .. %out[%i, %j + 512] .. }  loop.kernel @cat_1(%x0, %x1, %out) {
    }                                                loop.for %i .. { .. %out[%i, %j + 512] .. } }

The launches keep the nests' order (a later nest may read or overwrite what an earlier one
wrote; apart, the launches are ordered as the nests were). A nest of fewer than MIN_NEST
iterations (pad's border rows) stays grouped with its small neighbours: one block does it
well, and each launch costs its own latency. A kernel splits only into two or more groups and
only when its top level holds nothing but free loops and constants.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from deplo.dialects import loop
from deplo.passes.loop.cutting import fresh_name, launched_once

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


@dataclass(frozen=True)
class LoopSplitNestsPass(ModulePass):
    """Several big top-level nests in one kernel (cat, pad): a kernel and a launch each."""

    name = "loop-split-nests"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel, launch in launched_once(op):
            _split(kernel, launch)

