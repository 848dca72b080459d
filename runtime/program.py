"""Run a CUDA-level module: print its `.cu`, build it for the CPU shim or the GPU, and replay the
host function (`memref.alloc` + launches) on numpy buffers.

Why the host function is replayed here rather than printed as C++: the same launch sequence
must drive both runtimes, and buffers poisoned with NaN at allocation make a kernel that forgets
to write an element fail the check instead of passing on leftover data.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import MemRefType, ModuleOp
from xdsl.ir import SSAValue

from deplo.lowering.emit_cuda import emit_cuda, kernel_signatures, launch_plan
from deplo.runtime.ctypes_map import C_TO_NUMPY, MLIR_TO_C


def numpy_dtype(t: MemRefType) -> np.dtype:
    return C_TO_NUMPY[MLIR_TO_C[str(t.element_type)]]


def host_function(module: ModuleOp, entry: str = "main") -> func.FuncOp:
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data == entry:
            return op
    raise ValueError(f"no host function @{entry} in the module")


class CudaExecutable:
    """Executable for the `cuda` level: `.run(inputs) -> outputs` on target "cpu" or "gpu"."""

    def __init__(self, module: ModuleOp, target: str = "cpu", schedule: str = "LR-fwd",
                 arch: str = "sm_90"):
        self.module = module
        self.source = emit_cuda(module)
        self.signatures = kernel_signatures(module)
        self.plan = launch_plan(module)
        self.main = host_function(module)
        self.target = target
        self.schedule = schedule
        if target == "cpu":
            from deplo.runtime.cpu import CpuModule

            self._mod = CpuModule(self.source, self.signatures)
        elif target == "gpu":
            from deplo.runtime.gpu import GpuModule, compile_cubin

            self.compiled = compile_cubin(self.source, arch=arch)
            self._mod = GpuModule(self.compiled.cubin, signatures=self.signatures)
        else:
            raise ValueError(f"unknown target {target!r} (cpu or gpu)")

    def run(self, inputs: Sequence[np.ndarray], schedule: str | None = None) -> list[np.ndarray]:
        args = self.main.body.block.args
        if len(inputs) != len(args):
            raise ValueError(f"@main takes {len(args)} buffers, got {len(inputs)}")
        env: dict[SSAValue, np.ndarray] = {}
        for a, x in zip(args, inputs):
            want = numpy_dtype(a.type)
            shape = tuple(a.type.get_shape())
            if tuple(np.shape(x)) != shape:
                raise ValueError(f"input %{a.name_hint}: expected shape {shape}, got {np.shape(x)}")
            env[a] = np.ascontiguousarray(x, dtype=want).copy()
        for op in self.main.body.block.ops:
            if isinstance(op, memref.AllocOp):
                t = op.memref.type
                env[op.memref] = np.full(t.get_shape(), np.nan, dtype=numpy_dtype(t))
        for launch in self.plan:
            buffers = [env[v] for v in launch.args]
            kwargs = {"smem_bytes": launch.smem}
            if self.target == "cpu":
                kwargs["schedule"] = schedule or self.schedule
            self._mod.launch(launch.kernel, tuple(launch.grid), tuple(launch.block), buffers, **kwargs)
        ret = self.main.body.block.last_op
        assert isinstance(ret, func.ReturnOp)
        return [env[v] for v in ret.arguments]
