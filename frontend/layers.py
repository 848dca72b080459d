"""One layer, many calls: outline each decoder layer of a flat Torch IR function.

torch.export unrolls a 22- or 28-layer model into one flat graph. The importer tags every op
with the `layers.N` module it came from (`deplo.scope`); this pass groups the ops of each layer,
and when two layers are the same computation (the same ops, attributes, types and dataflow; only
the weight arguments differ) it emits that computation once as `func.func @decoder_layer` and
replaces every layer by a `func.call` with that layer's own weights:

    %h1 = func.call @decoder_layer(%h0, %const.cos, %const.sin, %model.layers.0.input_layernorm.weight, ...)
    %h2 = func.call @decoder_layer(%h1, %const.cos, %const.sin, %model.layers.1.input_layernorm.weight, ...)

Every later level lowers the function once, so the cost of compiling a model is the cost of one
layer plus the calls. Layers that differ get a function each.
"""

from __future__ import annotations

import re

import torch
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from deplo import origin

SCOPE_ATTR = "deplo.scope"
_LAYER = re.compile(r"^(?:.*\.)?(?:layers|h|blocks)\.(\d+)$")  # model.layers.3, transformer.h.3


def layer_scope(node: torch.fx.Node) -> str | None:
    """The module path of the decoder layer an FX node belongs to (`model.layers.3`), if any."""
    stack = node.meta.get("nn_module_stack") or {}
    for path, _cls in reversed(list(stack.values())):
        if _LAYER.match(path):
            return path
    return None


def _groups(block: Block) -> list[tuple[str, list[Operation]]]:
    groups: list[tuple[str, list[Operation]]] = []
    for op in block.ops:
        attr = op.attributes.get(SCOPE_ATTR)
        scope = attr.data if isinstance(attr, StringAttr) else None
        if scope is None:
            continue
        if groups and groups[-1][0] == scope and groups[-1][1][-1] is op.prev_op:
            groups[-1][1].append(op)
        else:
            groups.append((scope, [op]))
    return groups


def _interface(ops: list[Operation]) -> tuple[list[SSAValue], list[SSAValue]]:
    """Values the group reads from outside (in first-use order) and results used outside."""
    inside = set(map(id, ops))
    inputs: list[SSAValue] = []
    for op in ops:
        for v in op.operands:
            owner = v.owner
            if (not isinstance(owner, Operation) or id(owner) not in inside) and v not in inputs:
                inputs.append(v)
    outputs = [
        r for op in ops for r in op.results
        if any(id(u.operation) not in inside for u in r.uses)
    ]
    return inputs, outputs


def _signature(ops: list[Operation], inputs: list[SSAValue], outputs: list[SSAValue]) -> tuple:
    """Equal for two groups that compute the same thing on differently named inputs."""
    where: dict[SSAValue, str] = {v: f"in{i}" for i, v in enumerate(inputs)}
    rows = []
    for k, op in enumerate(ops):
        for j, r in enumerate(op.results):
            where[r] = f"op{k}.{j}"
        rows.append((
            op.name,
            tuple(where[v] for v in op.operands),
            tuple(str(r.type) for r in op.results),
            tuple(sorted((n, str(a)) for n, a in op.properties.items())),
        ))
    return (tuple(str(v.type) for v in inputs), tuple(rows), tuple(where[o] for o in outputs))


def _strip_layer_prefix(name: str | None, scope: str) -> str | None:
    if not name:
        return name
    for prefix in (scope + ".", scope.split(".", 1)[-1] + "."):
        if name.startswith(prefix):
            return name[len(prefix):]
    return name


def outline_layers(module: ModuleOp) -> ModuleOp:
    """Outline identical decoder layers of @main into functions; drop the scope tags."""
    main = next(op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == "main")
    block = main.body.block
    groups = _groups(block)
    if len({s for s, _ in groups}) != len(groups):
        groups = []  # a layer split into several runs: keep the model flat
    functions: dict[tuple, func.FuncOp] = {}
    rewriter = Rewriter()
    for scope, ops in groups:
        inputs, outputs = _interface(ops)
        sig = _signature(ops, inputs, outputs)
        callee = functions.get(sig)
        if callee is None:
            name = "decoder_layer" if not functions else f"decoder_layer_{len(functions)}"
            callee = _make_function(name, scope, ops, inputs, outputs)
            functions[sig] = callee
            rewriter.insert_op(callee, InsertPoint.before(main))
        call = func.CallOp(callee.sym_name.data, inputs, [o.type for o in outputs])
        rewriter.insert_op(call, InsertPoint.before(ops[0]))
        for old, new in zip(outputs, call.results):
            new.name_hint = old.name_hint
            old.replace_all_uses_with(new)
        for op in reversed(ops):
            rewriter.erase_op(op)
    for op in module.walk():
        op.attributes.pop(SCOPE_ATTR, None)
    return module


def _make_function(name: str, scope: str, ops, inputs, outputs) -> func.FuncOp:
    body = Block(arg_types=[v.type for v in inputs])
    mapper: dict[SSAValue, SSAValue] = {}
    for v, arg in zip(inputs, body.args):
        arg.name_hint = _strip_layer_prefix(v.name_hint, scope)
        mapper[v] = arg
    for op in ops:
        body.add_op(clone := op.clone(value_mapper=mapper))
        origin.strip_scope(clone, scope)
    body.add_op(func.ReturnOp(*[mapper[o] for o in outputs]))
    return func.FuncOp(name, ([v.type for v in inputs], [o.type for o in outputs]), Region(body))
