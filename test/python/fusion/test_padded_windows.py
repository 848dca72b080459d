"""A pool with padding reads its padded input at `stride * o + k`, no plain loop index: the pad
(a concat of constants and the input) used to stay a kernel, written and read back. loop-fuse
inlines it like any concat, the coordinate computed and compared with the parts' offsets (the
model, H100: max_pool2d(3, 2, 1) of [32, 64, 56, 56] 36.6 -> 20.8 us, one launch). A conv's
window stays as it was: its K loop keeps a plain product (tensor cores), its pad a kernel."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import deplo
from deplo.dialects import loop


def _kernels(c) -> list[str]:
    return [k.sym_name.data for k in c.module("loop").walk() if isinstance(k, loop.KernelOp)]


@pytest.mark.parametrize("fn,shape,dtype", [
    (lambda x: F.max_pool2d(x, 3, 2, 1), (2, 4, 9, 7), torch.float32),
    (lambda x: F.avg_pool2d(x, 3, 2, 1), (2, 3, 8, 8), torch.float32),
    (lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False), (2, 3, 8, 8), torch.float32),
    (lambda x: F.max_pool1d(x, 5, 2, 2), (4, 8, 33), torch.bfloat16),
    (lambda x: F.max_pool2d(x, 3, 1, 1, dilation=2), (1, 2, 10, 10), torch.float16),
    (lambda x: F.pad(x, (1, 2))[:, ::2], (3, 12), torch.float32),  # a strided read of a pad
], ids=["max", "avg", "avg-no-pad-count", "max1d-bf16", "dilated-f16", "strided-pad"])
def test_padded_windows_read_the_input_in_one_kernel(fn, shape, dtype) -> None:
    x = torch.randn(*shape, dtype=dtype)
    c = deplo.compile(fn, [x])
    assert len(_kernels(c)) == 1, _kernels(c)
    for target, level in ("cpu", None), ("interp", "loop"):
        result = c.check(target=target, level=level, seed=31)
        assert result.ok, result.line()


def test_a_conv_keeps_its_pad_a_kernel() -> None:
    c = deplo.compile(lambda x, w: F.conv2d(x, w, padding=1),
                      [torch.randn(2, 32, 16, 16), torch.randn(32, 32, 3, 3)])
    assert len(_kernels(c)) == 2
    assert c.check(seed=32).ok
