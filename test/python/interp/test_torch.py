"""The torch-level interpreter against PyTorch itself, on random (never zero) inputs."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from deplo.dialects import torch as torch_d
from deplo.runtime.interp import InterpExecutable, detect_level, run_module

RTOL, ATOL = 1e-5, 1e-5


def t(shape: tuple[int, ...], elt: str = "f32") -> str:
    return f"tensor<{'x'.join(map(str, shape))}{'x' if shape else ''}{elt}>"


def test_relu_matmul_bias(parse, rand):
    m, k, n = 1000, 70, 9
    module = parse(f"""
    func.func @main(%x: {t((m, k))}, %b: {t((k,))}, %w: {t((k, n))}) -> {t((m, n))} {{
      %xb = torch.add %x, %b : ({t((m, k))}, {t((k,))}) -> {t((m, k))}
      %y = torch.matmul %xb, %w : ({t((m, k))}, {t((k, n))}) -> {t((m, n))}
      %r = torch.relu %y : ({t((m, n))}) -> {t((m, n))}
      func.return %r : {t((m, n))}
    }}""")
    assert detect_level(module) == "torch"
    x, b, w = rand(m, k), rand(k), rand(k, n)
    (y,) = run_module(module, [x, b, w])
    ref = torch.relu((torch.from_numpy(x) + torch.from_numpy(b)) @ torch.from_numpy(w)).numpy()
    assert y.dtype == np.float32 and y.shape == (m, n)
    np.testing.assert_allclose(y, ref, rtol=RTOL, atol=ATOL)
    assert (y > 0).any() and (y == 0).any()


@pytest.mark.parametrize(
    "a_shape, b_shape",
    [
        ((13, 70, 9), (9, 5)),  # batched lhs
        ((2, 1, 13, 70), (3, 70, 9)),  # batch broadcast
        ((70,), (70, 9)),  # 1-D lhs promoted and squeezed
        ((13, 70), (70,)),  # 1-D rhs
        ((70,), (70,)),  # dot product: 0-d result
    ],
)
def test_matmul_shapes(parse, rand, a_shape, b_shape):
    r_shape = torch_d.matmul_shape(a_shape, b_shape)
    module = parse(f"""
    func.func @main(%a: {t(a_shape)}, %b: {t(b_shape)}) -> {t(r_shape)} {{
      %y = torch.matmul %a, %b : ({t(a_shape)}, {t(b_shape)}) -> {t(r_shape)}
      func.return %y : {t(r_shape)}
    }}""")
    a, b = rand(*a_shape), rand(*b_shape)
    (y,) = run_module(module, [a, b])
    ref = torch.matmul(torch.from_numpy(a), torch.from_numpy(b)).numpy()
    assert y.shape == ref.shape == r_shape
    np.testing.assert_allclose(y, ref, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize(
    "shape, norm, weight, eps",
    [
        ((1000, 70), (70,), True, 1e-6),
        ((13, 70, 9), (9,), True, None),  # eps defaults to finfo(f32).eps
        ((13, 70, 9), (70, 9), False, 1e-5),  # two normalized dims, no weight
    ],
)
def test_rms_norm(parse, rand, shape, norm, weight, eps):
    attrs = f"normalized_shape = array<i64: {', '.join(map(str, norm))}>"
    if eps is not None:
        attrs += f", eps = {eps:e} : f64"
    operands, types = ("%x, %w", f"{t(shape)}, {t(norm)}") if weight else ("%x", t(shape))
    module = parse(f"""
    func.func @main(%x: {t(shape)}{f", %w: {t(norm)}" if weight else ""}) -> {t(shape)} {{
      %y = torch.rms_norm {operands} {{{attrs}}} : ({types}) -> {t(shape)}
      func.return %y : {t(shape)}
    }}""")
    x, w = rand(*shape), rand(*norm)
    (y,) = run_module(module, [x, w] if weight else [x])
    ref = torch.nn.functional.rms_norm(
        torch.from_numpy(x), norm, torch.from_numpy(w) if weight else None, eps
    ).numpy()
    np.testing.assert_allclose(y, ref, rtol=RTOL, atol=1e-6)


@pytest.mark.parametrize("name", sorted(torch_d.UNARY_OPS))
def test_unary(parse, rand, name):
    s = (13, 70)
    module = parse(f"""
    func.func @main(%x: {t(s)}) -> {t(s)} {{
      %y = torch.{name} %x : ({t(s)}) -> {t(s)}
      func.return %y : {t(s)}
    }}""")
    x = rand(*s)
    if name in ("rsqrt", "sqrt"):
        x = np.abs(x)
    (y,) = run_module(module, [x])
    fn = torch.nn.functional.silu if name == "silu" else getattr(torch, name)
    ref = fn(torch.from_numpy(x)).numpy()
    assert y.dtype == np.float32
    np.testing.assert_allclose(y, ref, rtol=RTOL, atol=1e-6)


@pytest.mark.parametrize("name", sorted(torch_d.BINARY_OPS))
def test_binary_broadcast(parse, rand, name):
    a_s, b_s, r_s = (13, 1, 9), (70, 1), (13, 70, 9)
    module = parse(f"""
    func.func @main(%a: {t(a_s)}, %b: {t(b_s)}) -> {t(r_s)} {{
      %y = torch.{name} %a, %b : ({t(a_s)}, {t(b_s)}) -> {t(r_s)}
      func.return %y : {t(r_s)}
    }}""")
    a, b = rand(*a_s), rand(*b_s)
    (y,) = run_module(module, [a, b])
    ref = getattr(torch, name)(torch.from_numpy(a), torch.from_numpy(b)).numpy()
    np.testing.assert_allclose(y, ref, rtol=RTOL, atol=1e-6)


def test_constant(parse, rand):
    module = parse(f"""
    func.func @main(%x: {t((13, 9))}) -> {t((13, 9))} {{
      %c = torch.constant {{value = 2.5 : f32}} : tensor<f32>
      %y = torch.mul %x, %c : ({t((13, 9))}, tensor<f32>) -> {t((13, 9))}
      func.return %y : {t((13, 9))}
    }}""")
    x = rand(13, 9)
    (y,) = InterpExecutable(module).run([x])
    np.testing.assert_array_equal(y, x * np.float32(2.5))


@pytest.mark.parametrize("elt, tdtype", [("f16", torch.float16), ("bf16", torch.bfloat16)])
def test_low_precision_matches_torch(parse, rand, elt, tdtype):
    """f16/bf16: computed in float32 and rounded after each op, as PyTorch on CPU does."""
    s, n = (13, 70), (70,)
    module = parse(f"""
    func.func @main(%x: {t(s, elt)}, %b: {t(n, elt)}, %w: {t(n, elt)}) -> {t(s, elt)} {{
      %a = torch.add %x, %b : ({t(s, elt)}, {t(n, elt)}) -> {t(s, elt)}
      %h = torch.silu %a : ({t(s, elt)}) -> {t(s, elt)}
      %y = torch.rms_norm %h, %w {{normalized_shape = array<i64: 70>}} : ({t(s, elt)}, {t(n, elt)}) -> {t(s, elt)}
      func.return %y : {t(s, elt)}
    }}""")
    x, b, w = rand(*s), rand(*n), rand(*n)
    (y,) = run_module(module, [x, b, w])
    tx, tb, tw = (torch.from_numpy(v).to(tdtype) for v in (x, b, w))
    ref = torch.nn.functional.rms_norm(torch.nn.functional.silu(tx + tb), n, tw).float().numpy()
    if elt == "f16":
        assert y.dtype == np.float16
    else:  # bf16 travels as float32 holding bf16 values
        assert y.dtype == np.float32
        assert (y.view(np.uint32) & 0xFFFF == 0).all()
    ulp = 2.0**-10 if elt == "f16" else 2.0**-7
    np.testing.assert_allclose(y.astype(np.float32), ref, rtol=ulp, atol=ulp)
    assert np.mean(y.astype(np.float32) == ref) > 0.95


def test_wrong_inputs_are_rejected(parse, rand):
    module = parse(f"""
    func.func @main(%x: {t((4, 3))}) -> {t((4, 3))} {{
      %y = torch.neg %x : ({t((4, 3))}) -> {t((4, 3))}
      func.return %y : {t((4, 3))}
    }}""")
    with pytest.raises(ValueError, match="takes 1 inputs"):
        run_module(module, [])
    with pytest.raises(ValueError, match="shape"):
        run_module(module, [rand(3, 4)])
