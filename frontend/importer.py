"""torch.export graph -> Torch IR (`func.func @main` with torch.* ops).

The exported program's placeholders become `@main`'s arguments, user inputs first and then the
parameters and buffers, each named after its module path (`%rmsnorm.weight`). Each ATen call
becomes one torch op through `ATEN_CONVERTERS`; an ATen op that is not in that table is an error
naming the op and the line of the user's code it came from, never a silent fallback.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from torch.export.graph_signature import InputKind
from xdsl.builder import Builder
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.rewriter import InsertPoint

from deplo.dialects import torch as T
from deplo.frontend import expr as expr_module
from deplo.frontend.dtypes import mlir_element_type
from deplo.frontend.errors import FrontendError


@dataclass
class Program:
    """A captured program: Torch IR plus what it takes to run and check it."""

    module: ModuleOp
    input_names: list[str]
    param_names: list[str]
    params: list[np.ndarray]
    example_inputs: list[np.ndarray]
    torch_module: torch.nn.Module = field(repr=False)

    def reference(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """PyTorch eager on the same inputs: the oracle for every level."""
        with torch.no_grad():
            out = self.torch_module(*[torch.from_numpy(np.ascontiguousarray(a)) for a in inputs])
        outs = out if isinstance(out, (tuple, list)) else (out,)
        return [o.detach().numpy() for o in outs]


def tensor_type(value) -> TensorType:
    """The MLIR type of a FakeTensor/Tensor from the exported graph's metadata."""
    return TensorType(mlir_element_type(value.dtype), list(value.shape))


def where_from(node: torch.fx.Node) -> str:
    """`in <module path> at file:line: code` from an FX node's metadata, for error messages."""
    parts = []
    stack = node.meta.get("nn_module_stack")
    if stack:
        path = list(stack.values())[-1][0]
        if path:
            parts.append(f"in module '{path}'")
    trace = (node.meta.get("stack_trace") or "").strip().splitlines()
    if trace and expr_module.__file__ in "".join(trace[-2:]):
        parts.append("in the expression")
    elif len(trace) >= 2:
        parts.append(f"at {trace[-2].strip()}: {trace[-1].strip()}")
    return " ".join(parts) or "(no source location recorded)"


class Importer:
    def __init__(self, block: Block):
        self.builder = Builder(InsertPoint.at_end(block))
        self.values: dict[torch.fx.Node, SSAValue] = {}

    def value(self, arg, like: TensorType | None = None) -> SSAValue:
        """An SSA value for an FX argument; a Python number becomes a 0-d torch.constant."""
        if isinstance(arg, torch.fx.Node):
            return self.values[arg]
        if isinstance(arg, (int, float)) and not isinstance(arg, bool):
            elt = like.element_type if like is not None else mlir_element_type(torch.float32)
            return self.insert(T.ConstantOp(float(arg), TensorType(elt, [])), "cst")
        raise FrontendError(f"unsupported argument {arg!r}")

    def insert(self, op, hint: str | None = None) -> SSAValue:
        self.builder.insert(op)
        if hint:
            op.results[0].name_hint = hint
        return op.results[0]


from deplo.frontend.aten import ATEN_CONVERTERS


def import_exported(ep: torch.export.ExportedProgram, input_names: Sequence[str] | None = None):
    """Torch IR for an exported program; returns (module, input names, parameter names)."""
    gm = ep.graph_module
    specs = {s.arg.name: s for s in ep.graph_signature.input_specs}
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    user = [n for n in placeholders if specs[n.name].kind == InputKind.USER_INPUT]
    weights = [n for n in placeholders if specs[n.name].kind != InputKind.USER_INPUT]
    names = list(input_names) if input_names else [n.name for n in user]
    param_names = [specs[n.name].target or n.name for n in weights]

    arg_types: list[Attribute] = [tensor_type(n.meta["val"]) for n in (*user, *weights)]
    block = Block(arg_types=arg_types)
    im = Importer(block)
    for node, arg, name in zip((*user, *weights), block.args, (*names, *param_names)):
        im.values[node] = arg
        arg.name_hint = name

    results: list[SSAValue] = []
    for node in gm.graph.nodes:
        if node.op == "call_function":
            if "_assert" in str(node.target):
                continue
            convert = ATEN_CONVERTERS.get(node.target)
            if convert is None:
                raise FrontendError(
                    f"unsupported PyTorch op '{node.target}' {where_from(node)}"
                )
            im.values[node] = convert(im, node, tensor_type(node.meta["val"]))
        elif node.op == "output":
            outs = node.args[0]
            results = [im.values[o] for o in (outs if isinstance(outs, (tuple, list)) else [outs])]
        elif node.op not in ("placeholder",):
            raise FrontendError(f"unsupported graph node {node.op} {node.target}")
    im.builder.insert(func.ReturnOp(*results))
    fn = func.FuncOp("main", ([a for a in arg_types], [r.type for r in results]), Region(block))
    module = ModuleOp([fn])
    module.verify()
    return module, names, param_names


def import_module(
    module: torch.nn.Module,
    example_inputs: Sequence[torch.Tensor],
    input_names: Sequence[str] | None = None,
) -> Program:
    """Export `module` on the example inputs (no_grad, non-strict) and import it."""
    fake_log = logging.getLogger("torch._subclasses.fake_tensor")
    level = fake_log.level
    fake_log.setLevel(logging.CRITICAL)  # it logs a traceback of its own before re-raising
    try:
        with torch.no_grad():
            ep = torch.export.export(module, tuple(example_inputs), strict=False)
    except Exception as e:  # noqa: BLE001 - the user's code may raise anything
        raise FrontendError(f"torch.export failed: {type(e).__name__}: {e}") from None
    finally:
        fake_log.setLevel(level)
    mlir, names, param_names = import_exported(ep, input_names)
    state = dict(module.named_parameters()) | dict(module.named_buffers())
    state |= {k: v for k, v in ep.constants.items() if isinstance(v, torch.Tensor)}
    params = [state[n].detach().numpy() for n in param_names]
    inputs = [t.detach().numpy() for t in example_inputs]
    return Program(mlir, names, param_names, params, inputs, module)
