"""Probe for an NVIDIA driver, load cubins and launch kernels with cuda-python's driver API.

Why the driver API: a cubin from NVRTC loads with cuModuleLoadData and launches by name, with
no nvcc-built host code. Without a GPU every entry point fails with one clear line.

    mod = GpuModule(res.cubin, signatures={"scale": ["float*", "float", "int"]})
    mod.launch("scale", grid=4, block=256, args=[x, 2.0, x.size])   # x copied back in place
    ms = mod.time("scale", 4, 256, [x, 2.0, x.size])
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Sequence
from typing import Self

import numpy as np

from deplo.dialects.kernel import PRELUDE_SHARED_BYTES
from deplo.hardware import SHARED_MEMORY_BYTES
from deplo.runtime.ctypes_map import C_TO_NUMPY, parse_param_type, to_bf16_bits

NO_DRIVER = "no NVIDIA driver (libcuda.so.1 not found)"

# C spelling -> ctypes type for scalar kernel parameters
_C_TO_CTYPES = {
    "float": ctypes.c_float,
    "double": ctypes.c_double,
    "__half": ctypes.c_uint16,
    "__nv_bfloat16": ctypes.c_uint16,
    "int": ctypes.c_int32,
    "long long": ctypes.c_int64,
    "unsigned int": ctypes.c_uint32,
    "bool": ctypes.c_bool,
}


class NoGpuError(RuntimeError):
    """No usable NVIDIA GPU; str() is gpu_probe()'s one-line reason."""


class CudaDriverError(RuntimeError):
    """A CUDA driver call failed."""


def _driver():
    from cuda.bindings import driver

    return driver


def _check(result, what: str):
    driver = _driver()
    err = result[0]
    if err != driver.CUresult.CUDA_SUCCESS:
        _, name = driver.cuGetErrorName(err)
        _, text = driver.cuGetErrorString(err)
        name = name.decode() if isinstance(name, bytes) else name
        text = text.decode() if isinstance(text, bytes) else text
        raise CudaDriverError(f"{what} failed: {name}: {text}")
    if len(result) == 1:
        return None
    return result[1] if len(result) == 2 else result[1:]


def _init() -> str | None:
    """cuInit; None when it succeeded, else the one-line reason (every later driver call
    needs it: cuDeviceGet before it fails CUDA_ERROR_NOT_INITIALIZED)."""
    try:
        driver = _driver()
    except ImportError as e:
        return f"cuda-python is not installed ({e})"
    try:
        (err,) = driver.cuInit(0)
    except Exception as e:  # noqa: BLE001 - a probe reports, never raises
        # cuda.pathfinder.DynamicLibNotFoundError when libcuda.so.1 is absent
        if "NotFound" in type(e).__name__ or isinstance(e, OSError):
            return NO_DRIVER
        return f"cuInit raised {type(e).__name__}: {_first_line(e)}"
    if err != driver.CUresult.CUDA_SUCCESS:
        return f"cuInit failed: {driver.cuGetErrorName(err)[1].decode()}"
    return None


@functools.cache
def gpu_probe() -> tuple[bool, str]:
    """(True, "<device>, sm_XY, driver CUDA X.Y") or (False, one-line reason). Never raises."""
    if (reason := _init()) is not None:
        return False, reason
    try:
        driver = _driver()
        count = _check(driver.cuDeviceGetCount(), "cuDeviceGetCount")
        if count == 0:
            return False, "NVIDIA driver found but no CUDA device is visible"
        dev = _check(driver.cuDeviceGet(0), "cuDeviceGet")
        name = _check(driver.cuDeviceGetName(128, dev), "cuDeviceGetName")
        name = name.split(b"\0", 1)[0].decode(errors="replace")
        version = _check(driver.cuDriverGetVersion(), "cuDriverGetVersion")
        return (
            True,
            f"{name}, {device_arch()}, driver CUDA {version // 1000}.{version % 1000 // 10}",
        )
    except Exception as e:  # noqa: BLE001
        return False, f"CUDA driver probe failed: {_first_line(e)}"


def _first_line(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    return lines[0] if lines else repr(e)


@functools.cache
def device_arch(ordinal: int = 0) -> str:
    """'sm_90' for an H100 (compute capability of the device); needs a driver."""
    if (reason := _init()) is not None:
        raise NoGpuError(reason)
    driver = _driver()
    attr = driver.CUdevice_attribute
    dev = _check(driver.cuDeviceGet(ordinal), "cuDeviceGet")
    major = _check(
        driver.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev),
        "cuDeviceGetAttribute",
    )
    minor = _check(
        driver.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev),
        "cuDeviceGetAttribute",
    )
    return f"sm_{major}{minor}"


@functools.cache
def _context():
    """The primary context of device 0, retained once per process and made current."""
    driver = _driver()
    dev = _check(driver.cuDeviceGet(0), "cuDeviceGet")
    ctx = _check(driver.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
    _check(driver.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    return ctx


def _dim3(d: int | Sequence[int]) -> tuple[int, int, int]:
    t = (d,) if isinstance(d, int | np.integer) else tuple(d)
    if not 1 <= len(t) <= 3 or any(int(x) < 1 for x in t):
        raise ValueError(f"expected a grid/block of 1 to 3 positive ints, got {d!r}")
    return tuple(int(x) for x in t) + (1,) * (3 - len(t))  # type: ignore[return-value]


def _infer_type(arg) -> str:
    if isinstance(arg, np.ndarray):
        for c, dt in C_TO_NUMPY.items():
            if dt == arg.dtype:
                return f"{c}*"
        raise TypeError(f"no C type for array dtype {arg.dtype}")
    if isinstance(arg, bool | np.bool_):
        return "bool"
    if isinstance(arg, int | np.integer):
        return "int"
    if isinstance(arg, float | np.floating):
        return "float"
    raise TypeError(f"unsupported kernel argument {type(arg).__name__}")


def _scalar(base: str, value):
    """A python/numpy scalar as the ctypes value of C type `base` (half/bf16 as bit patterns)."""
    if isinstance(value, np.generic):
        value = value.item()
    if base == "__half":
        value = int(np.array(value, np.float16).view(np.uint16))
    elif base == "__nv_bfloat16" and isinstance(value, float):
        value = int(to_bf16_bits(np.float32(value)))
    return _C_TO_CTYPES[base](value)


class DeviceArray:
    """An array in device memory (its own allocation, or a view into another's: an arena).
    A launch takes it as its pointer: no copy either way (runtime/resident.py keeps a whole
    program's buffers on the device between runs this way)."""

    def __init__(self, shape: Sequence[int], dtype, *, base: DeviceArray | None = None,
                 offset: int = 0):
        self.shape, self.dtype = tuple(int(n) for n in shape), np.dtype(dtype)
        self.nbytes = int(np.prod(self.shape)) * self.dtype.itemsize
        self._owner = base is None
        self.ptr = int(_check(_driver().cuMemAlloc(max(self.nbytes, 1)), "cuMemAlloc")) \
            if base is None else base.ptr + offset
        if base is not None and offset + self.nbytes > base.nbytes:
            raise ValueError(f"view of {self.nbytes} bytes at {offset} past its base's "
                             f"{base.nbytes}")

    def view(self, offset: int, shape: Sequence[int], dtype) -> DeviceArray:
        return DeviceArray(shape, dtype, base=self, offset=offset)

    def upload(self, arr: np.ndarray) -> None:
        arr = np.ascontiguousarray(arr, self.dtype)
        if arr.nbytes != self.nbytes:
            raise ValueError(f"upload of {arr.nbytes} bytes into a {self.nbytes}-byte buffer")
        if arr.nbytes:
            _check(_driver().cuMemcpyHtoD(self.ptr, arr.ctypes.data, arr.nbytes), "cuMemcpyHtoD")

    def download(self, out: np.ndarray | None = None) -> np.ndarray:
        """The array back on the host: into `out` (C-contiguous, as large) or a new one."""
        out = np.empty(self.shape, self.dtype) if out is None else out
        if out.nbytes:
            _check(_driver().cuMemcpyDtoH(out.ctypes.data, self.ptr, out.nbytes), "cuMemcpyDtoH")
        return out

    def fill_bytes(self, byte: int) -> None:
        """Every byte set (0xFF: NaN in every float type: a stale read shows in a check)."""
        if self.nbytes:
            _check(_driver().cuMemsetD8(self.ptr, byte, self.nbytes), "cuMemsetD8")

    def free(self) -> None:
        if self._owner and self.ptr:
            _driver().cuMemFree(self.ptr)
        self.ptr = 0


class _Launch:
    """One argument list: host arrays allocated on the device, copied H->D and freed on close();
    DeviceArrays passed as they are."""

    def __init__(self, kernel: str, signature: list[str], args: list):
        if len(signature) != len(args):
            raise TypeError(
                f"kernel '{kernel}' takes {len(signature)} arguments "
                f"({', '.join(signature)}), got {len(args)}"
            )
        self._values: list = []  # ctypes values: kept alive until the launch is done
        self.buffers: list[tuple[np.ndarray, DeviceArray, bool]] = []  # (host, copy, writable)
        try:
            for i, (c_type, arg) in enumerate(zip(signature, args, strict=True)):
                base, is_ptr = parse_param_type(c_type)
                if is_ptr:
                    self._values.append(ctypes.c_uint64(self._upload(kernel, i, c_type, base, arg)))
                else:
                    if isinstance(arg, np.ndarray):
                        raise TypeError(
                            f"kernel '{kernel}' argument {i} ({c_type}): expected a "
                            "scalar, got an array"
                        )
                    self._values.append(_scalar(base, arg))
        except BaseException:
            self.close()
            raise
        ptrs = [ctypes.addressof(v) for v in self._values]
        self._params = (ctypes.c_void_p * max(1, len(ptrs)))(*ptrs)
        self.params = ctypes.addressof(self._params) if ptrs else 0

    def _upload(self, kernel: str, i: int, c_type: str, base: str, arr) -> int:
        if isinstance(arr, DeviceArray):
            if arr.dtype != C_TO_NUMPY[base]:
                raise TypeError(f"kernel '{kernel}' argument {i} ({c_type}): expected dtype "
                                f"{C_TO_NUMPY[base]}, got a device array of {arr.dtype}")
            return arr.ptr
        if not isinstance(arr, np.ndarray):
            raise TypeError(
                f"kernel '{kernel}' argument {i} ({c_type}): expected a numpy array, "
                f"got {type(arr).__name__}"
            )
        if arr.dtype != C_TO_NUMPY[base]:
            raise TypeError(
                f"kernel '{kernel}' argument {i} ({c_type}): expected dtype "
                f"{C_TO_NUMPY[base]}, got {arr.dtype}"
            )
        if not arr.flags.c_contiguous:
            raise ValueError(f"kernel '{kernel}' argument {i}: array must be C-contiguous")
        copy = DeviceArray(arr.shape, arr.dtype)
        writable = "const" not in c_type.split("*")[0] and arr.flags.writeable
        self.buffers.append((arr, copy, writable))
        copy.upload(arr)
        return copy.ptr

    def download(self) -> None:
        for arr, copy, writable in self.buffers:
            if writable:
                copy.download(arr)

    def close(self) -> None:
        for _, copy, _ in self.buffers:
            copy.free()
        self.buffers = []


class _Graph:
    """An instantiated CUDA graph and the stream it replays on; callable."""

    def __init__(self, graph, exe, stream):
        self._graph, self._exe, self._stream = graph, exe, stream

    def __call__(self) -> None:
        _check(_driver().cuGraphLaunch(self._exe, self._stream), "cuGraphLaunch")

    def close(self) -> None:
        _driver().cuGraphExecDestroy(self._exe)
        _driver().cuGraphDestroy(self._graph)


def _capture(stream, work) -> _Graph | None:
    """`work()` (launches on `stream`) captured as a graph; None where capture fails."""
    driver = _driver()
    mode = driver.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
    try:
        _check(driver.cuStreamBeginCapture(stream, mode), "cuStreamBeginCapture")
        try:
            work()
        finally:
            graph = _check(driver.cuStreamEndCapture(stream), "cuStreamEndCapture")
        exe = _check(driver.cuGraphInstantiate(graph, 0), "cuGraphInstantiate")
        return _Graph(graph, exe, stream)
    except (CudaDriverError, TypeError, AttributeError):
        return None


class GpuModule:
    """A cubin loaded on device 0. `signatures` maps kernel -> C parameter types as the CUDA
    printer wrote them (["const float* __restrict__", "int"]); a kernel without one gets types
    inferred from its arguments (array dtype -> T*, int -> int, float -> float)."""

    def __init__(self, cubin: bytes, signatures: dict[str, list[str]] | None = None):
        ok, reason = gpu_probe()
        if not ok:
            raise NoGpuError(reason)
        driver = _driver()
        _context()
        self.signatures = dict(signatures or {})
        self._functions: dict[str, object] = {}
        self._smem_set: dict[str, int] = {}
        self._module = _check(
            driver.cuModuleLoadData(cubin), f"cuModuleLoadData (driver: {reason})"
        )

    def function(self, kernel: str):
        if kernel not in self._functions:
            self._functions[kernel] = _check(
                _driver().cuModuleGetFunction(self._module, kernel.encode()),
                f"cuModuleGetFunction('{kernel}')",
            )
        return self._functions[kernel]

    def _prepare(self, kernel: str, args: list, smem_bytes: int):
        driver = _driver()
        func = self.function(kernel)
        # past 48 KB with the prelude's static flag (kc_arrive_last's) a launch must opt in
        if smem_bytes and smem_bytes + PRELUDE_SHARED_BYTES > SHARED_MEMORY_BYTES \
                and self._smem_set.get(kernel, 0) < smem_bytes:
            _check(
                driver.cuFuncSetAttribute(
                    func,
                    driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    smem_bytes,
                ),
                f"cuFuncSetAttribute('{kernel}', max dynamic smem={smem_bytes})",
            )
            self._smem_set[kernel] = smem_bytes
        signature = self.signatures.get(kernel) or [_infer_type(a) for a in args]
        return func, _Launch(kernel, signature, list(args))

    def _launch(self, func, kernel: str, grid, block, launch: _Launch, smem_bytes: int,
                stream=0) -> None:
        g, b = _dim3(grid), _dim3(block)
        _check(
            _driver().cuLaunchKernel(func, *g, *b, smem_bytes, stream, launch.params, 0),
            f"cuLaunchKernel('{kernel}', grid={g}, block={b}, smem={smem_bytes})",
        )

    def launch(self, kernel: str, grid, block, args: list, *, smem_bytes: int = 0) -> None:
        """Copy arrays H->D, run `kernel` once, copy non-const arrays back in place."""
        func, launch = self._prepare(kernel, args, smem_bytes)
        try:
            self._launch(func, kernel, grid, block, launch, smem_bytes)
            _check(_driver().cuCtxSynchronize(), f"kernel '{kernel}'")
            launch.download()
        finally:
            launch.close()

    def time(self, kernel: str, grid, block, args: list, *, smem_bytes: int = 0,
             warmup: int = 3, iters: int = 20) -> float:
        """Median milliseconds of one launch, each after an L2 flush with the launch enqueued
        behind a spinning kernel (runtime/gpu/timing.py: cold inputs, no host latency).
        Arrays are copied back after the last run."""
        from deplo.runtime.gpu.timing import cold_timer

        driver = _driver()
        func, launch = self._prepare(kernel, args, smem_bytes)
        stream = _check(driver.cuStreamCreate(0), "cuStreamCreate")
        try:
            self._launch(func, kernel, grid, block, launch, smem_bytes, stream)
            _check(driver.cuStreamSynchronize(stream), f"kernel '{kernel}'")  # reports itself
            ms, _ = cold_timer().time(
                [lambda: self._launch(func, kernel, grid, block, launch, smem_bytes, stream)],
                stream, warmup, iters)
            launch.download()
            return ms
        finally:
            launch.close()
            driver.cuStreamDestroy(stream)

    def close(self) -> None:
        if getattr(self, "_module", None) is not None:
            _driver().cuModuleUnload(self._module)
            self._module = None
            self._functions.clear()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
