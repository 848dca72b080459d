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
