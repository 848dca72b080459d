"""The Python API, mirroring the CLI.

    import deplo
    c = deplo.compile(torch.nn.RMSNorm(64), [torch.randn(4, 64)])    # a module or callable
    c = deplo.compile("torch.relu(torch.randn(8, 8))")                # or an expression
    print(c.text("loop"))               # IR at any level: torch, tensor, loop, tile, kernel, cuda
    print(c.cuda_source)                # the .cu
    y = c(x)                            # as the module: torch tensors in and out (CPU runtime)
    out = c.run()                       # fresh random inputs (then the weights), as numpy
    cmp = c.check(target="cpu")         # against PyTorch eager
    plans = c.plans()                   # every kernel's plan, as a plan file (a dict)
    c = deplo.compile(m, [x], schedule=plans)   # pinned: a dict, its JSON text or a path
"""

from __future__ import annotations

import inspect
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from torch.utils import _pytree as pytree
from xdsl.dialects.builtin import ModuleOp

from deplo.frontend.dtypes import to_numpy
from deplo.frontend.errors import FrontendError
from deplo.frontend.expr import capture_expression
from deplo.frontend.importer import Program, import_module
from deplo.passes.pipeline import split_spec
from deplo.runtime.check import Comparison, check_program
from deplo.tools.driver import LEVELS, passes_to, run_passes


class _CallableModule(torch.nn.Module):
    """A callable as the module export takes, or a module called with numbers or containers
    among its example inputs (`given`): the tensors anywhere in them (a dict's, a list's) are
    the program's inputs, in pytree order; the rest is bound, the program's constants. A module
    `fn` is a submodule, so its weights stay weights and eval mode reaches it."""

    def __init__(self, fn: Callable, given: list | None = None):
        super().__init__()
        self.fn, self.given = fn, given
        if given is not None:
            self.leaves, self.spec = pytree.tree_flatten(given)
        if not isinstance(fn, torch.nn.Module):  # a lambda over a model: eval mode, float64
            self.reached = torch.nn.ModuleList(_modules_reached(fn))  # widening reach them

    def forward(self, *xs):
        if self.given is None:
            return self.fn(*xs)
        it = iter(xs)
        leaves = [next(it) if isinstance(x, torch.Tensor) else x for x in self.leaves]
        return self.fn(*pytree.tree_unflatten(leaves, self.spec))

    def tensors_of(self, args: Sequence) -> list:
        """The tensors of a call's arguments, structured as the example inputs were: the
        program's inputs. Another structure, or another value where one was bound, is refused
        (the program holds the example's)."""
        leaves, spec = pytree.tree_flatten(_ordered_like(list(args), self.given))
        if spec != self.spec:
            raise TypeError("the compiled program takes arguments structured as its example "
                            "inputs were (the same containers, keys and lengths)")
        for x, bound in zip(leaves, self.leaves):
            if not isinstance(bound, torch.Tensor) and (
                    type(x) is not type(bound) or not (x is bound or x == bound)):
                raise TypeError(f"{bound!r} is bound into the compiled program, got {x!r}: "
                                "compile again for another value")
        return [x for x in leaves if isinstance(x, torch.Tensor)]


def _ordered_like(x, example):
    """`x` with each dict's keys in the order of the example's (a dict's key order is no part
    of its structure to the module)."""
    if isinstance(x, dict) and isinstance(example, dict) and x.keys() == example.keys():
        return type(x)((k, _ordered_like(x[k], example[k])) for k in example)
    if isinstance(x, list | tuple) and isinstance(example, list | tuple) \
            and len(x) == len(example) and not hasattr(x, "_fields"):
        return type(x)(_ordered_like(a, b) for a, b in zip(x, example))
    return x


def _modules_reached(fn: Callable) -> list[torch.nn.Module]:
    """The nn.Modules a function names: its closure's, the globals its code reads, and the
    module whose method it is."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return []
    cells = []
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            cells.append(cell.cell_contents)
        except ValueError:  # a cell not yet filled
            continue
    named = [getattr(fn, "__globals__", {}).get(n) for n in code.co_names]
    owner = [getattr(fn, "__self__", None)]  # a module's method (model.generate_step)
    return list({id(m): m for m in (*owner, *cells, *named)
                 if isinstance(m, torch.nn.Module)}.values())


def capture(program, example_inputs: Sequence[torch.Tensor] | None = None, seed: int | None = None) -> Program:
    """Torch IR for an expression string, an nn.Module or a callable (with example inputs)."""
    if isinstance(program, str):
        c = capture_expression(program, seed=seed)
        return import_module(c.module, c.example_inputs, c.input_names)
    if not callable(program):
        raise TypeError(f"expected an expression string, an nn.Module or a callable, got "
                        f"{type(program).__name__}")
    if example_inputs is None:
        raise ValueError("a module or callable needs example inputs")
    if isinstance(example_inputs, dict):
        raise TypeError("example inputs are positional: a tensor, or a list or tuple of "
                        "them (for keyword arguments, compile `lambda ids: model(input_ids="
                        "ids)`)")
    given = [example_inputs] if isinstance(example_inputs, torch.Tensor) else list(example_inputs)
    flat = all(isinstance(x, torch.Tensor) for x in given)
    tensors = [x for x in pytree.tree_leaves(given) if isinstance(x, torch.Tensor)]
    module = isinstance(program, torch.nn.Module)
    if module and flat:
        return import_module(program, tensors)
    bound = None if flat else given  # numbers (a scale, a flag) bound, containers taken apart
    return import_module(_CallableModule(program, bound), tensors,
                         _parameter_names(program, len(tensors)) if flat else None,
                         called=None if module else program)


def _parameter_names(fn: Callable, n: int) -> list[str] | None:
    """The names of a callable's first `n` parameters, for its inputs (`fn(x, mask)`: 'x' and
    'mask'; export would name them after our wrapper's `*xs`), where they are plain ones."""
    try:
        params = list(inspect.signature(fn).parameters.values())[:n]
    except (TypeError, ValueError):  # a builtin without a signature
        return None
    plain = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if len(params) < n or any(p.kind not in plain for p in params):
        return None
    return [p.name for p in params]


def random_inputs(program: Program, seed: int | None = None) -> list[np.ndarray]:
    """Fresh random inputs shaped like the example inputs (never zeros), then the weights.
    Integer inputs are indices or targets: drawn uniformly from [min(example), max(example)
    + 1), so they stay valid (a `torch.randint(3, 10, ...)`'s draws stay in 3..9); one
    negative value among non-negative ones is a sentinel (cross_entropy's ignore_index -100)
    kept where the example has it. Bool inputs are masks, taken as given. A float
    input whose example lies in [0, 1) (a `torch.rand`: probabilities, a variance) is drawn
    from (0, 1) too, else standard normal."""
    rng = np.random.default_rng(seed)

    def draw(x: np.ndarray) -> np.ndarray:
        if x.dtype == np.bool_:  # a mask: its pattern (padding, causal) is what makes it valid
            return x.copy()
        if np.issubdtype(x.dtype, np.integer):
            neg = x < 0
            sentinel = neg.any() and not neg.all() and len(np.unique(x[neg])) == 1
            body = x[~neg] if sentinel else x  # (one negative among indices: ignore_index -100)
            low, high = (int(body.min()), int(body.max()) + 1) if body.size else (0, 1)
            out = rng.integers(low, high, x.shape).astype(x.dtype)
            if sentinel:
                out[neg] = x[neg]
            return out
        if x.size and 0 <= float(x.min()) and float(x.max()) < 1:
            return rng.uniform(np.finfo(np.float32).eps, 1, x.shape).astype(x.dtype)
        return rng.standard_normal(x.shape).astype(x.dtype)

    if any(x is None for x in (*program.example_inputs, *program.params)):
        raise FrontendError("the program's inputs or weights are meta tensors (shapes, no "
                            "data): it compiles, but running it needs them on the CPU")
    xs = [draw(x) for x in program.example_inputs]
    return xs + list(program.params)


def schedule_text(schedule: str | dict | None) -> str | None:
    """A plan file for tile-plan: a path or JSON text as given, a dict as its JSON text."""
    if schedule is None or isinstance(schedule, str):
        return schedule
    return json.dumps(schedule)


@dataclass
class Compiled:
    program: Program
    verbose: int = 0
    schedule: str | None = None  # a plan file's path or JSON text, pinned by tile-plan
    strict: bool = True  # the plan file names only kernels of this program
    rank: bool = True  # big matmuls' plans chosen by the cost model (tuning/ranked.py)
    gpu_model: str | None = None  # the model's parameters for that: h100, h200 (default: the GPU's)
    launch_fusion: bool = True  # kernel-horizontal-fuse runs (the cost model's call)
    _levels: dict[str, ModuleOp] = field(default_factory=dict)
    _plan_file: list = field(default_factory=list)  # [the plan file tile-plan pins], once known
    _callers: dict = field(default_factory=dict)  # target -> its executable (runner)

    def module(self, level: str = "cuda") -> ModuleOp:
        """The program lowered to `level` (cached; each level is lowered from Torch IR)."""
        if level == "tir":
            level = "tensor"
        if level not in LEVELS:
            raise ValueError(f"unknown level {level!r}: expected one of {', '.join(LEVELS)}")
        if level not in self._levels:
            past_plan = LEVELS.index(level) > LEVELS.index("loop")
            schedule = self.plan_file() if past_plan else None  # (lowers to loop first)
            # the pipelines are prefixes of each other: continue from the deepest cached level
            start, done = self.program.module, ""
            for lower in LEVELS[: LEVELS.index(level)]:
                if lower in self._levels:
                    start, done = self._levels[lower], passes_to(lower)
            rest = self.pass_spec(passes_to(level)[len(done):].lstrip(","))
            self._levels[level] = run_passes(start.clone(), rest, self.verbose,
                                             schedule=schedule, strict=self.strict)
        return self._levels[level]

    def pass_spec(self, spec: str) -> str:
        """`spec` (passes, expanded) as this program lowers: kernel-horizontal-fuse left out
        with launch fusion off, else predicting for `gpu_model`'s parameters."""
        fuse = "kernel-horizontal-fuse"
        parts = [p for p in split_spec(spec) if p != fuse or self.launch_fusion]
        if self.gpu_model:
            parts = [f"{fuse}{{gpu={self.gpu_model}}}" if p == fuse else p for p in parts]
        return ",".join(parts)

    def planned(self) -> ModuleOp:
        """The program right after tile-plan: every kernel with its plan, none carried out."""
        schedule = self.plan_file()  # (keeps the heuristic's planned module when it stands)
        if "planned" not in self._levels:
            self._levels["planned"] = self._plan(schedule)
        return self._levels["planned"]

    def _plan(self, schedule: str | None) -> ModuleOp:
        return run_passes(self.module("loop").clone(), "loop-to-tile,tile-plan", 0,
                          schedule=schedule, strict=self.strict)

    def plan_file(self) -> str | None:
        """The plans tile-plan pins: `schedule`'s, and (with `rank`) the cost model's choice
        among the heuristic's shortlist for each big matmul it leaves to the heuristic."""
        if not self._plan_file:
            chosen = None
            heuristic = self._plan(self.schedule) if self.rank or self.verbose else None
            if self.verbose and self.schedule:
                _say_tuned(heuristic, self.schedule)
            if self.rank:
                from deplo.tuning.ranked import ranked_schedule

                chosen = ranked_schedule(heuristic, self.schedule, self.gpu_model, self.verbose)
                if chosen is None:  # nothing chosen: the heuristic's plans stand
                    self._levels.setdefault("planned", heuristic)
            self._plan_file.append(self.schedule if chosen is None else chosen)
        return self._plan_file[0]

    def plans(self) -> dict:
        """Every kernel's plan as a plan file (passes/tile/plan.py): JSON-ready."""
        from deplo.passes.tile.plan import plans_json

        return plans_json(self.module("tile"))

    def text(self, level: str = "cuda", debug_info: bool = False) -> str:
        """The program at `level` (the .cu for cuda); `debug_info`: with each torch/tir op's
        origin line (origin.py), which the IR carries either way."""
        from deplo import origin

        if level == "cuda":
            return self.cuda_source
        return origin.text(self.module(level), debug_info) + "\n"

    @property
    def cuda_source(self) -> str:
        from deplo.lowering.emit_cuda import emit_cuda

        return emit_cuda(self.module("cuda"))

    def ptxas(self, arch: str = "sm_90") -> dict:
        """Kernel name -> PtxasReport (registers, static smem, spills, stack) of the `.cu`
        compiled by NVRTC for `arch`, spills reported rather than errors (cached on disk), in
        the order of the kernels in the `.cu`."""
        from deplo.lowering.emit_cuda import kernel_signatures
        from deplo.runtime.gpu import compile_cubin

        reports = compile_cubin(self.cuda_source, arch=arch, spills_are_errors=False).kernels
        order = [k for k in kernel_signatures(self.module("cuda")) if k in reports]
        return {k: reports[k] for k in [*order, *(k for k in reports if k not in order)]}

    def executable(self, target: str = "cpu", level: str | None = None):
        """An object with `.run(inputs) -> outputs`: target cpu/gpu (the .cu) or interp (IR)."""
        if target == "interp":
            from deplo.runtime.interp import InterpExecutable

            return InterpExecutable(self.module(level or "loop"))
        from deplo.runtime.program import CudaExecutable

        return CudaExecutable(self.module("cuda"), target=target)

    def run(self, inputs: Sequence[np.ndarray] | None = None, target: str = "cpu",
            level: str | None = None, seed: int | None = None) -> list[np.ndarray]:
        """Run on `inputs` (user inputs, then weights; numpy arrays or torch tensors, bf16 as
        float32 either way); fresh random inputs when omitted."""
        if inputs is None:
            inputs = random_inputs(self.program, seed)
        if not isinstance(inputs, list | tuple):
            raise TypeError(f"run() takes a list of inputs (then the weights), got "
                            f"{type(inputs).__name__}")
        inputs = [to_numpy(x) if isinstance(x, torch.Tensor) else x for x in inputs]
        self.program.check_inputs(inputs)
        return self.program.as_outputs(self.executable(target, level).run(inputs))

    def torch_run(self, inputs: Sequence, target: str = "cpu") -> list[torch.Tensor]:
        """The program on the user's inputs (torch tensors or numpy) and its weights, torch
        tensors out in PyTorch's dtypes, flat: `c(x)`'s and the torch.compile backend's. The
        executable is built once per target (`runner`: a call is a launch, not a build)."""
        self.program.check_inputs(inputs)
        numpy_in = [to_numpy(x) if isinstance(x, torch.Tensor) else np.asarray(x)
                    for x in inputs] + list(self.program.params)
        return self.program.torch_outputs(self.runner(target).run(numpy_in))

    def runner(self, target: str = "cpu"):
        """`executable(target)`, built on the first call and kept."""
        if target not in self._callers:
            self._callers[target] = self.executable(target)
        return self._callers[target]

    def __call__(self, *args, target: str = "cpu"):
        """The program as its module runs: its arguments structured as the example inputs (the
        tensors shaped as theirs), the captured weights supplied, torch tensors out in
        PyTorch's dtypes and in the module's structure (a tuple, a dict, `topk`'s values and
        indices)."""
        wrapper = self.program.torch_module
        inputs = wrapper.tensors_of(args) if getattr(wrapper, "given", None) is not None \
            else list(args)
        if len(inputs) != (n := len(self.program.example_inputs)):
            raise TypeError(f"the compiled program takes {n} input(s), got {len(inputs)}")
        outs = self.torch_run(inputs, target)
        spec = self.program.output_spec
        if spec is not None and spec.num_leaves == len(outs):
            return pytree.tree_unflatten(outs, spec)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def check(self, target: str = "cpu", level: str | None = None, seed: int | None = None) -> Comparison:
        """Run on fresh random inputs and compare with PyTorch eager."""
        inputs = random_inputs(self.program, seed)
        return self.judge(self.run(inputs, target, level), inputs)

    def judge(self, outputs, inputs, reference=None) -> Comparison:
        """`deplo run --check`'s verdict on outputs of `inputs` (the runtime's arguments): each
        output's own dtype's tolerance, and a float64 second opinion past it."""
        n = len(self.program.example_inputs)
        return check_program(outputs, self.program, inputs[:n], self.output_element_types(),
                             reference)

    def output_element_types(self) -> list[str]:
        """Per @main result, the element type whose tolerance applies: its own, or the lowest
        float precision the program computes in anywhere (a bf16 intermediate rounds the f32
        result it feeds), as declared in Torch IR."""
        main = next(op for op in self.program.module.ops
                    if op.name == "func.func" and op.sym_name.data == "main")
        used = {str(getattr(v.type, "element_type", ""))
                for op in self.program.module.walk() for v in op.results}
        low = next((t for t in ("f16", "bf16") if t in used), None)
        return [low or str(t.element_type) for t in main.function_type.outputs.data]


def _say_tuned(planned: ModuleOp, schedule: str) -> None:
    """-v: each kernel that takes its plan from a tuning store (the plan file's fallback)."""
    from deplo.analysis.nest import tile_kernels
    from deplo.passes.tile.plan import read_plans

    _, pins = read_plans(schedule)
    for k in tile_kernels(planned):
        if (pin := pins.get(k.structural_key or "")) is not None and not pin.required:
            print(f"deplo: tuned plan of {k.sym_name.data} [{k.structural_key}] (the tuning "
                  "store's)", file=sys.stderr)


def compile(program, example_inputs: Sequence[torch.Tensor] | None = None, *, verbose: int = 0,
            seed: int | None = None, schedule: str | dict | None = None,
            rank: bool = True, launch_fusion: bool = True) -> Compiled:
    """Capture `program` (expression, module or callable) for lowering on demand; `schedule`
    pins kernel plans: a plan file's path, or its content as a dict (`Compiled.plans()`);
    `rank=False` keeps the heuristic's plans where the cost model would choose
    (tuning/ranked.py); `launch_fusion=False` leaves out kernel-horizontal-fuse."""
    return Compiled(capture(program, example_inputs, seed), verbose, schedule_text(schedule),
                    rank=rank, launch_fusion=launch_fusion)
