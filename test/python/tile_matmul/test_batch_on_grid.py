"""Matmul plans where the nest around the product is more than rows and columns: a conv's
image and output row (two batch loops), a batch norm's per-channel scale loaded between the
free loops, and few outputs over a long K (tiles only once K is split). Each must get a matmul
plan whose batches and split all run on block.z (rewrite.map_batch_to_z), and match PyTorch
on the CPU runtime."""

from __future__ import annotations

import math

import pytest
import torch

import deplo
from deplo.dialects import tile


class Matmul(torch.nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a @ b


def conv_bn_relu() -> torch.nn.Module:
    m = torch.nn.Sequential(torch.nn.Conv2d(16, 16, 3, padding=1, bias=False),
                            torch.nn.BatchNorm2d(16), torch.nn.ReLU()).eval()
    with torch.no_grad():  # statistics and affine that are not the identity
        bn = m[1]
        bn.running_mean.normal_()
        bn.running_var.uniform_(0.5, 2.0)
        bn.weight.normal_()
        bn.bias.normal_()
    return m


CASES = {  # name: (module, inputs, dtype); z: the product of the batches (and the split)
    "conv_bn_relu": (conv_bn_relu, [(2, 16, 7, 5)]),
    "batched_long_k": (Matmul, [(2, 3, 8, 4096), (4096, 16)]),
    "batched_long_k_bf16": (Matmul, [(2, 3, 8, 4096), (4096, 16)]),
    "two_batches": (Matmul, [(3, 5, 37, 53), (3, 5, 53, 70)]),
}


def _matmul_kernels(c) -> list[tile.KernelOp]:
    return [k for k in c.module("tile").walk() if isinstance(k, tile.KernelOp)
            and k.the_plan is not None and k.the_plan.kind == "matmul"]


@pytest.mark.parametrize("name", CASES)
def test_matmul_plan_with_every_batch_on_blocks(name: str) -> None:
    make, shapes = CASES[name]
    dtype = torch.bfloat16 if name.endswith("bf16") else torch.float32
    torch.manual_seed(0)
    module = make().to(dtype)
    c = deplo.compile(module, [torch.randn(s, dtype=dtype) for s in shapes])
    (kernel,) = _matmul_kernels(c)
    chain = dict(kernel.the_plan.facts)["chain"]
    splits = kernel.the_plan.knob("splits")
    assert kernel.grid_dims[2] == math.prod(chain[:-2]) * splits
    result = c.check(seed=3)
    assert result.ok, result.line()


def test_few_outputs_over_a_long_k_split() -> None:
    """[48, 16] outputs over K = 4096: a matmul plan with K split, not a thread walking K."""
    c = deplo.compile(Matmul(), [torch.randn(48, 4096), torch.randn(4096, 16)])
    (kernel,) = _matmul_kernels(c)
    assert kernel.the_plan.knob("splits") > 1
    result = c.check(seed=1)
    assert result.ok, result.line()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_one_by_one_conv_stages_its_operands(dtype) -> None:
    """A 1x1 conv's weight is read at plain [out, in] coordinates (no `k mod 1` in its map),
    and its input at [n, in, h, w]: both are slabs the matmul plan stages (the model,
    [8, 256, 14, 14] by 256 x 1 x 1: 57.5 -> 14.8 us)."""
    conv = torch.nn.Conv2d(32, 48, 1).to(dtype)
    c = deplo.compile(conv.eval(), [torch.randn(2, 32, 6, 5, dtype=dtype)])
    (kernel,) = _matmul_kernels(c)
    assert len(dict(kernel.the_plan.facts)["slabs"]) == 2
    result = c.check(seed=2)
    assert result.ok, result.line()
