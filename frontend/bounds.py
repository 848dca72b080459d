"""The ranges of index inputs, checked on the host before a run.

An embedding's ids, `x[idx]`'s index and torch.gather's index address a table: the kernels
read it at the index as given, with no bounds check (a GPU reads another buffer or faults, the
CPU runtime reads past its buffer), where eager raises IndexError. When the index is one of the
program's inputs its values are on the host at every call, so one min and max per call gives
the same error, naming the op and its source line, before anything runs. An index computed by
the program (an argmax, a position plus an offset) is not checked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerType, ModuleOp
from xdsl.ir import BlockArgument, SSAValue

from deplo import origin
from deplo.dialects import torch as T

# ops that move or reshape an index without changing its values
_SAME_VALUES = (T.ReshapeOp, T.PermuteOp, T.TransposeOp, T.ExpandOp, T.UnsqueezeOp, T.SqueezeOp)


@dataclass(frozen=True)
class IndexBound:
    """Input `input` must lie in [low, high): the coordinates of `size` of a table's dim."""

    input: int  # the position among the program's inputs
    low: int
    high: int
    size: int
    what: str  # the torch op, its module and source line


def index_bounds(module: ModuleOp, inputs: int) -> list[IndexBound]:
    """The bounds of those of @main's first `inputs` arguments that reach an index operand."""
    main = next((f for f in module.ops if isinstance(f, func.FuncOp)
                 and f.sym_name.data == "main"), None)
    if main is None:
        return []
    calls = {}  # a called function's name -> the operands of its first call from @main
    for op in main.walk():
        if isinstance(op, func.CallOp):
            calls.setdefault(op.callee.root_reference.data, op.arguments)
    found: dict[tuple, IndexBound] = {}
    for f in module.ops:
        if not isinstance(f, func.FuncOp):
            continue
        for op in f.walk():
            for idx, size, low in getattr(op, "index_ranges", list)():
                k = _input_of(idx, main, calls, inputs)
                if k is not None:
                    bound = IndexBound(k, low, size, size, _describe(op))
                    found.setdefault((k, low, size), bound)
    return list(found.values())


def _input_of(v: SSAValue, main: func.FuncOp, calls: dict, inputs: int) -> int | None:
    """The input of @main whose values `v` holds, moved or reshaped (or None)."""
    while True:
        if isinstance(v, BlockArgument):
            owner = v.owner.parent_op()
            if owner is main:
                return v.index if v.index < inputs else None
            operands = calls.get(owner.sym_name.data) if isinstance(owner, func.FuncOp) else None
            if operands is None:
                return None
            v = operands[v.index]
        elif isinstance(v.owner, _SAME_VALUES) or isinstance(v.owner, T.ToOp) and all(
                isinstance(t.element_type, IntegerType) and t.element_type.width.data > 1
                for t in (v.owner.input.type, v.type)):
            v = v.owner.operands[0]
        else:
            return None


def _describe(op) -> str:
    lines = origin.of_op(op)
    if not lines:
        return op.name
    p = origin.parse(lines[0])
    return " ".join(s for s in (p["op"], p["module"] and f"in '{p['module']}'",
                                p["at"] and f"at {p['at']}") if s)


def check_indices(bounds: Sequence[IndexBound], inputs: Sequence, names: Sequence[str]) -> None:
    """IndexError for the first input out of its bounds, as eager would raise."""
    for b in bounds:  # (an index tensor is an integer one: numpy takes it as it is)
        x = inputs[b.input]
        x = np.asarray(x.detach().cpu() if hasattr(x, "detach") else x)
        if not x.size:
            continue
        bad = x[(x < b.low) | (x >= b.high)]
        if bad.size:
            valid = f"{b.low}..{b.high - 1}" if b.high > 0 else "none"
            raise IndexError(f"index {int(bad.flat[0])} in input {b.input} ('{names[b.input]}') "
                             f"is out of range for {b.what}: a dim of {b.size}, valid {valid}")
