"""Compile emitted CUDA C++ to a cubin with NVRTC (from pip), cached on disk.

Why NVRTC: it needs no /usr/local/cuda and no GPU, compiles in ~50 ms, and its log carries the
`ptxas -v` report we gate on (spills are errors by default, so a schedule that spills fails
loudly here instead of running slowly on the GPU).

    res = compile_cubin(src, arch="sm_90a")
    res.kernels["block_sum"].registers   # -> 25
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import re
from dataclasses import dataclass, field
from pathlib import Path

from deplo.hardware import SHARED_MEMORY_BYTES
from deplo.runtime.cache import cache_dir, content_key, intact, seal, write_atomic
from deplo.runtime.gpu.ptxas import PtxasReport, parse_ptxas_log

REPO_INCLUDE = Path(__file__).resolve().parents[1] / "include"  # kc_prelude.cuh lives here
_HEADER_SUFFIXES = (".h", ".cuh", ".hpp", ".inc")
_PIP_PACKAGES = ("nvidia-cuda-nvrtc", "nvidia-cuda-runtime", "nvidia-cuda-crt", "nvidia-cuda-cccl")


class CudaCompileError(RuntimeError):
    """NVRTC or ptxas rejected a program; str() has the log and the quoted source lines."""

    def __init__(self, message: str, *, log: str = "", source: str = "", name: str = ""):
        super().__init__(message)
        self.log = log
        self.source = source
        self.name = name


@dataclass
class CompileResult:
    cubin: bytes
    ptx: str
    log: str
    kernels: dict[str, PtxasReport] = field(default_factory=dict)
    cached: bool = False


@functools.cache
def nvidia_package_roots() -> tuple[Path, ...]:
    spec = importlib.util.find_spec("nvidia")
    if spec is None or spec.submodule_search_locations is None:
        return ()
    return tuple(Path(p) for p in spec.submodule_search_locations)


@functools.cache
def _include_dirs() -> tuple[str, ...]:
    dirs: list[Path] = []
    for root in nvidia_package_roots():
        # CUDA 13 wheels share one tree; CUDA 12 wheels have one tree per package.
        for sub in (
            "cu13/include",
            "cuda_runtime/include",
            "cuda_nvrtc/include",
            "cuda_crt/include",
        ):
            if (root / sub).is_dir():
                dirs.append(root / sub)
        for sub in ("cu13/include/cccl", "cuda_cccl/include"):
            if (root / sub).is_dir():
                dirs.append(root / sub)
    if not any((d / "cuda_fp16.h").is_file() for d in dirs):
        for d in (Path("/usr/local/cuda/include"), Path("/usr/local/cuda/include/cccl")):
            if d.is_dir():
                dirs.append(d)
    return tuple(dict.fromkeys(str(d) for d in dirs))


def cuda_include_dirs() -> list[str]:
    """pip's nvidia/cu13/include and its cccl/ subfolder; /usr/local/cuda/include as a fallback."""
    return list(_include_dirs())


def _nvrtc():
    try:
        from cuda.bindings import nvrtc
    except ImportError as e:  # pragma: no cover - the dependency is in pyproject
        raise CudaCompileError(
            f"cuda-python is not installed ({e}); pip install cuda-python"
        ) from e
    return nvrtc


@functools.cache
def nvrtc_version() -> str:
    """e.g. 'nvrtc 13.0 nvidia-cuda-nvrtc=13.0.88 nvidia-cuda-runtime=13.0.96 ...' (cache key)."""
    nvrtc = _nvrtc()
    _, major, minor = nvrtc.nvrtcVersion()
    parts = [f"nvrtc {major}.{minor}"]
    for pkg in _PIP_PACKAGES:
        try:
            parts.append(f"{pkg}={importlib.metadata.version(pkg)}")
        except importlib.metadata.PackageNotFoundError:
            pass
    return " ".join(parts)


def _headers_digest(dirs: list[str]) -> str:
    """Name+content of the headers in our own include folders: editing kc_prelude.cuh must
    invalidate the cache. (The pip CUDA headers are covered by the package versions.)"""
    parts: list[str | bytes] = []
    for d in dirs:
        p = Path(d)
        if not p.is_dir():
            continue
        for f in sorted(p.iterdir()):
            if f.suffix in _HEADER_SUFFIXES and f.is_file():
                parts += [str(f), f.read_bytes()]
    return content_key(*parts)


def _options(arch: str, spills_are_errors: bool, own_dirs: list[str]) -> list[str]:
    opts = [f"-arch={arch}", "--std=c++17"]
    opts += [f"-I{d}" for d in [*cuda_include_dirs(), *own_dirs]]
    opts.append("-Xptxas=-v")  # one ptxas flag per -Xptxas=, or ptxas rejects the option
    if spills_are_errors:
        opts += ["-Xptxas=-warn-spills", "-Xptxas=-Werror"]
    return opts


def _check(result, what: str):
    if result[0] != _nvrtc().nvrtcResult.NVRTC_SUCCESS:
        raise CudaCompileError(f"{what} failed: {result[0]!r}")
    return result[1] if len(result) == 2 else None


def _get(prog, size_fn, get_fn) -> bytes | None:
    r = size_fn(prog)
    if r[0] != _nvrtc().nvrtcResult.NVRTC_SUCCESS or r[1] == 0:
        return None
    buf = b" " * r[1]
    if get_fn(prog, buf)[0] != _nvrtc().nvrtcResult.NVRTC_SUCCESS:
        return None
    return buf


def _clean_log(raw: bytes | None) -> str:
    return (raw or b"").replace(b"\0", b"").decode(errors="replace").strip()


def _quote_errors(log: str, source: str, name: str) -> str:
    """For every `name(LINE): error` in the log, the source line with one line around it."""
    lines = source.splitlines()
    out: list[str] = []
    pat = re.compile(rf"^{re.escape(name)}\((\d+)\): ((?:catastrophic )?error.*)$", re.MULTILINE)
    for m in pat.finditer(log):
        n = int(m.group(1))
        out.append(f"{name}:{n}: {m.group(2)}")
        for i in range(max(1, n - 1), min(len(lines), n + 1) + 1):
            mark = ">" if i == n else " "
            out.append(f"  {mark} {i:4d} | {lines[i - 1]}")
    return "\n".join(out)


_TOO_MUCH_SMEM = re.compile(r"Entry function '([^']+)' uses too much shared data \((0x[0-9a-f]+)")


def _hints(log: str) -> list[str]:
    hints = []
    if "Registers are spilled" in log:
        hints.append(
            "hint: ptxas spilled registers (spills are errors here); lower the per-thread "
            "work or relax __launch_bounds__, or pass spills_are_errors=False"
        )
    for m in _TOO_MUCH_SMEM.finditer(log):
        hints.append(
            f"hint: kernel '{m.group(1)}' uses {int(m.group(2), 16)} bytes of static "
            f"__shared__ memory; static shared memory is limited to {SHARED_MEMORY_BYTES} "
            "bytes (48 KB): use extern __shared__ with smem_bytes at launch"
        )
    return hints


def _compile_error(log: str, source: str, name: str, arch: str) -> CudaCompileError:
    parts = [f"NVRTC failed to compile {name} for {arch}:", log or "(empty log)"]
    if quoted := _quote_errors(log, source, name):
        parts += ["", quoted]
    parts += _hints(log)
    return CudaCompileError("\n".join(parts), log=log, source=source, name=name)


def _check_reports(res: CompileResult, source: str, name: str, limit: int, spills: bool) -> None:
    for kernel, rep in res.kernels.items():
        if spills and rep.spills:  # ptxas -warn-spills -Werror already fails; belt and braces
            raise CudaCompileError(
                f"kernel '{kernel}' in {name} spills registers ({rep.spill_stores} bytes spill "
                f"stores, {rep.spill_loads} bytes spill loads)",
                log=res.log,
                source=source,
                name=name,
            )
        if rep.smem_bytes > limit:
            raise CudaCompileError(
                f"kernel '{kernel}' in {name} uses {rep.smem_bytes} bytes of static shared "
                f"memory, more than the allowed {limit}; use extern __shared__ and smem_bytes",
                log=res.log,
                source=source,
                name=name,
            )


def _nvrtc_compile(source: str, name: str, arch: str, opts: list[str]) -> CompileResult:
    nvrtc = _nvrtc()
    prog = _check(
        nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], []), "nvrtcCreateProgram"
    )
    try:
        status = nvrtc.nvrtcCompileProgram(prog, len(opts), [o.encode() for o in opts])[0]
        log = _clean_log(_get(prog, nvrtc.nvrtcGetProgramLogSize, nvrtc.nvrtcGetProgramLog))
        if status != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise _compile_error(log, source, name, arch)
        cubin = _get(prog, nvrtc.nvrtcGetCUBINSize, nvrtc.nvrtcGetCUBIN)
        if cubin is None:
            raise CudaCompileError(
                f"NVRTC produced no cubin for {name}: arch={arch} must be a "
                "real architecture (sm_XX), not compute_XX",
                log=log,
                source=source,
                name=name,
            )
        ptx = _clean_log(_get(prog, nvrtc.nvrtcGetPTXSize, nvrtc.nvrtcGetPTX))
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    return CompileResult(cubin=cubin, ptx=ptx, log=log, kernels=parse_ptxas_log(log))


def compile_cubin(
    cu_source: str,
    *,
    arch: str = "sm_90",
    name: str = "kernel.cu",
    spills_are_errors: bool = True,
    extra_include_dirs: list[str] = (),
    max_static_smem: int = SHARED_MEMORY_BYTES,
) -> CompileResult:
    """Compile `cu_source` for `arch`; cached in cache_dir("nvrtc") by source, options, NVRTC
    version and our own headers. Raises CudaCompileError (log + quoted lines) on failure."""
    own_dirs = [str(REPO_INCLUDE), *extra_include_dirs]
    opts = _options(arch, spills_are_errors, own_dirs)
    key = content_key(cu_source, name, "\n".join(opts), nvrtc_version(), _headers_digest(own_dirs))
    folder = cache_dir("nvrtc")
    files = {ext: folder / f"{key}.{ext}" for ext in ("cubin", "ptx", "log")}
    digest = folder / f"{key}.sha256"
    if intact(list(files.values()), digest):
        log = files["log"].read_text()
        res = CompileResult(
            cubin=files["cubin"].read_bytes(),
            ptx=files["ptx"].read_text(),
            log=log,
            kernels=parse_ptxas_log(log),
            cached=True,
        )
    else:
        res = _nvrtc_compile(cu_source, name, arch, opts)
        write_atomic(files["ptx"], res.ptx)
        write_atomic(files["log"], res.log)
        write_atomic(files["cubin"], res.cubin)
        seal(list(files.values()), digest)  # last: it marks a complete entry
    _check_reports(res, cu_source, name, max_static_smem, spills_are_errors)
    return res
