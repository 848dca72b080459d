"""Count SASS opcodes in a cubin with cuobjdump (from pip), so tests can assert on the machine
code a schedule produced: vector loads, cp.async, tensor-core instructions.

    ops = sass_opcodes(res.cubin)
    count_prefix(ops, "LDGSTS")      # cp.async copies
    ops["HMMA.16816.F32"]            # full mnemonics, modifiers included

cuobjdump 13.2+ hands the disassembly to nvdisasm, so both pip packages are needed
(nvidia-cuda-cuobjdump, nvidia-cuda-nvdisasm); /usr/local/cuda/bin is the fallback.
"""

from __future__ import annotations

import collections
import functools
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from deplo.runtime.gpu.nvrtc import nvidia_package_roots


class SassToolError(RuntimeError):
    """cuobjdump/nvdisasm missing or failing."""


# `/*0070*/   @!P0 IMAD.WIDE.U32 R24, R24, 0x4, R28 ;` -> IMAD.WIDE.U32
_INSTR = re.compile(
    r"^\s*/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Za-z0-9_]+)*)", re.MULTILINE
)
_FUNCTION = re.compile(r"^\s*Function\s*:\s*(\S+)", re.MULTILINE)


def _find_tool(tool: str) -> Path | None:
    for root in nvidia_package_roots():
        for sub in ("cu13/bin", f"cuda_{tool}/bin", "cuda_nvcc/bin"):
            if (root / sub / tool).is_file():
                return root / sub / tool
    found = shutil.which(tool) or (
        f"/usr/local/cuda/bin/{tool}" if os.access(f"/usr/local/cuda/bin/{tool}", os.X_OK) else None
    )
    return Path(found) if found else None


@functools.cache
def cuobjdump_path() -> Path:
    path = _find_tool("cuobjdump")
    if path is None:
        raise SassToolError(
            "cuobjdump not found: pip install nvidia-cuda-cuobjdump "
            "nvidia-cuda-nvdisasm (no cuobjdump in site-packages/nvidia, PATH "
            "or /usr/local/cuda/bin)"
        )
    return path


def sass_text(cubin: bytes) -> str:
    """`cuobjdump -sass` of the cubin."""
    env = dict(os.environ)
    if (nvdisasm := _find_tool("nvdisasm")) is not None:
        env["NVDISASM_PATH"] = str(nvdisasm.parent)
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        proc = subprocess.run(
            [str(cuobjdump_path()), "-sass", f.name],
            check=False,
            capture_output=True,
            text=True,
            env=env,
        )
    if "Could not find executable file 'nvdisasm'" in proc.stderr:
        raise SassToolError(
            f"cuobjdump needs nvdisasm: pip install nvidia-cuda-nvdisasm ({proc.stderr.strip()})"
        )
    if proc.returncode != 0:
        raise SassToolError(f"cuobjdump -sass failed ({proc.returncode}): {proc.stderr.strip()}")
    return proc.stdout


def sass_by_kernel(cubin: bytes) -> dict[str, collections.Counter[str]]:
    """Kernel name -> opcode counts."""
    text = sass_text(cubin)
    starts = list(_FUNCTION.finditer(text))
    out: dict[str, collections.Counter[str]] = {}
    for i, m in enumerate(starts):
        end = starts[i + 1].start() if i + 1 < len(starts) else len(text)
        ops = collections.Counter(x.group(1) for x in _INSTR.finditer(text, m.end(), end))
        out.setdefault(m.group(1), collections.Counter()).update(ops)
    return out


def sass_opcodes(cubin: bytes, kernel: str | None = None) -> collections.Counter[str]:
    """Full opcode mnemonics (e.g. "LDG.E.128", "LDGSTS.E.BYPASS.128") -> count, over all
    kernels of the cubin or only `kernel`."""
    per_kernel = sass_by_kernel(cubin)
    if kernel is not None:
        if kernel not in per_kernel:
            raise KeyError(f"no kernel {kernel!r} in cubin; has {sorted(per_kernel)}")
        return per_kernel[kernel]
    total: collections.Counter[str] = collections.Counter()
    for ops in per_kernel.values():
        total.update(ops)
    return total


def count_prefix(ops: collections.Counter[str], prefix: str) -> int:
    """Occurrences of opcodes whose leading dot-separated parts equal `prefix`'s: "LDG" counts
    LDG.E.128 but not LDGSTS.E.BYPASS.128; "LDG.E" counts LDG.E and LDG.E.128."""
    want = prefix.split(".")
    return sum(n for op, n in ops.items() if op.split(".")[: len(want)] == want)


def count_regex(ops: collections.Counter[str], pattern: str) -> int:
    """Occurrences of opcodes that fully match `pattern`, e.g. r"LDG\\..*128.*"."""
    pat = re.compile(pattern)
    return sum(n for op, n in ops.items() if pat.fullmatch(op))
