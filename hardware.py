"""CUDA's execution limits, defined once: the verifiers of every level, the schedule planner and
the runtimes read them from here.

These are limits of the programming model on every GPU deplo targets (sm_80 and up; CUDA C++
Programming Guide, "Compute Capabilities", table of technical specifications), not performance
figures: the sm_90 cost model keeps its own table of rates and latencies.
"""

WARP = 32
"""Threads per warp: the width of shuffles and the unit of a block's thread count."""

MAX_BLOCK_THREADS = 1024
"""Threads per block."""

MAX_BLOCK = (1024, 1024, 64)
"""Block size per axis (x, y, z)."""

MAX_GRID = (2**31 - 1, 65535, 65535)
"""Grid size per axis (x, y, z)."""

SHARED_MEMORY_BYTES = 48 * 1024
"""Static shared memory per block. More (up to 227 KB on sm_90) needs dynamic shared memory and
an opt-in attribute at launch; emitted kernels use static arrays only."""
