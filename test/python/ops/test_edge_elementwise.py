"""Elementwise ops whose edges random normal inputs miss: integer fmod / remainder (negative
operands and divisors; take_along_dim's negative indices), fmax / fmin on NaN, signbit on -0,
atan2 on the axes, logical_xor of numbers, bitwise ops and shifts by amounts past the width,
integer powers that wrap,
numbers past a float type's range. Every level: the numpy interpreters at torch, tensor and
loop IR, and the emitted .cu on the CPU runtime."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import deplo
from deplo.frontend.errors import FrontendError

LEVELS = [("interp", "torch"), ("interp", "tensor"), ("interp", "loop"), ("cpu", None)]
NAN = float("nan")
INF = float("inf")


def _ints(*shape, lo=-20, hi=20, seed=0):
    return torch.randint(lo, hi, shape, generator=torch.Generator().manual_seed(seed))


def _with_signs(y: torch.Tensor) -> torch.Tensor:
    """y and the sign bit of each value (-0.0 is not 0.0), a NaN's counted as positive."""
    return torch.cat([y, torch.where(y.isnan(), 0, y.signbit().float())])


def _written_through_views(a: torch.Tensor) -> torch.Tensor:
    y = a.clone()
    y.diagonal().fill_(9)
    y.diagonal(-1).add_(a[0, :3])
    y[0].mul_(2)
    y[:, 1:3].sub_(1)
    return y


CASES = {
    # float fmod / remainder with quotients past 2^24 (f32 computes them in f64)
    "fmod_large_quotient": (lambda a, b: torch.stack([torch.fmod(a, b), torch.remainder(a, b)]),
                            [torch.tensor([2.0**31, -3e9, 1e12, 7.5, -1e15]),
                             torch.tensor([2.5, 0.7, 0.3, -2.0, 1.3])]),
    # the least integer over -1: itself and remainder 0, as aten (C's division traps there)
    "int_min_over_minus_one": (
        lambda a, b, c, d: torch.stack([a // b, a % b, torch.fmod(a, b)]).sum(0)
        + (c // d + c % d + torch.fmod(c, d)).long(),
        [torch.tensor([-2**63, 7, -7, -2**63]), torch.tensor([-1, -1, 2, 3]),
         torch.tensor([-2**31, 7, -7, 5], dtype=torch.int32),
         torch.tensor([-1, -1, 2, -1], dtype=torch.int32)]),
    # bools as aten computes them: a sum is an or, a product an and, the sign the value, any
    # nonzero fill True (they failed to verify: "expected numbers")
    "bool_arithmetic": (
        lambda a, s: torch.stack([
            torch.sign(a), a.scatter_add(0, torch.tensor([0, 2, 0]), s),
            a.masked_fill(s, 10), a.index_add(0, torch.tensor([0, 1, 0]), s),
            a.scatter_reduce(0, torch.tensor([2, 1, 2]), s, "prod"), a * s]),
        [torch.tensor([False, True, False]), torch.tensor([True, False, True])]),
    # an integer clamp by fractional bounds: truncated, as aten converts a Scalar
    "int_hardtanh_fractional": (lambda a: F.hardtanh(a, -0.5, 2.7) * 10 + F.hardtanh(a, -2.5),
                                [torch.tensor([-3, 0, 1, 3], dtype=torch.int8)]),
    "fmod_f64_huge": (lambda a, b: torch.fmod(a, b),  # (the interpreter's fma past 1e300)
                      [torch.tensor([1.1e301, 5e300, 7.0, -1.1e301], dtype=torch.float64),
                       torch.tensor([2e300, 3e300, 2e300, 2e300], dtype=torch.float64)]),
    "int_fmod": (lambda a, b: torch.fmod(a, b) + torch.fmod(a, -3),
                 [_ints(5, 7), _ints(5, 7, lo=1, hi=6) * torch.tensor([1, -1] * 3 + [1])]),
    "int_remainder": (lambda a, b: torch.remainder(a, b) * 10 + torch.remainder(a, -4),
                      [_ints(5, 7), _ints(5, 7, lo=1, hi=6) * torch.tensor([1, -1] * 3 + [1])]),
    "int32_remainder": (lambda a: torch.remainder(a, 7), [_ints(3, 9).to(torch.int32)]),
    "take_along_dim_negative": (lambda x, i: torch.take_along_dim(x, i, 1),
                                [torch.randn(4, 9), _ints(4, 5, lo=-9, hi=9)]),
    "fmax_fmin_nan": (lambda a, b: torch.fmax(a, b) + torch.fmin(a, b) * 3,
                      [torch.tensor([[NAN, 1.0, NAN, -2.0], [0.5, NAN, 3.0, -1.0]]),
                       torch.tensor([[2.0, NAN, NAN, -3.0], [0.25, 4.0, NAN, 7.0]])]),
    "signbit": (lambda x: torch.signbit(x),
                [torch.tensor([[-0.0, 0.0, -1.5, 2.0], [float("-inf"), float("inf"), -1e-40,
                                                       1e-40]])]),
    "atan2_axes": (torch.atan2, [torch.tensor([[0.0, 0.0, -0.0, 1.0, -1.0, 2.0]] * 2),
                                 torch.tensor([[1.0, -1.0, -1.0, 0.0, 0.0, -3.0]] * 2)]),
    "logical_xor_numbers": (torch.logical_xor, [torch.tensor([[0.0, 1.5, -2.0, 0.0]]),
                                                torch.tensor([[0.0, 0.0, 3.0, 7.0]])]),
    "int_floor_divide": (lambda a, b: a // b + torch.div(a, -3, rounding_mode="floor") * 100,
                         [_ints(5, 7), _ints(5, 7, lo=1, hi=6) * torch.tensor([1, -1] * 3 + [1])]),
    "int_div_trunc": (lambda a: torch.div(a, -3, rounding_mode="trunc")
                      + torch.div(a, 4, rounding_mode="trunc") * 100, [_ints(5, 7)]),
    "float_div_modes": (lambda a, b: torch.div(a, b, rounding_mode="trunc")
                        + torch.div(a, b, rounding_mode="floor") * 3,
                        [torch.randn(6, 5) * 7, torch.randn(5)]),
    "bitwise_and_or_xor": (lambda a, b: (a & b) + (a | b) * 3 - (a ^ b) + (a & 7) * (~b),
                           [_ints(5, 7, lo=-100, hi=100), _ints(7, lo=-100, hi=100, seed=1)]),
    "bool_and_or_xor_a_python_bool": (lambda a: ((a > 0) & True) ^ ((a < 1) | False) ^ True,
                                      [torch.randn(5, 7)]),
    "shift_past_the_width": (lambda a, s: (a << s) + (a >> s) * 7,  # 0 / the sign, as PyTorch
                             [_ints(70, lo=-99, hi=99), torch.arange(-3, 67)]),
    "int32_shifts": (lambda a, s: torch.bitwise_left_shift(a, s) ^ torch.bitwise_right_shift(a, s)
                     | (3 << (s & 15)), [_ints(40, lo=-99, hi=99).to(torch.int32),
                                        torch.arange(-4, 36, dtype=torch.int32)]),
    "int_whole_powers": (lambda a, b: a ** 3 + a ** 0 - b ** 13,  # int32 ** 13 wraps, as aten
                         [_ints(5, 7, lo=-99, hi=99), _ints(7, lo=-60, hi=60).to(torch.int32)]),
    "half_times_a_number_past_its_range": (  # aten: in float32, then rounded (0 stays 0)
        lambda x: x * 1e6 + x / 1e-9, [torch.tensor([[0.0, 0.01, -0.03, 0.5, -2.0, 1e-4]],
                                                   dtype=torch.float16)]),
    "half_with_python_numbers": (  # the number in float32 (70000 and 1/100000 are not fp16)
        lambda x: x * 70000 + (x / 100000) * 1000 + x * 1e-6 * 1e5 + x * 1.00390625,
        [torch.tensor([[0.5, -0.25, 0.001, 2.0, -0.75, 0.125]], dtype=torch.float16)]),
    "half_mask_constant": (lambda x: torch.where(x > 0, x, -1e9) + 70000.0 * (x < -1),  # -inf
                           [torch.tensor([[0.5, -0.5, -2.0, 3.0]], dtype=torch.float16)]),
    "f32_past_its_range": (lambda x: x * 1e39, [torch.tensor([[0.0, 1.0, -2.0]])]),
    "bool_xor_or": (lambda a, b: ((a > 0) ^ (b > 0)) | (a > 1), [torch.randn(6), torch.randn(6)]),
    # int8 / int16 wrap as C's signed char / short (aten too); uint8 in an i16 carrier, each
    # result its low 8 bits (overflow, negation, ~, a float past 255, a shift)
    "int8_int16_wrap": (lambda a, b: (a * 9 - a // 7) + (b * 300).to(torch.int8) + (b << 9),
                        [_ints(5, 7, lo=-128, hi=128).to(torch.int8),
                         _ints(7, lo=-300, hi=300).to(torch.int16)]),
    "uint8_wrap": (lambda a, x: (a * a + 200 - (0 - a)) ^ ~a | (a << 3) + (x * 300).to(torch.uint8),
                   [_ints(5, 7, lo=0, hi=256).to(torch.uint8), torch.rand(7)]),
    "uint8_image_to_float": (lambda a: a.permute(1, 0).float() / 255 - a.amax() * 0.5,
                             [_ints(5, 7, lo=0, hi=256).to(torch.uint8)]),
    # a Python integer takes the integer tensor's type as aten casts it: uint8 wraps to
    # 0..255 (-1 is 255, 300 is 44), int16 and int8 modulo their width
    "uint8_scalar_operands_wrap": (
        lambda a: torch.clamp(a, min=-5) + (a > -1) * 7 + (a < 300) * 11 + (a + 300),
        [_ints(3, 9, lo=0, hi=256).to(torch.uint8)]),
    "int16_int8_scalars_wrap": (
        lambda a: (a.to(torch.int16) + 100000) * 1 + (a.to(torch.int8) == 1000)
        + (a.to(torch.int8) * 3 - 200), [_ints(3, 9, lo=-100, hi=100)]),
    # an integer power with a tensor exponent: by its bits, wrapping (3 ** 40 past int64), and
    # a negative exponent as aten's powi (1 for 1, +-1 for -1, else 0)
    "int_power_of_a_tensor": (
        lambda a, b: a ** b + 2 ** b.clamp(0, 70) * 3 + (a.to(torch.int8) ** b.to(torch.int8)),
        [_ints(4, 9, lo=-3, hi=4), _ints(4, 9, lo=-3, hi=41, seed=1)]),
    "logsumexp_of_ints": (lambda a: torch.logsumexp(a, -1), [_ints(4, 9, lo=0, hi=10)]),
    # x[:, i] by a 0-d tensor input (a decode step's position): export reads it with item, the
    # select gathers by the tensor (a negative one wraps); it was refused
    "select_by_a_tensor_index": (lambda a, i: a[:, i] * 2 + a[i, 1:],
                                 [torch.randn(5, 6, generator=torch.Generator().manual_seed(3)),
                                  torch.tensor(-2)]),
    # rows a block's threads share: uint8 (carried in i16) and int8 cross the warp shuffles as
    # i32 (a shuffle of i16 did not verify)
    "narrow_int_rows_shared": (
        lambda a: a.to(torch.uint8).amax(-1).to(torch.int64) * 1000
        + a.to(torch.int8).amin(-1) + a.to(torch.int16).sum(-1),
        [_ints(4, 600, lo=-128, hi=128)]),
    # a large common offset: a float32 sum of it rounds away most of the spread
    "var_of_a_large_offset": (lambda x: torch.var(x * 1e-3 + 1e4, dim=1)
                              + torch.var_mean(x * 1e-3 - 3e4, 0)[0].sum(),
                              [torch.randn(8, 32, generator=torch.Generator().manual_seed(0))]),
    "var_over_an_empty_dim": (lambda x: torch.var(x, 0) + torch.std(x, (0, 1), keepdim=True),
                              [torch.randn(0, 4)]),
    # bools order False < True (a signed i1 has true = -1): max is any, min is all
    "bool_extremes": (lambda b: torch.stack([
        b.amax(1), b.amin(1), b.max(1).values, b.min(1).values, (b > b.t()).any(1),
        (b <= b.t()).all(1), torch.maximum(b, b.t()).all(1), torch.minimum(b, b.t()).any(1)]),
        [torch.tensor([[True, False, False], [False, False, False], [True, True, True]])]),
    "bool_extremes_of_long_rows": (  # rows of a block's threads, combined by warp shuffles
        lambda b: torch.stack([b.amax(1), b.amin(1), torch.stack([b.max(), b.min()]).repeat(2)]),
        [torch.arange(4 * 700).reshape(4, 700) % 700 > torch.tensor([[698], [700], [-1], [0]])]),
    # exponents eager computes without pow: sqrt(-0.0) = -0.0 and sqrt(-inf) = NaN where
    # pow gives 0.0 and inf (the sign of each value is an output of its own)
    "pow_special_exponents": (
        lambda x: _with_signs(torch.stack([x ** 0.5, x ** -0.5, x ** 3, x ** -1, x ** -2,
                                           x ** 1.5])),
        [torch.tensor([-0.0, -INF, 0.0, INF, 4.0, -4.0, 2.5, NAN, 1e-30, -3e-3])]),
    "pow_special_exponents_fp16": (  # (eager's float16 takes pow: sqrt(-0.0) is 0.0 there)
        lambda x: _with_signs(torch.stack([x.half() ** 0.5, x.half() ** -0.5,
                                           x.bfloat16() ** 0.5]).float()),
        [torch.tensor([-0.0, -INF, 0.0, INF, 4.0, -4.0, 2.5, NAN])]),
    # in-place ops on the program's own tensors, through views: functional once exported
    "in_place_through_views": (_written_through_views,
        [torch.randn(4, 5, generator=torch.Generator().manual_seed(3))]),
    # a 0-d float32 scale of an fp16 tensor: aten's mul and div read it in float32 as their
    # second operand (x * 1e5 finite where it fits), rounded to fp16 as the first or in add
    "half_by_a_0d_scale": (
        lambda x, s: torch.stack([x * s, x / s, s * x, x + s, x / (s * 1e-13)]),
        [torch.tensor([0.001, 0.5, 2.0, -3.3], dtype=torch.float16), torch.tensor(1e5)]),
    "half_by_a_0d_count_and_floor_divide": (  # (an int 0-d too; floor_divide as div)
        lambda x, n, s: torch.stack([x * n, x / n, x // s]),
        [torch.tensor([1.0, -3.0, 0.0, 2049.0], dtype=torch.float16), torch.tensor(70000),
         torch.tensor(0.1)]),
    # a bf16 activation with float32 norm weights: aten normalizes in float32, returns bf16
    "norms_of_bf16_with_float32_weights": (
        lambda x, w, b: torch.stack([F.layer_norm(x.bfloat16(), (16,), w, b),
                                     F.rms_norm(x.bfloat16(), (16,), w)]).float(),
        [torch.randn(4, 16, generator=torch.Generator().manual_seed(5)), torch.randn(16),
         torch.randn(16)]),
    # int32 / int64 wrap inside an expression, as aten's (C's signed overflow is undefined:
    # g++ folded (x + 1) < 0 to x < -1)
    "int_wraps_inside_an_expression": (
        lambda a, b: torch.stack([(a + 1) < 0, (a - 1) > 0, (a * 2) < 0, (b + 1) < 0,
                                  (b * 3 - 1) > 0]),
        [torch.tensor([2**31 - 1, -2**31, 5, -5], dtype=torch.int32),
         torch.tensor([2**63 - 1, -2**63, 5, -5])]),
    # a uint8 tensor with a 0-d tensor of a wider integer type: aten casts the 0-d to uint8
    # (-1 is 255, 300 is 44) before comparing or combining
    "uint8_with_a_0d_int": (
        lambda u, s: torch.stack([(u == s).to(torch.int16), (u > s).to(torch.int16),
                                  torch.maximum(u, s).to(torch.int16), (u + s).to(torch.int16)]),
        [torch.tensor([255, 0, 44, 7], dtype=torch.uint8), torch.tensor(-1)]),
    "any_all_of_uint8": (  # (aten's result is uint8 there, not bool)
        lambda u: torch.stack([u.any(1), u.all(1), u.any(0)[:2], u.all(0)[:2]]).to(torch.int16),
        [torch.tensor([[0, 3, 255], [0, 0, 0]], dtype=torch.uint8)]),
    "int_max_pool_padded": (  # the padding is the type's least, not -inf
        lambda x: F.max_pool2d(x, 3, 2, 1, return_indices=True)[1] * 1000
        + F.max_pool2d(x, 3, 2, 1), [_ints(2, 3, 5, 4, lo=-99, hi=-1)]),
    # max pooling's index: the first of equal maxima, a window's last NaN, and a window of
    # -inf and padding alone (its first element inside the input, as PyTorch's CPU loop)
    "max_pool_indices_ties_nan_inf": (
        lambda x: F.max_pool2d(x, 3, 2, 1, dilation=(1, 2), ceil_mode=True,
                               return_indices=True)[1],
        [torch.tensor([[[[1.0, 1.0, NAN, 2.0, 2.0, -INF, -INF],
                         [NAN, 0.0, 3.0, NAN, 2.0, -INF, -INF],
                         [5.0, 5.0, 5.0, 5.0, -1.0, -INF, -INF],
                         [0.0, 0.0, 0.0, 0.0, 0.0, -INF, -INF]]]])]),
}


@pytest.mark.parametrize("target,level", LEVELS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_edges(name, target, level) -> None:
    fn, args = CASES[name]
    c = deplo.compile(fn, args)
    ref = fn(*args).numpy()
    got = np.asarray(c.run([a.numpy() for a in args] + list(c.program.params), target=target,
                           level=level)[0])
    assert got.dtype == ref.dtype or (ref.dtype == bool and got.dtype == np.bool_)
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=0, equal_nan=True)


@pytest.mark.parametrize("name,fn", [
    ("fmod", lambda a: torch.fmod(a, 0.7)),
    ("remainder", lambda a: torch.remainder(a, 0.7)),
    ("floor_divide", lambda a: torch.floor_divide(a, 0.7)),
    ("div_floor", lambda a: torch.div(a, 0.7, rounding_mode="floor")),
    ("div_trunc", lambda a: torch.div(a, 0.7, rounding_mode="trunc")),
])
def test_bf16_scalar_divisor_as_eager(name, fn) -> None:
    """bf16 by a Python number, bit for bit as eager: the division kernels keep 0.7 in float32
    (x // 0.7 near an integer quotient), fmod and remainder round it to bf16 first."""
    a = (torch.randn(64, 64, generator=torch.Generator().manual_seed(0)) * 5).bfloat16()
    c = deplo.compile(fn, [a])
    got = np.asarray(c.run([a.float().numpy()], target="cpu")[0], dtype=np.float32)
    np.testing.assert_array_equal(got, fn(a).float().numpy())


@pytest.mark.parametrize("fn,dtype", [
    (lambda x: x.clamp(min=-1000), torch.int8),
    (lambda x: torch.where(x > 0, x, 1000), torch.int8),
    (lambda x: x.masked_fill(x > 0, 1000), torch.int8),
    (lambda x: torch.full_like(x, 1e6), torch.float16),
    (lambda x: x.clamp(max=300), torch.uint8),
])
def test_fill_value_past_the_dtype_is_refused_as_eager(fn, dtype) -> None:
    """A number an op puts into its result is checked as aten checks it (eager raises); the
    same number in arithmetic wraps (below)."""
    x = torch.tensor([1, 5, 100], dtype=dtype)
    with pytest.raises(RuntimeError, match="without overflow"):
        fn(x)
    with pytest.raises(FrontendError, match=f"type {dtype} without overflow"):
        deplo.compile(fn, [x])


def test_fill_values_eager_accepts_compile() -> None:
    """uint8 takes -1 as 255, where's float scalar overflows to inf, arithmetic wraps."""
    x = torch.tensor([1, 5, 100], dtype=torch.uint8)
    h = torch.tensor([1.0, -2.0], dtype=torch.float16)
    for fn, a in [(lambda x: torch.full_like(x, -1), x), (lambda h: torch.where(h > 0, h, 1e6), h),
                  (lambda x: x.to(torch.int8) + 1000, x)]:
        assert torch.equal(deplo.compile(fn, [a])(a), fn(a))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("fn", [torch.sigmoid, F.silu, F.gelu,
                                lambda x: F.gelu(x, approximate="tanh")],
                         ids=["sigmoid", "silu", "gelu", "gelu_tanh"])
def test_half_activations_round_once_as_eager(fn, dtype) -> None:
    """f16/bf16 activations computed in float32 and rounded once, as aten's opmath: rounding
    each step to half made sigmoid(-12) 0 in fp16 (exp(12) overflows) and gelu(-4) -0 (1 +
    erf(x) cancels), where eager is right to an ulp. Against float64: within 2 ulps, or twice
    eager's own error (tanh-gelu's 1 + tanh cancels in float32 too)."""
    x = torch.linspace(-16, 8, 481).to(dtype)
    got, want, exact = deplo.compile(fn, [x])(x).double(), fn(x).double(), fn(x.double())
    allowed = torch.maximum(2 * torch.finfo(dtype).eps * exact.abs(), 2 * (want - exact).abs())
    assert torch.all((got - exact).abs() <= allowed + torch.finfo(dtype).tiny), \
        x[((got - exact).abs() - allowed).argmax()]
