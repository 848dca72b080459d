"""Shared helpers: kernel IR text -> cuda IR -> .cu, and a tiny host runner that executes the
host function's launches on the CPU runtime (or NVRTC-compiles the .cu)."""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects import arith, builtin, func, math, memref, scf
from xdsl.dialects.builtin import IndexType, MemRefType, ModuleOp
from xdsl.parser import Parser

from deplo.dialects.cuda import Cuda
from deplo.dialects.kernel import Kernel
from deplo.lowering.emit_cuda import emit_cuda, kernel_signatures, launch_plan
from deplo.lowering.kernel_to_cuda import KernelToCudaPass

NP = {"f32": np.float32, "f16": np.float16, "i32": np.int32, "i64": np.int64, "f64": np.float64}


def context() -> Context:
    ctx = Context()
    for d in (builtin.Builtin, func.Func, arith.Arith, math.Math, scf.Scf, memref.MemRef, Kernel,
              Cuda):
        ctx.load_dialect(d)
    return ctx


def lower(kernel_ir: str) -> tuple[ModuleOp, str]:
    """Parse and verify kernel IR, run kernel-to-cuda, verify, emit the .cu text."""
    ctx = context()
    module = Parser(ctx, kernel_ir).parse_module()
    module.verify()
    KernelToCudaPass().apply(ctx, module)
    module.verify()
    return module, emit_cuda(module)


def run_host(module: ModuleOp, runtime, inputs: dict[str, object], schedule: str | None) -> list:
    """Execute `func.func @main` of the lowered module: bind the inputs (by argument name),
    allocate each memref.alloc as NaNs (-1 for ints), launch in order on `runtime` (a CpuModule
    with `schedule`, or a GpuModule with None); return the returned buffers."""
    main = next(op for op in module.ops if isinstance(op, func.FuncOp))
    env = {a: np.array(inputs[a.name_hint], copy=True) if isinstance(a.type, MemRefType)
           else inputs[a.name_hint] for a in main.args}
    for op in main.walk():
        if isinstance(op, memref.AllocOp):
            t = op.memref.type
            dtype = np.dtype(NP[str(t.element_type)])
            env[op.memref] = np.full(t.get_shape(), np.nan if dtype.kind == "f" else -1, dtype)
    for la in launch_plan(module):
        args = [int(env[v]) if isinstance(v.type, IndexType) else env[v] for v in la.args]
        extra = {} if schedule is None else {"schedule": schedule}
        runtime.launch(la.kernel, grid=la.grid, block=la.block, args=args, smem_bytes=la.smem,
                       **extra)
    ret = next(op for op in main.walk() if isinstance(op, func.ReturnOp))
    return [env[v] for v in ret.arguments]


def cpu_module(module: ModuleOp, src: str, name: str):
    from deplo.runtime.cpu import CpuModule

    return CpuModule(src, kernel_signatures(module), name=name)


def nvrtc_compile(src: str):
    """NVRTC for sm_90 with spills as errors; returns the per-kernel ptxas reports."""
    from deplo.runtime.gpu import compile_cubin

    return compile_cubin(src, arch="sm_90").kernels


def _cpu_ok() -> tuple[bool, str]:
    try:
        from deplo.runtime.cpu import cpu_runtime_available
    except ImportError as e:  # the CPU runtime is optional for these tests
        return False, str(e)
    return cpu_runtime_available()


CPU_OK, CPU_WHY = _cpu_ok()
needs_cpu = pytest.mark.skipif(not CPU_OK, reason=f"CPU runtime unavailable: {CPU_WHY}")


def _nvrtc_ok() -> tuple[bool, str]:
    try:
        from cuda.bindings import nvrtc  # noqa: F401

        from deplo.runtime.gpu import compile_cubin  # noqa: F401
    except ImportError as e:
        return False, str(e)
    return True, ""


NVRTC_OK, NVRTC_WHY = _nvrtc_ok()
needs_nvrtc = pytest.mark.skipif(not NVRTC_OK, reason=f"NVRTC unavailable: {NVRTC_WHY}")
