"""loop-order-contractions: conv2d's free loops are ordered so its innermost pair is a matmul's
(the weight along the out-channels, the input along the width), which the planner stages a
slab at a time (the model, [8, 64, 56, 56] by 64 x 3 x 3: 975 -> 130 us). Checked against
PyTorch on the CPU runtime; depthwise and grouped convs, which no order makes a product, keep
theirs."""

from __future__ import annotations

import math

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


@pytest.mark.parametrize("module,shape", [
    (torch.nn.Conv2d(8, 32, 3, stride=2, padding=1), (1, 8, 6, 70)),
    (torch.nn.Conv2d(8, 32, (3, 2), padding=(1, 0), bias=False), (1, 8, 5, 36)),
    (torch.nn.Conv1d(8, 32, 5, padding=2), (2, 8, 40)),
], ids=["3x3-stride-2", "3x2", "conv1d"])
def test_a_windowed_weight_is_a_plain_staged_slab(module, shape) -> None:
    """A k x k weight [O, C, kh, kw] is read at K = (channel, kh, kw): loop-collapse-dims gives
    the kernel's argument the [O, C * kh * kw] it indexes (the launch passes the input as it
    is), so the planner stages it a slab at a time (the model, H100, [8, 256, 14, 14] by
    512 x 3 x 3 with stride 2: 613 -> 86 us). The input's windows stay unstaged."""
    torch.manual_seed(0)
    c = deplo.compile(module.eval(), [torch.randn(shape)])
    (conv,) = [k for k in c.module("loop").walk() if isinstance(k, loop.KernelOp)
               and any(isinstance(o, loop.ForOp) and o.kind.data == loop.LoopKind.REDUCE
                       for o in k.walk())]
    weight = next(a for a in conv.body.block.args if a.name_hint == "weight")
    assert list(weight.type.get_shape()) == [module.out_channels, math.prod(module.weight.shape[1:])]
    plan = next(p for p in c.plans()["kernels"].values() if p["name"] == conv.sym_name.data)
    assert plan["kind"] == "matmul" and plan["knobs"]["stage"], plan
    result = c.check(seed=3)
    assert result.ok, result.line()
    assert c.check(target="interp", level="loop", seed=4).ok


@pytest.mark.parametrize("groups", [2, 4])
def test_grouped_conv_splits_its_channels_into_groups(groups) -> None:
    """A grouped conv reads its input's channels by the output channel's group (`o floordiv
    (O / groups)`): over (o, w) the input is read along both. The out-channel loop splits into
    (group, channel in group): the group is a batch, (channel, columns) a matmul's pair (the model, H100, [8, 64, 28, 28] by 128 x 32 x 3 x 3, groups 2: 356 ->
    31 us)."""
    torch.manual_seed(0)
    module = torch.nn.Conv2d(8 * groups, 32 * groups, 3, padding=1, groups=groups).eval()
    c = deplo.compile(module, [torch.randn(2, 8 * groups, 6, 9)])
    (conv,) = [k for k in c.module("loop").walk() if isinstance(k, loop.KernelOp)
               and any(isinstance(o, loop.ForOp) and o.kind.data == loop.LoopKind.REDUCE
                       for o in k.walk())]
    nest = outer_free_nest(conv)
    assert [(f.iv.name_hint, f.extent) for f in nest][-2:] == [("a1_in", 32), ("a3", 9)]
    assert ("a1_group", groups) in [(f.iv.name_hint, f.extent) for f in nest]
    plan = next(p for p in c.plans()["kernels"].values() if p["name"] == conv.sym_name.data)
    assert plan["kind"] == "matmul", plan
    result = c.check(seed=5)
    assert result.ok, result.line()
    assert c.check(target="interp", level="loop", seed=6).ok


@pytest.mark.parametrize("fn,shapes", [
    (lambda x: x.repeat_interleave(3, 0).flatten() + 0, [(4, 3)]),
    (lambda x: x.repeat_interleave(5, dim=1).flatten(1) + 0, [(4, 3, 5)]),
    (lambda x, w: x.repeat_interleave(4, dim=1).flatten(1) @ w, [(2, 8, 4), (128, 16)]),
    (lambda x, w: x.flatten(1) @ w, [(8, 64, 4, 4), (1024, 10)]),
], ids=["repeat-rows", "repeat-middle", "repeat-matmul", "flatten-matmul"])
def test_inputs_read_through_a_reshape(fn, shapes) -> None:
    """A program input read through a view keeps its elements: (i floordiv 3) floordiv 3 is
    no (floordiv, mod) pair to merge (it was merged to i mod 9, another element). A flattened
    input feeding a matmul of few outputs ([8, 1024] @ [1024, 10]) is a plain product then,
    shared by a block's threads (a thread walking K alone was 40 us by the model)."""
    c = deplo.compile(fn, [torch.randn(*s) for s in shapes])
    result = c.check(seed=7)
    assert result.ok, result.line()
    assert c.check(target="interp", level="loop", seed=8).ok
    if len(shapes) == 2 and shapes[0][0] == 8:
        assert {p["kind"] for p in c.plans()["kernels"].values()} == {"row_reduce"}
