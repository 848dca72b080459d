"""Injected bugs in the emitted matmul kernels are caught on the CPU runtime: each one is a small
edit of the correct `.cu` text (which passes), run under the MATRIX fiber schedules. Which
schedule catches which bug follows docs CPU-RUNTIME.md's matrix: a missing or short cp.async
wait shows with lazy copies, a write-after-read race on the double buffer with eager copies and
the greedy scheduler, a missing barrier after a plain copy with round-robin forward order."""

from __future__ import annotations

import re

import numpy as np
import pytest
from mm_harness import MATRIX, Case, check, inputs, lower, reference, run

from deplo.runtime import cpu

_OK, _WHY = cpu.cpu_runtime_available()
pytestmark = pytest.mark.skipif(not _OK, reason=f"CPU runtime unavailable: {_WHY}")

STAGED = [
    "tile-register-tile{reg-m=4 reg-n=4}",
    "tile-map-2d{threads-m=4 threads-n=8}",
    "tile-chunk-reduce{k-chunk=16}",
    "tile-stage-chunks",
]
PIPELINED = [*STAGED, "tile-double-buffer", "tile-cp-async"]
CASE = Case(37, 53, 70)


def catches(source: str, passes: list[str]) -> set[str]:
    """The schedules under which the edited kernel fails (wrong result or a runtime error)."""
    low = lower(CASE, passes)
    ref, tol = reference(CASE, inputs(CASE))
    caught = set()
    for s in MATRIX:
        try:
            got, _ = run(CASE, passes, schedules=(s,), low=low, source=source)
        except cpu.KernelError:
            caught.add(s)
            continue
        if not np.all(np.abs(got - ref) <= tol):
            caught.add(s)
    return caught


def edit(source: str, pattern: str, repl: str, count: int = 1) -> str:
    new, n = re.subn(pattern, repl, source, count=count)
    assert n == count, f"pattern {pattern!r} found {n} times"
    return new


def chunk_loop(source: str) -> tuple[int, int]:
    """[start, end) of the K-chunk loop's text."""
    start = source.index("for (int ro = ")
    return start, source.index("for (int ri = ", start)


def test_the_correct_kernels_pass():
    check(CASE, PIPELINED)
    check(CASE, STAGED)


def test_missing_cp_async_wait_is_caught_by_lazy_copies():
    src = lower(CASE, PIPELINED).source
    bad = edit(src, r"kc_cp_async_wait\(1\);", "")
    got = catches(bad, PIPELINED)
    assert "LR-fwd" in got, got


def test_short_cp_async_wait_is_caught_by_lazy_copies():
    src = lower(CASE, PIPELINED).source
    bad = edit(src, r"kc_cp_async_wait\(1\);", "kc_cp_async_wait(2);")
    got = catches(bad, PIPELINED)
    assert "LR-fwd" in got, got  # (and every schedule: copies are left pending at exit)


def test_double_buffer_race_is_caught_by_eager_greedy():
    """Without the barrier at the top of a chunk, a fast thread's prefetch of chunk t+1 lands in
    the half other threads still read for chunk t-1."""
    src = lower(CASE, PIPELINED).source
    a, b = chunk_loop(src)
    body = edit(src[a:b], r"__syncthreads\(\);\n", "", count=1)
    got = catches(src[:a] + body + src[b:], PIPELINED)
    assert got & {"EG-fwd", "EG-rev"} and "LR-fwd" not in got, got


def test_missing_barrier_after_a_plain_copy_is_caught():
    src = lower(CASE, STAGED).source
    a, b = chunk_loop(src)
    chunk = src[a:b]
    last = chunk.rindex("__syncthreads();")
    bad = src[:a] + chunk[:last] + chunk[last + len("__syncthreads();") :] + src[b:]
    assert bad.count("__syncthreads();") == src.count("__syncthreads();") - 1
    got = catches(bad, STAGED)
    assert "LR-fwd" in got, got
