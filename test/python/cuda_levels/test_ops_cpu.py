"""Every op case of test/python/ops, through the whole pipeline (tile -> kernel -> cuda) and run
as emitted CUDA on the CPU runtime, against PyTorch eager: fp32 under two fiber schedules
(round-robin forward, greedy reverse), then f16/bf16 variants of the elementwise, softmax, norm
and linear kernels (storage in half, float32 compute and accumulation, tolerance 1e-2). Each
emitted program must also build with NVRTC for sm_90 without spills."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from cpu_cases import check_on_cpu, load_cases

import deplo
from deplo.frontend.fold import StaticEvaluator
from deplo.runtime.cpu import cpu_runtime_available

pytestmark = pytest.mark.skipif(not cpu_runtime_available(), reason="no g++ for the CPU runtime")

MATH = load_cases("ops/test_math_ops.py")
SHAPE = load_cases("ops/test_shape_ops.py")


def _assert_ok(compiled, **kw) -> None:
    """Right on the CPU runtime under two schedules, and the same text builds with NVRTC for
    sm_90 without spills (NVRTC results are cached by source hash)."""
    from deplo.runtime.gpu import compile_cubin

    for schedule, result in zip(("LR-fwd", "EG-rev"), check_on_cpu(compiled, **kw)):
        assert result.ok, f"{schedule}: {result.line()}"
    assert compile_cubin(compiled.cuda_source, arch="sm_90", spills_are_errors=True).kernels


@pytest.mark.parametrize("name", MATH.CASES)
def test_math_op_on_cpu(name: str) -> None:
    fn, shapes, _ = MATH.CASES[name]
    g = torch.Generator().manual_seed(0)
    _assert_ok(deplo.compile(fn, [torch.randn(s, generator=g) for s in shapes]))


@pytest.mark.parametrize("name", SHAPE.CASES)
def test_shape_op_on_cpu(name: str) -> None:
    case = SHAPE.CASES[name]
    with pytest.MonkeyPatch.context() as mp:
        if not case.fold:
            mp.setattr(StaticEvaluator, "try_fold", lambda self, node: False)
        compiled = deplo.compile(case.fn, case.examples)
    _assert_ok(compiled)


# --- f16 / bf16 ------------------------------------------------------------------------------
# bf16 has no numpy dtype: bf16 programs convert from and to float32 inside (weights are bf16
# parameters, which the runtime receives as float32 and stores as bf16).


def _half_module(m: torch.nn.Module, dtype: torch.dtype, seed: int = 0) -> torch.nn.Module:
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(torch.randn(p.shape, generator=g))
    return m.to(dtype).eval()


def _bf16(m: torch.nn.Module) -> Callable:
    m = _half_module(m, torch.bfloat16)
    return lambda x: m(x.bfloat16()).float()


X3 = (3, 5, 70)
HALF_CASES: dict[str, tuple[Callable, list[tuple[int, ...]], torch.dtype]] = {
    **MATH.HALF_CASES,
    "elementwise_f16": (lambda x, y: F.silu(x) * y + torch.exp(-x * x) - torch.tanh(y) / 3,
                        [X3, (70,)], torch.float16),
    "elementwise_bf16": (lambda x, y: (F.gelu(x.bfloat16()) * y.bfloat16()
                                       + torch.rsqrt(torch.exp(y.bfloat16()))).float(),
                         [X3, X3], torch.float32),
    "where_compare_f16": (lambda x, y: torch.where(x > y, x * 2, y - 1), [X3, X3], torch.float16),
    "sum_f16": (lambda x: x.sum(-1) / 8 + x.mean(-1), [X3], torch.float16),
    "softmax_dim1_f16": (lambda x: torch.softmax(x, 1), [(3, 33, 5)], torch.float16),
    "linear_f16": (_half_module(torch.nn.Linear(70, 33), torch.float16), [X3], torch.float16),
    "linear_bf16": (_bf16(torch.nn.Linear(70, 33)), [X3], torch.float32),
    "linear_no_bias_bf16": (_bf16(torch.nn.Linear(70, 9, bias=False)), [(7, 70)], torch.float32),
    "matmul_f16": (torch.matmul, [(2, 9, 70), (70, 13)], torch.float16),
    "rms_norm_linear_bf16": (_bf16(torch.nn.Sequential(torch.nn.RMSNorm(70),
                                                       torch.nn.Linear(70, 24))), [X3],
                             torch.float32),
    "sdpa_f16": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                 [(1, 2, 7, 16)] * 3, torch.float16),
}


@pytest.mark.parametrize("name", HALF_CASES)
def test_half_precision_on_cpu(name: str) -> None:
    fn, shapes, dtype = HALF_CASES[name]
    g = torch.Generator().manual_seed(0)
    compiled = deplo.compile(fn, [torch.randn(s, generator=g).to(dtype) for s in shapes])
    _assert_ok(compiled, tolerance=1e-2)


def test_half_buffers_are_half_in_the_kernel() -> None:
    """Storage stays f16/bf16 (`__half`, `__nv_bfloat16` pointers); math is float."""
    fn, shapes, dtype = HALF_CASES["linear_bf16"]
    src = deplo.compile(fn, [torch.randn(s).to(dtype) for s in shapes]).cuda_source
    assert "const __nv_bfloat16* __restrict__" in src and "__bfloat162float(" in src
    assert "float acc" in src, "bf16 linear must accumulate in float"
    fn, shapes, dtype = HALF_CASES["linear_f16"]
    src = deplo.compile(fn, [torch.randn(s).to(dtype) for s in shapes]).cuda_source
    assert "__half* __restrict__ out" in src and "__float2half(" in src


def test_kernel_named_like_a_libm_function() -> None:
    """`x ** 2` is a kernel called `pow`; in C it is `pow_k` (pow is declared by <cmath>)."""
    c = deplo.compile(lambda x: x**2, [torch.randn(5, 7)])
    assert ") pow_k(const float*" in c.cuda_source
    out = c.run(target="cpu", seed=0)
    assert np.isfinite(out[0]).all()
