"""The tir-level interpreter on hand-decomposed programs, against numpy/PyTorch."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from deplo.dialects import tir
from deplo.runtime.interp import detect_level, run_module

RTOL = 1e-5


def t(*shape: int, elt: str = "f32") -> str:
    return f"tensor<{'x'.join(map(str, shape))}{'x' if shape else ''}{elt}>"


@pytest.mark.parametrize("m, k, n", [(1000, 70, 9), (13, 70, 9), (16, 64, 16)])
def test_relu_matmul_bias(parse, rand, m, k, n):
    """relu((x + b) @ w): bias broadcast by index_map, matmul as index_map + mul + reduce add [2]."""
    module = parse(f"""
    func.func @main(%x: {t(m, k)}, %b: {t(k)}, %w: {t(k, n)}) -> {t(m, n)} {{
      %bb = tir.index_map %b (d0, d1) -> (d1) : {t(k)} -> {t(m, k)}
      %xb = tir.elementwise add(%x, %bb) : {t(m, k)}
      %a3 = tir.index_map %xb (d0, d1, d2) -> (d0, d2) : {t(m, k)} -> {t(m, n, k)}
      %w3 = tir.index_map %w (d0, d1, d2) -> (d2, d1) : {t(k, n)} -> {t(m, n, k)}
      %p = tir.elementwise mul(%a3, %w3) : {t(m, n, k)}
      %mm = tir.reduce add %p [2] : {t(m, n, k)} -> {t(m, n)}
      %z = tir.full 0.000000e+00 : {t(m, n)}
      %r = tir.elementwise max(%mm, %z) : {t(m, n)}
      func.return %r : {t(m, n)}
    }}""")
    assert detect_level(module) == "tir"
    x, b, w = rand(m, k), rand(k), rand(k, n)
    (y,) = run_module(module, [x, b, w])
    ref = np.maximum((x.astype(np.float64) + b) @ w, 0)
    assert y.dtype == np.float32 and y.shape == (m, n)
    np.testing.assert_allclose(y, ref, rtol=RTOL, atol=1e-5)


@pytest.mark.parametrize("rows, n", [(1000, 70), (13 * 70, 9)])
def test_rms_norm(parse, rand, rows, n):
    """x * rsqrt(sum(x*x)/n + eps) * w, each step one tir op."""
    module = parse(f"""
    func.func @main(%x: {t(rows, n)}, %w: {t(n)}) -> {t(rows, n)} {{
      %sq = tir.elementwise mul(%x, %x) : {t(rows, n)}
      %s = tir.reduce add %sq [1] : {t(rows, n)} -> {t(rows)}
      %nf = tir.full {float(n):e} : {t(rows)}
      %mean = tir.elementwise div(%s, %nf) : {t(rows)}
      %eps = tir.full 1.000000e-06 : {t(rows)}
      %me = tir.elementwise add(%mean, %eps) : {t(rows)}
      %r = tir.elementwise rsqrt(%me) : {t(rows)}
      %rb = tir.index_map %r (d0, d1) -> (d0) : {t(rows)} -> {t(rows, n)}
      %y = tir.elementwise mul(%x, %rb) : {t(rows, n)}
      %wb = tir.index_map %w (d0, d1) -> (d1) : {t(n)} -> {t(rows, n)}
      %o = tir.elementwise mul(%y, %wb) : {t(rows, n)}
      func.return %o : {t(rows, n)}
    }}""")
    x, w = rand(rows, n), rand(n)
    (y,) = run_module(module, [x, w])
    ref = torch.nn.functional.rms_norm(torch.from_numpy(x), (n,), torch.from_numpy(w), 1e-6)
    np.testing.assert_allclose(y, ref.numpy(), rtol=RTOL, atol=1e-6)


def test_index_map_reshape_transpose(parse, rand):
    """floordiv/mod maps: a reshape (13, 70) -> (910,) and back transposed."""
    module = parse(f"""
    func.func @main(%x: {t(13, 70)}) -> ({t(910)}, {t(70, 13)}) {{
      %flat = tir.index_map %x (d0) -> (d0 floordiv 70, d0 mod 70) : {t(13, 70)} -> {t(910)}
      %tr = tir.index_map %flat (d0, d1) -> (d1 * 70 + d0) : {t(910)} -> {t(70, 13)}
      func.return %flat, %tr : {t(910)}, {t(70, 13)}
    }}""")
    x = rand(13, 70)
    flat, tr = run_module(module, [x])
    np.testing.assert_array_equal(flat, x.reshape(-1))
    np.testing.assert_array_equal(tr, x.T)


@pytest.mark.parametrize("kind", list(tir.ElementwiseKind))
def test_elementwise_kinds(parse, rand, kind):
    arity = tir.ELEMENTWISE_ARITY[kind]
    elt = "i1" if kind in tir.LOGICAL_KINDS else "i32" if kind in tir.BIT_KINDS else "f32"
    args = ", ".join(f"%a{i}" for i in range(arity))
    params = ", ".join(f"%a{i}: {t(13, 9, elt=elt)}" for i in range(arity))
    module = parse(f"""
    func.func @main({params}) -> {t(13, 9, elt=elt)} {{
      %y = tir.elementwise {kind}({args}) : {t(13, 9, elt=elt)}
      func.return %y : {t(13, 9, elt=elt)}
    }}""")
    xs = [rand(13, 9) for _ in range(arity)]
    if kind in ("sqrt", "rsqrt", "pow", "log", "log2", "log10", "log1p"):
        xs = [np.abs(x) for x in xs]
    if kind in ("asin", "acos", "atanh"):
        xs = [np.tanh(x) for x in xs]  # (inside (-1, 1))
    if kind == "acosh":
        xs = [np.abs(x) + 1 for x in xs]
    if elt == "i1":
        xs = [x > 0 for x in xs]
    if elt == "i32":  # shift amounts past the width and negative ones too: 0 / the sign
        gen = np.random.default_rng(0)
        xs = [gen.integers(-1000, 1000, (13, 9), dtype=np.int32),
              gen.integers(-3, 40, (13, 9), dtype=np.int32)]
    (y,) = run_module(module, xs)
    tx = [torch.from_numpy(x) for x in xs]
    ref = {
        "add": torch.add,
        "sub": torch.sub,
        "mul": torch.mul,
        "div": torch.div,
        "max": torch.maximum,
        "min": torch.minimum,
        "neg": torch.neg,
        "exp": torch.exp,
        "rsqrt": torch.rsqrt,
        "sqrt": torch.sqrt,
        "tanh": torch.tanh,
        "sigmoid": torch.sigmoid,
        "silu": torch.nn.functional.silu,
        "pow": torch.pow,
        "cos": torch.cos,
        "sin": torch.sin,
        "erf": torch.erf,
        "abs": torch.abs,
        "log": torch.log,
        "and": torch.logical_and,
        "or": torch.logical_or,
        "xor": torch.bitwise_xor,
        "shl": torch.bitwise_left_shift,
        "shr": torch.bitwise_right_shift,
    }.get(kind, getattr(torch, kind, None))(*tx).numpy()
    assert y.dtype == {"i1": np.bool_, "i32": np.int32, "f32": np.float32}[elt]
    np.testing.assert_allclose(y, ref, rtol=RTOL, atol=1e-6)


@pytest.mark.parametrize("kind", [k for k in tir.ReduceKind if k not in tir.ARG_KINDS])
def test_reduce_kinds(parse, rand, kind):
    module = parse(f"""
    func.func @main(%x: {t(13, 70, 9)}) -> {t(70)} {{
      %y = tir.reduce {kind} %x [0, 2] : {t(13, 70, 9)} -> {t(70)}
      func.return %y : {t(70)}
    }}""")
    x = rand(13, 70, 9)
    if kind == "mul":
        x = (1 + x / 64).astype(np.float32)  # keep the product finite
    (y,) = run_module(module, [x])
    ref = {"add": np.sum, "mul": np.prod, "max": np.max, "min": np.min}[kind](
        x.astype(np.float64), axis=(0, 2)
    )
    np.testing.assert_allclose(y, ref, rtol=RTOL, atol=1e-5)


def test_f16_reduce_accumulates_in_f32(parse):
    """f16 sums accumulate in float32 (as torch.sum), then round once."""
    module = parse(f"""
    func.func @main(%x: {t(4096, elt="f16")}) -> {t(elt="f16")} {{
      %y = tir.reduce add %x [0] : {t(4096, elt="f16")} -> {t(elt="f16")}
      func.return %y : {t(elt="f16")}
    }}""")
    x = np.full(4096, 1.0, np.float16)  # f16 serial accumulation would stall at 2048
    (y,) = run_module(module, [x])
    assert y.dtype == np.float16 and float(y) == 4096.0
    assert float(y) == torch.from_numpy(x).sum().item()


@pytest.mark.parametrize("kind", tir.ARG_KINDS)
def test_arg_reduce_kinds(parse, rand, kind):
    """argmax/argmin: the i64 index of the first best element, NaN the extreme (as torch)."""
    module = parse(f"""
    func.func @main(%x: {t(13, 70)}) -> {t(70, elt="i64")} {{
      %y = tir.reduce {kind} %x [0] : {t(13, 70)} -> {t(70, elt="i64")}
      func.return %y : {t(70, elt="i64")}
    }}""")
    x = np.round(rand(13, 70) * 2).astype(np.float32)  # ties
    x[5, 3] = x[9, 3] = np.nan
    (y,) = run_module(module, [x])
    np.testing.assert_array_equal(y, getattr(torch, kind)(torch.from_numpy(x), 0).numpy())


@pytest.mark.parametrize("kind", [k for k in tir.ReduceKind if k not in tir.ARG_KINDS])
def test_scan_kinds(parse, rand, kind):
    module = parse(f"""
    func.func @main(%x: {t(13, 70)}) -> {t(13, 70)} {{
      %y = tir.scan {kind} %x [1] : {t(13, 70)}
      func.return %y : {t(13, 70)}
    }}""")
    x = (1 + rand(13, 70) / 64).astype(np.float32)
    (y,) = run_module(module, [x])
    tx = torch.from_numpy(x)
    ref = {"add": lambda: torch.cumsum(tx, 1), "mul": lambda: torch.cumprod(tx, 1),
           "max": lambda: torch.cummax(tx, 1).values, "min": lambda: torch.cummin(tx, 1).values}
    np.testing.assert_allclose(y, ref[kind]().numpy(), rtol=RTOL, atol=1e-5)

