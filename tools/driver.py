"""Compile a captured program through the named pipelines, with -v / -vv reporting.

`-v` lists every pass run (and the kernel count after loop fusion), then the loop kernels (name,
loop nest, buffers read and written: tools/kernel_list.py); `-vv` prints each pass as a
unified diff of the IR between `>>> pass-name` and `<<< pass-name` markers.
"""

from __future__ import annotations

import dataclasses
import difflib
import gc
import sys
import time
from typing import TextIO

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import PassPipeline

from deplo import origin
from deplo.passes import pipeline

LEVELS = ("torch", "tensor", "loop", "tile", "kernel", "cuda")


def make_context() -> Context:
    from deplo.tools.deplo_opt import STANDARD_DIALECTS

    ctx = Context()
    for name, get in {**STANDARD_DIALECTS, **pipeline.DIALECTS}.items():
        ctx.register_dialect(name, get)
    return ctx


def passes_to(level: str) -> str:
    """The pass spec that lowers Torch IR to `level` (empty for torch)."""
    if level not in pipeline.LEVEL_PIPELINE:
        raise ValueError(f"unknown IR level {level!r}; choose from {', '.join(LEVELS)}")
    name = pipeline.LEVEL_PIPELINE[level]
    return pipeline.expand_pipeline(name) if name else ""


def _kernel_summary(mod: ModuleOp) -> str:
    """` (12 kernel(s); @decoder_layer launches 9 per call, @main 3)` after a pass."""
    kernels = sum(1 for o in mod.ops if o.name.endswith(".kernel") or o.name == "kernel.func")
    if not kernels:
        return ""
    per_fn = []
    for fn in mod.ops:
        if isinstance(fn, func.FuncOp):
            n = sum(1 for o in fn.walk() if o.name.endswith(".launch"))
            per_fn.append(f"@{fn.sym_name.data} {n}")
    detail = f"; launches per call: {', '.join(per_fn)}" if len(per_fn) > 1 else ""
    return f" ({kernels} kernel(s){detail})"


def run_passes(module: ModuleOp, spec: str, verbose: int = 0, out: TextIO | None = None,
               schedule: str | None = None, strict: bool = True,
               trace: list | None = None, verify_each: bool = True) -> ModuleOp:
    """Apply the comma-separated pass spec in place, verifying after each pass (`verify_each`
    off: once, at the end — a ranking's candidate plans, verification was 40% of compiling a
    ResNet block). `schedule` (a plan file's path or JSON text) is given to tile-plan; with
    `strict` off, plans for kernels the module does not have are allowed (a file gathered
    from many programs). `trace`, if given, receives (pass name, seconds, IR text after it)
    per pass (`deplo explore`)."""
    if not spec:
        return module
    out = out or sys.stderr
    ctx = make_context()
    before = [origin.text(module)] if verbose >= 2 else []
    clock = [time.perf_counter()]

    def callback(prev, mod: ModuleOp, nxt) -> None:
        if verify_each or nxt is None:
            pipeline.verified(mod, prev)
        if prev is None:
            clock[0] = time.perf_counter()
            return
        if trace is not None:
            now = time.perf_counter()
            trace.append((prev.name, now - clock[0], origin.text(mod)))
            clock[0] = time.perf_counter()
        if verbose >= 1:
            print(f"deplo: ran {prev.name}{_kernel_summary(mod)}", file=out)
            if nxt is None or nxt.name == "loop-to-tile":  # the last loop-level pass
                from deplo.tools.kernel_list import kernel_list

                for line in kernel_list(mod):
                    print(f"deplo: {line}", file=out)
            if prev.name == "tile-plan":
                from deplo.tools.kernel_list import plan_list

                for line in plan_list(mod):
                    print(f"deplo: {line}", file=out)
        if verbose >= 2:
            after = origin.text(mod)
            diff = difflib.unified_diff(
                before[0].splitlines(), after.splitlines(), "before", "after", lineterm="", n=2
            )
            print(f">>> {prev.name}", file=out)
            print("\n".join(diff), file=out)
            print(f"<<< {prev.name}", file=out)
            before[0] = after

    passes = pipeline.parse_passes(spec)
    if schedule is not None or not strict:
        from deplo.passes.tile.plan import TilePlanPass

        passes = tuple(
            dataclasses.replace(p, schedule=schedule, strict=strict)
            if isinstance(p, TilePlanPass) else p for p in passes
        )
    pipe = PassPipeline(tuple(passes), callback)
    gc_was = gc.isenabled()
    gc.disable()  # the cyclic GC roughly doubles rewrite time on big modules
    try:
        pipe.apply(ctx, module)
    finally:
        if gc_was:
            gc.enable()
    return module
