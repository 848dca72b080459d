"""Group A ops end to end: each a small torch callable, captured by torch.export, checked against
PyTorch eager on fresh random inputs (never zeros) with the numpy interpreters at torch, tensor
and loop IR. Shapes are not powers of two; fp32 is held to runtime/check.py's tolerance, f16/bf16
to 1e-2."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import deplo
from deplo.tools.api import random_inputs

LEVELS = ["torch", "tensor", "loop"]
aten = torch.ops.aten


def _module(m: torch.nn.Module, seed: int = 0) -> torch.nn.Module:
    """m with random (never default-initialized: LayerNorm's ones and zeros) parameters."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(torch.randn(p.shape, generator=g).to(p.dtype))
    return m


# name -> (callable or module, input shapes, a torch op its Torch IR must contain)
CASES: dict[str, tuple[Callable, list[tuple[int, ...]], str]] = {
    # linear algebra
    "linear": (_module(torch.nn.Linear(6, 5)), [(3, 7, 6)], "torch.linear"),
    "linear_no_bias": (_module(torch.nn.Linear(6, 5, bias=False)), [(7, 6)], "torch.linear"),
    "linear_1d": (_module(torch.nn.Linear(6, 5)), [(6,)], "torch.linear"),
    "mm": (torch.mm, [(5, 6), (6, 7)], "torch.matmul"),
    "bmm": (torch.bmm, [(3, 5, 6), (3, 6, 7)], "torch.matmul"),
    "addmm": (torch.addmm, [(7,), (5, 6), (6, 7)], "torch.matmul"),
    "addmm_alpha_beta": (lambda c, a, b: torch.addmm(c, a, b, beta=0.5, alpha=2.0),
                         [(5, 7), (5, 6), (6, 7)], "torch.matmul"),
    "matmul_batch_broadcast": (torch.matmul, [(2, 1, 5, 6), (3, 6, 7)], "torch.matmul"),
    "matmul_vec": (torch.matmul, [(3, 5, 6), (6,)], "torch.matmul"),
    # arithmetic, Tensor and Scalar overloads
    "add": (lambda x, y: x + y, [(5, 7), (7,)], "torch.add"),
    "add_scalar_alpha": (lambda x, y: torch.add(x, 3, alpha=2) + torch.add(x, y, alpha=0.5),
                         [(5, 7), (5, 7)], "torch.add"),
    "sub": (lambda x, y: x - y - 2.5 + torch.sub(x, y, alpha=3), [(3, 5, 7), (5, 1)], "torch.sub"),
    "rsub": (lambda x: 1 - x + torch.rsub(x, 2.0, alpha=3), [(5, 7)], "torch.sub"),
    "mul": (lambda x, y: x * y * 3 + 0.5 * x, [(5, 7), (7,)], "torch.mul"),
    "div": (lambda x, y: x / y + x / 3 + 2 / y, [(5, 7), (5, 7)], "torch.div"),
    "reciprocal": (torch.reciprocal, [(5, 7)], "torch.reciprocal"),
    "aten_scalar_overloads": (lambda x: aten.add.Scalar(x, 2) + aten.sub.Scalar(x, 1.5)
                              + aten.mul.Scalar(x, 3) + aten.div.Scalar(x, 7), [(5, 7)],
                              "torch.div"),
    "neg": (lambda x: -x, [(5, 7)], "torch.neg"),
    "pow_square": (lambda x: x**2, [(5, 7)], "torch.pow"),
    "pow_scalar": (lambda x: torch.exp(x) ** 1.5 + torch.exp(x) ** -0.5, [(5, 7)], "torch.pow"),
    "pow_tensor": (lambda x, y: torch.pow(torch.exp(x), y), [(5, 7), (7,)], "torch.pow"),
    "pow_scalar_base": (lambda x: 2**x, [(5, 7)], "torch.pow"),
    # elementwise functions
    "rsqrt_sqrt": (lambda x: torch.rsqrt(torch.exp(x)) + torch.sqrt(torch.exp(x)), [(5, 7)],
                   "torch.rsqrt"),
    "exp_sigmoid_tanh": (lambda x: torch.exp(x) + torch.sigmoid(x) + torch.tanh(x), [(5, 7)],
                         "torch.sigmoid"),
    "silu_relu": (lambda x: F.silu(x) + F.relu(x), [(5, 7)], "torch.silu"),
    "gelu": (F.gelu, [(3, 5, 7)], "torch.gelu"),
    "rrelu_eval": (lambda x: F.rrelu(x, 0.1, 0.3) + F.leaky_relu(x, 0.2), [(5, 7)],
                   "torch.where"),  # eval: the slope is the mean of its range
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), [(3, 5, 7)], "torch.gelu"),
    "cos_sin": (lambda x: torch.cos(x) * torch.sin(3 * x), [(5, 7)], "torch.cos"),
    # reductions
    "mean_dims_keepdim": (lambda x: x.mean(dim=[0, 2], keepdim=True), [(3, 5, 7)], "torch.mean"),
    "mean_all": (lambda x: x.mean(), [(3, 5, 7)], "torch.mean"),
    "sum_keepdim": (lambda x: x.sum(-1, keepdim=True) * x, [(3, 5, 7)], "torch.sum"),
    "sum_all": (lambda x: x.sum(), [(5, 7)], "torch.sum"),
    "sum_dims": (lambda x: x.sum(dim=(0, 1)), [(3, 5, 7)], "torch.sum"),
    "amax_keepdim": (lambda x: x - x.amax(-1, keepdim=True), [(3, 5, 7)], "torch.amax"),
    "amax": (lambda x: x.amax(dim=1), [(3, 5, 7)], "torch.amax"),
    # softmax and norms
    "softmax_last": (lambda x: torch.softmax(x, -1), [(3, 5, 7)], "torch.softmax"),
    "softmax_dim0": (lambda x: F.softmax(x, dim=0), [(3, 5, 7)], "torch.softmax"),
    "aten_softmax": (lambda x: aten._softmax(x, 1, False), [(3, 5, 7)], "torch.softmax"),
    "rms_norm": (_module(torch.nn.RMSNorm(7, eps=1e-5)), [(3, 5, 7)], "torch.rms_norm"),
    "layer_norm": (_module(torch.nn.LayerNorm(7)), [(3, 5, 7)], "torch.layer_norm"),
    "layer_norm_2d": (_module(torch.nn.LayerNorm((5, 7), eps=1e-3)), [(3, 5, 7)],
                      "torch.layer_norm"),
    "layer_norm_no_affine": (torch.nn.LayerNorm(7, elementwise_affine=False), [(3, 5, 7)],
                             "torch.layer_norm"),
    "layer_norm_no_bias": (_module(torch.nn.LayerNorm(7, bias=False)), [(3, 5, 7)],
                           "torch.layer_norm"),
    "layer_norm_bias_only": (lambda x, b: F.layer_norm(x, (7,), bias=b), [(3, 5, 7), (7,)],
                             "torch.layer_norm"),
    # dtype conversion (through f16 / bf16 and back)
    "to_f16_and_back": (lambda x: x.to(torch.float16).to(torch.float32), [(5, 7)], "torch.to"),
    "to_bf16_and_back": (lambda x: x.bfloat16().float() * 2, [(5, 7)], "torch.to"),
    "to_copy_dtype_layout": (lambda x: x.to(dtype=torch.float16, device="cpu").float(), [(5, 7)],
                             "torch.to"),
    "aten_to_copy": (lambda x: aten._to_copy.default(x, dtype=torch.float16).float(), [(5, 7)],
                     "torch.to"),
    "to_same_dtype": (lambda x: x.to(torch.float32) + 1, [(5, 7)], "torch.add"),
    "bool_to_float": (lambda x, y: (x > y).float() + x, [(5, 7), (7,)], "torch.to"),
    # comparisons, logical ops, where
    "compare_tensor": (lambda x, y: (x == torch.maximum(x, y)).float() + (x != y).float()
                       + (x < y).float() + (x <= y).float() + (x > y).float() + (x >= y).float(),
                       [(5, 7), (7,)], "torch.ge"),
    "compare_scalar": (lambda x: (x > 0.5).float() + (x <= -0.25).float() + (x == 1.0).float()
                       + (x != 2).float() + (x < 0).float() + (x >= 1).float(), [(5, 7)],
                       "torch.le"),
    "compare_bool_result": (lambda x, y: x < y, [(5, 7), (5, 7)], "torch.lt"),
    "logical": (lambda x, y: torch.where(((x > 0) & (y < 0)) | torch.logical_and(x < y, y > -1)
                                         | torch.logical_or(x > 1, y > 1), x, y),
                [(5, 7), (5, 7)], "torch.logical_or"),
    "logical_float_operands": (lambda x, y: torch.logical_and(x, y).float()
                               + torch.logical_or(x - x, y).float(), [(5, 7), (5, 7)],
                               "torch.logical_and"),
    "where": (lambda c, x, y: torch.where(c > 0, x, y), [(5, 1), (5, 7), (7,)], "torch.where"),
    "where_scalar_other": (lambda x: torch.where(x > 0, x, 0.0), [(5, 7)], "torch.where"),
    "where_scalar_self": (lambda x: torch.where(x > 0, 1.5, x), [(5, 7)], "torch.where"),
    "where_scalars": (lambda x: aten.where.Scalar(x > 0, 1.0, -2.0) + x, [(5, 7)], "torch.where"),
    # new elementwise kinds and composites (odd shapes, negative dims, transposed inputs)
    "abs_log_erf": (lambda x: torch.log(torch.abs(x) + 0.5) + torch.erf(x.t()).t(), [(5, 7)],
                    "torch.erf"),
    "clamp": (lambda x, lo: torch.clamp(x, lo, lo + 1) + x.clamp(min=-0.25) + x.clamp(max=0.1),
              [(5, 7), (7,)], "torch.minimum"),
    "square_true_divide": (lambda x, y: torch.square(x) + torch.true_divide(x, y), [(5, 7), (7,)],
                           "torch.div"),
    "masked_fill": (lambda x: x.masked_fill(x > 0.5, -3.0), [(5, 7)], "torch.where"),
    "tril_triu": (lambda x: torch.tril(x, -1) + torch.triu(x.transpose(-1, -2), 2).mT,
                  [(3, 5, 7)], "torch.where"),
    "log_softmax": (lambda x: F.log_softmax(x, -2), [(3, 37, 5)], "torch.log"),
    "logsumexp": (lambda x: torch.logsumexp(x, (0, 2), keepdim=True) - x, [(3, 5, 7)],
                  "torch.log"),
    "var_std": (lambda x: torch.var(x, 1, keepdim=True)
                + torch.std(x, (0, 2), correction=0, keepdim=True),
                [(3, 5, 7)], "torch.sqrt"),
    "norms": (lambda x: torch.linalg.vector_norm(x, 3, -1) + x.norm(dim=-1)
              + torch.linalg.vector_norm(x, -float("inf"), -1)
              + torch.linalg.vector_norm(x, float("inf"), (0, 2)), [(5, 6, 7)], "torch.pow"),
    "adaptive_max_pool": (lambda x: F.adaptive_max_pool2d(x, (3, 4), return_indices=True)[1]
                          + F.adaptive_max_pool2d(x, (3, 4)) + F.adaptive_max_pool1d(
                              x.flatten(2), 5).sum(-1, keepdim=True).unsqueeze(-1),
                          [(2, 3, 7, 9)], "torch.argmax"),
    "max_pool2d_indices": (lambda x: F.max_pool2d(x, 3, 2, 1, dilation=(1, 2), ceil_mode=True,
                                                  return_indices=True)[1], [(2, 3, 9, 11)],
                           "torch.max_pool"),
    "max_pool1d_3d_indices": (lambda x: F.max_pool3d(x, 2, return_indices=True)[1].sum((2, 3, 4))[..., None]
                              + F.max_pool1d(x.flatten(2), 4, 3, 2, return_indices=True)[1],
                              [(2, 3, 5, 4, 6)], "torch.max_pool"),
    # 27 and 49 window elements: the window gathered, one integer amax picks the index
    "max_pool_big_window_indices": (lambda x: F.max_pool3d(x, 3, 2, 1, return_indices=True)[1]
                                    .flatten(2)[..., :4].unsqueeze(-1)
                                    + F.max_pool2d(x.flatten(3), 7, (2, 3), 3,
                                                   return_indices=True)[1][..., :1, :1],
                                    [(1, 2, 6, 5, 4)], "torch.max_pool"),
    "max_unpool2d": (lambda x: F.max_unpool2d(*F.max_pool2d(x, 2, return_indices=True), 2,
                                              output_size=x.shape) * 2,
                     [(2, 3, 8, 7)], "torch.max_pool"),
    "cdist": (lambda a, b: torch.cdist(a, b) + torch.cdist(a, b, p=1) * 3
              + torch.cdist(a, b, p=0.5).sum(-1, keepdim=True), [(2, 27, 5), (1, 30, 5)],
              "torch.sqrt"),
    "amin": (lambda x: x.amin(-1, keepdim=True) * x, [(3, 5, 7)], "torch.amin"),
    "cumsum": (lambda x: torch.cumsum(x, -1) + torch.cumsum(x.transpose(0, 1), 0).transpose(0, 1),
               [(40, 67)], "torch.cumsum"),
    "cumprod": (lambda x: torch.cumprod(1 + x / 64, 1), [(5, 37)], "torch.cumprod"),
    "argmax_argmin": (lambda x: (x.argmax(-1, keepdim=True) - x.argmin(1, keepdim=True)).float()
                      + x.argmax(), [(40, 33, 65)], "torch.argmax"),
    "baddbmm": (lambda c, a, b: torch.baddbmm(c, a, b, beta=0.5, alpha=-2.0),
                [(3, 5, 7), (3, 5, 6), (3, 6, 7)], "torch.matmul"),
    "group_norm": (_module(torch.nn.GroupNorm(3, 6)), [(2, 6, 5, 7)], "torch.layer_norm"),
    "instance_norm": (_module(torch.nn.InstanceNorm2d(5, affine=True)), [(2, 5, 4, 6)],
                      "torch.layer_norm"),
    "instance_norm_running_stats": (  # use_input_stats false: eval mode's running statistics
        lambda x: F.instance_norm(x, torch.linspace(-1, 1, 4), torch.linspace(0.5, 2, 4),
                                  use_input_stats=False), [(2, 4, 7)], "torch.rsqrt"),
    "conv2d": (_module(torch.nn.Conv2d(16, 34, 3, padding=1)), [(2, 16, 19, 21)], "torch.conv"),
    "conv2d_groups_stride_dilation": (
        _module(torch.nn.Conv2d(6, 9, (3, 2), stride=(2, 1), dilation=(1, 2), groups=3,
                                bias=False)), [(2, 6, 11, 9)], "torch.conv"),
    "conv2d_same_unbatched": (_module(torch.nn.Conv2d(4, 5, 4, padding="same")), [(4, 9, 8)],
                              "torch.conv"),
    "conv1d": (_module(torch.nn.Conv1d(5, 7, 3, stride=2, padding=2)), [(3, 5, 17)], "torch.conv"),
    # a transposed conv: zeros spread by the stride, a conv of the flipped, swapped kernel
    "conv_transpose2d_stride_groups": (
        _module(torch.nn.ConvTranspose2d(6, 4, (3, 4), stride=(2, 3), padding=(1, 2),
                                         output_padding=(1, 0), dilation=(2, 1), groups=2)),
        [(2, 6, 5, 4)], "torch.conv"),
    "conv_transpose1d_crop": (  # padding beyond the kernel's reach crops the spread input
        _module(torch.nn.ConvTranspose1d(3, 5, 2, stride=3, padding=3)), [(2, 3, 9)],
        "torch.conv"),
    "conv_transpose3d_unbatched": (_module(torch.nn.ConvTranspose3d(2, 3, 2, stride=2)),
                                   [(2, 3, 2, 3)], "torch.conv"),
    # one conv per output phase, interleaved: each phase's K (channels x taps) >= 32
    "conv_transpose2d_phases": (_module(torch.nn.ConvTranspose2d(40, 6, 4, stride=2, padding=1)),
                                [(2, 40, 5, 4)], "torch.cat"),
    "conv_transpose1d_phases_odd_taps": (
        _module(torch.nn.ConvTranspose1d(33, 5, 3, stride=2, padding=1, output_padding=1)),
        [(2, 33, 7)], "torch.cat"),
    "conv_transpose2d_phases_groups_crop": (
        _module(torch.nn.ConvTranspose2d(64, 8, 3, stride=(2, 3), padding=(3, 0),
                                         groups=2, bias=False)), [(1, 64, 4, 3)], "torch.cat"),
    "conv_transpose3d_phases_unbatched": (
        _module(torch.nn.ConvTranspose3d(32, 3, 2, stride=(2, 1, 2))), [(32, 2, 3, 2)],
        "torch.cat"),
    "max_pool2d": (lambda x: F.max_pool2d(x, 3, 2, 1, dilation=2, ceil_mode=True),
                   [(2, 5, 17, 15)], "torch.max_pool"),
    "avg_pool2d": (lambda x: F.avg_pool2d(x, (3, 2), 2, 1, ceil_mode=True) + F.avg_pool2d(
                   x, 3, 2, 1, count_include_pad=False)[..., :1, :1], [(2, 5, 17, 15)],
                   "torch.avg_pool"),
    "avg_pool2d_divisor": (lambda x: F.avg_pool2d(x, 3, divisor_override=4), [(3, 9, 12)],
                           "torch.avg_pool"),
    "dropout_eval": (lambda x: F.dropout(x, 0.3, training=False) * 2, [(5, 7)], "torch.mul"),
    "max_min_all": (lambda x: x.max() - 2 * torch.min(x), [(7, 9)], "torch.amin"),
    "bitwise_not": (lambda x: (~(x > 0)).float() + torch.bitwise_not((x * 10).long()).float(),
                    [(5, 7)], "torch.neg"),
    # whole modules that need the composites (unflatten, chunk, eval dropout, ...)
    "multihead_attention": (lambda x, m=_module(torch.nn.MultiheadAttention(16, 4, batch_first=True)
                                                ).eval(): m(x, x, x, need_weights=False)[0],
                            [(2, 5, 16)], "torch.sdpa"),
    "transformer_encoder_layer": (_module(torch.nn.TransformerEncoderLayer(16, 4, 32,
                                                                           batch_first=True)),
                                  [(2, 5, 16)], "torch.layer_norm"),
}


@pytest.fixture(scope="module")
def compiled() -> dict[str, deplo.tools.api.Compiled]:
    return {}


def _compile(cache: dict, name: str):
    if name not in cache:
        fn, shapes, _ = CASES[name]
        g = torch.Generator().manual_seed(0)
        cache[name] = deplo.compile(fn, [torch.randn(s, generator=g) for s in shapes])
    return cache[name]


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("name", CASES)
def test_matches_pytorch(compiled, name: str, level: str) -> None:
    result = _compile(compiled, name).check(target="interp", level=level, seed=1)
    assert result.ok, result.line()


@pytest.mark.parametrize("name", CASES)
def test_imports_as(compiled, name: str) -> None:
    assert CASES[name][2] in _compile(compiled, name).text("torch")


# --- f16 / bf16 ------------------------------------------------------------------------------
#
# f16 tensors are program inputs and outputs (check() holds them to 1e-2); bf16 has no numpy
# dtype, so bf16 programs convert from and to float32 inside and are compared here at 1e-2.

HALF_CASES: dict[str, tuple[Callable, list[tuple[int, ...]], torch.dtype]] = {
    "cast_f16_to_f32": (lambda x: x.float() * 3, [(5, 7)], torch.float16),
    "cast_f32_to_f16": (lambda x: x.half(), [(5, 7)], torch.float32),
    "cast_f16_bf16_f16": (lambda x: x.bfloat16().half(), [(5, 7)], torch.float16),
    "cast_bf16": (lambda x: (x.bfloat16() * 3).float(), [(5, 7)], torch.float32),
    "softmax_f16": (lambda x: torch.softmax(x, -1), [(3, 5, 70)], torch.float16),
    "softmax_f16_to_f32": (lambda x: torch.softmax(x, -1, dtype=torch.float32), [(3, 70)],
                           torch.float16),
    "softmax_bf16": (lambda x: torch.softmax(x.bfloat16(), -1).float(), [(3, 5, 70)],
                     torch.float32),
    "rms_norm_f16": (_module(torch.nn.RMSNorm(70).half()), [(3, 5, 70)], torch.float16),
    "rms_norm_bf16": (lambda x: F.rms_norm(x.bfloat16(), (70,)).float(), [(3, 70)],
                      torch.float32),
    "layer_norm_f16": (_module(torch.nn.LayerNorm(70).half()), [(3, 70)], torch.float16),
    "log_softmax_bf16": (lambda x: F.log_softmax(x.bfloat16(), -1).float(), [(3, 70)],
                         torch.float32),
    "var_bf16": (lambda x: torch.var(x.bfloat16(), -1).float(), [(3, 700)], torch.float32),
    "cumsum_f16": (lambda x: torch.cumsum(x, 0), [(70, 3)], torch.float16),
    "conv2d_bf16": (lambda x, w: F.conv2d(x.bfloat16(), w.bfloat16(), padding=1).float(),
                    [(2, 8, 9, 9), (12, 8, 3, 3)], torch.float32),
    "group_norm_bf16": (lambda x: F.group_norm(x.bfloat16(), 2).float(), [(2, 6, 35)],
                        torch.float32),
    # the bias cancels the product rounded to bf16: what is left is the rounding itself, so an
    # addmm that rounds its product before the add (not once, at the end, as aten) gives 0
    "addmm_bf16_rounds_once": (lambda a, b: torch.addmm(-(a.bfloat16() @ b.bfloat16()),
                                                        a.bfloat16(), b.bfloat16()).float(),
                               [(5, 64), (64, 7)], torch.float32),
    "sdpa_bf16_f32_mask": (lambda q, m: F.scaled_dot_product_attention(  # as aten: an f32
        q.bfloat16(), q.bfloat16(), q.bfloat16(), attn_mask=m).float(),  # mask with bf16 q
                           [(1, 2, 5, 8), (5, 5)], torch.float32),
    "baddbmm_f16_rounds_once": (lambda a, b: torch.baddbmm(-(a.half() @ b.half()), a.half(),
                                                           b.half(), alpha=1.5, beta=1.5),
                                [(2, 5, 64), (2, 64, 7)], torch.float32),
}


def _max_rel_err(c, level: str) -> float:
    inputs = random_inputs(c.program, seed=1)
    (ref,) = c.program.reference(inputs[: len(c.program.example_inputs)])
    (out,) = c.run(inputs, target="interp", level=level)
    assert out.shape == ref.shape
    r = np.asarray(ref, np.float64)
    return float(np.max(np.abs(np.asarray(out, np.float64) - r)) / np.max(np.abs(r)))


@pytest.fixture(scope="module")
def half_compiled() -> dict:
    return {}


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("name", HALF_CASES)
def test_half_precision_matches_pytorch(half_compiled, name: str, level: str) -> None:
    if name not in half_compiled:
        fn, shapes, dtype = HALF_CASES[name]
        g = torch.Generator().manual_seed(0)
        half_compiled[name] = deplo.compile(fn, [torch.randn(s, generator=g).to(dtype)
                                                 for s in shapes])
    assert _max_rel_err(half_compiled[name], level) <= 1e-2


# --- errors ----------------------------------------------------------------------------------


def test_unsupported_overload_names_the_op() -> None:
    from deplo.frontend.errors import FrontendError

    with pytest.raises(FrontendError, match="aten.polygamma.default"):
        deplo.compile(lambda x: torch.polygamma(2, x), [torch.rand(5, 7)])


@pytest.mark.parametrize("conv", [torch.nn.Conv2d(3, 4, 3, bias=False),
                                  torch.nn.ConvTranspose2d(3, 4, 3)])
def test_a_conv_of_integers_and_float_weights_is_refused(conv) -> None:
    """Export's meta kernels let it through (eager PyTorch raises); deplo names it."""
    from deplo.frontend.errors import FrontendError

    with pytest.raises(FrontendError, match=r"with an input of i64 and a weight of f32 "
                                            r"\(PyTorch takes one type\) at "):
        deplo.compile(conv, [torch.randint(0, 5, (1, 3, 5, 5))])
