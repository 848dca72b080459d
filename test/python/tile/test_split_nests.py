"""loop-split-nests: a materialized cat (a nest per part) is a kernel per big part, each with
its own grid (as one kernel the planner gave it one block: cat of two [1024, 512], the model,
831 us); a pad (constant parts around one input) is one nest over the output. Checked against
PyTorch on the CPU runtime."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import deplo
from deplo.dialects import loop

CASES = {  # name: (fn, shapes, kernels)
    "cat_last": (lambda a, b: torch.cat([a, b], -1), [(128, 96), (128, 64)], 2),
    "cat_rows_unequal": (lambda a, b: torch.cat([a, b], 0), [(200, 64), (130, 64)], 2),
    "pad_constant": (lambda a: F.pad(a, (1, 2, 3, 1), value=0.5), [(4, 64, 64)], 1),
    "pad_5d": (lambda a: F.pad(a, (1, 2, 3, 0, 2, 2), value=-1.0), [(2, 3, 5, 7, 6)], 1),
    # a conv's pad stays a kernel (its K loop keeps a plain product); a tiny conv's, inlined
    "conv_pad": (lambda a, w: F.conv2d(a, w, padding=1), [(2, 32, 16, 16), (32, 32, 3, 3)], 2),
    "conv_pad_small": (lambda a, w: F.conv2d(a, w, padding=1), [(2, 4, 7, 5), (4, 4, 3, 3)], 1),
    "cat_of_softmaxes": (lambda a, b: torch.cat([a.softmax(-1), b.softmax(-1)], 0),
                         [(64, 256), (64, 256)], 2),  # a row's loops count: 64 x 3 x 256
    "cat_three_f16": (lambda a, b: torch.cat([a.half(), b.half(), a.half()], 1), [(64, 160)] * 2,
                      3),
}


@pytest.mark.parametrize("name", CASES)
def test_big_parts_get_a_kernel_each_and_pads_one(name: str) -> None:
    fn, shapes, kernels = CASES[name]
    g = torch.Generator().manual_seed(0)
    c = deplo.compile(fn, [torch.randn(s, generator=g) for s in shapes])
    found = [k for k in c.module("loop").walk() if isinstance(k, loop.KernelOp)]
    assert len(found) == kernels, [k.sym_name.data for k in found]
    grids = [k.grid for k in c.module("kernel").walk() if hasattr(k, "grid") and
             getattr(k, "sym_name", None) is not None]
    assert grids and all(g != (1, 1, 1) for g in grids), grids
    result = c.check(seed=5)
    assert result.ok, result.line()


def test_small_parts_stay_one_kernel() -> None:
    c = deplo.compile(lambda a, b: torch.cat([a, b], 0), [torch.randn(4, 8), torch.randn(3, 8)])
    assert len([k for k in c.module("loop").walk() if isinstance(k, loop.KernelOp)]) == 1
    assert c.check(seed=6).ok
