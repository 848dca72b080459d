"""f16/bf16 convolutions run on tensor cores: a window or a stride is an implicit GEMM — the
im2col [N, C * kh * kw, H', W'] (padding as a select, no padded copy) inlined into the
product's K loop, its B a `tile.gather` whose K chunks tile-stage-chunks computes into shared
memory (fact `gather`), one kernel, no im2col tensor written — and a 1x1 conv reads its input
as it is (the model, H100, fp16 [8, 64, 56, 56] by 64 x 3 x 3: 84.5 -> 28 us through a written
im2col, 14.9 as an implicit GEMM; 1x1 [8, 256, 56, 56] to 64 channels: 29.6 -> 8.6 us; ViT's
16 x 16 patches of [8, 3, 224, 224]: 94 -> 23 us, 15.6 as an implicit GEMM). Checked against PyTorch on the CPU runtime."""

from __future__ import annotations

import pytest
import torch

import deplo

CASES = {  # name: (module, input shape, whether B is gathered: an implicit GEMM)
    "3x3": (torch.nn.Conv2d(16, 32, 3, padding=1), (2, 16, 16, 16), True),
    "7x7-stride-2": (torch.nn.Conv2d(3, 32, 7, stride=2, padding=3, bias=False), (1, 3, 32, 32), True),
    "3x3-unpadded": (torch.nn.Conv2d(16, 32, 3), (2, 16, 18, 18), True),
    "same-dilated": (torch.nn.Conv2d(16, 32, 4, padding="same", dilation=2), (1, 16, 12, 12), True),
    "1x1": (torch.nn.Conv2d(32, 32, 1), (2, 32, 8, 8), False),
    "1x1-stride-2": (torch.nn.Conv2d(32, 64, 1, stride=2), (2, 32, 16, 16), True),
    "conv1d": (torch.nn.Conv1d(16, 32, 3, padding=1), (2, 16, 64), True),
    "wide-rows": (torch.nn.Conv2d(16, 32, 3, padding=1), (1, 16, 4, 64), True),  # W >= 64
    "patches": (torch.nn.Conv2d(3, 32, 4, stride=4), (2, 3, 32, 32), True),  # stride = kernel
}


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["f16", "bf16"])
@pytest.mark.parametrize("name", CASES)
def test_half_conv_is_a_tensor_core_product(name: str, dtype: torch.dtype) -> None:
    module, shape, gather = CASES[name]
    torch.manual_seed(0)
    c = deplo.compile(module.to(dtype).eval(), [torch.randn(shape, dtype=dtype)])
    plans = list(c.plans()["kernels"].values())
    (product,) = plans  # one kernel: no im2col tensor written
    assert product["kind"] == "matmul" and product["knobs"]["mma"], product
    tile_ir = c.text("tile")
    assert ("gather = true" in tile_ir) == gather and ("tile.gather" in tile_ir) == gather
    if gather:  # every K chunk of the gathered B computed into shared memory
        assert product["knobs"]["stage"] and product["knobs"]["splits"] == 1, product
    result = c.check(seed=3)
    assert result.ok, result.line()


def test_float32_conv_keeps_its_window_reads() -> None:
    """fp32 has no tensor cores to feed: the product reads the padded input through the window
    (L1 serves the overlaps), no im2col tensor is written."""
    torch.manual_seed(0)
    c = deplo.compile(torch.nn.Conv2d(16, 32, 3).eval(), [torch.randn(2, 16, 18, 18)])
    (plan,) = c.plans()["kernels"].values()
    assert plan["kind"] == "matmul" and not plan["knobs"].get("mma"), plan
