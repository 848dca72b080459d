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
from xdsl.dialects.builtin import ModuleOp, StringAttr, TensorType
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.rewriter import InsertPoint

from deplo.dialects import torch as T
from deplo.frontend import expr as expr_module
from deplo.frontend.dtypes import mlir_element_type
from deplo.frontend.errors import FrontendError
from deplo.frontend.fold import SDPA, StaticEvaluator, fold_causal_mask
from deplo.frontend.layers import SCOPE_ATTR, layer_scope, outline_layers


@dataclass
class Program:
    """A captured program: Torch IR plus what it takes to run and check it."""

    module: ModuleOp
    input_names: list[str]
    param_names: list[str]
    params: list[np.ndarray]
    example_inputs: list[np.ndarray]
    torch_module: torch.nn.Module = field(repr=False)
    notes: list[str] = field(default_factory=list)  # one-line facts for the user (weights, ...)

    def reference(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """PyTorch eager on the same inputs: the oracle for every level."""
        with torch.no_grad():
            out = self.torch_module(*[torch.from_numpy(np.ascontiguousarray(a)) for a in inputs])
        outs = out if isinstance(out, (tuple, list)) else (out,)
        return [_numpy(o) for o in outs]


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
    def __init__(self, block: Block, static: StaticEvaluator | None = None):
        self.block = block
        self.builder = Builder(InsertPoint.at_end(block))
        self.values: dict[torch.fx.Node, SSAValue] = {}
        self.static = static or StaticEvaluator({})
        self.constants: dict[str, np.ndarray] = {}

    def value(self, arg, like: TensorType | None = None) -> SSAValue:
        """An SSA value for an FX argument; a Python number becomes a 0-d torch.constant, and a
        folded tensor a constant argument of @main (`%const.NAME`)."""
        if isinstance(arg, torch.fx.Node):
            if arg not in self.values and self.static.is_static(arg):
                self.values[arg] = self._constant_arg(arg)
            return self.values[arg]
        if isinstance(arg, (int, float)) and not isinstance(arg, bool):
            elt = like.element_type if like is not None else mlir_element_type(torch.float32)
            return self.insert(T.ConstantOp(float(arg), TensorType(elt, [])), "cst")
        raise FrontendError(f"unsupported argument {arg!r}")

    def static_value(self, arg):
        """The folded value of a static FX node (a tensor or Python value), else None."""
        return self.static.values.get(arg) if isinstance(arg, torch.fx.Node) else None

    def _constant_arg(self, node: torch.fx.Node) -> SSAValue:
        tensor = self.static.values[node]
        if not isinstance(tensor, torch.Tensor):
            raise FrontendError(f"folded value {node.name} is not a tensor: {tensor!r}")
        name = f"const.{node.name}"
        arg = self.block.insert_arg(tensor_type(tensor), len(self.block.args))
        arg.name_hint = name
        self.constants[name] = _numpy(tensor)
        return arg

    def insert(self, op, hint: str | None = None) -> SSAValue:
        self.builder.insert(op)
        if hint:
            op.results[0].name_hint = hint
        return op.results[0]


from deplo.frontend.aten import ATEN_CONVERTERS


@dataclass
class Imported:
    module: ModuleOp
    input_names: list[str]
    param_names: list[str]  # parameters and buffers that stay arguments
    constants: dict[str, np.ndarray]  # folded tensors, arguments after the parameters


def import_exported(
    ep: torch.export.ExportedProgram,
    input_names: Sequence[str] | None = None,
    buffers: dict[str, torch.Tensor] | None = None,
) -> Imported:
    """Torch IR for an exported program. Nodes that depend only on shapes and on `buffers` with
    CPU values are evaluated here (frontend/fold.py); what they feed becomes constant arguments."""
    gm = ep.graph_module
    specs = {s.arg.name: s for s in ep.graph_signature.input_specs}
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    user = [n for n in placeholders if specs[n.name].kind == InputKind.USER_INPUT]
    weights = [n for n in placeholders if specs[n.name].kind != InputKind.USER_INPUT]
    names = list(input_names) if input_names else [n.name for n in user]

    known = dict(buffers or {}) | {
        k: v for k, v in ep.constants.items() if isinstance(v, torch.Tensor)
    }
    static_inputs = {}
    for n in weights:
        spec = specs[n.name]
        value = known.get(spec.target or "")
        if spec.kind != InputKind.PARAMETER and value is not None and value.device.type == "cpu":
            static_inputs[n] = value
    ev = StaticEvaluator(static_inputs)
    kept = [n for n in weights if n not in static_inputs]
    param_names = [specs[n.name].target or n.name for n in kept]

    arg_types: list[Attribute] = [tensor_type(n.meta["val"]) for n in (*user, *kept)]
    block = Block(arg_types=arg_types)
    im = Importer(block, ev)
    for node, arg, name in zip((*user, *kept), block.args, (*names, *param_names)):
        im.values[node] = arg
        arg.name_hint = name

    results: list[SSAValue] = []
    for node in gm.graph.nodes:
        if node.op == "call_function":
            if "_assert" in str(node.target) or ev.try_fold(node):
                continue
            if node.target is SDPA:
                fold_causal_mask(node, ev)
            convert = ATEN_CONVERTERS.get(node.target)
            if convert is None:
                raise FrontendError(
                    f"unsupported PyTorch op '{node.target}' {where_from(node)}"
                )
            last = im.block.last_op
            value = convert(im, node, tensor_type(node.meta["val"]))
            im.values[node] = value
            scope = layer_scope(node)
            # every op the converter built (constants, dtype conversions too) joins the scope
            op = last.next_op if last is not None else im.block.first_op
            while scope is not None and op is not None:
                op.attributes[SCOPE_ATTR] = StringAttr(scope)
                op = op.next_op
        elif node.op == "output":
            outs = node.args[0]
            outs = outs if isinstance(outs, (tuple, list)) else [outs]
            results = [im.value(o) for o in outs]
        elif node.op not in ("placeholder",):
            raise FrontendError(f"unsupported graph node {node.op} {node.target}")
    im.builder.insert(func.ReturnOp(*results))
    arg_types = [a.type for a in block.args]
    fn = func.FuncOp("main", (arg_types, [r.type for r in results]), Region(block))
    module = ModuleOp([fn])
    module.verify()
    return Imported(module, names, param_names, im.constants)


def import_module(
    module: torch.nn.Module,
    example_inputs: Sequence[torch.Tensor],
    input_names: Sequence[str] | None = None,
) -> Program:
    """Export `module` on the example inputs (no_grad, non-strict) and import it."""
    ep = export(module, example_inputs)
    buffers = dict(module.named_buffers())
    imported = import_exported(ep, input_names, buffers)
    imported.module = outline_layers(imported.module)
    constants = {k: v for k, v in ep.constants.items() if isinstance(v, torch.Tensor)}
    state = dict(module.named_parameters()) | buffers | constants
    params = [_numpy(state[n]) for n in imported.param_names] + list(imported.constants.values())
    inputs = [_numpy(t) for t in example_inputs]
    return Program(imported.module, imported.input_names,
                   imported.param_names + list(imported.constants), params, inputs, module)


def export(module: torch.nn.Module, example_inputs: Sequence[torch.Tensor]):
    """torch.export, non-strict, under no_grad; a failure is one FrontendError."""
    fake_log = logging.getLogger("torch._subclasses.fake_tensor")
    level = fake_log.level
    fake_log.setLevel(logging.CRITICAL)  # it logs a traceback of its own before re-raising
    try:
        with torch.no_grad():
            return torch.export.export(module, tuple(example_inputs), strict=False)
    except Exception as e:  # noqa: BLE001 - the user's code may raise anything
        raise FrontendError(f"torch.export failed: {type(e).__name__}: {e}") from None
    finally:
        fake_log.setLevel(level)


def _numpy(t: torch.Tensor) -> np.ndarray | None:
    """A CPU copy of a tensor as numpy (bf16 as float32), or None for meta tensors."""
    if t.device.type == "meta":
        return None
    t = t.detach()
    return (t.float() if t.dtype == torch.bfloat16 else t).numpy()
