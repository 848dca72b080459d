"""Chains whose producers are read by several later kernels (a binary search: each step reads
the previous lo and hi twice; torch.bucketize's decomposition is one). loop-fuse inlines each
producer once into the last kernel; before, every path to a producer got a copy of it, so the
kernel (and the compile time) doubled with each step of the search."""

from __future__ import annotations

import pytest
import torch

import deplo
from deplo.dialects import loop


def _binary_search(x, b):
    lo = torch.zeros_like(x, dtype=torch.long)
    hi = torch.full_like(lo, b.shape[0])
    for _ in range(6):
        mid = (lo + hi) // 2
        go = b[mid.clamp(max=b.shape[0] - 1)] < x
        lo, hi = torch.where(go, mid + 1, lo), torch.where(go, hi, mid)
    return lo


@pytest.mark.parametrize("fn,args", [
    (lambda x, b: torch.bucketize(x, b, right=True), [torch.randn(4, 5), torch.linspace(-2, 2, 257)]),
    (_binary_search, [torch.randn(4, 5), torch.randn(40).sort().values]),
], ids=["bucketize_257", "binary_search_6_steps"])
def test_a_search_chain_is_one_kernel_of_its_steps_size(fn, args) -> None:
    c = deplo.compile(fn, args)
    kernels = [op for op in c.module("loop").walk() if isinstance(op, loop.KernelOp)]
    assert len(kernels) == 1
    assert sum(1 for _ in kernels[0].walk()) < 400  # ~40 ops a step, not 2^steps copies
    assert c.check(seed=1).ok
    assert c.check(target="interp", level="loop", seed=2).ok
