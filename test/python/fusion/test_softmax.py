"""Softmax at loop level (numpy interpreter) against PyTorch: one kernel per softmax, two passes
over a short row (max, then sum of exp), one online pass (running max and rescaled sum) over a
long one (`loop-online-softmax{min-extent}`)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from xdsl.dialects import math

import deplo
from deplo.dialects import loop
from deplo.tools.api import random_inputs

CASES = {  # name: (shape, dim, online)
    "short_7": ((4, 7), -1, False),
    "short_1000": ((3, 1000), -1, False),
    "long_1537": ((2, 1537), -1, True),
    "long_3d_3000": ((2, 3, 3000), -1, True),
    "long_dim0": ((1100, 3), 0, True),
}


def _reduce_loops(kernel) -> list[loop.ForOp]:
    return [op for op in kernel.walk() if isinstance(op, loop.ForOp)
            and op.kind.data == loop.LoopKind.REDUCE]


@pytest.mark.parametrize("name", CASES)
def test_softmax_matches_pytorch(name: str) -> None:
    shape, dim, online = CASES[name]
    c = deplo.compile(lambda x: torch.softmax(x, dim), [torch.randn(shape)])
    result = c.check(target="interp", level="loop", seed=1)
    assert result.ok, result.line()
    kernels = [op for op in c.module("loop").ops if isinstance(op, loop.KernelOp)]
    assert len(kernels) == 1
    reduces = _reduce_loops(kernels[0])
    if online:  # one pass carrying (m, l)
        assert [len(r.inits) for r in reduces] == [2]
    else:  # max, then sum of exp
        assert [len(r.inits) for r in reduces] == [1, 1]


def test_scaled_masked_softmax_long_row() -> None:
    """The score in both passes is an expression (scale, mask), matched structurally."""
    def fn(x, m):
        return torch.softmax(x * 0.3 + m, -1)

    c = deplo.compile(fn, [torch.randn(2, 1200), torch.randn(1200)])
    assert c.check(target="interp", level="loop", seed=2).ok
    (kernel,) = [op for op in c.module("loop").ops if isinstance(op, loop.KernelOp)]
    assert [len(r.inits) for r in _reduce_loops(kernel)] == [2]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_long_row(dtype) -> None:
    g = torch.Generator().manual_seed(0)
    c = deplo.compile(lambda x: torch.softmax(x, -1), [torch.randn(3, 2000, generator=g).to(dtype)])
    inputs = random_inputs(c.program, seed=1)
    (ref,) = c.program.reference(inputs)
    (out,) = c.run(inputs, target="interp", level="loop")
    ref = np.asarray(torch.as_tensor(ref).float()) if not isinstance(ref, np.ndarray) else ref
    err = np.max(np.abs(out.astype(np.float32) - ref.astype(np.float32))) / np.max(np.abs(ref))
    assert err <= 1e-2


def test_long_row_on_cpu_runtime() -> None:
    """The online form through every tile pass and the emitted CUDA, on the CPU runtime."""
    c = deplo.compile(lambda x: torch.softmax(x, -1), [torch.randn(3, 1500)])
    result = c.check(target="cpu", seed=3)
    assert result.ok, result.line()


@pytest.mark.parametrize("shape", [(8, 4096, 64), (2, 3, 96, 32)], ids=["few-long-rows", "batched"])
def test_weights_on_input_scores_are_no_flash_loop(shape) -> None:
    """softmax(x) @ v with x an input: no q·k can join a flash loop, which only a pointwise plan
    would take (8 rows of 4096: 2153x the roofline by the model); the probabilities are
    written once, not computed again inside the product for each of its columns (loop-fuse:
    64x the roofline so), and the weighted sum is a product of its own. Matches PyTorch on the
    CPU runtime."""
    *rows, keys, cols = shape
    c = deplo.compile(lambda x, v: torch.softmax(x, -1) @ v,
                      [torch.randn(*rows, keys), torch.randn(keys, cols)])
    loop_ir = c.module("loop")
    assert not [op for op in loop_ir.walk() if isinstance(op, loop.PrivateOp)]
    for k in [op for op in loop_ir.walk() if isinstance(op, loop.KernelOp)]:
        reads_v = any(isinstance(o, loop.LoadOp) and o.buffer.type.get_shape() == (keys, cols)
                      for o in k.walk())
        assert not (reads_v and any(isinstance(o, math.ExpOp) for o in k.walk())), k
    result = c.check(target="cpu", seed=4)
    assert result.ok, result.line()
