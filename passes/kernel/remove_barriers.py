"""kernel-remove-barriers: drop a `kernel.barrier` that orders nothing.

A barrier is needed only when an access before it (since the previous barrier, on any path)
and an access after it (until the next barrier) touch the same buffer and one of them writes.
When no such pair exists the barrier is removed; then the next one is tried on the new
program, until none can go.

    kernel.barrier                                  (the previous iteration read As and Bs)
    scf.for ... { memref.store ..., %As[...] }      copy A
    kernel.barrier                                  <- orders the writes of As before it with
    scf.for ... { memref.store ..., %Bs[...] }         the writes of Bs after it: removed
    kernel.barrier
    ... reads of %As, %Bs ...

(Two consecutive stages each emit the barrier a refill needs; one is enough.) Accesses:
memref.load / store, kernel.vector_load / store, kernel.ldmatrix, kernel.cp_async (reads its
source, writes its destination) and kernel.cp_async_wait (the copies land: writes every cp.async
destination); any other op taking a buffer counts as writing it.
Loops are followed around their back edge, both branches of an `scf.if`, and a kernel ends with
no access after it. Buffers are told apart by their SSA value (each kernel.shared is its own).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import memref, scf
from xdsl.dialects.builtin import MemRefType, ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from deplo.dialects import kernel

Access = tuple[SSAValue, bool]  # (buffer, is a write)


def accesses(op: Operation, async_dsts: set[SSAValue]) -> set[Access]:
    if isinstance(op, memref.LoadOp | kernel.VectorLoadOp | kernel.LdmatrixOp):
        return {(op.memref, False)}
    if isinstance(op, memref.StoreOp | kernel.VectorStoreOp):
        return {(op.memref, True)}
    if isinstance(op, kernel.CpAsyncOp):
        return {(op.src, False), (op.dst, True)}
    if isinstance(op, kernel.CpAsyncWaitOp):
        return {(d, True) for d in async_dsts}
    # anything else that takes a buffer may read and write it
    return {(v, True) for v in op.operands if isinstance(v.type, MemRefType)}


class _Flow:
    """Accesses that may happen between each barrier and the previous (forward) or next
    (backward) barrier."""

    def __init__(self, func: kernel.FuncOp, backward: bool):
        self.backward = backward
        self.dsts = {o.dst for o in func.walk() if isinstance(o, kernel.CpAsyncOp)}
        self.seen: dict[Operation, set[Access]] = {}
        self.block(func.body.block, set())

    def block(self, b: Block, state: set[Access]) -> set[Access]:
        ops = list(b.ops)
        for op in reversed(ops) if self.backward else ops:
            state = self.op(op, state)
        return state

    def op(self, op: Operation, state: set[Access]) -> set[Access]:
        if isinstance(op, kernel.BarrierOp):
            self.seen.setdefault(op, set()).update(state)
            return set()
        if isinstance(op, scf.IfOp):
            out = set() if op.false_region.blocks else set(state)
            for r in (op.true_region, op.false_region):
                if r.blocks:
                    out |= self.block(r.block, set(state))
            return out
        if isinstance(op, scf.ForOp):
            into = set(state)
            while True:
                out = self.block(op.body.block, set(into))
                if out <= into:
                    return into
                into |= out
        if op.regions:
            for r in op.regions:
                for b in r.blocks:
                    state = self.block(b, state)
            return state
        return state | accesses(op, self.dsts)


def conflict(a: set[Access], b: set[Access]) -> bool:
    return any(m1 is m2 and (w1 or w2) for m1, w1 in a for m2, w2 in b)


def redundant(func: kernel.FuncOp) -> kernel.BarrierOp | None:
    before, after = _Flow(func, False).seen, _Flow(func, True).seen
    for op in func.walk():
        if isinstance(op, kernel.BarrierOp) and not conflict(
            before.get(op, set()), after.get(op, set())
        ):
            return op
    return None


@dataclass(frozen=True)
class KernelRemoveBarriersPass(ModulePass):
    """Remove the barriers of each kernel.func that separate no conflicting accesses."""

    name = "kernel-remove-barriers"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for func in [f for f in op.walk() if isinstance(f, kernel.FuncOp)]:
            while (b := redundant(func)) is not None:
                Rewriter.erase_op(b)
