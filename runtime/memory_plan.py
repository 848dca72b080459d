"""Memory planning for a host function: every intermediate buffer (`memref.alloc`) gets an offset
in one arena, and buffers whose lifetimes do not overlap share bytes.

Why: a decoder layer allocates a dozen intermediates per call, most dead after the next launch;
one arena sized by the peak of the live ones replaces them. A buffer is live from its alloc to
its last use (a launch or call operand); a buffer the function returns outlives the call and
gets no arena slot. Offsets: the buffers in order of size, largest first, each at the lowest
offset that overlaps no placed buffer live at the same time (greedy interval colouring).

    plan = plan_function(fn)
    plan.peak, plan.total          # arena bytes, bytes of all planned buffers
    plan.offsets[alloc_op]         # byte offset in the arena
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from xdsl.dialects import func, memref
from xdsl.dialects.builtin import MemRefType

from deplo.dialects.tile import element_bytes

ALIGN = 256  # bytes: what cudaMalloc guarantees, so a GPU arena keeps every vector access legal


def _bytes(t: MemRefType) -> int:
    return max(1, math.prod(t.get_shape()) * element_bytes(t.element_type))


@dataclass
class MemoryPlan:
    offsets: dict = field(default_factory=dict)  # memref.AllocOp -> byte offset
    sizes: dict = field(default_factory=dict)  # memref.AllocOp -> bytes (aligned)
    peak: int = 0  # arena bytes
    total: int = 0  # bytes of every planned buffer, as if none were shared

    def line(self, name: str) -> str:
        return (f"@{name}: arena {_size(self.peak)} for {_size(self.total)} of "
                f"{len(self.offsets)} intermediate buffer(s)")


def _size(n: int) -> str:
    return f"{n / 1e6:.2f} MB" if n >= 1e5 else f"{n / 1e3:.1f} KB"


def plan_function(fn: func.FuncOp) -> MemoryPlan:
    ops = list(fn.body.block.ops)
    returned = {v for op in ops if isinstance(op, func.ReturnOp) for v in op.operands}
    live: dict = {}  # alloc -> (first, last) op index
    for i, op in enumerate(ops):
        if isinstance(op, memref.AllocOp) and op.memref not in returned:
            live[op] = (i, i)
        for v in op.operands:
            owner = v.owner
            if owner in live:
                live[owner] = (live[owner][0], i)
    plan = MemoryPlan()
    placed: list[tuple[int, int, int, int]] = []  # (offset, end, first, last)
    for alloc in sorted(live, key=lambda a: -_bytes(a.memref.type)):
        size = -(-_bytes(alloc.memref.type) // ALIGN) * ALIGN
        first, last = live[alloc]
        busy = sorted((o, e) for o, e, f, la in placed if f <= last and first <= la)
        offset = 0
        for o, e in busy:
            if offset + size <= o:
                break
            offset = max(offset, e)
        placed.append((offset, offset + size, first, last))
        plan.offsets[alloc], plan.sizes[alloc] = offset, size
        plan.peak = max(plan.peak, offset + size)
        plan.total += size
    return plan


def memory_lines(executable) -> list[str]:
    """What `-v` prints: each host function's arena (none for the interpreters)."""
    return [plan.line(name) for name, plan in getattr(executable, "plans", {}).items()]
