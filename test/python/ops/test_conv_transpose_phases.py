"""A strided conv_transpose runs as one conv per output phase (frontend/aten.py
`_phase_conv_transpose`) where each phase's K is a matmul's: the real FLOPs, not the
stride^N times as many of a conv over a zero-spread input. Checked on the CPU runtime through
every level, in fp32 and 16-bit, with crops, output_padding, groups and odd taps."""

from __future__ import annotations

import pytest

import deplo
from deplo.analysis.roofline import algorithm_flops

CASES = [
    # (expression, convs expected: one per phase, or one over the spread input)
    ("F.conv_transpose2d(torch.randn(2,48,5,6), torch.randn(48,8,2,2), stride=2)", 4),
    (("F.conv_transpose2d(torch.randn(2,40,5,4), torch.randn(40,6,4,4), torch.randn(6), "
      "stride=2, padding=1)"), 4),
    (("F.conv_transpose1d(torch.randn(2,33,7), torch.randn(33,5,3), stride=2, padding=1, "
      "output_padding=1)"), 2),
    (("F.conv_transpose2d(torch.randn(1,64,4,3), torch.randn(64,4,3,3), stride=(2,3), "
      "padding=(3,0), groups=2)"), 6),
    ("F.conv_transpose3d(torch.randn(32,2,3,2), torch.randn(32,3,2,1,2), stride=(2,1,2))", 4),
    (("F.conv_transpose2d(torch.randn(2,64,5,6,dtype=torch.float16), "
      "torch.randn(64,16,4,4,dtype=torch.float16), stride=2, padding=1, output_padding=1)"), 4),
    (("F.conv_transpose2d(torch.randn(2,64,5,6,dtype=torch.bfloat16), "
      "torch.randn(64,16,3,3,dtype=torch.bfloat16), stride=2, padding=1)"), 4),
    # a depthwise-like K (a channel a group, 9 taps): the spread input, one kernel
    (("F.conv_transpose2d(torch.randn(2,8,5,6), torch.randn(8,1,3,3), stride=2, padding=1, "
      "groups=8)"), 1),
    ("F.conv_transpose2d(torch.randn(2,16,5,6), torch.randn(16,8,3,3), stride=2, dilation=2)", 1),
]


@pytest.mark.parametrize("expr,convs", CASES, ids=[str(i) for i in range(len(CASES))])
def test_phases_match_pytorch(expr: str, convs: int) -> None:
    compiled = deplo.compile(expr, seed=0)
    torch_ir = compiled.module("torch")
    assert sum(op.name == "torch.conv" for op in torch_ir.walk()) == convs
    assert compiled.check(seed=1).ok


def test_the_roofline_counts_the_real_flops() -> None:
    """2 x outputs x channels x taps: a 2 x 2 stride-2 kernel gives each output one tap."""
    compiled = deplo.compile("F.conv_transpose2d(torch.randn(2,48,5,6), "
                             "torch.randn(48,8,2,2), stride=2)", seed=0)
    outputs = 2 * 8 * 10 * 12
    assert algorithm_flops(compiled.module("torch")).total == 2.0 * outputs * 48


def test_16_bit_phases_run_on_tensor_cores() -> None:
    """Each phase is an implicit GEMM over the input's window with the phase's weight apart (a
    plain [O, K] A): inlined too, the weight's slice and flip took the product off tensor
    cores (loop-fuse `_the_wider_operand`)."""
    compiled = deplo.compile("F.conv_transpose2d(torch.randn(2,64,5,6,dtype=torch.float16), "
                             "torch.randn(64,16,4,4,dtype=torch.float16), stride=2, padding=1)",
                             seed=0)
    plans = [p for p in compiled.plans()["kernels"].values() if p["kind"] == "matmul"]
    assert plans and all(p["knobs"]["mma"] for p in plans)
    assert compiled.check(seed=1).ok
