"""Build the CPU artifacts with g++, each cached by the sha256 of everything that shapes it.

Three artifacts, each built once into `cache_dir("cpu")`:
  - `rt-<key>/libkcpu.so`: the fiber runtime (kcpu_rt.cpp); per g++ version and sanitizer mode;
  - `pch-<key>/kcpu.h.gch`: the shim precompiled (~3 s once; a kernel then builds in ~0.3 s
    instead of ~2 s, nearly all of it CUDA's fp16/bf16 headers);
  - `k-<key>/kernel.so`: one `.cu` plus its generated launcher, linked against libkcpu.so by path.
Every build writes into a private temporary name, sealed with its sha256, and renames it into
place, so concurrent test processes never see half an artifact (at worst both build it); a hit
whose artifact no longer matches its seal is rebuilt.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from deplo.runtime.cache import cache_dir, content_key, intact, seal
from deplo.runtime.cpu import launcher, toolchain
from deplo.runtime.cpu.errors import CpuCompileError


def _run(cmd: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run g++ in the C locale, so its messages quote with ASCII quotes whatever the user's."""
    env = dict(os.environ, LC_ALL="C")
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env, check=False)


def _publish(tmp: Path, final: Path, *names: str) -> None:
    """Seal a finished build directory and move it into place; if another process won the race,
    keep its."""
    seal([tmp / n for n in names], tmp / "sha256")
    try:
        os.rename(tmp, final)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)


def _cached(final: Path, *names: str) -> bool:
    """True when entry `final` holds `names` as built; a damaged entry is removed (rebuilt)."""
    if intact([final / n for n in names], final / "sha256"):
        return True
    shutil.rmtree(final, ignore_errors=True)
    return False


def runtime_lib(sanitize: bool) -> Path:
    """Path of libkcpu.so (built on first use)."""
    flags = list(toolchain.RUNTIME_FLAGS) + (list(toolchain.SANITIZE_FLAGS) if sanitize else [])
    src = toolchain.RUNTIME_SRC.read_text()
    final = cache_dir("cpu") / f"rt-{content_key(src, toolchain.cxx_version(), *flags)[:24]}"
    lib = final / "libkcpu.so"
    if _cached(final, "libkcpu.so"):
        return lib
    tmp = Path(tempfile.mkdtemp(prefix=final.name + ".", dir=final.parent))
    r = _run([toolchain.cxx(), *flags, str(toolchain.RUNTIME_SRC), "-o", str(tmp / "libkcpu.so"),
              "-ldl", "-lpthread"])
    if r.returncode:
        shutil.rmtree(tmp, ignore_errors=True)
        raise CpuCompileError(f"building libkcpu.so failed:\n{r.stderr}", r.stderr)
    _publish(tmp, final, "libkcpu.so")
    return lib


def shim_pch(sanitize: bool) -> Path:
    """Path of the kcpu.h to pass to `-include`; its .gch lies beside it (built on first use)."""
    flags = toolchain.shim_flags(sanitize)
    shim = toolchain.SHIM.read_text()
    final = cache_dir("cpu") / f"pch-{content_key(shim, toolchain.cxx_version(), *flags)[:24]}"
    header = final / "kcpu.h"
    if _cached(final, "kcpu.h", "kcpu.h.gch"):
        return header
    tmp = Path(tempfile.mkdtemp(prefix=final.name + ".", dir=final.parent))
    (tmp / "kcpu.h").write_text(shim)
    r = _run([toolchain.cxx(), *flags, "-x", "c++-header", "kcpu.h", "-o", "kcpu.h.gch"], cwd=tmp)
    if r.returncode:
        shutil.rmtree(tmp, ignore_errors=True)
        raise CpuCompileError(f"precompiling kcpu.h failed:\n{r.stderr}", r.stderr)
    _publish(tmp, final, "kcpu.h", "kcpu.h.gch")
    return header


def kernel_lib(source: str, signatures: dict[str, list[str]], name: str,
               sanitize: bool) -> tuple[Path, bool]:
    """(path of the kernel .so, True if it came from the cache). Raises CpuCompileError."""
    rt = runtime_lib(sanitize)
    pch = shim_pch(sanitize)
    flags = toolchain.shim_flags(sanitize)
    prelude = "".join(p.read_text() for p in sorted(toolchain.PRELUDE_DIR.glob("*.cuh")))
    key = content_key(source, json.dumps(signatures, sort_keys=True), name, *flags, str(rt),
                      str(pch), prelude, launcher.VERSION)
    final = cache_dir("cpu") / f"k-{key[:24]}"
    lib = final / "kernel.so"
    if _cached(final, "kernel.so"):
        return lib, True
    cu = f"{name}.cu"
    tmp = Path(tempfile.mkdtemp(prefix=final.name + ".", dir=final.parent))
    (tmp / cu).write_text(source)
    (tmp / "launch.cpp").write_text(launcher.launcher_source(cu, source, signatures))
    cmd = [toolchain.cxx(), *flags, "-include", str(pch), "-I", str(toolchain.PRELUDE_DIR),
           f"-fdebug-prefix-map={tmp}={final}", "-shared", "launch.cpp", "-o", "kernel.so", str(rt)]
    r = _run(cmd, cwd=tmp)
    if r.returncode:
        launch_text = (tmp / "launch.cpp").read_text()
        shutil.rmtree(tmp, ignore_errors=True)
        raise CpuCompileError(compile_error_message(cu, source, launch_text, r.stderr), r.stderr)
    _publish(tmp, final, "kernel.so")
    return lib, False


def compile_error_message(cu: str, source: str, launch_text: str, stderr: str,
                          context: int = 1, max_sites: int = 5) -> str:
    """g++'s errors, then each offending line of the .cu (or the launcher) quoted with its
    neighbours and line numbers, the bad one marked with '>'."""
    files = {cu: source.splitlines(), "launch.cpp": launch_text.splitlines()}
    pat = re.compile(rf"^({re.escape(cu)}|launch\.cpp):(\d+):(?:\d+:)? (?:fatal )?error:", re.MULTILINE)
    sites: list[tuple[str, int]] = []
    for m in pat.finditer(stderr):
        site = (m[1], int(m[2]))
        if site not in sites:
            sites.append(site)
    errors = [ln for ln in stderr.splitlines() if "error" in ln]
    parts = [f"g++ could not compile {cu}:", *errors[:20]]
    for file, line in sites[:max_sites]:
        lines = files[file]
        parts.append(f"\n{file}:{line}:")
        for k in range(max(1, line - context), min(len(lines), line + context) + 1):
            parts.append(f"{'>' if k == line else ' '} {k:5d} | {lines[k - 1]}")
    if not sites:
        parts += ["", stderr.strip()[-4000:]]
    return "\n".join(parts)
