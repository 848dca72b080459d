"""CpuModule: one emitted `.cu` compiled for the CPU, with its kernels launchable on numpy arrays."""

from __future__ import annotations

import re

from deplo.runtime.cpu import build
from deplo.runtime.cpu.launch import launch_in_process
from deplo.runtime.cpu.sanitize import launch_sanitized


class CpuModule:
    """Compile `cu_source` (cached) and launch its kernels.

    signatures: kernel name -> its C parameter types exactly as printed, e.g.
        {"rms_norm": ["const float* __restrict__", "float* __restrict__", "int"]}.
    sanitize: build with ASan+UBSan; each launch then runs in a subprocess (slower, exact reports).
    name: the .cu file name (without extension) used in diagnostics and `__FILE__`.
    Attributes: `lib_path` (the kernel .so), `cache_hit` (True if nothing was compiled).
    """

    def __init__(self, cu_source: str, signatures: dict[str, list[str]], *,
                 sanitize: bool = False, name: str = "kernel"):
        for k in signatures:
            if not re.fullmatch(r"[A-Za-z_]\w*", k):
                raise ValueError(f"bad kernel name {k!r}")
        self.name = re.sub(r"\W", "_", name) or "kernel"
        self.signatures = {k: list(v) for k, v in signatures.items()}
        self.sanitize = sanitize
        self.lib_path, self.cache_hit = build.kernel_lib(cu_source, self.signatures, self.name,
                                                         sanitize)

    def launch(self, kernel: str, grid: tuple[int, int, int], block: tuple[int, int, int],
               args: list, *, smem_bytes: int = 0, schedule: str = "LR-fwd") -> None:
        """Run `kernel<<<grid, block, smem_bytes>>>(args)`; arrays are updated in place.
        Raises KernelError (deadlock, bad mask, out-of-bounds write, fault, ...)."""
        if kernel not in self.signatures:
            raise KeyError(f"{kernel!r} is not in this module's signatures "
                           f"({', '.join(self.signatures)})")
        run = launch_sanitized if self.sanitize else launch_in_process
        run(self.lib_path, kernel, self.signatures[kernel], grid, block, list(args),
            smem_bytes, schedule)
