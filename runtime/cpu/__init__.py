"""The CPU target: the exact emitted `.cu` text, compiled with g++ against a CUDA shim and run
on numpy buffers with CUDA threads as fibers.

Why: it is the default execution target where there is no GPU, and the oracle that the printed
CUDA is right (expressions, integer types, indexing, barriers, shuffles). Design: docs in
shared/CPU-RUNTIME.md; the pieces are kcpu.h (shim), kcpu_rt.cpp (fiber runtime),
../include/kc_prelude.cuh (PTX features), build.py (g++ + caches), launcher.py (generated C++
launcher), args.py (canary padding), schedules.py, launch.py / sanitize.py (running).

    m = CpuModule(cu_text, {"k": ["const float* __restrict__", "float* __restrict__", "int"]})
    for s in DEFAULT_SCHEDULES:
        m.launch("k", grid=(n_blocks, 1, 1), block=(256, 1, 1), args=[x, y, n], schedule=s)
"""

from deplo.runtime.cpu.errors import CpuCompileError, KernelError
from deplo.runtime.cpu.module import CpuModule
from deplo.runtime.cpu.schedules import DEFAULT_SCHEDULES
from deplo.runtime.cpu.toolchain import cpu_runtime_available

__all__ = [
    "DEFAULT_SCHEDULES",
    "CpuCompileError",
    "CpuModule",
    "KernelError",
    "cpu_runtime_available",
]
