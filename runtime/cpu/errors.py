"""The two errors of the CPU target.

Why two: a CpuCompileError means the emitted text is not valid C++/CUDA (a printer bug, shown at
the offending .cu line); a KernelError means the text compiled but ran wrongly (deadlock, bad
mask, out-of-bounds write, fault) — a scheduling or indexing bug.
"""

from __future__ import annotations


class CpuCompileError(RuntimeError):
    """g++ rejected the kernel source; str() holds g++'s errors and the quoted .cu lines."""

    def __init__(self, message: str, stderr: str = ""):
        super().__init__(message)
        self.stderr = stderr


class KernelError(RuntimeError):
    """A launch failed at run time; str() names the kernel, the schedule and what went wrong."""
