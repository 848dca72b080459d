"""A stand-in for cuda-python's driver module that runs on the CPU, so the GPU runtime's host
logic (device buffers, launches on pointers, graph capture and replay) is tested without a GPU.

"Device" memory is host memory: cuMemAlloc returns the address of a fresh numpy buffer, copies
are memmoves, and cuLaunchKernel decodes its parameter block (by the kernel's C signature) and
runs the kernel on the CPU runtime (runtime/cpu), with each pointer seen as the array from it to
the end of its allocation. A launch made while a stream is capturing is recorded into the graph
instead; cuGraphLaunch replays the recording. The timer's spin and flush kernels
(runtime/gpu/timing.py) are counted, not run; events read a clock that each kernel run advances
by 1 ms. Every call is counted in `calls`, every byte copied host to device in `htod_bytes`.

    fake = FakeDriver(); fake.install(monkeypatch)   # compile_cubin then hands over the .cu
"""

from __future__ import annotations

import ctypes
import re
import types
from collections import Counter

import numpy as np

from deplo.runtime.cpu import CpuModule
from deplo.runtime.ctypes_map import C_TO_NUMPY, parse_param_type

_SCALARS = {"float": ctypes.c_float, "int": ctypes.c_int32, "long long": ctypes.c_int64,
            "unsigned int": ctypes.c_uint32, "bool": ctypes.c_bool, "double": ctypes.c_double,
            "__half": ctypes.c_uint16, "__nv_bfloat16": ctypes.c_uint16}


class FakeDriver:
    CUresult = types.SimpleNamespace(CUDA_SUCCESS=0, CUDA_ERROR_NOT_READY=600)
    CUstreamCaptureMode = types.SimpleNamespace(CU_STREAM_CAPTURE_MODE_THREAD_LOCAL=1)
    CUfunction_attribute = types.SimpleNamespace(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES=8)
    CUmemorytype = types.SimpleNamespace(CU_MEMORYTYPE_DEVICE=2)
    CUDA_MEMCPY2D = types.SimpleNamespace
    CUevent_flags = types.SimpleNamespace(CU_EVENT_DEFAULT=0)
    CUdevice_attribute = types.SimpleNamespace(
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR=(9,),
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR=(0,),
        CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE=(1 << 16,),  # small: the flush buffer is host memory
        CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT=(132,))
    TIMER_KERNELS = ("deplo_spin", "deplo_l2_flush")

    def __init__(self):
        self.cpu: CpuModule | None = None
        self.signatures: dict[str, list[str]] = {}
        self.memory: dict[int, np.ndarray] = {}  # address -> its allocation
        self.calls: Counter = Counter()
        self.htod_bytes = 0
        self.capturing: dict[int, list] = {}  # stream -> launches recorded
        self._streams = 0
        self.clock = 0.0  # ms: each kernel run takes 1
        self.events: dict[int, float] = {}
        self.ready_answers = 0  # cuEventQuery's "already recorded" answers left (spin too short)

    def __getattr__(self, name: str):
        raise AttributeError(f"the fake driver has no {name}")

    def install(self, monkeypatch) -> None:
        import functools

        from deplo.runtime import gpu
        from deplo.runtime.gpu import driver, timing

        monkeypatch.setattr(driver, "_driver", lambda: self)
        monkeypatch.setattr(driver, "gpu_probe", lambda: (True, "fake GPU (CPU runtime)"))
        monkeypatch.setattr(driver, "_context", lambda: None)
        monkeypatch.setattr(gpu, "compile_cubin",
                            lambda src, **k: types.SimpleNamespace(cubin=src.encode()))
        monkeypatch.setattr(gpu, "device_arch", lambda ordinal=0: "sm_90")
        monkeypatch.setattr(timing, "cold_timer", functools.cache(timing.ColdTimer))

    def _ok(self, name: str, *value):
        self.calls[name] += 1
        return (0, *value)

    # --- memory ---------------------------------------------------------------------------
    def cuMemAlloc(self, n):
        buf = np.zeros(n + 256, np.uint8)
        addr = -(-buf.ctypes.data // 256) * 256  # 256-byte aligned, like cudaMalloc
        self.memory[addr] = buf[addr - buf.ctypes.data:][:n]
        return self._ok("cuMemAlloc", addr)

    def cuMemFree(self, ptr):
        self.memory.pop(int(ptr))
        return self._ok("cuMemFree")

    def _owner(self, ptr: int) -> tuple[int, np.ndarray]:
        for base, buf in self.memory.items():
            if base <= ptr < base + max(buf.nbytes, 1):
                return base, buf
        raise AssertionError(f"pointer {ptr:#x} is in no allocation")

    def cuMemcpyHtoD(self, dst, src, n):
        base, buf = self._owner(int(dst))
        assert int(dst) - base + n <= buf.nbytes, "copy past the allocation"
        ctypes.memmove(int(dst), src, n)
        self.htod_bytes += n
        return self._ok("cuMemcpyHtoD")

    def cuMemcpyDtoH(self, dst, src, n):
        base, buf = self._owner(int(src))
        assert int(src) - base + n <= buf.nbytes, "copy past the allocation"
        ctypes.memmove(dst, int(src), n)
        return self._ok("cuMemcpyDtoH")

    def cuMemcpy2DAsync(self, c, stream):
        assert c.srcMemoryType == c.dstMemoryType == 2, "device to device only"
        for r in range(c.Height):
            src, dst = int(c.srcDevice) + r * c.srcPitch, int(c.dstDevice) + r * c.dstPitch
            for ptr in (src, dst):
                base, buf = self._owner(ptr)
                assert ptr - base + c.WidthInBytes <= buf.nbytes, "row past the allocation"
            ctypes.memmove(dst, src, c.WidthInBytes)
        return self._ok("cuMemcpy2DAsync")

    def cuMemsetD8(self, ptr, byte, n):
        ctypes.memset(int(ptr), byte, n)
        return self._ok("cuMemsetD8")

    # --- modules, launches, streams, graphs ------------------------------------------------
    def cuModuleLoadData(self, cubin):
        """The "cubin" is the .cu itself: built for the CPU, signatures read off its kernels."""
        source = cubin.decode()
        if all(k in source for k in self.TIMER_KERNELS):
            return self._ok("cuModuleLoadData", "timer")
        for name, params in re.findall(r'__global__ void __launch_bounds__\(\d+\) (\w+)\(([^)]*)\)',
                                       source):
            self.signatures[name] = [p.rsplit(" ", 1)[0] for p in params.split(", ") if p]
        self.cpu = CpuModule(source, self.signatures)
        return self._ok("cuModuleLoadData", "module")

    def cuModuleUnload(self, module):
        return self._ok("cuModuleUnload")

    def cuModuleGetFunction(self, module, name):
        return self._ok("cuModuleGetFunction", name.decode())

    def cuFuncSetAttribute(self, func, attr, value):
        return self._ok("cuFuncSetAttribute")

    def _args(self, kernel: str, params: int) -> list:
        """The launch's arguments: scalars, and for each pointer the array from it to the next
        pointer of this launch into the same allocation (or the allocation's end), so buffers
        that share an arena stay disjoint, and one buffer passed twice is one array."""
        raw = []
        for i, c_type in enumerate(self.signatures[kernel]):
            base, is_ptr = parse_param_type(c_type)
            where = ctypes.c_void_p.from_address(params + 8 * i).value
            raw.append((base, ctypes.c_uint64.from_address(where).value) if is_ptr
                       else (base, _SCALARS[base].from_address(where).value, None))
        pointers = sorted({r[1] for r in raw if len(r) == 2})
        arrays: dict[tuple, np.ndarray] = {}
        args = []
        for r in raw:
            if len(r) == 3:
                args.append(r[1])
                continue
            base, ptr = r
            start, buf = self._owner(ptr)
            end = min([p for p in pointers if ptr < p < start + buf.nbytes] + [start + buf.nbytes])
            key = (ptr, base)
            if key not in arrays:
                raw_bytes = buf[ptr - start:end - start]
                width = np.dtype(C_TO_NUMPY[base]).itemsize
                arrays[key] = raw_bytes[:len(raw_bytes) // width * width].view(C_TO_NUMPY[base])
            args.append(arrays[key])
        return args

    def cuLaunchKernel(self, func, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
        if func in self.TIMER_KERNELS:
            return self._ok(func)
        launch = (func, (gx, gy, gz), (bx, by, bz), smem, self._args(func, params))
        if stream in self.capturing:
            self.capturing[stream].append(launch)
        else:
            self._run(launch)
        return self._ok("cuLaunchKernel")

    def _run(self, launch) -> None:
        func, grid, block, smem, args = launch
        self.calls["kernel runs"] += 1
        self.clock += 1.0
        self.cpu.launch(func, grid, block, args, smem_bytes=smem)

    def cuStreamCreate(self, flags):
        self._streams += 1
        return self._ok("cuStreamCreate", self._streams)

    def cuStreamDestroy(self, stream):
        return self._ok("cuStreamDestroy")

    def cuStreamSynchronize(self, stream):
        return self._ok("cuStreamSynchronize")

    def cuCtxSynchronize(self):
        return self._ok("cuCtxSynchronize")

    def cuDeviceGet(self, ordinal):
        return self._ok("cuDeviceGet", ordinal)

    def cuDeviceGetAttribute(self, attr, dev):
        return self._ok("cuDeviceGetAttribute", attr[0])

    def cuEventCreate(self, flags):
        self.events[len(self.events)] = float("nan")
        return self._ok("cuEventCreate", len(self.events) - 1)

    def cuEventRecord(self, event, stream):
        assert stream not in self.capturing, "events are recorded outside graphs"
        self.events[event] = self.clock
        return self._ok("cuEventRecord")

    def cuEventQuery(self, event):
        """Not ready unless told otherwise (`ready_answers`): the fake's timed work "starts"
        after the host has enqueued it, as a long enough spin makes it on a GPU."""
        self.calls["cuEventQuery"] += 1
        self.ready_answers -= 1
        return (0 if self.ready_answers >= 0 else 600,)

    def cuEventSynchronize(self, event):
        return self._ok("cuEventSynchronize")

    def cuEventElapsedTime(self, start, end):
        return self._ok("cuEventElapsedTime", self.events[end] - self.events[start])

    def cuEventDestroy(self, event):
        return self._ok("cuEventDestroy")

    def cuStreamBeginCapture(self, stream, mode):
        self.capturing[stream] = []
        return self._ok("cuStreamBeginCapture")

    def cuStreamEndCapture(self, stream):
        return self._ok("cuStreamEndCapture", self.capturing.pop(stream))

    def cuGraphInstantiate(self, graph, flags):
        return self._ok("cuGraphInstantiate", graph)

    def cuGraphLaunch(self, exe, stream):
        for launch in exe:
            self._run(launch)
        return self._ok("cuGraphLaunch")

    def cuGraphExecDestroy(self, exe):
        return self._ok("cuGraphExecDestroy")

    def cuGraphDestroy(self, graph):
        return self._ok("cuGraphDestroy")
