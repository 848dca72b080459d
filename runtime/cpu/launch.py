"""Run one kernel launch in this process: load the kernel .so, marshal, launch, check the pads.

Why in-process: a launch at test sizes takes milliseconds, far less than a subprocess. It is safe
because the runtime never lets a kernel kill the process: fiber errors switch back to the
scheduler, and faults are caught by signal handlers installed for the launch only.
"""

from __future__ import annotations

import ctypes
import functools
import threading
from pathlib import Path

from deplo.hardware import MAX_BLOCK_THREADS
from deplo.runtime.cpu.args import check_and_copy_back, marshal
from deplo.runtime.cpu.errors import KernelError
from deplo.runtime.cpu.schedules import parse_schedule

_LOCK = threading.Lock()  # the runtime's scheduler state is global: one launch at a time
_ERRLEN = 8192


class Cfg(ctypes.Structure):
    """Mirror of `struct kcpu_cfg` in kcpu.h."""
    _fields_ = [
        ("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3),
        ("smem_bytes", ctypes.c_ulonglong),
        ("cp_eager", ctypes.c_int), ("greedy", ctypes.c_int), ("order", ctypes.c_int),
        ("seed", ctypes.c_uint), ("catch_signals", ctypes.c_int), ("stack_kb", ctypes.c_uint),
    ]


@functools.cache
def _entry(lib_path: str, kernel: str):
    """The kernel's `kcpu_launch_<name>` (the .so stays loaded for the life of the process)."""
    fn = getattr(ctypes.CDLL(lib_path), f"kcpu_launch_{kernel}")
    fn.argtypes = [ctypes.POINTER(Cfg), ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
    fn.restype = ctypes.c_int
    return fn


def describe(kernel: str, grid, block, schedule: str) -> str:
    return f"{kernel}<<<{tuple(grid)}, {tuple(block)}>>> under {schedule}"


def _dims(what: str, d) -> tuple[int, int, int]:
    t = tuple(int(x) for x in d)
    if len(t) != 3 or min(t) < 1:
        raise ValueError(f"{what} must be three positive ints, got {d!r}")
    return t


def launch_in_process(lib_path: Path, kernel: str, params: list[str], grid, block, args: list,
                      smem_bytes: int, schedule: str, *, catch_signals: bool = True,
                      stack_kb: int = 64, canary: bool = True) -> None:
    """Launch and update the arrays in `args` in place; KernelError on any failure.
    catch_signals/canary are off only under ASan, which catches faults and overflows itself."""
    grid, block = _dims("grid", grid), _dims("block", block)
    if block[0] * block[1] * block[2] > MAX_BLOCK_THREADS:
        raise ValueError(f"block {block} has more than {MAX_BLOCK_THREADS} threads")
    s = parse_schedule(schedule)
    cfg = Cfg((ctypes.c_uint * 3)(*grid), (ctypes.c_uint * 3)(*block), int(smem_bytes),
              int(s.cp_eager), int(s.greedy), s.order, s.seed & 0xFFFFFFFF, int(catch_signals),
              stack_kb)
    m = marshal(params, args, canary)
    fn = _entry(str(lib_path), kernel)
    err = ctypes.create_string_buffer(_ERRLEN)
    with _LOCK:
        rc = fn(ctypes.byref(cfg), m.argv, err, _ERRLEN)
    if rc:
        raise KernelError(f"{describe(kernel, grid, block, schedule)}: {err.value.decode()}")
    problems = check_and_copy_back(m)
    if problems:
        raise KernelError(f"{describe(kernel, grid, block, schedule)}: " + "; ".join(problems))
