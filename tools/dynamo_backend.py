"""`torch.compile(model, backend="deplo")`: Dynamo hands us an FX graph; we compile it with the
full pipeline and run it on the best available target.

    compiled = torch.compile(model, backend="deplo")
    compiled(x)                     # GPU if a driver is present, else the CPU runtime

The graph is re-exported with torch.export (non-strict) to get the same ATen graph `deplo
compile` imports, so both paths share one importer. `DEPLO_TARGET=cpu|gpu|interp` overrides
the target (interp runs the loop-level numpy interpreter: exact, slow, for ops the CUDA levels
do not cover yet). Registered through the `torch_dynamo_backends` entry point.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
import torch


def best_target() -> str:
    from deplo.runtime.gpu import gpu_probe

    return os.environ.get("DEPLO_TARGET") or ("gpu" if gpu_probe()[0] else "cpu")


def deplo_backend(gm: torch.fx.GraphModule, example_inputs: Sequence[torch.Tensor], **_):
    from deplo.frontend.importer import import_module
    from deplo.tools.api import Compiled
    from deplo.tools.tune_cmd import tuned_schedule

    program = import_module(gm, list(example_inputs))
    target = best_target()
    compiled = Compiled(program, 0, *tuned_schedule(None, None))  # the default store's plans
    exe = compiled.executable(target, level="loop" if target == "interp" else None)
    weights = list(program.params)
    main = next(f for f in program.module.ops if getattr(f, "sym_name", None)
                and f.sym_name.data == "main")
    # bf16 crosses into the runtimes as float32 (numpy has no bf16) and comes back as bf16
    bf16_out = [str(t.element_type) == "bf16" for t in main.function_type.outputs.data]

    def numpy_of(a: torch.Tensor) -> np.ndarray:
        a = a.detach().cpu()
        return (a.float() if a.dtype == torch.bfloat16 else a).numpy()

    def run(*args: torch.Tensor):
        outputs = exe.run([numpy_of(a) for a in args] + weights)
        return tuple(torch.from_numpy(np.array(o, order="C")).to(torch.bfloat16) if bf else
                     torch.from_numpy(np.array(o, order="C")) for o, bf in zip(outputs, bf16_out))

    return run
