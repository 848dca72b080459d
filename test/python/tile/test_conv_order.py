"""loop-order-contractions: conv2d's free loops are ordered so its innermost pair is a matmul's
(the weight along the out-channels, the input along the width), which the planner stages a
slab at a time (the model, [8, 64, 56, 56] by 64 x 3 x 3: 975 -> 130 us). Checked against
PyTorch on the CPU runtime; depthwise and grouped convs, which no order makes a product, keep
theirs."""

from __future__ import annotations

import pytest
import torch

import deplo
from deplo.dialects import loop
from deplo.passes.loop.fusion_rules import outer_free_nest
from deplo.passes.loop.order_contractions import _product, _reads

CASES = {  # name: (module, input shape, a matmul plan with slabs expected)
    "conv2d": (torch.nn.Conv2d(8, 12, 3, padding=1), (2, 8, 12, 10), True),
    "conv2d_stride_bias": (torch.nn.Conv2d(6, 16, (3, 2), stride=2), (1, 6, 15, 13), True),
    "depthwise": (torch.nn.Conv2d(8, 8, 3, padding=1, groups=8), (2, 8, 12, 10), False),
}


@pytest.mark.parametrize("name", CASES)
def test_conv_orders_its_loops_for_a_matmul(name: str) -> None:
    module, shape, product = CASES[name]
    torch.manual_seed(0)
    c = deplo.compile(module.eval(), [torch.randn(shape)])
    (kernel,) = [k for k in c.module("loop").walk() if isinstance(k, loop.KernelOp)
                 and any(isinstance(o, loop.ForOp) and o.kind.data == loop.LoopKind.REDUCE
                         for o in k.walk())]
    nest = outer_free_nest(kernel)
    red = next(o for o in nest[-1].body.block.ops if isinstance(o, loop.ForOp))
    ivs = [f.iv for f in nest]
    assert _product(_reads(red, ivs), ivs[-2], ivs[-1]) == product
    result = c.check(seed=2)
    assert result.ok, result.line()
