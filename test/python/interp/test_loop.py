"""The loop-level interpreter (free loops vectorized over numpy axes) against numpy/PyTorch."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
import torch
from xdsl.utils.exceptions import VerifyException

from deplo.runtime.interp import InterpExecutable, detect_level, run_module

RTOL = 1e-5
OPS_MLIR = Path(__file__).resolve().parents[2] / "lit" / "loop" / "ops.mlir"


def mr(*shape: int, elt: str = "f32") -> str:
    return f"memref<{'x'.join(map(str, shape))}x{elt}>"


def test_lit_ops_kernel(parse, rand):
    """The first kernel of test/lit/loop/ops.mlir: relu((x + b) @ w), 16x64 @ 64x16."""
    module = parse(OPS_MLIR.read_text())
    assert detect_level(module) == "loop"
    x, b, w = rand(16, 64), rand(64), rand(64, 16)
    (y,) = run_module(module, [x, b, w])
    ref = np.maximum((x.astype(np.float64) + b) @ w, 0)
    assert y.dtype == np.float32
    np.testing.assert_allclose(y, ref, rtol=RTOL, atol=1e-5)


def relu_matmul(m: int, k: int, n: int) -> str:
    x, b, w, o = mr(m, k), mr(k), mr(k, n), mr(m, n)
    return f"""
    loop.kernel @relu_matmul(%x: {x}, %b: {b}, %w: {w}, %out: {o}) {{
      %zero = arith.constant 0.000000e+00 : f32
      loop.for %a0 = 0 to {m} free {{
        loop.for %a1 = 0 to {n} free {{
          %acc = loop.for %a2 = 0 to {k} reduce iter(%s = %zero) -> f32 {{
            %xv = loop.load %x[%a0, %a2] : {x}
            %bv = loop.load %b[%a0, %a2] map (d0, d1) -> (d1) : {b}
            %xb = arith.addf %xv, %bv : f32
            %wv = loop.load %w[%a2, %a1] : {w}
            %p = arith.mulf %xb, %wv : f32
            %nx = arith.addf %s, %p : f32
            loop.yield %nx : f32
          }}
          %r = arith.maximumf %acc, %zero : f32
          loop.store %r, %out[%a0, %a1] : {o}
        }}
      }}
    }}
    func.func @main(%x: {x}, %b: {b}, %w: {w}) -> {o} {{
      %out = memref.alloc() : {o}
      loop.launch @relu_matmul(%x, %b, %w, %out) : {x}, {b}, {w}, {o}
      func.return %out : {o}
    }}"""


@pytest.mark.parametrize("m, k, n", [(1000, 70, 9), (13, 70, 9)])
def test_relu_matmul(parse, rand, m, k, n):
    x, b, w = rand(m, k), rand(k), rand(k, n)
    (y,) = run_module(parse(relu_matmul(m, k, n)), [x, b, w])
    ref = torch.relu((torch.from_numpy(x) + torch.from_numpy(b)) @ torch.from_numpy(w)).numpy()
    np.testing.assert_allclose(y, ref, rtol=RTOL, atol=1e-5)


def rms_norm(a: int, b: int, n: int, eps: float = 1e-6) -> str:
    """free a0, a1; reduce a2 (sum of squares); math.rsqrt; free a3 storing x * r * w."""
    x, w = mr(a, b, n), mr(n)
    return f"""
    loop.kernel @rms_norm(%x: {x}, %w: {w}, %out: {x}) {{
      %zero = arith.constant 0.000000e+00 : f32
      %n = arith.constant {float(n):e} : f32
      %eps = arith.constant {eps:e} : f32
      loop.for %a0 = 0 to {a} free {{
        loop.for %a1 = 0 to {b} free {{
          %ss = loop.for %a2 = 0 to {n} reduce iter(%s = %zero) -> f32 {{
            %v = loop.load %x[%a0, %a1, %a2] : {x}
            %sq = arith.mulf %v, %v : f32
            %t = arith.addf %s, %sq : f32
            loop.yield %t : f32
          }}
          %mean = arith.divf %ss, %n : f32
          %me = arith.addf %mean, %eps : f32
          %r = math.rsqrt %me : f32
          loop.for %a3 = 0 to {n} free {{
            %v = loop.load %x[%a0, %a1, %a3] : {x}
            %wv = loop.load %w[%a0, %a1, %a3] map (d0, d1, d2) -> (d2) : {w}
            %y = arith.mulf %v, %r : f32
            %z = arith.mulf %y, %wv : f32
            loop.store %z, %out[%a0, %a1, %a3] : {x}
          }}
        }}
      }}
    }}
    func.func @main(%x: {x}, %w: {w}) -> {x} {{
      %out = memref.alloc() : {x}
      loop.launch @rms_norm(%x, %w, %out) : {x}, {w}, {x}
      func.return %out : {x}
    }}"""


@pytest.mark.parametrize("a, b, n", [(13, 70, 9), (1, 1000, 70)])
def test_rms_norm(parse, rand, a, b, n):
    x, w = rand(a, b, n), rand(n)
    (y,) = run_module(parse(rms_norm(a, b, n)), [x, w])
    ref = torch.nn.functional.rms_norm(torch.from_numpy(x), (n,), torch.from_numpy(w), 1e-6)
    np.testing.assert_allclose(y, ref.numpy(), rtol=RTOL, atol=1e-6)


def test_rms_norm_1x32x2048_is_fast(parse, rand):
    """2048 serial reduce steps over 32 lanes, then one vectorized 32x2048 pass."""
    x, w = rand(1, 32, 2048), rand(2048)
    exe = InterpExecutable(parse(rms_norm(1, 32, 2048)))
    start = time.perf_counter()
    (y,) = exe.run([x, w])
    print(f"rms_norm 1x32x2048 loop kernel: {time.perf_counter() - start:.3f} s")
    ref = torch.nn.functional.rms_norm(torch.from_numpy(x), (2048,), torch.from_numpy(w), 1e-6)
    np.testing.assert_allclose(y, ref.numpy(), rtol=RTOL, atol=1e-6)


def test_two_kernels_through_an_intermediate(parse, rand):
    """exp(x) into an allocated buffer, then a row sum of it: kernels run in launch order."""
    x, t, s = mr(13, 70), mr(13, 70), mr(13)
    module = parse(f"""
    loop.kernel @exp(%x: {x}, %t: {t}) {{
      loop.for %i = 0 to 13 free {{
        loop.for %j = 0 to 70 free {{
          %v = loop.load %x[%i, %j] : {x}
          %e = math.exp %v : f32
          loop.store %e, %t[%i, %j] : {t}
        }}
      }}
    }}
    loop.kernel @rowsum(%t: {t}, %s: {s}) {{
      %zero = arith.constant 0.000000e+00 : f32
      loop.for %i = 0 to 13 free {{
        %acc = loop.for %j = 0 to 70 reduce iter(%a = %zero) -> f32 {{
          %v = loop.load %t[%i, %j] : {t}
          %n = arith.addf %a, %v : f32
          loop.yield %n : f32
        }}
        loop.store %acc, %s[%i] : {s}
      }}
    }}
    func.func @main(%x: {x}) -> ({t}, {s}) {{
      %t = memref.alloc() : {t}
      %s = memref.alloc() : {s}
      loop.launch @exp(%x, %t) : {x}, {t}
      loop.launch @rowsum(%t, %s) : {t}, {s}
      func.return %t, %s : {t}, {s}
    }}""")
    xv = rand(13, 70)
    te, se = run_module(module, [xv])
    np.testing.assert_array_equal(te, np.exp(xv))
    np.testing.assert_allclose(se, np.exp(xv.astype(np.float64)).sum(1), rtol=RTOL)


def test_float32_is_kept_op_by_op(parse, rand):
    """silu with arith/math: each op rounds to float32 (bit-exact against numpy float32), so
    nothing is silently computed in float64; the max/select forms agree with numpy too."""
    x = mr(13, 70)
    module = parse(f"""
    loop.kernel @k(%x: {x}, %y: {x}, %r: {x}) {{
      %one = arith.constant 1.000000e+00 : f32
      %zero = arith.constant 0.000000e+00 : f32
      loop.for %i = 0 to 13 free {{
        loop.for %j = 0 to 70 free {{
          %v = loop.load %x[%i, %j] : {x}
          %nv = arith.negf %v : f32
          %e = math.exp %nv : f32
          %d = arith.addf %one, %e : f32
          %s = arith.divf %v, %d : f32
          loop.store %s, %y[%i, %j] : {x}
          %pos = arith.cmpf ogt, %v, %zero : f32
          %rl = arith.select %pos, %v, %zero : f32
          loop.store %rl, %r[%i, %j] : {x}
        }}
      }}
    }}
    func.func @main(%x: {x}) -> ({x}, {x}) {{
      %y = memref.alloc() : {x}
      %r = memref.alloc() : {x}
      loop.launch @k(%x, %y, %r) : {x}, {x}, {x}
      func.return %y, %r : {x}, {x}
    }}""")
    xv = rand(13, 70)
    y, r = run_module(module, [xv])
    one = np.float32(1)
    assert y.dtype == np.float32
    np.testing.assert_array_equal(y, xv / (one + np.exp(-xv)))
    np.testing.assert_array_equal(r, np.maximum(xv, 0))


def test_f16_kernel_stays_f16(parse, rand):
    x = mr(13, 9, elt="f16")
    module = parse(f"""
    loop.kernel @k(%x: {x}, %y: {x}) {{
      loop.for %i = 0 to 13 free {{
        loop.for %j = 0 to 9 free {{
          %v = loop.load %x[%i, %j] : {x}
          %s = arith.mulf %v, %v : f16
          %t = arith.addf %s, %v : f16
          loop.store %t, %y[%i, %j] : {x}
        }}
      }}
    }}
    func.func @main(%x: {x}) -> {x} {{
      %y = memref.alloc() : {x}
      loop.launch @k(%x, %y) : {x}, {x}
      func.return %y : {x}
    }}""")
    xv = rand(13, 9, dtype=np.float16)
    (y,) = run_module(module, [xv])
    assert y.dtype == np.float16
    np.testing.assert_array_equal(y, xv * xv + xv)


def test_maps_steps_and_index_arith(parse, rand):
    """floordiv/mod maps, lb/step loops, and arith on index values."""
    x, flat = mr(13, 70), mr(910)
    module = parse(f"""
    loop.kernel @k(%x: {x}, %even: {flat}, %odd: {flat}) {{
      %c1 = arith.constant 1 : index
      loop.for %i = 0 to 910 step 2 free {{
        %v = loop.load %x[%i] map (d0) -> (d0 floordiv 70, d0 mod 70) : {x}
        loop.store %v, %even[%i] : {flat}
        %ip = arith.addi %i, %c1 : index
        %w = loop.load %x[%ip] map (d0) -> (d0 floordiv 70, d0 mod 70) : {x}
        loop.store %w, %odd[%ip] : {flat}
      }}
      loop.for %i = 1 to 910 step 2 free {{
        %v = loop.load %x[%i] map (d0) -> (d0 floordiv 70, d0 mod 70) : {x}
        loop.store %v, %even[%i] : {flat}
        %im = arith.subi %i, %c1 : index
        loop.store %v, %odd[%im] : {flat}
      }}
    }}
    func.func @main(%x: {x}) -> ({flat}, {flat}) {{
      %e = memref.alloc() : {flat}
      %o = memref.alloc() : {flat}
      loop.launch @k(%x, %e, %o) : {x}, {flat}, {flat}
      func.return %e, %o : {flat}, {flat}
    }}""")
    xv = rand(13, 70)
    even, odd = run_module(module, [xv])
    np.testing.assert_array_equal(even, xv.reshape(-1))
    np.testing.assert_array_equal(odd[1::2], xv.reshape(-1)[1::2])
    np.testing.assert_array_equal(odd[0::2], xv.reshape(-1)[1::2])


def test_unwritten_elements_stay_nan(parse, rand):
    """memref.alloc starts as NaN: a kernel that misses elements shows it."""
    o = mr(13, 9)
    module = parse(f"""
    loop.kernel @k(%x: {o}, %y: {o}) {{
      loop.for %i = 0 to 13 free {{
        loop.for %j = 0 to 8 free {{
          %v = loop.load %x[%i, %j] : {o}
          loop.store %v, %y[%i, %j] : {o}
        }}
      }}
    }}
    func.func @main(%x: {o}) -> {o} {{
      %y = memref.alloc() : {o}
      loop.launch @k(%x, %y) : {o}, {o}
      func.return %y : {o}
    }}""")
    xv = rand(13, 9)
    (y,) = run_module(module, [xv])
    np.testing.assert_array_equal(y[:, :8], xv[:, :8])
    assert np.isnan(y[:, 8]).all()


def test_out_of_bounds_load_is_an_error(parse):
    """The verifier bounds a mapped coordinate over its loops (the interpreter would too)."""
    o = mr(13, 9)
    with pytest.raises(VerifyException, match=r"coordinate 1 \(\(d1 \+ -1\)\) runs over -1..7"):
        parse(f"""
        loop.kernel @k(%x: {o}, %y: {o}) {{
          loop.for %i = 0 to 13 free {{
            loop.for %j = 0 to 9 free {{
              %v = loop.load %x[%i, %j] map (d0, d1) -> (d0, d1 + -1) : {o}
              loop.store %v, %y[%i, %j] : {o}
            }}
          }}
        }}""")


def test_executable_runs_twice_without_touching_inputs(parse, rand):
    exe = InterpExecutable(parse(relu_matmul(13, 70, 9)))
    x, b, w = rand(13, 70), rand(70), rand(70, 9)
    saved = x.copy()
    (y1,) = exe.run([x, b, w])
    (y2,) = exe.run([x, b, w])
    np.testing.assert_array_equal(y1, y2)
    np.testing.assert_array_equal(x, saved)


def test_bf16_rounds_after_each_op(parse, rand):
    """bf16 travels as float32 holding bf16 values, rounded after every arith op; inputs may also
    be uint16 bit patterns."""
    from deplo.runtime.interp.host import round_bf16

    x = mr(13, 9, elt="bf16")
    module = parse(f"""
    loop.kernel @k(%x: {x}, %y: {x}) {{
      loop.for %i = 0 to 13 free {{
        loop.for %j = 0 to 9 free {{
          %v = loop.load %x[%i, %j] : {x}
          %s = arith.mulf %v, %v : bf16
          %t = arith.addf %s, %v : bf16
          loop.store %t, %y[%i, %j] : {x}
        }}
      }}
    }}
    func.func @main(%x: {x}) -> {x} {{
      %y = memref.alloc() : {x}
      loop.launch @k(%x, %y) : {x}, {x}
      func.return %y : {x}
    }}""")
    xv = round_bf16(rand(13, 9))
    (y,) = run_module(module, [xv])
    assert y.dtype == np.float32
    np.testing.assert_array_equal(y, round_bf16(round_bf16(xv * xv) + xv))
    bits = (xv.view(np.uint32) >> 16).astype(np.uint16)
    np.testing.assert_array_equal(run_module(module, [bits])[0], y)
    ref = (torch.from_numpy(xv).bfloat16() ** 2 + torch.from_numpy(xv).bfloat16()).float()
    np.testing.assert_array_equal(y, ref.numpy())
