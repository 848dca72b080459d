"""`torch.compile(model, backend="deplo")`: Dynamo hands us an FX graph; we compile it with the
full pipeline and run it on the best available target.

    compiled = torch.compile(model, backend="deplo")
    compiled(x)                     # GPU if a driver is present, else the CPU runtime

The graph is re-exported with torch.export (non-strict) to get the same ATen graph `deplo
compile` imports, so both paths share one importer. `DEPLO_TARGET=cpu|gpu|interp` overrides
the target (interp runs the loop-level numpy interpreter: exact, slow, for ops the CUDA levels
do not cover yet). Registered through the `torch_dynamo_backends` entry point.

deplo compiles static shapes. A graph Dynamo hands over with symbolic sizes (`dynamic=True`, or
its automatic dynamic shapes once a second shape is seen) is compiled at each call's concrete
sizes instead, once per distinct set of shapes, dtypes and integer arguments; a Python float
argument Dynamo stops specializing (a second value seen) is compiled once per value.

With grad enabled and an input that requires it (a parameter in training), the outputs carry
gradients: PyTorch computes the backward by running the graph again eagerly (`_EagerBackward`).
"""

from __future__ import annotations

import copy
import os
import re
import sys
from collections.abc import Sequence

import torch


def best_target() -> str:
    from deplo.runtime.gpu import gpu_probe

    target = os.environ.get("DEPLO_TARGET")
    if target not in (None, "", "cpu", "gpu", "interp"):
        raise ValueError(f"DEPLO_TARGET={target}: expected cpu, gpu or interp")
    return target or ("gpu" if gpu_probe()[0] else "cpu")


def deplo_backend(gm: torch.fx.GraphModule, example_inputs: Sequence, **_):
    if written := _state_written(gm):  # (an optimizer step: deplo would drop the update)
        norm = any(re.search(r"running_(mean|var)|num_batches_tracked", w) for w in written)
        print(f"deplo: note: this graph writes {len(written)} tensor(s) of its state or inputs "
              f"in place ({', '.join(written[:4])}{', ...' if len(written) > 4 else ''}: an "
              "optimizer step, a training-mode BatchNorm's statistics); deplo compiles "
              "programs without side effects, so it runs eagerly"
              + (" (model.eval() compiles the BatchNorm as inference)" if norm else ""),
              file=sys.stderr)
        return gm.forward
    _user_module_paths(gm)
    forward = _without_grad_modes(gm)
    if any(_symbolic(a) for a in example_inputs) or _read_by_item(gm):
        return _differentiable(gm, _per_shape(forward))
    run = _static(forward, example_inputs)
    return gm.forward if run is None else _differentiable(gm, run)


def _without_grad_modes(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """`gm` for the forward deplo compiles: a `no_grad` block inside it (a target network's
    output) changes no value, and its grad-mode switches fail export's trace where an input
    requires grad. The gradients still come from `gm` as written (_EagerBackward)."""
    if not any(n.target is torch._C._set_grad_enabled for n in gm.graph.nodes):
        return gm
    graph = copy.deepcopy(gm.graph)
    for n in [n for n in graph.nodes if n.target is torch._C._set_grad_enabled]:
        graph.erase_node(n)
    return torch.fx.GraphModule(gm, graph)


_AUGMENTED = {f"i{op}" for op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow",
                                  "matmul", "and", "or", "xor", "lshift", "rshift")}
"""operator's in-place functions (`p += g`)."""


def _state_written(gm: torch.fx.GraphModule) -> list[str]:
    """The graph's state and inputs an in-place op writes (`p.add_(g)`, `torch._foreach_mul_`,
    `p += g`, `p[...] = v`, through views), by the user's names: its attributes (an
    optimizer's parameters and moments), the parameters and buffers Dynamo lifts as inputs (a
    step written by hand, a training-mode BatchNorm's running statistics) and the caller's
    tensors (`x.add_(1)`)."""
    attrs = {n for n in gm.graph.nodes if n.op in ("get_attr", "placeholder")}
    written = []
    for n in gm.graph.nodes:
        if n.op not in ("call_method", "call_function") or not n.args:
            continue
        name = _target_name(n)
        operator = getattr(n.target, "__module__", "") == "_operator"
        in_place = (name.endswith("_") and not name.endswith("__")
                    or operator and (name in _AUGMENTED or name == "setitem")
                    or isinstance(n.target, torch._ops.OpOverload)
                    and n.target._schema.is_mutable)
        if n.target is torch.nn.functional.batch_norm and n.kwargs.get(
                "training", n.args[5] if len(n.args) > 5 else False):  # its running statistics
            first = [n.kwargs.get("running_mean", n.args[1] if len(n.args) > 1 else None),
                     n.kwargs.get("running_var", n.args[2] if len(n.args) > 2 else None)]
        elif in_place:
            first = n.args[0] if isinstance(n.args[0], (list, tuple)) else [n.args[0]]
        else:
            continue
        for a in map(_viewed, first):
            name = _input_name(a) if a in attrs and a.op == "placeholder" else \
                getattr(a, "target", None)
            if a in attrs and name not in written:
                written.append(name)
    return written


_VIEWS = {"view", "reshape", "flatten", "unflatten", "view_as", "unsqueeze", "squeeze",
          "transpose", "t", "permute", "expand", "narrow", "select", "diagonal", "getitem",
          "as_strided", "detach", "unbind", "split", "chunk"}
"""Methods and functions whose result may share its input's storage (`p.view(-1).sub_(g)`
writes p)."""


def _target_name(n: torch.fx.Node) -> str:
    """A call's method or function name (`add_`, `_foreach_mul_`, `setitem`)."""
    return n.target if isinstance(n.target, str) else getattr(n.target, "__name__", "")


def _viewed(a):
    """The node whose storage `a` may view (itself where it is no view)."""
    while isinstance(a, torch.fx.Node) and a.op in ("call_method", "call_function") and a.args \
            and _target_name(a) in _VIEWS:
        a = a.args[0]
    return a


_ROOT = re.compile(r"^L\['[^']*'\]\.?")


def _user_module_paths(gm: torch.fx.GraphModule) -> None:
    """Module paths as the user's model names them (`enc.1`): Dynamo's start at the frame's
    variable (`L['self'].enc.1`), and the compiled module itself is `L['self']`, which export's
    stack leaves out."""
    for node in gm.graph.nodes:
        if stack := node.meta.get("nn_module_stack"):
            node.meta["nn_module_stack"] = {
                key: (ours, cls) for key, (path, cls) in stack.items()
                if (ours := _ROOT.sub("", path))}


_SOURCE = re.compile(r"L\['([^']*)'\]((?:\._(?:modules|parameters|buffers)\['[^']*'\])*)")


def _input_name(place: torch.fx.Node) -> str:
    """A graph input by the user's name: `x`, `bn.running_mean` (Dynamo's source
    `L['self']._modules['bn']._buffers['running_mean']`); else Dynamo's own (`L_x_`)."""
    source = getattr(place.meta.get("grapharg"), "source", None)
    name = getattr(source, "name", None)  # (a property; a method in older PyTorch)
    name = name() if callable(name) else name
    if not isinstance(name, str) or not (m := _SOURCE.fullmatch(name)):
        return place.target
    return ".".join(re.findall(r"\['([^']*)'\]", m[2])) or m[1]


def _traced_outputs(gm: torch.fx.GraphModule) -> list:
    """Dynamo's example value of each output of its graph (None where it has none)."""
    out = next(n for n in gm.graph.nodes if n.op == "output").args[0]
    return [getattr(o, "meta", {}).get("example_value")
            for o in (out if isinstance(out, (tuple, list)) else [out])]


def _differentiable(gm: torch.fx.GraphModule, run):
    """`run`, whose outputs carry gradients where PyTorch's would: a call with grad enabled
    and an input (a parameter, say) that requires it goes through `_EagerBackward`."""

    # the outputs autograd tracks, as Dynamo traced them (`x.detach() * 2` is not one)
    traced = [getattr(o, "requires_grad", True) for o in _traced_outputs(gm)]

    def call(*args):
        if torch.is_grad_enabled() and any(isinstance(a, torch.Tensor) and a.requires_grad
                                           for a in args):
            return _EagerBackward.apply(run, gm, traced, *args)
        return run(*args)

    return call


class _EagerBackward(torch.autograd.Function):
    """The forward is deplo's compiled program; the backward is PyTorch's: the graph run again
    eagerly on the saved inputs (recomputation, as activation checkpointing does), then
    autograd through it. deplo compiles inference programs, so training steps get correct
    gradients at the cost of one eager forward more."""

    @staticmethod
    def forward(ctx, run, gm, traced, *args):
        ctx.gm = _under_autocast(gm)  # (recomputed in the forward's autocast region)
        ctx.args = [None if isinstance(a, torch.Tensor) else a for a in args]
        ctx.save_for_backward(*[a for a in args if isinstance(a, torch.Tensor)])
        outputs = tuple(run(*args))
        ctx.mark_non_differentiable(*[o for o, t in zip(outputs, traced + [True] * len(outputs))
                                      if not o.is_floating_point() or not t])
        return outputs

    @staticmethod
    def backward(ctx, *grads):
        if torch.is_grad_enabled():  # create_graph=True: once_differentiable would return
            raise RuntimeError(  # first-order gradients that silently lack a graph
                "torch.compile(backend='deplo') gives first-order gradients only "
                "(create_graph=True / a gradient of a gradient)")
        wants = ctx.needs_input_grad[3:]  # (after run, gm and traced)
        saved = iter(ctx.saved_tensors)
        args = [next(saved).detach().requires_grad_(want) if n is None else n
                for n, want in zip(ctx.args, wants)]
        wanted = [a for a, want in zip(args, wants) if want]
        with torch.enable_grad():
            outputs = list(ctx.gm(*args))
        pairs = [(o, g) for o, g in zip(outputs, grads)
                 if isinstance(o, torch.Tensor) and o.requires_grad and g is not None]
        got = iter(torch.autograd.grad([o for o, _ in pairs], wanted, [g for _, g in pairs],
                                       allow_unused=True) if pairs else [None] * len(wanted))
        return (None, None, None, *[next(got) if want else None for want in wants])


def _symbolic(a) -> bool:
    """A SymInt argument, or a tensor whose sizes are symbolic."""
    if isinstance(a, torch.Tensor):
        return any(isinstance(n, torch.SymInt) for n in a.shape)
    return isinstance(a, (torch.SymInt, torch.SymFloat))


def _scalar(a):
    """A Python number of a SymInt / SymFloat argument (its value at this call)."""
    return float(a) if isinstance(a, torch.SymFloat) else int(a) if isinstance(a, torch.SymInt) \
        else a


_ITEM = {torch.ops.aten.item.default, torch.ops.aten._local_scalar_dense.default}


def _read_by_item(gm: torch.fx.GraphModule) -> list[int]:
    """The arguments only read through `.item()`: Dynamo's unspecialized floats (dynamic=True
    passes a layer norm's eps so), which torch.export would see as data-dependent."""
    places = [n for n in gm.graph.nodes if n.op == "placeholder"]
    return [i for i, p in enumerate(places) if p.users and all(
        (u.op == "call_method" and u.target == "item") or u.target in _ITEM for u in p.users)]


def _with_values(gm: torch.fx.GraphModule, values: dict[int, float]) -> torch.fx.GraphModule:
    """A copy of `gm` whose `.item()` reads of those arguments are their values at this call."""
    graph = copy.deepcopy(gm.graph)
    places = [n for n in graph.nodes if n.op == "placeholder"]
    for i, value in values.items():
        for item in list(places[i].users):
            for user in list(item.users):
                user.args = torch.fx.node.map_arg(user.args, lambda a: value if a is item else a)
                user.kwargs = torch.fx.node.map_arg(user.kwargs,
                                                    lambda a: value if a is item else a)
            graph.erase_node(item)
    return torch.fx.GraphModule(gm, graph)


class _Bound(torch.nn.Module):
    """The graph with its non-tensor arguments (Dynamo's SymInt sizes, now concrete) and the
    `fixed` ones bound: what torch.export takes, the other tensors only."""

    def __init__(self, gm: torch.fx.GraphModule, args: Sequence, fixed: set[int]):
        super().__init__()
        self.gm, self.args, self.fixed = gm, list(args), fixed

    def forward(self, *tensors: torch.Tensor):
        it = iter(tensors)
        return self.gm(*[next(it) if isinstance(a, torch.Tensor) and i not in self.fixed else a
                         for i, a in enumerate(self.args)])


def _per_shape(gm: torch.fx.GraphModule):
    """A runner compiling `gm` at each call's concrete sizes (cached by them, and by the
    values of arguments read by `.item()`)."""
    compiled: dict[tuple, object] = {}
    items = set(_read_by_item(gm))

    def run(*args):
        concrete = [a if isinstance(a, torch.Tensor) else _scalar(a) for a in args]
        values = {i: args[i].item() for i in items}
        key = tuple((tuple(a.shape), a.dtype, values.get(i)) if isinstance(a, torch.Tensor)
                    else a for i, a in enumerate(concrete))
        tensors = [a for i, a in enumerate(args) if isinstance(a, torch.Tensor) and i not in items]
        if key not in compiled:
            graph = _with_values(gm, values) if values else gm
            compiled[key] = _static(_Bound(graph, concrete, items), tensors)
        if compiled[key] is None:  # (deplo refused it: eager)
            return gm(*args)
        return compiled[key](*tensors)

    return run


class _Autocast(torch.nn.Module):
    """A graph run in an autocast region of its own."""

    def __init__(self, gm: torch.nn.Module, device: str, dtype: torch.dtype):
        super().__init__()
        self.gm, self.device, self.dtype = gm, device, dtype

    def forward(self, *args):
        with torch.autocast(self.device, dtype=self.dtype):
            return self.gm(*args)


def _under_autocast(gm: torch.nn.Module) -> torch.nn.Module:
    """`gm` as the caller runs it: Dynamo hands over a graph called under the caller's autocast
    with its ops as written (export's trace does not see the casts autocast makes below it),
    so the region is made the graph's own, which export records as inside a function."""
    for device in ("cpu", "cuda"):
        if torch.is_autocast_enabled(device):
            return _Autocast(gm, device, torch.get_autocast_dtype(device))
    return gm


def _static(gm: torch.nn.Module, example_inputs: Sequence[torch.Tensor]):
    """The runner of `gm` compiled at the example inputs' sizes; None, said on stderr, where
    deplo refuses the graph (an op it does not support, dropout in training mode): torch.compile
    promises eager's results, so that graph runs eagerly."""
    from deplo.frontend.errors import FrontendError

    try:
        return _compiled_runner(gm, example_inputs)
    except FrontendError as e:
        print(f"deplo: note: {str(e).splitlines()[0]}; this graph runs eagerly", file=sys.stderr)
        return None


def _compiled_runner(gm: torch.nn.Module, example_inputs: Sequence[torch.Tensor]):
    from deplo.frontend.importer import import_module
    from deplo.tools.api import Compiled
    from deplo.tools.tune_cmd import tuned_schedule

    names = None
    if isinstance(gm, torch.fx.GraphModule):
        places = [n for n in gm.graph.nodes if n.op == "placeholder"]
        names = [_input_name(n) for n in places]
        if len(set(names)) < len(names):  # (`weight`, an input, and a module's: Dynamo's)
            names = [n.target for n in places]
    # (detached: a tensor marked dynamic, `mark_dynamic`, would make export's sizes symbolic)
    program = import_module(_under_autocast(gm), [a.detach() for a in example_inputs], names)
    # Dynamo's dtypes: its graph of an autocast region exports with the region's bf16 output
    # cast to float32 (the values bf16's)
    seen = [getattr(o, "dtype", None) for o in _traced_outputs(
        gm.gm if isinstance(gm, _Bound) else gm)]
    if len(seen) == len(program.output_dtypes):
        program.output_dtypes = [s if s is not None and s.is_floating_point
                                 and d.is_floating_point else d
                                 for s, d in zip(seen, program.output_dtypes)]
    target = best_target()
    compiled = Compiled(program, 0, tuned_schedule(None, None))  # the default store's plans
    compiled.runner(target)  # (built now: a compile error surfaces here)

    def run(*args: torch.Tensor):
        return tuple(compiled.torch_run(args, target))

    return run
