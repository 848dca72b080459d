"""torch.export graph -> Torch IR (`func.func @main` with torch.* ops).

The exported program's placeholders become `@main`'s arguments, user inputs first and then the
parameters and buffers, each named after its module path (`%rmsnorm.weight`). Each ATen call
becomes one torch op through `CONVERTERS`; an ATen op that is not in that table is an error
naming the op and the line of the user's code it came from, never a silent fallback.
"""

from __future__ import annotations

import contextlib
import io
import linecache
import logging
import re
import sys
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch.export.graph_signature import InputKind, OutputKind
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from deplo import origin
from deplo.frontend import expr as expr_module
from deplo.frontend.aten import (
    ATEN_CONVERTERS,
    REFUSED,
    Importer,
    refusal,
    result_type,
    tensor_type,
    where_from,
    wrap_uint8,
)
from deplo.frontend.bounds import check_indices, index_bounds, static_index_error
from deplo.frontend.decompose import decompose_unsupported
from deplo.frontend.dtypes import to_numpy
from deplo.frontend.errors import FrontendError, UnsupportedOpError
from deplo.frontend.fold import SDPA, StaticEvaluator, fold_causal_mask
from deplo.frontend.layers import SCOPE_ATTR, layer_scope, outline_layers
from deplo.frontend.special import SPECIAL_CONVERTERS

CONVERTERS = {**ATEN_CONVERTERS, **SPECIAL_CONVERTERS}
"""Every ATen op deplo converts: frontend/aten.py's, and the special functions of
frontend/special.py (built from aten.py's helpers)."""


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
    input_dtypes: list[torch.dtype] = field(default_factory=list)  # bf16 inputs cross as float32
    output_dtypes: list[torch.dtype] = field(default_factory=list)  # uint8 ones come back in int16
    output_spec: Any = field(default=None, repr=False)  # the module's output structure (pytree)
    _bounds: list | None = field(default=None, repr=False)  # index_bounds, on the first call

    def check_inputs(self, inputs: Sequence) -> None:
        """Before a run: TypeError for a torch tensor of another dtype than its example's, or a
        numpy array of another kind (float, integer, bool; the runtimes would convert either
        silently: 1.5 to 1), and eager's IndexError for an index input past its table, which
        the kernels would read past (frontend/bounds.py)."""
        for k, (x, example) in enumerate(zip(inputs, self.example_inputs)):
            want = self.input_dtypes[k] if k < len(self.input_dtypes) else None
            if x is None:
                raise TypeError(f"input {k} ('{self.input_names[k]}') is None, the example was "
                                "a tensor")
            if isinstance(x, torch.Tensor) and x.device.type == "meta":
                raise TypeError(f"input {k} ('{self.input_names[k]}') is a meta tensor: it has "
                                "a shape but no values to run on")
            if example is not None and tuple(np.shape(x)) != tuple(np.shape(example)):
                raise ValueError(f"input {k} ('{self.input_names[k]}') has shape "
                                 f"{tuple(np.shape(x))}, the example {tuple(np.shape(example))}:"
                                 " deplo compiled the program for the example's shapes")
            if isinstance(x, torch.Tensor):
                got = x.dtype
            else:  # (numpy: any width of the example's kind)
                got, want = np.asarray(x).dtype, example.dtype if example is not None else None
            if want is None or got == want or not isinstance(x, torch.Tensor) \
                    and _kind(got) == _kind(want):
                continue
            raise TypeError(f"input {k} ('{self.input_names[k]}') is {got}, the example was "
                            f"{want}: deplo compiled the program for the example's dtypes")
        if self._bounds is None:
            self._bounds = index_bounds(self.module, len(self.input_names))
        check_indices(self._bounds, inputs, self.input_names)

    def as_outputs(self, outs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """A run's results with uint8 outputs back in uint8 (carried in int16: dtypes.py)."""
        kinds = self.output_dtypes or [None] * len(outs)
        return [np.asarray(o).astype(np.uint8) if d == torch.uint8 else o
                for o, d in zip(outs, kinds, strict=False)]

    def torch_outputs(self, outs: Sequence[np.ndarray]) -> list[torch.Tensor]:
        """A run's results as torch tensors in the program's output dtypes (bf16 comes back from
        the runtimes as float32, uint8 as int16)."""
        kinds = self.output_dtypes or [None] * len(outs)
        tensors = (torch.from_numpy(np.array(o, order="C")) for o in self.as_outputs(outs))
        return [t if d is None or t.dtype == d else t.to(d) for t, d in zip(tensors, kinds)]

    def torch_inputs(self, inputs: Sequence[np.ndarray], float64: bool = False
                     ) -> list[torch.Tensor]:
        """`inputs` as torch tensors in the captured dtypes (bf16 inputs cross as float32);
        `float64`: the floating ones widened."""
        dtypes = self.input_dtypes or [None] * len(inputs)
        if float64:
            dtypes = [torch.float64 if d is None or d.is_floating_point else d for d in dtypes]
        args = [torch.from_numpy(np.array(a, order="C")) for a in inputs]
        return [a if d is None or (float64 and not a.is_floating_point()) else a.to(d)
                for a, d in zip(args, dtypes, strict=False)]

    def reference(self, inputs: Sequence[np.ndarray], float64: bool = False,
                  rounded: bool = False) -> list[np.ndarray]:
        """PyTorch eager on the same inputs (in the captured dtypes): the oracle for every level.
        `float64`: the same program computed in float64 (the module widened in place and
        narrowed back after, both exact; floating inputs widened), the yardstick for how close
        half-precision results are to the exact ones; with `rounded`, each op's result rounded to
        float32 (`_Widened`)."""
        module = self.torch_module
        if float64:
            kept = {n: t.dtype for n, t in (*module.named_parameters(), *module.named_buffers())
                    if t.is_floating_point()}
            module.double()
        try:
            with torch.no_grad(), evaluating(module), _StableRanking(), \
                    _Widened(rounded) if float64 else contextlib.nullcontext():
                out = module(*self.torch_inputs(inputs, float64))
        except Exception as e:  # (the user's program may raise anything)
            if float64:  # (a second opinion the caller does without)
                raise
            raise FrontendError(f"PyTorch eager, the reference, raises on these inputs: "
                                f"{type(e).__name__}: {e}") from None
        finally:
            if float64:
                _narrow(module, kept)
        outs = torch.utils._pytree.tree_leaves(out)  # (a tuple of max's (values, indices))
        for k, o in enumerate(outs):
            if not isinstance(o, torch.Tensor):
                raise FrontendError(f"output {k} of the program is a {type(o).__name__}, not a "
                                    "tensor: the comparison takes tensor outputs only")
        return [to_numpy(o) for o in outs]


def _kind(dtype: np.dtype) -> str:
    """f (floats), i (integers, signed or not) or b (bool)."""
    return {"u": "i"}.get(dtype.kind, dtype.kind)


@contextlib.contextmanager
def evaluating(module: torch.nn.Module):
    """`module` in eval mode, what deplo compiles (dropout off, batch norm's running
    statistics), and back in the user's mode and buffers after: a forward that updates a buffer
    (a call counter) would otherwise move with every export and eager run, each reference a
    different program (deplo compiles the update away). A Hugging Face model's `use_cache` is
    off meanwhile: its forward would return a KV cache object, not tensors (`deplo generate`
    compiles the decode step with its cache as tensors)."""
    # each module's own mode back: a batch norm frozen in eval inside a training model, a
    # callable's fresh wrapper (training) around the user's model in eval
    modes = [(m, m.training) for m in module.modules()]
    buffers = {name: b.detach().clone() for name, b in module.named_buffers()}
    configs = {id(c): c for m in module.modules()
               if getattr(c := getattr(m, "config", None), "use_cache", None) is True}
    module.eval()
    for c in configs.values():
        c.use_cache = False
    try:
        yield module
    finally:
        for m, training in modes:
            m.training = training
        for c in configs.values():
            c.use_cache = True
        with torch.no_grad():
            for name, b in module.named_buffers():
                if name in buffers and b.shape == buffers[name].shape:
                    b.copy_(buffers[name])


def _training_dependent(module: torch.nn.Module) -> str:
    """The submodules in training mode whose output eval mode changes (batch norm, instance norm
    with running statistics, dropout), named as one phrase; "" when there are none."""
    norms = (torch.nn.modules.batchnorm._BatchNorm, torch.nn.modules.instancenorm._InstanceNorm)
    # (a callable's wrapper, tools/api.py, holds the user's module as `fn` or `reached.N`)
    names = [re.sub(r"^(fn|reached\.\d+)(\.|$)", "", name)
             for name, m in module.named_modules() if m.training and (
                 isinstance(m, norms) and m.track_running_stats
                 or isinstance(m, torch.nn.modules.dropout._DropoutNd) and m.p > 0)]
    if not names:
        return ""
    shown = ", ".join(f"'{n}'" if n else "the module" for n in names[:3])
    more = f" and {len(names) - 3} more" if len(names) > 3 else ""
    return f"{shown}{more} {'is' if len(names) == 1 else 'are'}"


def _narrow(module: torch.nn.Module, dtypes: dict[str, torch.dtype]) -> None:
    """Parameters and buffers back to their dtypes (`.double()` replaced the buffers)."""
    for name, p in module.named_parameters():
        if name in dtypes:
            p.data = p.data.to(dtypes[name])
    for name, b in list(module.named_buffers()):
        if name in dtypes:
            owner, _, leaf = name.rpartition(".")
            (module.get_submodule(owner) if owner else module)._buffers[leaf] = b.to(dtypes[name])


class _Widened(torch.overrides.TorchFunctionMode):
    """Every floating dtype a program names (`.to(torch.bfloat16)`, `softmax(dtype=...)`) read
    as float64: the program's float64 twin for Program.reference(float64=True). `rounded`: each
    call's floating results rounded to float32 (still held as float64), so every op reads the
    fp32 values an fp32 program's op reads: each op exact, its result correctly rounded."""

    def __init__(self, rounded: bool = False):
        super().__init__()
        self.rounded = rounded

    def __torch_function__(self, func, types, args=(), kwargs=None):
        def widen(v):
            return torch.float64 if isinstance(v, torch.dtype) and v.is_floating_point else v

        out = func(*map(widen, args), **{k: widen(v) for k, v in (kwargs or {}).items()})
        if not self.rounded:
            return out
        return torch.utils._pytree.tree_map_only(
            torch.Tensor, lambda t: t.float().double() if t.dtype == torch.float64 else t, out)


class _StableRanking(torch.overrides.TorchFunctionMode):
    """sort, argsort, topk, kthvalue and median as deplo ranks (frontend/aten.py `_ranked`):
    equal keys in index order. PyTorch leaves their order unspecified (its CPU sort is not
    stable past 16 elements, kthvalue and median partition), so a reference with ties would
    differ in its indices, not in its values."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if func in (torch.topk, torch.Tensor.topk):
            return _stable_topk(*args, **kwargs)
        if func in (torch.kthvalue, torch.Tensor.kthvalue):
            return _stable_pick(torch.return_types.kthvalue, *args, **kwargs)
        if func in (torch.median, torch.Tensor.median, torch.nanmedian, torch.Tensor.nanmedian) \
                and (len(args) > 1 or "dim" in kwargs):
            return _stable_pick(func, *args, **kwargs)
        if func in (torch.sort, torch.Tensor.sort, torch.argsort, torch.Tensor.argsort):
            # (the overload with `stable` takes dim and descending by keyword only)
            x, *rest = args
            kwargs |= dict(zip(("dim", "descending"), rest)) | {"stable": True}
            return func(x, **kwargs)
        return func(*args, **kwargs)


def _stable_topk(x, k, dim=-1, largest=True, sorted=True):  # noqa: A002 (topk's own name)
    values, indices = torch.sort(x, dim=dim, descending=largest, stable=True)
    return torch.return_types.topk((values.narrow(dim, 0, k), indices.narrow(dim, 0, k)))


def _stable_pick(kind, x, *args, dim=-1, keepdim=False, **kwargs):
    """kthvalue(x, k, dim, keepdim), median / nanmedian(x, dim, keepdim) from a stable sort:
    the k-th; the middle, or a row's first NaN (median); the middle of the numbers, or of all
    when a row has none (nanmedian)."""
    if kind is torch.return_types.kthvalue:
        k, args = (args[0], args[1:]) if args else (kwargs.pop("k"), ())
    args = dict(zip(("dim", "keepdim"), args))
    dim, keepdim = args.get("dim", dim), args.get("keepdim", keepdim)
    values, indices = torch.sort(x, dim=dim, stable=True)
    n = x.shape[dim] if x.dim() else 1
    nan = x.isnan()
    if kind is torch.return_types.kthvalue:
        at = torch.full_like(values.narrow(dim, 0, 1), k - 1, dtype=torch.long)
    elif kind in (torch.median, torch.Tensor.median):
        at = torch.full_like(values.narrow(dim, 0, 1), (n - 1) // 2, dtype=torch.long)
    else:
        numbers = (~nan).sum(dim, keepdim=True)
        at = (torch.where(numbers == 0, n, numbers) + 1) // 2 - 1
    index = indices.gather(dim, at)
    if kind in (torch.median, torch.Tensor.median):
        index = torch.where(nan.any(dim, keepdim=True), nan.to(torch.uint8).argmax(dim, True),
                            index)
    value = x.gather(dim, index)
    if not keepdim:
        value, index = value.squeeze(dim), index.squeeze(dim)
    out = torch.return_types.kthvalue if kind is torch.return_types.kthvalue else (
        torch.return_types.median if kind in (torch.median, torch.Tensor.median)
        else torch.return_types.nanmedian)
    return out((value, index))


@dataclass
class Imported:
    module: ModuleOp
    input_names: list[str]
    param_names: list[str]  # parameters and buffers that stay arguments
    constants: dict[str, np.ndarray]  # folded tensors, arguments after the parameters
    output_dtypes: list[torch.dtype] = field(default_factory=list)


def ssa_name(name: str) -> str:
    """A valid SSA name hint for a module path: `0.weight` (nn.Sequential) is `%_0.weight`;
    the real name stays in `param_names`."""
    name = re.sub(r"[^\w$.-]", "_", name)
    return name if re.match(r"[A-Za-z_$.-]", name) else "_" + name


def _refuse_input_updates(ep: torch.export.ExportedProgram, placeholders: list[str],
                          names: list[str]) -> None:
    """An input updated in place (`y.mul_(2)`) is a side effect a compiled program cannot have:
    refused, naming the input (it came back as an extra output). Export records it in the output
    specs once functional, as an in-place op on the input before."""
    updated = _written(ep, placeholders, OutputKind.USER_INPUT_MUTATION)
    if updated:
        at = placeholders.index(updated[0]) if updated[0] in placeholders else None
        which = f"{at} ('{names[at]}')" if at is not None else f"'{updated[0]}'"
        fix = "training-mode BatchNorm updates its running statistics, which deplo does not " \
            "support yet; model.eval() runs it as inference" \
            if re.search(r"running_(mean|var)|num_batches_tracked", which) \
            else "return the new value instead"
        raise FrontendError(f"the program updates its input {which} in place; values are "
                            f"immutable here ({fix})")


def _written(ep: torch.export.ExportedProgram, placeholders: list[str], kind: OutputKind
             ) -> list[str]:
    """The placeholders written in place: recorded in the output specs as `kind` once
    functional, an in-place op on the placeholder before."""
    updated = [s.target for s in ep.graph_signature.output_specs if s.kind == kind]
    for n in ep.graph_module.graph.nodes:
        if n.op == "call_function" and isinstance(n.target, torch._ops.OpOverload):
            updated += [a.name for a, arg in zip(n.args, n.target._schema.arguments)
                        if isinstance(a, torch.fx.Node) and a.name in placeholders
                        and arg.alias_info is not None and arg.alias_info.is_write]
    return updated


def _say_buffer_updates(ep: torch.export.ExportedProgram) -> None:
    """A forward that updates a buffer in place (a call counter) compiles without the update:
    said, naming the buffers."""
    specs = {s.arg.name: s.target for s in ep.graph_signature.input_specs
             if s.kind == InputKind.BUFFER}
    updated = dict.fromkeys(specs.get(n, n) for n in _written(
        ep, list(specs), OutputKind.BUFFER_MUTATION))
    if updated:
        print(f"deplo: warning: the forward updates {', '.join(map(repr, updated))} in place; "
              "deplo compiles it without the update (each call reads the buffer as it was)",
              file=sys.stderr)


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
    # (a custom object, a torch.Generator, is no value of the program: what reads it is refused)
    weights = [n for n in placeholders
               if specs[n.name].kind not in (InputKind.USER_INPUT, InputKind.CUSTOM_OBJ)]
    names = list(input_names) if input_names else [n.name for n in user]

    _refuse_input_updates(ep, [n.name for n in user], names)
    _say_buffer_updates(ep)
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
        arg.name_hint = ssa_name(name)

    results: list[SSAValue] = []
    output_dtypes: list[torch.dtype] = []
    for node in gm.graph.nodes:
        if node.op == "call_function":
            if "_assert" in str(node.target) or ev.try_fold(node):
                continue
            if node.target is SDPA:
                fold_causal_mask(node, ev)
            if (bad := static_index_error(node, ev.values)) is not None:
                raise FrontendError(f"'{node.target}': {bad} {where_from(node)}")
            convert = CONVERTERS.get(node.target)
            if convert is None:
                why = f" ({reason})" if (reason := refusal(node.target)) else ""
                raise UnsupportedOpError(
                    f"unsupported PyTorch op '{node.target}'{why} {where_from(node)}", node.target
                )
            last = im.block.last_op
            if any(not isinstance(n, int) for v in torch.utils._pytree.tree_leaves(
                    node.meta.get("val")) if isinstance(v, torch.Tensor) for n in v.shape):
                raise UnsupportedOpError(
                    f"unsupported PyTorch op '{node.target}' (its result's shape depends on the "
                    f"values of its inputs: boolean-mask indexing, nonzero, repeat_interleave "
                    f"by a tensor) {where_from(node)}", node.target)
            im.node = node
            try:
                value = convert(im, node, result_type(node.meta["val"]))
            except FrontendError as e:  # (which op it was about: import_module's fallback)
                e.op = getattr(e, "op", None) or node.target
                raise
            finally:
                im.node = None
            if getattr(node.meta["val"], "dtype", None) == torch.uint8:
                value = wrap_uint8(im, value)
            im.values[node] = value
            # every op the converter built (constants, dtype conversions too) carries the
            # node's origin and joins its layer's scope
            first = last.next_op if last is not None else im.block.first_op
            built = []
            while first is not None:
                built.append(first)
                first = first.next_op
            origin.tag(built, origin.describe(node, expr_module.__file__))
            if (scope := layer_scope(node)) is not None:
                for op in built:
                    op.attributes[SCOPE_ATTR] = StringAttr(scope)
        elif node.op == "output":
            outs = node.args[0]
            outs = outs if isinstance(outs, (tuple, list)) else [outs]
            kinds = [s.kind for s in ep.graph_signature.output_specs]
            # (a buffer's update, BatchNorm's running statistics in training mode, is dropped)
            user = [o for o, k in zip(outs, kinds, strict=True) if k == OutputKind.USER_OUTPUT]
            for i, o in enumerate(user):
                if not isinstance(o, torch.fx.Node):  # x.shape, a Python number: not a program
                    raise FrontendError(
                        f"output {i} of the program is a Python {type(o).__name__} ({o!r}), "
                        f"not a tensor: deplo compiles tensor programs (torch.tensor({o!r}) "
                        f"is one)")
            results = [im.value(o) for o in user]
            output_dtypes = [o.meta["val"].dtype for o in user]
        elif node.op not in ("placeholder",):
            raise FrontendError(f"unsupported graph node {node.op} {node.target}")
    im.builder.insert(func.ReturnOp(*results))
    arg_types = [a.type for a in block.args]
    fn = func.FuncOp("main", (arg_types, [r.type for r in results]), Region(block))
    module = ModuleOp([fn])
    try:
        module.verify()
    except VerifyException as e:  # a converter's gap: one line and the op, not the module
        raise FrontendError(f"the imported program does not verify: {e}{origin.marked_op(e)}"
                            ) from None
    return Imported(module, names, param_names, im.constants, output_dtypes)


def import_module(
    module: torch.nn.Module,
    example_inputs: Sequence[torch.Tensor],
    input_names: Sequence[str] | None = None,
    called: Callable | None = None,
) -> Program:
    """Export `module` on the example inputs (no_grad, non-strict, in eval mode: `evaluating`)
    and import it. A tensor passed twice is two inputs (export would alias them: one argument
    read for both).
    `called`: the function `module` wraps (deplo.compile of a callable), whose ops are then
    placed in it."""
    seen: set[int] = set()
    example_inputs = [t.clone() if id(t) in seen or seen.add(id(t)) else t for t in example_inputs]
    if moded := _training_dependent(module):
        print(f"deplo: warning: {moded} in training mode; deplo compiles inference (eval "
              "mode: batch norm's running statistics, no dropout), and --check's reference "
              "runs so too. Call .eval() first to say so.", file=sys.stderr)
    with evaluating(module):
        ep = export(module, example_inputs)
    if called is not None:
        _place_in(ep, called)
    # remove_duplicate=False: a tied weight (lm_head = embed_tokens) is one tensor under two
    # names, and export may name it by either
    # (copies: folding runs the graph's in-place ops, a counter's add_, on them)
    buffers = {k: b.detach().clone() for k, b in module.named_buffers(remove_duplicate=False)}
    try:
        imported = import_exported(ep, input_names, buffers)
    except UnsupportedOpError as first:  # PyTorch's decompositions of what has no converter
        if first.op in REFUSED:  # (a random op may decompose: dropout2d in eval mode)
            raise
        ops = {n.target for n in ep.graph_module.graph.nodes if n.op == "call_function"}
        try:
            ep = _decomposed(ep)
            imported = import_exported(ep, input_names, buffers)
        except FrontendError as again:  # about an op of the user's program, or the first error
            if getattr(again, "op", None) in ops:
                raise
            # (what a decomposition left, diagonal's as_strided, is named second; with more
            # than one op lacking a converter, the first need not be the one that failed)
            lacking = sorted(str(op) for op in ops
                             if op not in CONVERTERS and "_assert" not in str(op))
            also = f" (no converter of their own: {', '.join(lacking)})" if len(lacking) > 1 else ""
            raise UnsupportedOpError(f"{first}; after PyTorch's decompositions: {again}{also}",
                                     first.op) from None
    imported.module = outline_layers(imported.module)
    constants = {k: v for k, v in ep.constants.items() if isinstance(v, torch.Tensor)}
    state = dict(module.named_parameters(remove_duplicate=False)) | buffers | constants
    params = [to_numpy(state[n]) for n in imported.param_names] + list(imported.constants.values())
    inputs = [to_numpy(t) for t in example_inputs]
    return Program(imported.module, imported.input_names,
                   imported.param_names + list(imported.constants), params, inputs, module,
                   input_dtypes=[t.dtype for t in example_inputs],
                   output_dtypes=imported.output_dtypes, output_spec=ep.call_spec.out_spec)


def _place_in(ep: torch.export.ExportedProgram, fn: Callable) -> None:
    """Export records no frame inside a plain function a module's forward calls: its ops stood
    at our wrapper's call (tools/api.py), where error messages and kernel origins sent the
    user. Each op's stack gets the function's own definition as its innermost frame."""
    code = getattr(fn, "__code__", None)
    frame = None  # a builtin (torch.argsort): no source of its own, and not our wrapper's
    if code is not None:
        text = linecache.getline(code.co_filename, code.co_firstlineno).strip()
        frame = f'File "{code.co_filename}", line {code.co_firstlineno}, in {code.co_name}\n' \
                f"    {text}"
    for node in ep.graph_module.graph.nodes:
        if node.op == "call_function":
            node.meta["stack_trace"] = frame


def _decomposed(ep: torch.export.ExportedProgram) -> torch.export.ExportedProgram:
    """`ep` through PyTorch's decompositions of its ops without a converter (only when one was
    met: a model whose ops all convert is imported as exported, its shape-only ops folded)."""
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (torch's own deprecations, printed to the user)
            return decompose_unsupported(ep, CONVERTERS, REFUSED)
    except Exception as e:  # noqa: BLE001 - torch's tracing may raise anything
        first = (str(e).splitlines() or [""])[0]  # (torch's may hold a whole graph)
        raise FrontendError(f"decomposing ops deplo has no converter for failed: "
                            f"{type(e).__name__}: {first[:120]}"
                            f"{'...' if len(first) > 120 else ''}") from None


def _user_line(text: str) -> str:
    """` (at FILE:LINE ...)` from torch.export's "Caused by: (...)" note, when it has one."""
    m = re.search(r"Caused by: \(([^)]*)\)", text)
    return f" (at {m.group(1)})" if m else ""


def _inline_regions(ep):
    """An exported program whose autocast / grad-mode regions (higher-order ops) are inlined.
    Its dtype assertions go first: exporting Dynamo's graph records the region's output as
    float32 where autocast made it bf16, an assertion that would fail the retrace."""
    for node in list(ep.graph.nodes):
        if node.target is torch.ops.aten._assert_tensor_metadata.default and not node.users:
            ep.graph.erase_node(node)
    ep.graph_module.recompile()
    with warnings.catch_warnings():  # (torch's own pytree deprecation notice)
        warnings.simplefilter("ignore", FutureWarning)
        return ep.run_decompositions({})


def export(module: torch.nn.Module, example_inputs: Sequence[torch.Tensor]):
    """torch.export, non-strict, under no_grad; a failure is one FrontendError. What the trace
    writes to stderr is passed on when it succeeds; on a failure it is dropped (torch logs a
    traceback, and a GraphModule prints its code, before raising: the error says it in one)."""
    logs = [logging.getLogger(n) for n in ("torch._subclasses.fake_tensor", "torch.export",
                                           "torch._export", "torch.fx.experimental.symbolic_shapes")]
    levels = [log.level for log in logs]
    for log in logs:
        log.setLevel(logging.CRITICAL)
    err = io.StringIO()
    try:
        with torch.no_grad(), contextlib.redirect_stderr(err):
            ep = torch.export.export(module, tuple(example_inputs), strict=False)
            targets = [n.target for n in ep.graph.nodes]
            if any(isinstance(t, torch._ops.HigherOrderOperator)
                   or isinstance(t, torch._ops.OpOverload) and t._schema.is_mutable
                   for t in targets) and not any(t in REFUSED for t in targets):
                # an autocast or set_grad_enabled region, or an in-place op
                # (`y.diagonal().fill_(9)` writes y through a view): the ATen ops it runs
                # (casts), functional (diagonal_scatter); a refused one keeps its own reason
                ep = _inline_regions(ep)
        sys.stderr.write(err.getvalue())
        return ep
    except Exception as e:  # noqa: BLE001 - the user's code may raise anything
        text = str(e)
        if "nbacked" in text or "data-dependent" in text:  # `if (x < 0).any(): raise ...`
            first = text.strip().splitlines()[0]
            raise FrontendError(f"torch.export failed: a value depends on tensor contents "
                                f"(data-dependent control flow or shape; deplo compiles "
                                f"programs whose control flow depends on shapes only): "
                                f"{type(e).__name__}: {first}{_user_line(text)}") from None
        raise FrontendError(f"torch.export failed: {type(e).__name__}: {e}") from None
    finally:
        for log, level in zip(logs, levels):
            log.setLevel(level)
