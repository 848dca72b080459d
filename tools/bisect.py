"""`deplo bisect`: run the pipeline pass by pass, execute the program after every pass on the
CPU, and name the first pass after which the result no longer matches PyTorch.

    deplo bisect -c 'torch.softmax(torch.randn(4, 300), -1)'
    deplo bisect ./tiny-llama --seq-len 5 -p to-loop

How each step runs, by the level the module is at after the pass:
- torch, tir, loop: the numpy interpreters (runtime/interp);
- tile, kernel: not runnable by themselves — a copy is lowered the rest of the way with the
  pipeline's remaining conversions (`tile-to-kernel`, `kernel-to-cuda`: every prefix of the
  schedule passes is a valid program, so the later schedule passes are not needed, and a broken
  one cannot blame an earlier step), and the emitted `.cu` runs on the CPU runtime;
- cuda: the `.cu` on the CPU runtime.
Every step uses the same inputs (user inputs from `--seed`, then the weights) and the same
reference (PyTorch eager). An exception (a pass that crashes, IR the rest cannot lower, a
g++ error) counts as a mismatch at that step. The scan is linear — every prefix is run, so a
later pass that happens to hide an earlier error cannot mislead it — and stops at the first
mismatch unless `--all`.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from deplo.passes import pipeline
from deplo.runtime.check import Comparison, compare
from deplo.tools.driver import run_passes

RUNTIME_LEVELS = ("tile", "kernel", "cuda")


@dataclass
class Step:
    after: str  # the pass just run ("(import)" for the captured program)
    level: str
    how: str  # "interp" or "cpu"
    comparison: Comparison | None
    error: str | None = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None and self.comparison is not None and self.comparison.ok

    def line(self) -> str:
        what = self.comparison.line() if self.comparison else f"ERROR {self.error}"
        return f"{self.after:<28} {self.how:<6} {self.level:<7} {what}"


@dataclass
class BisectResult:
    steps: list[Step] = field(default_factory=list)

    @property
    def first_bad(self) -> Step | None:
        return next((s for s in self.steps if not s.ok), None)


def module_level(module: ModuleOp) -> str:
    """torch, tir, loop, tile, kernel or cuda: the lowest level whose ops the module holds."""
    return pipeline.ir_level(module) or "torch"


def _run(module: ModuleOp, rest: Sequence[str], inputs: list[np.ndarray]) -> tuple[str, str, list]:
    level = module_level(module)
    if level not in RUNTIME_LEVELS:
        from deplo.runtime.interp import InterpExecutable

        return level, "interp", InterpExecutable(module).run(inputs)
    from deplo.runtime.program import CudaExecutable

    lowered = module.clone()
    remaining = [p for p in rest if "-to-" in p]  # the conversions only (`<from>-to-<to>`)
    if level != "cuda":
        run_passes(lowered, ",".join(remaining))
    if module_level(lowered) != "cuda":
        raise ValueError(f"the pipeline's remaining passes end at {module_level(lowered)}, "
                         "not cuda: nothing to run")
    return level, "cpu", CudaExecutable(lowered, target="cpu").run(inputs)


def bisect(module: ModuleOp, inputs: list[np.ndarray], reference: Sequence[np.ndarray],
           spec: str = "to-cuda", keep_going: bool = False,
           progress: Callable[[Step], None] | None = None,
           schedule: str | None = None, strict: bool = True,
           check: Callable[[Sequence[np.ndarray]], Comparison] | None = None) -> BisectResult:
    """Apply the passes of `spec` one at a time to a copy of `module` (Torch IR), run after each
    one, compare with `reference`. The full pipeline to cuda supplies the passes that make a
    tile/kernel-level step runnable when `spec` itself stops short of cuda. `schedule`: the
    plan file tile-plan pins (`Compiled.plan_file()`: the plans the program compiles with;
    not `strict`: it may name other programs' kernels, as a tuning store's does). `check`
    judges a run's outputs (default: `compare` with `reference` by their numpy dtypes, which
    holds bf16 travelling as float32 to fp32's tolerance); the commands give `Compiled.judge`,
    `deplo run --check`'s verdict."""
    # a bad spec, or a conversion of a level the IR has not reached, is an error (as in
    # deplo-opt), not a pass that "matches" because it changed nothing
    pipeline.plan(spec, pipeline.ir_level(module))
    passes = pipeline.split_spec(pipeline.expand_pipeline(spec))
    full = pipeline.split_spec(pipeline.expand_pipeline("to-cuda"))
    result = BisectResult()
    current = module.clone()
    for i, name in enumerate(["(import)", *passes]):
        t0 = time.perf_counter()
        rest = passes[i:] + (full[len(passes):] if passes == full[: len(passes)] else [])
        try:
            if i:
                run_passes(current, name, schedule=schedule, strict=strict)
            level, how, outputs = _run(current, rest, inputs)
            step = Step(name, level, how, (check or (lambda o: compare(o, reference)))(outputs))
        except Exception as e:  # noqa: BLE001 - a crash of any kind is a mismatch: name it
            msg = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            step = Step(name, module_level(current), "-", None, msg)
        step.seconds = time.perf_counter() - t0
        result.steps.append(step)
        if progress:
            progress(step)
        if not step.ok and not keep_going:
            break
    return result


def cmd_bisect(args, compiled) -> int:
    """The `deplo bisect` subcommand body (argument parsing lives in deplo_main)."""
    from deplo.tools.api import random_inputs

    program = compiled.program
    inputs = random_inputs(program, args.seed)
    reference = program.reference(inputs[: len(program.example_inputs)])
    print(f"deplo bisect: {args.pipeline}, checked against PyTorch eager after every pass",
          file=sys.stderr)
    spec = compiled.pass_spec(pipeline.expand_pipeline(args.pipeline))
    result = bisect(program.module, inputs, reference, spec, args.all,
                    lambda s: print(f"  {s.line()}", file=sys.stderr),
                    schedule=compiled.plan_file(), strict=compiled.strict,
                    check=lambda outputs: compiled.judge(outputs, inputs, reference))
    bad = result.first_bad
    if bad is None:
        print(f"deplo bisect: every pass matches ({len(result.steps) - 1} passes)")
        return 0
    if bad.after == "(import)":
        print("deplo bisect: the captured program itself does not match PyTorch")
    else:
        index = [s.after for s in result.steps].index(bad.after)
        print(f"deplo bisect: first mismatch after pass '{bad.after}' (pass {index})")
    return 1
