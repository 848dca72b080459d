"""Where g++ and the CUDA headers are, and the flags every CPU build uses.

Why one place: the compile flags are part of every cache key and must be identical for the
precompiled header and the kernels that use it, or g++ silently ignores the PCH (2 s per kernel
instead of 0.3 s).
"""

from __future__ import annotations

import functools
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHIM = HERE / "kcpu.h"
RUNTIME_SRC = HERE / "kcpu_rt.cpp"
PRELUDE_DIR = HERE.parent / "include"

# -O1: compiles ~10% faster than -O2 and the kernels run at test sizes in milliseconds either way.
# -ffp-contract=off: g++ must not fuse a*b+c into an FMA behind the printer's back (nvcc does by
#   default; we compare with tolerances, and an unfused CPU result is the reproducible reference).
# -fno-strict-aliasing: emitted CUDA type-puns through pointer casts (float4 loads, half2 views),
#   which nvcc tolerates and g++ -O2 could miscompile.
# -fstack-clash-protection: a frame larger than the 4 KB guard page below each fiber stack is
#   probed page by page, so a stack overflow always faults on the guard (reported) instead of
#   writing into the neighbouring fiber's stack.
# -fvisibility=hidden: only the generated kcpu_launch_* are exported; kernels and their shared
#   arrays bind locally (no PLT, no interposition between modules that reuse a kernel name).
KERNEL_FLAGS = ("-std=c++17", "-fPIC", "-O1", "-ffp-contract=off", "-fno-strict-aliasing",
                "-fstack-clash-protection", "-fvisibility=hidden")
SANITIZE_FLAGS = (
    "-g", "-fno-omit-frame-pointer", "-fsanitize=address,undefined",
    "-fno-sanitize-recover=undefined",
)
RUNTIME_FLAGS = ("-std=c++17", "-fPIC", "-O2", "-shared")


def cxx() -> str | None:
    """The g++ to use: `$DEPLO_CXX`, else g++ on PATH."""
    return os.environ.get("DEPLO_CXX") or shutil.which("g++")


@functools.cache
def cxx_version() -> str:
    """`g++ --version`'s first line; part of every cache key."""
    out = subprocess.run([cxx(), "--version"], capture_output=True, text=True, check=True).stdout
    return out.splitlines()[0]


@functools.cache
def cuda_include_dirs() -> tuple[str, ...]:
    """The pip CUDA headers (nvidia/cu13/include and its cccl/), or /usr/local/cuda/include; ()
    when neither has cuda_fp16.h, in which case kernels build without fp16/bf16 support."""
    candidates = [Path(p) / "nvidia" / "cu13" / "include" for p in sys.path if p]
    candidates.append(Path("/usr/local/cuda/include"))
    for inc in candidates:
        if (inc / "cuda_fp16.h").is_file():
            dirs = [str(inc)] + [str(inc / "cccl")] * (inc / "cccl").is_dir()
            return tuple(dirs)
    return ()


def shim_flags(sanitize: bool) -> list[str]:
    """Flags shared by the PCH and the kernel compile (they must match exactly)."""
    flags = list(KERNEL_FLAGS) + (list(SANITIZE_FLAGS) if sanitize else [])
    incs = cuda_include_dirs()
    flags.append(f"-DKCPU_CUDA_HEADERS={1 if incs else 0}")
    for d in incs:
        flags += ["-isystem", d]
    return flags


def cpu_runtime_available() -> tuple[bool, str]:
    """(True, g++ version) if kernels can be built and run here, else (False, why not)."""
    if sys.platform != "linux" or platform.machine() not in ("x86_64", "AMD64"):
        where = f"{sys.platform}/{platform.machine()}"
        return False, f"kcpu needs Linux on x86-64 (its fiber switch is x86-64 asm), not {where}"
    if not cxx():
        return False, "g++ not found on PATH (set DEPLO_CXX)"
    try:
        return True, cxx_version()
    except (OSError, subprocess.CalledProcessError) as e:
        return False, f"g++ does not run: {e}"
