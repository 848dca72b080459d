"""Run a CUDA-level module: print its `.cu`, build it for the CPU shim or the GPU, and replay the
host functions (`memref.alloc`, launches, calls of other host functions such as a
decoder layer) on numpy buffers.

Why the host function is replayed here rather than printed as C++: the same launch sequence
must drive both runtimes, and buffers poisoned with NaN at allocation make a kernel that forgets
to write an element fail the check instead of passing on leftover data.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import BFloat16Type, MemRefType, ModuleOp
from xdsl.ir import SSAValue

from deplo.dialects import cuda
from deplo.lowering.emit_cuda import emit_cuda, kernel_signatures, launch_plan
from deplo.runtime.ctypes_map import C_TO_NUMPY, MLIR_TO_C, from_bf16_bits, to_bf16_bits
from deplo.runtime.memory_plan import plan_function


def numpy_dtype(t: MemRefType) -> np.dtype:
    return C_TO_NUMPY[MLIR_TO_C[str(t.element_type)]]


def host_function(module: ModuleOp, entry: str = "main") -> func.FuncOp:
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data == entry:
            return op
    raise ValueError(f"no host function @{entry} in the module")


def poison_value(t: MemRefType):
    """What a fresh buffer holds: NaN (bf16: its NaN bit pattern), integers at their minimum,
    booleans false."""
    dt = numpy_dtype(t)
    if isinstance(t.element_type, BFloat16Type):
        return 0x7FC0
    if dt.kind == "f":
        return np.nan
    if dt.kind == "b":
        return False
    return np.iinfo(dt).min


def poisoned(t: MemRefType, arena: np.ndarray | None = None, offset: int = 0) -> np.ndarray:
    """A fresh, poisoned buffer for `memref.alloc`: its own, or a view of `arena` at `offset`."""
    dt, shape = numpy_dtype(t), tuple(t.get_shape())
    if arena is None:
        return np.full(shape, poison_value(t), dtype=dt)
    n = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    view = arena[offset:offset + n].view(dt).reshape(shape)
    view.fill(poison_value(t))
    return view


class CudaExecutable:
    """Executable for the `cuda` level: `.run(inputs) -> outputs` on target "cpu" or "gpu".

    bf16 buffers cross the boundary as float32 arrays (inputs are rounded to bf16; uint16 bit
    patterns are taken as they are), like the interpreters' convention."""

    def __init__(self, module: ModuleOp, target: str = "cpu", schedule: str = "LR-fwd",
                 arch: str = "sm_90"):
        self.module = module
        self.source = emit_cuda(module)
        self.signatures = kernel_signatures(module)
        self.plan = launch_plan(module)
        self.functions = {op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp)}
        self.main = host_function(module)
        self.target = target
        self.schedule = schedule
        self.plans = {name: plan_function(fn) for name, fn in self.functions.items()}
        self._resident = None
        if target == "cpu":
            from deplo.runtime.cpu import CpuModule

            self._mod = CpuModule(self.source, self.signatures)
        elif target == "gpu":
            from deplo.runtime.gpu import GpuModule, compile_cubin

            self.compiled = compile_cubin(self.source, arch=arch)
            self._mod = GpuModule(self.compiled.cubin, signatures=self.signatures)
        else:
            raise ValueError(f"unknown target {target!r} (cpu or gpu; interp runs the IR)")

    def run(self, inputs: Sequence[np.ndarray], schedule: str | None = None,
            keep: int = 0, download: list[int] | None = None) -> list[np.ndarray]:
        """Replay `@main` on copies of `inputs`; `schedule` picks the CPU fiber schedule.
        On the GPU the program stays
        on the device between runs (runtime/gpu/resident.py): the last `keep` inputs (weights)
        are the same arrays every run and are uploaded on the first run only, and only the
        outputs in `download` (all by default) come back (the others are None)."""
        args = self.main.body.block.args
        if len(inputs) != len(args):
            raise ValueError(f"@main takes {len(args)} buffers, got {len(inputs)}")
        resident = self.resident(keep) if self.target == "gpu" else None
        # kept inputs are on the device after the first run: not even converted again
        convert = len(inputs) - keep if resident is not None and resident.runs else len(inputs)
        buffers = []
        for i, (a, x) in enumerate(zip(args, inputs)):
            shape = tuple(a.type.get_shape())
            if tuple(np.shape(x)) != shape:
                raise ValueError(f"input %{a.name_hint}: expected shape {shape}, got {np.shape(x)}")
            if i >= convert:
                buffers.append(None)
            elif isinstance(a.type.element_type, BFloat16Type):
                buffers.append(to_bf16_bits(x))
            else:
                buffers.append(np.array(x, dtype=numpy_dtype(a.type), order="C"))
        if resident is not None:
            outs = resident.run(buffers, download)
        else:
            outs = self.call(self.main, buffers, schedule or self.schedule)
        ret = self.main.body.block.last_op
        return [from_bf16_bits(o) if o is not None and isinstance(v.type.element_type, BFloat16Type)
                else o for v, o in zip(ret.operands, outs)]

    def resident(self, keep: int):
        """The program on the device (bound on its first run), for runs that keep `keep` inputs."""
        from deplo.runtime.gpu.resident import ResidentProgram

        if self._resident is None or self._resident.kept != keep:
            if self._resident is not None:
                self._resident.close()
            self._resident = ResidentProgram(self, keep)
        return self._resident

    def release(self) -> None:
        """Free the device copy of the program (its weights, arenas, graph): a tuner times
        many executables in one process."""
        if self._resident is not None:
            self._resident.close()
            self._resident = None

    def call(self, fn: func.FuncOp, buffers: Sequence[np.ndarray], schedule: str
             ) -> list[np.ndarray]:
        """Execute one host function: allocations (in one arena per call, runtime/
        memory_plan.py), launches, calls of other host functions."""
        def frame(f: func.FuncOp):
            plan = self.plans[f.sym_name.data]
            arena = np.empty(plan.peak, np.uint8) if plan.peak else None

            def alloc(op: memref.AllocOp) -> np.ndarray:
                placed = op in plan.offsets
                return poisoned(op.memref.type, arena if placed else None,
                                plan.offsets[op] if placed else 0)
            return alloc

        def launch(op: cuda.LaunchOp, args: list) -> None:
            kwargs = {"smem_bytes": op.smem.value.data}
            if self.target == "cpu":
                kwargs["schedule"] = schedule
            self._mod.launch(op.callee.string_value(), tuple(op.grid_dims),
                             tuple(op.block_dims), args, **kwargs)

        return self.walk(fn, buffers, frame, launch)

    def walk(self, fn: func.FuncOp, buffers: Sequence, frame: Callable, launch: Callable) -> list:
        """A host function's ops in order, the one reading of host IR: `frame(fn)` gives the
        allocator of this call's buffers (alloc op -> buffer), `launch(op, buffers)` runs or
        records a launch, calls of other host functions recurse. Returns the results."""
        env: dict[SSAValue, object] = dict(zip(fn.body.block.args, buffers, strict=True))
        alloc = frame(fn)
        for op in fn.body.block.ops:
            if isinstance(op, memref.AllocOp):
                env[op.memref] = alloc(op)
            elif isinstance(op, cuda.LaunchOp):
                launch(op, [env[v] for v in op.args])
            elif isinstance(op, func.CallOp):
                callee = self.functions.get(op.callee.root_reference.data)
                if callee is None:
                    raise ValueError(f"host: no function @{op.callee.root_reference.data}")
                results = self.walk(callee, [env[v] for v in op.arguments], frame, launch)
                env.update(zip(op.results, results, strict=True))
            elif isinstance(op, func.ReturnOp):
                return [env[v] for v in op.arguments]
            else:
                raise NotImplementedError(f"host: cannot execute '{op.name}' in @{fn.sym_name.data}")
        raise ValueError(f"host: @{fn.sym_name.data} has no func.return")
