"""A compiled program kept on the GPU between runs: what generation's decode step needs.

Why: launched one kernel at a time (GpuModule.launch), every buffer of every launch crosses to
the device and back, weights included, so one decode step would move the whole model twice.
Bound on the first run, a ResidentProgram instead keeps:
- the `kept` inputs (the weights: the same arrays on every run; a KV cache, which
  `write_slot` then updates on the device) uploaded once;
- a device buffer for each other input, refilled every run; the outputs copied back;
- each host function's intermediates in one device arena laid out by its memory plan
  (runtime/memory_plan.py; calls run one after another, so a function's calls share its arena),
  a buffer a function returns in an allocation of its own per call site, all filled with 0xFF
  bytes (NaN in every float type) when bound, so a read before any write shows in a check;
- the launches, whose buffers never move, run eagerly on the first run and are captured as one
  CUDA graph on the second, replayed from then on (plain launches where capture fails).
"""

from __future__ import annotations

import functools

import numpy as np
from xdsl.dialects import func, memref

from deplo.dialects import cuda
from deplo.runtime.gpu import driver as cu


class ResidentProgram:
    def __init__(self, exe, kept: int):
        """`exe`: a CudaExecutable on the GPU; `kept`: how many trailing inputs never change."""
        self.exe, self.kept = exe, kept
        self.inputs: list[cu.DeviceArray] = []
        self.outputs: list[cu.DeviceArray] = []
        self.steps: list[tuple] = []  # (kernel, function handle, launch, grid, block, smem)
        self.uploaded = 0  # bytes copied host -> device so far
        self.runs = 0
        self._owned: list[cu.DeviceArray] = []
        self._arenas: dict[str, cu.DeviceArray] = {}
        self._graph = None
        self._stream = None

    def run(self, buffers: list[np.ndarray], download: list[int] | None = None) -> list:
        """One run; returns the outputs (those in `download` only, the others None)."""
        if self.runs == 0:
            self._stream = cu._check(cu._driver().cuStreamCreate(0), "cuStreamCreate")
            self.inputs = [self._alloc(b.shape, b.dtype) for b in buffers]
            self.outputs = self._bind(self.exe.main, self.inputs)
        fresh = len(buffers) - self.kept
        for i, (dev, host) in enumerate(zip(self.inputs, buffers, strict=True)):
            if self.runs == 0 or i < fresh:
                dev.upload(host)
                self.uploaded += host.nbytes
        if self.runs == 1:
            self._graph = cu._capture(self._stream, self._launch_all)
        (self._graph or self._launch_all)()
        cu._check(cu._driver().cuStreamSynchronize(self._stream),
                  f"@{self.exe.main.sym_name.data} on the GPU ({len(self.steps)} launches)")
        self.runs += 1
        return [o.download() if download is None or i in download else None
                for i, o in enumerate(self.outputs)]

    def write_slot(self, input_index: int, output_index: int, slot: int) -> None:
        """A KV cache kept on the device takes a run's new key/value: input [..., C, d] gets
        output [..., 1, d] at position `slot` of its next-to-last dim, device to device (one
        pitched copy: a row per leading index), so the cache never crosses to the host."""
        dst, src = self.inputs[input_index], self.outputs[output_index]
        rows, row = int(np.prod(src.shape[:-2])), src.shape[-1] * src.dtype.itemsize
        if dst.dtype != src.dtype or dst.shape[:-2] != src.shape[:-2] or src.shape[-2] != 1 \
                or dst.shape[-1] != src.shape[-1] or not 0 <= slot < dst.shape[-2]:
            raise ValueError(f"slot {slot}: output {src.shape} does not fit input {dst.shape}")
        driver = cu._driver()
        copy = driver.CUDA_MEMCPY2D()
        copy.srcMemoryType = copy.dstMemoryType = driver.CUmemorytype.CU_MEMORYTYPE_DEVICE
        copy.srcDevice, copy.srcPitch = src.ptr, row
        copy.dstDevice, copy.dstPitch = dst.ptr + slot * row, dst.shape[-2] * row
        copy.WidthInBytes, copy.Height = row, rows
        cu._check(driver.cuMemcpy2DAsync(copy, self._stream), "cuMemcpy2DAsync (KV cache slot)")

    def time(self, warmup: int, iters: int) -> tuple[float, list[float]]:
        """Median milliseconds of the whole program after its first run, and of each launch,
        from an L2 flushed before every run (runtime/gpu/timing.py): the inputs and weights
        come from DRAM, each launch finds what the launches before it left in L2."""
        from deplo.runtime.gpu.timing import cold_timer

        if self.runs == 0:
            raise RuntimeError("time() needs a first run() to bind the program")
        return cold_timer().time(self._step_calls(), self._stream, warmup, iters)

    def _step_calls(self) -> list:
        """Each launch as a call that enqueues it on the program's stream."""
        mod = self.exe._mod
        return [functools.partial(mod._launch, handle, kernel, grid, block, launch, smem,
                                  self._stream)
                for kernel, handle, launch, grid, block, smem in self.steps]

    @property
    def replays_graph(self) -> bool:
        return self._graph is not None

    def _launch_all(self) -> None:
        for call in self._step_calls():
            call()

    def _alloc(self, shape, dtype) -> cu.DeviceArray:
        a = cu.DeviceArray(shape, dtype)
        a.fill_bytes(0xFF)
        self._owned.append(a)
        return a

    def _bind(self, main: func.FuncOp, args: list[cu.DeviceArray]) -> list[cu.DeviceArray]:
        """Walk the host program once: its buffers placed, its launches appended to `steps`."""
        from deplo.runtime.program import numpy_dtype

        def frame(fn: func.FuncOp):
            name, plan = fn.sym_name.data, self.exe.plans[fn.sym_name.data]
            if plan.peak and name not in self._arenas:
                self._arenas[name] = self._alloc((plan.peak,), np.uint8)

            def alloc(op: memref.AllocOp) -> cu.DeviceArray:
                shape, dt = op.memref.type.get_shape(), numpy_dtype(op.memref.type)
                return (self._arenas[name].view(plan.offsets[op], shape, dt)
                        if op in plan.offsets else self._alloc(shape, dt))
            return alloc

        def launch(op: cuda.LaunchOp, buffers: list) -> None:
            kernel, smem = op.callee.string_value(), op.smem.value.data
            handle, prepared = self.exe._mod._prepare(kernel, buffers, smem)
            self.steps.append((kernel, handle, prepared, tuple(op.grid_dims),
                               tuple(op.block_dims), smem))

        return self.exe.walk(main, args, frame, launch)

    def close(self) -> None:
        if self._graph is not None:
            self._graph.close()
        for a in self._owned:
            a.free()
        self._owned, self._arenas, self.steps = [], {}, []
        if self._stream is not None:
            cu._driver().cuStreamDestroy(self._stream)
            self._stream = None
