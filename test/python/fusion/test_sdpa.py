"""Scaled-dot-product attention at loop level against PyTorch: one flash-style kernel (online
max and sum, a private output row rescaled as the max grows) whose scores are computed in the
key loop and never written — no host buffer holds a (L, S) tensor."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from xdsl.dialects import func, memref

import deplo
from deplo.dialects import loop
from deplo.tools.api import random_inputs


def _qkv(b, hq, hk, lq, s, e, ev=None):
    g = torch.Generator().manual_seed(0)
    return [torch.randn(b, hq, lq, e, generator=g), torch.randn(b, hk, s, e, generator=g),
            torch.randn(b, hk, s, ev or e, generator=g)]


CASES = {  # name: (fn, inputs)
    "causal_gqa_7": (lambda q, k, v: F.scaled_dot_product_attention(
        q, k, v, is_causal=True, enable_gqa=True), _qkv(1, 4, 2, 7, 7, 8)),
    "causal_gqa_scale_13": (lambda q, k, v: F.scaled_dot_product_attention(
        q, k, v, is_causal=True, scale=0.3, enable_gqa=True), _qkv(2, 6, 2, 13, 13, 16)),
    "plain_5x11": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v),
                   _qkv(1, 2, 2, 5, 11, 8, 12)),
    "causal_rect_5x9": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                        _qkv(1, 3, 3, 5, 9, 4)),
    "float_mask": (lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
                   [*_qkv(1, 2, 2, 6, 6, 8), torch.randn(6, 6)]),
    "bool_mask": (lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m > -1.0),
                  [*_qkv(1, 2, 2, 6, 6, 8), torch.randn(1, 6, 6)]),
}


@pytest.fixture(scope="module")
def compiled():
    return {}


def _get(compiled, name):
    if name not in compiled:
        fn, inputs = CASES[name]
        compiled[name] = deplo.compile(fn, inputs)
    return compiled[name]


@pytest.mark.parametrize("name", CASES)
def test_matches_pytorch_at_loop_level(compiled, name: str) -> None:
    result = _get(compiled, name).check(target="interp", level="loop", seed=1)
    assert result.ok, result.line()


@pytest.mark.parametrize("name", CASES)
def test_one_flash_kernel_no_scores_buffer(compiled, name: str) -> None:
    c = _get(compiled, name)
    module = c.module("loop")
    kernels = [op for op in module.ops if isinstance(op, loop.KernelOp)]
    assert len(kernels) == 1, [k.sym_name.data for k in kernels]
    assert any(isinstance(op, loop.PrivateOp) for op in kernels[0].walk())
    q, k = c.program.example_inputs[:2]
    ls = (q.shape[-2], k.shape[-2])
    main = next(op for op in module.ops if isinstance(op, func.FuncOp))
    shapes = [tuple(op.memref.type.get_shape()) for op in main.walk()
              if isinstance(op, memref.AllocOp)]
    assert not any(s[-2:] == ls for s in shapes), shapes


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision(dtype) -> None:
    fn, inputs = CASES["causal_gqa_7"]
    c = deplo.compile(fn, [x.to(dtype) for x in inputs])
    xs = random_inputs(c.program, seed=2)
    (ref,) = c.program.reference(xs)
    (out,) = c.run(xs, target="interp", level="loop")
    ref, out = np.asarray(ref, np.float32), np.asarray(out, np.float32)
    assert np.max(np.abs(out - ref)) / np.max(np.abs(ref)) <= 1e-2


def test_flash_off_keeps_two_kernels() -> None:
    """`loop-online-softmax{flash=false}`: the scores stay a (L, S) buffer between two kernels."""
    from deplo.passes import pipeline
    from deplo.runtime.interp import InterpExecutable
    from deplo.tools.driver import run_passes

    fn, inputs = CASES["causal_gqa_7"]
    c = deplo.compile(fn, inputs)
    spec = ",".join(p if p != "loop-online-softmax" else "loop-online-softmax{flash=false}"
                    for p in pipeline.PIPELINES["to-loop"])
    module = run_passes(c.program.module.clone(), spec)
    assert sum(isinstance(op, loop.KernelOp) for op in module.ops) == 2
    xs = random_inputs(c.program, seed=3)
    ref = c.program.reference(xs)
    (out,) = InterpExecutable(module).run(xs)
    np.testing.assert_allclose(out, ref[0], rtol=1e-5, atol=1e-5)


def test_causal_gqa_on_cpu_runtime(compiled) -> None:
    """The flash kernel through the tile passes and the emitted CUDA (its private row is a local
    array), on the CPU runtime."""
    result = _get(compiled, "causal_gqa_scale_13").check(target="cpu", seed=4)
    assert result.ok, result.line()
