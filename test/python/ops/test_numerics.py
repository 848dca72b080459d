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


NAN_CASES: dict[str, Callable] = {
    "amax_rows": lambda x: x.amax(-1),
    "amin_columns": lambda x: x.amin(0),
    "max_dim": lambda x: torch.max(x, -1),
    "argmax": lambda x: x.argmax(-1),
    "relu": torch.relu,
    "clamp": lambda x: x.clamp(-0.5, 0.5),
    "softmax": lambda x: torch.softmax(x, -1),
    "max_pool": lambda x: F.max_pool1d(x[None], 3),
}


@pytest.mark.skipif(not cpu_runtime_available(), reason="no g++ for the CPU runtime")
@pytest.mark.parametrize("name", NAN_CASES)
def test_nan_propagates_as_in_pytorch(name: str) -> None:
    """max/min (arith.maximumf/minimumf) propagate NaN as torch.amax, relu and clamp do; the
    emitted C used fmaxf, which returns the other operand (amax of a row with a NaN was its
    largest number, relu(NaN) was 0)."""
    fn = NAN_CASES[name]
    x = torch.randn(4, 300)
    x[1, 7] = x[2, 299] = x[3, 0] = float("nan")
    got = deplo.compile(fn, [x]).executable("cpu").run([x.numpy()])
    ref = fn(x)
    for g, r in zip(got, ref if isinstance(ref, tuple) else (ref,), strict=True):
        np.testing.assert_allclose(g, r.numpy(), rtol=1e-5, atol=1e-7)  # NaN where torch's
