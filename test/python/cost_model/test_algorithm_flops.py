"""The roofline's FLOPs are the algorithm's, from the Torch IR: a convolution's products count
(2 x outputs x the weight's channels a group x the window, plus the bias), not one per output
(which put fp32 convolutions 9x over a roofline that was really 2x)."""

from __future__ import annotations

import pytest

import deplo
from deplo.tools.profile import profile

CASES = {  # expression: FLOPs
    "F.conv2d(torch.randn(2,8,10,12), torch.randn(16,8,3,3), padding=1)":
        2 * (2 * 16 * 10 * 12) * 8 * 9,
    "F.conv1d(torch.randn(2,16,40), torch.randn(32,4,5), torch.randn(32), stride=2, groups=4)":
        2 * (2 * 32 * 18) * 4 * 5 + 2 * 32 * 18,
    "F.conv3d(torch.randn(1,3,6,6,6), torch.randn(4,3,2,2,2))": 2 * (4 * 5 * 5 * 5) * 3 * 8,
    "torch.randn(3,5,7) @ torch.randn(3,7,2)": 2 * 3 * 5 * 2 * 7,
}


@pytest.mark.parametrize("expr", CASES)
def test_products_count_their_multiply_adds(expr: str) -> None:
    report = profile(deplo.compile(expr))
    assert report["flops"] == CASES[expr]
    assert report["predicted_us"] >= report["roofline_us"]


def test_only_half_products_use_the_tensor_peak() -> None:
    """An fp32 product cast to half runs on the FP32 cores: its floor is the FP32 peak's (it
    took the tensor peak from the half output, 13x lower); a bf16 product's is the tensor's.
    Integer ops and empty tensors are no floating-point work."""
    fp32 = profile(deplo.compile("(torch.randn(256,512) @ torch.randn(512,256)).half()"))
    assert fp32["tensor_flops"] == 0 and fp32["flops"] == 2 * 256 * 512 * 256
    half = profile(deplo.compile("torch.randn(256,512).bfloat16() @ torch.randn(512,256).bfloat16()"))
    assert half["tensor_flops"] == half["flops"] == 2 * 256 * 512 * 256
    assert profile(deplo.compile("torch.randint(0, 9, (64, 64)) * 3 + 1"))["flops"] == 0
    assert profile(deplo.compile("torch.randn(5)[:0] + 1"))["flops"] == 0
    assert profile(deplo.compile("torch.randn(5, 0).sum(-1)"))["flops"] == 0


@pytest.mark.parametrize("expr", [
    "torch.randn(100,100) @ torch.randn(100,100)",  # padded tiles: 128 x 128 x 100 products
    "torch.randn(8,8192) @ torch.randn(8192,64)",  # split K: the partials are ours
    "torch.randn(4,100003).sum(-1)",  # split rows: their partials and the tail
    "F.scaled_dot_product_attention(*[torch.randn(1,2,64,32)]*3, is_causal=True)",
])
def test_kernel_floors_add_up_to_the_programs(expr: str) -> None:
    """A kernel's floor is its share of the algorithm: the FLOPs its torch ops need (shared by
    the kernels implementing one) and the buffers it touches but a split's partials. Where no
    kernel reads an input twice, the kernels' floors sum to the program's: padded tiles, masked
    causal blocks and partials raised them (a matmul's kernel roofline was 5% over its
    program's). (A split softmax's second kernel reads x again: its floor counts that.)"""
    report = profile(deplo.compile(expr))
    kernels = report["kernels"]
    assert len(kernels) >= 1
    assert sum(k["algorithm_flops"] for k in kernels) == pytest.approx(report["flops"])
    assert report["min_bytes"] <= sum(k["min_bytes"] for k in kernels) < 1.01 * report["min_bytes"]
    for k in kernels:
        assert k["predicted_us"] >= k["roofline_us"]
