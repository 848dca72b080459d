"""bf16 programs accumulate in float32, as PyTorch does: every contraction and reduction is held
to an fp64 reference on the same bf16 inputs — its mean absolute error within 1.25x PyTorch's
own bf16 error — at the interpreters and on the CPU runtime. Summing q·kᵀ and p·v in bf16 (as
sdpa did) gives twice PyTorch's error here, and 4x its max error at longer sequences."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import deplo
from deplo.runtime.cpu import cpu_runtime_available

TARGETS = [("interp", "tensor"), ("interp", "loop"), ("cpu", None)]

CASES: dict[str, tuple[Callable, list[tuple[int, ...]]]] = {
    "sdpa_causal": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                    [(1, 2, 48, 64)] * 3),
    "sdpa_gqa": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True),
                 [(1, 4, 33, 64), (1, 2, 40, 64), (1, 2, 40, 64)]),
    "matmul": (torch.matmul, [(33, 500), (500, 20)]),
    "linear": (F.linear, [(9, 700), (13, 700), (13,)]),
    "sum": (lambda x: x.sum(-1), [(5, 3000)]),
    "mean": (lambda x: x.mean(0), [(3000, 5)]),
    "softmax": (lambda x: torch.softmax(x, -1), [(5, 3000)]),
    "layer_norm": (lambda x: F.layer_norm(x, (3000,)), [(5, 3000)]),
}


def _errors(name: str):
    fn, shapes = CASES[name]
    g = torch.Generator().manual_seed(0)
    xs = [torch.randn(s, generator=g).bfloat16() for s in shapes]
    with torch.no_grad():
        exact = fn(*(x.double() for x in xs)).numpy()
        torch_err = float(np.abs(fn(*xs).double().numpy() - exact).mean())
    return xs, exact, torch_err


@pytest.mark.parametrize("target,level", TARGETS, ids=lambda t: str(t))
@pytest.mark.parametrize("name", CASES)
def test_bf16_accumulates_in_float32(name: str, target: str, level: str | None) -> None:
    if target == "cpu" and not cpu_runtime_available():
        pytest.skip("no g++ for the CPU runtime")
    xs, exact, torch_err = _errors(name)
    c = deplo.compile(CASES[name][0], xs)
    (out,) = c.run([x.float().numpy() for x in xs], target=target, level=level)
    err = float(np.abs(out.astype(np.float64) - exact).mean())
    bound = 1.25 * torch_err + 1e-6
    assert err <= bound, f"error {err:.3e} vs fp64; PyTorch's bf16 error is {torch_err:.3e}"
