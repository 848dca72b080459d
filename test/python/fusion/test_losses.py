"""Reductions over the rows of row reductions (a loss: cross_entropy's mean over rows of each
row's log-sum-exp). Fused into one kernel, the rows would run one after another in the outer
reduce loop, on one thread; loop-fuse leaves the row statistics a kernel of their own (rows in
parallel) and the outer reduction reads what it wrote. Each is checked against PyTorch on the
CPU runtime."""

from __future__ import annotations

import math

import numpy as np
import pytest

import deplo
from deplo.dialects import loop
from deplo.tools.api import random_inputs

LOSSES = {
    "cross_entropy": "F.cross_entropy(torch.randn(6, 300), torch.randint(0, 300, (6,)))",
    "cross_entropy_sum": "F.cross_entropy(torch.randn(6, 300), torch.randint(0, 300, (6,)), "
                         "reduction='sum')",
    "cross_entropy_label_smoothing": "F.cross_entropy(torch.randn(6, 300), "
                                     "torch.randint(0, 300, (6,)), label_smoothing=0.1)",
    "nll_log_softmax": "F.nll_loss(torch.log_softmax(torch.randn(5, 70), -1), "
                       "torch.randint(0, 70, (5,)))",
    "softmax_sum": "torch.softmax(torch.randn(7, 90), -1).sum()",
    "softmax_amax_sum": "(torch.randn(4, 50).softmax(-1) * 3.0).amax(-1).sum()",
    "logsumexp_mean": "torch.logsumexp(torch.randn(3, 8, 40), -1).mean()",
    "few_batches_of_many_rows": "torch.logsumexp(torch.randn(2, 64, 300), -1).sum(-1)",
}


def _nested_reduce(kernel: loop.KernelOp) -> bool:
    """A reduce loop inside a reduce loop of more iterations than the free loops around it."""
    for op in kernel.walk():
        if isinstance(op, loop.ForOp) and op.kind.data == loop.LoopKind.REDUCE:
            outer = list(loop.enclosing_ops(op, loop.ForOp))
            serial = math.prod(f.extent for f in outer if f.kind.data == loop.LoopKind.REDUCE)
            free = math.prod(f.extent for f in outer if f.kind.data == loop.LoopKind.FREE)
            if serial > max(free, 1):
                return True
    return False


@pytest.mark.parametrize("name", LOSSES)
def test_loss_rows_stay_parallel(name: str) -> None:
    c = deplo.compile(LOSSES[name], seed=0)
    kernels = [op for op in c.module("loop").ops if isinstance(op, loop.KernelOp)]
    assert not any(_nested_reduce(k) for k in kernels), c.text("loop")
    result = c.check(target="cpu", seed=1)
    assert result.ok, result.line()


@pytest.mark.parametrize("q,kv", [((1, 2, 40, 16), (1, 2, 40, 16)),
                                  ((1, 1, 1, 16), (1, 1, 4096, 16))], ids=["prefill", "decode"])
def test_attention_scores_still_fuse_into_pv(q, kv) -> None:
    """The exception: a flash loop's key loop takes the scores' reduction, one query of one
    head (decoding) included."""
    c = deplo.compile(f"F.scaled_dot_product_attention(torch.randn{q}, torch.randn{kv}, "
                      f"torch.randn{kv})", seed=0)
    kernels = [op for op in c.module("loop").ops if isinstance(op, loop.KernelOp)]
    assert len(kernels) == 1 and any(isinstance(o, loop.PrivateOp) for o in kernels[0].walk())
    assert c.check(target="interp", level="loop", seed=3).ok


def test_one_long_row_with_a_hoisted_load_is_a_row_reduction() -> None:
    """logsumexp of one row: loop-simplify hoists the [1] max above the unit row loop; the
    planner still sees a row (it planned one thread walking 152064 elements, 11 ms by the
    model)."""
    c = deplo.compile("torch.logsumexp(torch.randn(1, 5000), -1)", seed=0)
    kinds = {p["name"]: p["kind"] for p in c.plans()["kernels"].values()}
    assert kinds["add_log_sum_amax"] == "row_reduce", kinds
    assert c.check(target="cpu", seed=2).ok


def test_randint_is_an_input_drawn_in_its_range() -> None:
    """torch.randint in an expression is an input (it was a constant of the export that the
    eager reference drew again, so --check compared different targets)."""
    c = deplo.compile("torch.randn(8, 10).gather(1, torch.randint(3, 10, (8, 1)))", seed=0)
    assert len(c.program.example_inputs) == 2
    for seed in range(3):
        idx = random_inputs(c.program, seed)[1]
        assert idx.dtype == np.int64 and idx.min() >= 3 and idx.max() <= 9
    assert c.check(target="cpu", seed=4).ok


def test_an_ignore_index_and_a_mask_stay_as_the_example_has_them() -> None:
    """Targets with ignore_index -100 were drawn from [-100, 6] (PyTorch: 'Target -94 is out
    of bounds'); a bool mask was drawn as all True (never testing the masked path)."""
    import torch
    import torch.nn.functional as F

    c = deplo.compile(lambda x, y, m: F.cross_entropy(x.masked_fill(m, 0.5), y, reduction="sum"),
                      [torch.randn(3, 7), torch.tensor([-100, 3, 6]),
                       torch.tensor([[True, False] * 3 + [True]] * 3)])
    for seed in range(3):
        _, y, m = random_inputs(c.program, seed)[:3]
        assert y[0] == -100 and 0 <= y[1:].min() and y.max() <= 6
        np.testing.assert_array_equal(m, c.program.example_inputs[2])
        assert c.check(seed=seed).ok
