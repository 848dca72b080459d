"""kernel-vectorize: 16 bytes of consecutive scalar loads (or stores) of one buffer become one
128-bit access (LDG.128 / LDS.128 / STG.128 / STS.128); what is left, 8 bytes (then 4, of two
16-bit elements) one 64-bit (32-bit) access: a tensor-core fragment's accumulators are column
pairs (two fp32: STG.64), which split-K partials and epilogues store.

    %a = memref.load %x[%r, %j] : memref<64x96xf32>
    %i1 = arith.addi %j, %c1 : index
    %b = memref.load %x[%r, %i1] : memref<64x96xf32>          (and %j + 2, %j + 3)
    ->
    %a, %b, %c, %d = kernel.vector_load %x[%r, %j] : memref<64x96xf32> -> f32, f32, f32, f32

Accesses group when they are in the same block, on the same buffer, with the same leading
indices and innermost indices `base + 0 .. base + V-1` (V = width / element; the linear forms
of analysis.linear_of). The group is vectorized only where it is provably aligned: `base` a
multiple of V (analysis.known_multiple) and the innermost dim a multiple of V (buffers start
16-byte aligned: cudaMalloc, torch and `__align__(16)` shared arrays). A vector load goes where
the first of its loads was, a vector store where the last of its stores was; nothing in between
may touch the buffer, wait at a barrier or for cp.async. Where the producers come from: the
pieces tile-to-kernel copies a stage in, the columns of a register tile, its epilogue stores.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import memref
from xdsl.dialects.builtin import MemRefType, ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from deplo.analysis.index import known_multiple, linear_of
from deplo.analysis.nest import is_scalar
from deplo.dialects import kernel
from deplo.passes.tile.rewrite import drop_dead

Access = memref.LoadOp | memref.StoreOp


def blocks(root: Operation) -> Iterator[Block]:
    for op in root.walk():
        for r in op.regions:
            yield from r.blocks


def lanes(t: MemRefType, width: int) -> int:
    """Elements of `t` in one `width`-byte access (0: fewer than two)."""
    n = width // kernel.element_bytes(t.element_type)
    return n if n >= 2 else 0


def touches(op: Operation, mem: SSAValue, reads: bool) -> bool:
    """Whether `op` (or an op nested in it) writes `mem` (or reads it, with `reads`), waits at a
    barrier or for cp.async copies: an access of `mem` may not move across it."""
    for o in op.walk():
        if isinstance(o, kernel.BarrierOp | kernel.CpAsyncWaitOp):
            return True
        if isinstance(o, memref.LoadOp | kernel.VectorLoadOp):
            if reads and o.memref is mem:
                return True
        elif mem in o.operands:
            return True
    return False


def groups(block: Block, kind: type[Access], width: int) -> list[list[Access]]:
    """Runs of V accesses at base + 0 .. V-1, base aligned, in `block` (by address)."""
    by_key: dict[tuple, dict[int, Access]] = {}
    same = _Same()
    for op in block.ops:
        if not isinstance(op, kind):
            continue
        t = op.memref.type
        if not isinstance(t, MemRefType) or not op.indices or not (v := lanes(t, width)) \
                or t.get_shape()[-1] % v or isinstance(op.memref.owner, memref.AllocaOp):
            continue  # (a thread's own array is registers: nothing to merge)
        terms, c = linear_of(op.indices[-1])
        key = (
            op.memref,
            tuple(same(v) for v in op.indices[:-1]),
            tuple(sorted((same(leaf), k) for leaf, k in terms.items())),
        )
        by_key.setdefault(key, {}).setdefault(c, op)
    out = []
    for (mem, _, _), at in by_key.items():
        v = lanes(mem.type, width)
        base = 0
        for leaf, k in linear_of(next(iter(at.values())).indices[-1])[0].items():
            base = math.gcd(base, k * known_multiple(leaf))
        if base % v:
            continue
        for c in sorted(at):
            if c % v == 0 and all(c + k in at for k in range(v)):
                out.append([at.pop(c + k) for k in range(v)])
    return out


class _Same:
    """A number equal for index values computed alike (lowering expands an access's map once
    per access: two loads of one row recompute its leading indices); a value that is not pure
    index arithmetic is its own. Each value is numbered once (hash-consed): an index computed
    from a long chain of shared ones (a binary search's lo/hi) is not unfolded into a tree."""

    def __init__(self):
        self.number: dict[object, int] = {}
        self.seen: dict[SSAValue, int] = {}

    def __call__(self, v: SSAValue) -> int:
        if v not in self.seen:
            op = v.owner
            if not isinstance(op, Operation) or op.regions or len(op.results) != 1 or not (
                    is_scalar(op) or isinstance(op, kernel.BlockIdOp | kernel.ThreadIdOp)):
                key = ("value", v)
            else:
                key = (op.name, tuple(self(o) for o in op.operands), str(op.properties),
                       str(op.attributes), str(v.type))
            self.seen[v] = self.number.setdefault(key, len(self.number))
        return self.seen[v]


def movable(block: Block, group: list[Access]) -> tuple[Operation, Operation] | None:
    """(first, last) of the group in block order, when nothing in between blocks the move."""
    index = {op: i for i, op in enumerate(block.ops)}
    ordered = sorted(group, key=index.__getitem__)
    first, last = ordered[0], ordered[-1]
    mem = group[0].memref
    is_load = isinstance(group[0], memref.LoadOp)
    ops = list(block.ops)[index[first] : index[last] + 1]
    if any(o not in group and touches(o, mem, reads=not is_load) for o in ops):
        return None
    if is_load:  # the base indices must exist at the first load
        for v in group[0].indices:
            owner = v.owner
            if (
                isinstance(owner, Operation)
                and owner.parent_block() is block
                and index[owner] > index[first]
            ):
                return None
    return first, last


@dataclass(frozen=True)
class KernelVectorizePass(ModulePass):
    """Merge aligned runs of 16 (then 8, then 4) bytes of scalar loads / stores into
    kernel.vector_load / kernel.vector_store."""

    name = "kernel-vectorize"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for func in [f for f in op.walk() if isinstance(f, kernel.FuncOp)]:
            for block in list(blocks(func)):
                self.vectorize(block)
            drop_dead(func)

    def vectorize(self, block: Block) -> None:
        for width in kernel.VECTOR_WIDTHS:  # the widest first: what is left tries the next
            self.merge(block, width)

    def merge(self, block: Block, width: int) -> None:
        for group in groups(block, memref.LoadOp, width):
            where = movable(block, group)
            if where is None:
                continue
            head = group[0]
            vec = kernel.VectorLoadOp(head.memref, list(head.indices), len(group))
            Rewriter.insert_op(vec, InsertPoint.before(where[0]))
            for old, new in zip(group, vec.res):
                new.name_hint = old.res.name_hint
                old.res.replace_all_uses_with(new)
                Rewriter.erase_op(old)
        for group in groups(block, memref.StoreOp, width):
            where = movable(block, group)
            if where is None:
                continue
            head = group[0]
            vec = kernel.VectorStoreOp([s.value for s in group], head.memref, list(head.indices))
            Rewriter.insert_op(vec, InsertPoint.after(where[1]))
            for old in group:
                Rewriter.erase_op(old)
