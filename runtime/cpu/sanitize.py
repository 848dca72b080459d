"""Run a launch of an ASan+UBSan build in a subprocess (CpuModule(sanitize=True)).

Why a subprocess: ASan must be the first library in the process (LD_PRELOAD) and aborts it on the
first report. The parent writes the arguments to a folder, the child (`python -m
deplo.runtime.cpu.sanitize DIR`) launches with the same in-process path, writes the arrays back,
and the parent copies them into the caller's arrays or raises KernelError with the report, which
names the exact .cu line (heap-buffer-overflow for global memory, UBSan's `index 511 out of bounds
for type 'float [256]'` for shared arrays).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from deplo.runtime.cpu import toolchain
from deplo.runtime.cpu.errors import KernelError
from deplo.runtime.cpu.launch import describe, launch_in_process

_TIMEOUT_S = 300


def _preload() -> str:
    libs = []
    for name in ("libasan.so", "libubsan.so"):
        out = subprocess.run([toolchain.cxx(), f"-print-file-name={name}"], capture_output=True,
                             text=True, check=False).stdout.strip()
        libs.append(out)
    return ":".join(libs)


def _report(stderr: str) -> str:
    """The sanitizer's report (its error line, stack and summary), without the shadow-byte map."""
    lines = stderr.splitlines()
    start = next((i for i, ln in enumerate(lines) if re.search(
        r"ERROR: (Address|UndefinedBehavior)Sanitizer|runtime error:", ln)), max(0, len(lines) - 30))
    out = []
    for ln in lines[start:start + 40]:
        if ln.startswith("Shadow bytes around"):
            break
        out.append(ln)
    return "\n".join(out).strip()


def launch_sanitized(lib_path: Path, kernel: str, params: list[str], grid, block, args: list,
                     smem_bytes: int, schedule: str) -> None:
    with tempfile.TemporaryDirectory(prefix="kcpu-asan-") as d:
        d = Path(d)
        arrays = {f"a{i}": a for i, a in enumerate(args) if isinstance(a, np.ndarray)}
        scalars = {i: a for i, a in enumerate(args) if not isinstance(a, np.ndarray)}
        np.savez(d / "in.npz", **arrays)
        (d / "job.json").write_text(json.dumps({
            "lib": str(lib_path), "kernel": kernel, "params": params, "grid": list(grid),
            "block": list(block), "smem": smem_bytes, "schedule": schedule,
            "scalars": {str(k): v for k, v in scalars.items()}, "n": len(args)}))
        env = dict(os.environ, LD_PRELOAD=_preload(), PYTHONPATH=os.pathsep.join(sys.path),
                   ASAN_OPTIONS="detect_leaks=0:abort_on_error=0",
                   UBSAN_OPTIONS="print_stacktrace=1")
        r = subprocess.run([sys.executable, "-m", "deplo.runtime.cpu.sanitize", str(d)], env=env,
                           capture_output=True, text=True, timeout=_TIMEOUT_S, check=False)
        where = describe(kernel, grid, block, schedule) + " (ASan+UBSan)"
        if (d / "error.txt").exists():
            raise KernelError((d / "error.txt").read_text())
        if r.returncode:
            raise KernelError(f"{where}: {_report(r.stderr)}")
        with np.load(d / "out.npz") as out:
            for k, a in arrays.items():
                a[...] = out[k]


def _child(d: Path) -> None:
    job = json.loads((d / "job.json").read_text())
    with np.load(d / "in.npz") as f:
        arrays = {k: f[k].copy() for k in f.files}
    args = [arrays.get(f"a{i}", job["scalars"].get(str(i))) for i in range(job["n"])]
    try:
        launch_in_process(Path(job["lib"]), job["kernel"], job["params"], job["grid"],
                          job["block"], args, job["smem"], job["schedule"], catch_signals=False,
                          stack_kb=512, canary=False)
    except KernelError as e:
        (d / "error.txt").write_text(str(e))
        return
    np.savez(d / "out.npz", **arrays)


if __name__ == "__main__":
    _child(Path(sys.argv[1]))
