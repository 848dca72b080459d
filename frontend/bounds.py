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
import torch
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerType, ModuleOp
from xdsl.ir import BlockArgument, SSAValue

from deplo import origin
from deplo.dialects import torch as T

aten = torch.ops.aten

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


# ATen ops whose index argument addresses dim `dim` of argument `table`: (table, dim (an
# argument position, or a fixed dim), index, whether a negative index counts from the end)
_ARG, _DIM = "arg", "dim"
_DIM_INDEXED = {
    **{op: (0, (_ARG, 1), 2, False) for op in (
        aten.scatter.value, aten.scatter.src, aten.scatter.value_reduce, aten.scatter.reduce,
        aten.scatter_add.default, aten.scatter_reduce.two, aten.gather.default,
        aten.index_add.default, aten.index_copy.default, aten.index_reduce.default,
        aten.index_select.default)},
    aten.index_fill.int_Scalar: (0, (_ARG, 1), 2, True),
    aten.index_fill.int_Tensor: (0, (_ARG, 1), 2, True),
    aten.embedding.default: (0, (_DIM, 0), 1, False),
}
_INDICES = {aten.index.Tensor, aten.index_put.default}  # x[i, j, ...]: negatives count from the end


def static_index_error(node, values: dict) -> str | None:
    """Eager's IndexError message for an index the program holds as a constant (`values`:
    the importer's static values) that is out of its dim's range: the kernels would read or
    write past it, or drop the write, where eager raises. Run-time indices: `check_indices`."""
    target, args = node.target, node.args
    checks = []  # (index value, dim, size, negative allowed)
    if target in _DIM_INDEXED:
        table, (kind, d), at, negative = _DIM_INDEXED[target]
        shape = args[table].meta["val"].shape
        if kind == _ARG:
            d = args[d] if len(args) > d else node.kwargs.get("dim", 0)
        d = d % max(len(shape), 1)
        if len(args) > at:
            checks.append((args[at], d, shape[d] if shape else 1, negative))
    elif target in _INDICES:
        shape, d = args[0].meta["val"].shape, 0
        for idx in args[1]:
            val = idx.meta["val"] if idx is not None else None
            if val is not None and val.dtype in (torch.bool, torch.uint8):  # a mask: its dims
                d += val.dim()
                continue
            if idx is not None:
                checks.append((idx, d, shape[d], True))
            d += 1
    for idx, d, size, negative in checks:
        v = values.get(idx) if isinstance(idx, torch.fx.Node) else None
        if not isinstance(v, torch.Tensor) or not v.numel():
            continue
        bad = v[(v < (-size if negative else 0)) | (v >= size)]
        if bad.numel():
            return f"index {int(bad.flatten()[0])} is out of bounds for dimension {d} with size {size}"
    return None
