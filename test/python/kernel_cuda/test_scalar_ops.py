"""Every row of kernel-to-cuda's arith/math -> C table, run on the CPU runtime against numpy.

One kernel of 64 threads: thread t loads a[t], b[t] (f32, b > 0), i[t], j[t] (i32, j != 0) and
h[t] (f16), evaluates every case and stores case k's result at out_<type>[k, t].
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from kc_harness import cpu_module, lower, needs_cpu, needs_nvrtc, nvrtc_compile, run_host

N = 64
f32, i32, f16 = np.float32, np.int32, np.float16


def _u(x):
    return x.astype(np.uint32)


def _trunc_div(i, j):
    return (np.abs(i) // np.abs(j) * np.sign(i) * np.sign(j)).astype(i32)


def _round_away(x):
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


# (result type, IR lines computing %r from %a %b %i %j %h, numpy reference on the inputs)
CASES: list[tuple[str, str, object]] = [
    ("f32", "%r = arith.addf %a, %b : f32", lambda a, b, i, j, h: a + b),
    ("f32", "%r = arith.subf %a, %b : f32", lambda a, b, i, j, h: a - b),
    ("f32", "%r = arith.mulf %a, %b : f32", lambda a, b, i, j, h: a * b),
    ("f32", "%r = arith.divf %a, %b : f32", lambda a, b, i, j, h: a / b),
    ("f32", "%r = arith.negf %a : f32", lambda a, b, i, j, h: -a),
    ("f32", "%r = arith.maximumf %a, %b : f32", lambda a, b, i, j, h: np.maximum(a, b)),
    ("f32", "%r = arith.minimumf %a, %b : f32", lambda a, b, i, j, h: np.minimum(a, b)),
    ("f32", "%r = arith.maxnumf %a, %b : f32", lambda a, b, i, j, h: np.maximum(a, b)),
    ("f32", "%r = arith.minnumf %a, %b : f32", lambda a, b, i, j, h: np.minimum(a, b)),
    ("f32", "%r = math.exp %a : f32", lambda a, b, i, j, h: np.exp(a)),
    ("f32", "%r = math.exp2 %a : f32", lambda a, b, i, j, h: np.exp2(a)),
    ("f32", "%r = math.expm1 %a : f32", lambda a, b, i, j, h: np.expm1(a)),
    ("f32", "%r = math.log %b : f32", lambda a, b, i, j, h: np.log(b)),
    ("f32", "%r = math.log2 %b : f32", lambda a, b, i, j, h: np.log2(b)),
    ("f32", "%r = math.log10 %b : f32", lambda a, b, i, j, h: np.log10(b)),
    ("f32", "%r = math.log1p %b : f32", lambda a, b, i, j, h: np.log1p(b)),
    ("f32", "%r = math.sqrt %b : f32", lambda a, b, i, j, h: np.sqrt(b)),
    ("f32", "%r = math.rsqrt %b : f32", lambda a, b, i, j, h: 1 / np.sqrt(b)),
    ("f32", "%r = math.cbrt %b : f32", lambda a, b, i, j, h: np.cbrt(b)),
    ("f32", "%r = math.powf %b, %a : f32", lambda a, b, i, j, h: np.power(b, a)),
    ("f32", "%r = math.fma %a, %b, %a : f32", lambda a, b, i, j, h: a * b + a),
    ("f32", "%r = math.tanh %a : f32", lambda a, b, i, j, h: np.tanh(a)),
    ("f32", "%r = math.sinh %a : f32", lambda a, b, i, j, h: np.sinh(a)),
    ("f32", "%r = math.cosh %a : f32", lambda a, b, i, j, h: np.cosh(a)),
    ("f32", "%r = math.sin %a : f32", lambda a, b, i, j, h: np.sin(a)),
    ("f32", "%r = math.cos %a : f32", lambda a, b, i, j, h: np.cos(a)),
    ("f32", "%r = math.tan %a : f32", lambda a, b, i, j, h: np.tan(a)),
    ("f32", "%c = arith.constant 0.4 : f32\n%d = arith.mulf %b, %c : f32\n%r = math.asin %d : f32",
     lambda a, b, i, j, h: np.arcsin(b * f32(0.4))),
    ("f32", "%c = arith.constant 0.4 : f32\n%d = arith.mulf %b, %c : f32\n%r = math.acos %d : f32",
     lambda a, b, i, j, h: np.arccos(b * f32(0.4))),
    ("f32", "%r = math.atan %a : f32", lambda a, b, i, j, h: np.arctan(a)),
    ("f32", "%r = math.atan2 %a, %b : f32", lambda a, b, i, j, h: np.arctan2(a, b)),
    ("f32", "%r = math.erf %a : f32", lambda a, b, i, j, h: np.vectorize(math.erf)(a)),
    ("f32", "%r = math.absf %a : f32", lambda a, b, i, j, h: np.abs(a)),
    ("f32", "%r = math.floor %a : f32", lambda a, b, i, j, h: np.floor(a)),
    ("f32", "%r = math.ceil %a : f32", lambda a, b, i, j, h: np.ceil(a)),
    ("f32", "%r = math.round %a : f32", lambda a, b, i, j, h: _round_away(a)),
    ("f32", "%r = math.roundeven %a : f32", lambda a, b, i, j, h: np.round(a)),
    ("f32", "%r = math.trunc %a : f32", lambda a, b, i, j, h: np.trunc(a)),
    ("f32", "%r = math.copysign %b, %a : f32", lambda a, b, i, j, h: np.copysign(b, a)),
    ("f32", "%c = arith.cmpf olt, %a, %b : f32\n%r = arith.select %c, %a, %b : f32",
     lambda a, b, i, j, h: np.where(a < b, a, b)),
    ("f32", "%r = arith.sitofp %i : i32 to f32", lambda a, b, i, j, h: i.astype(f32)),
    ("f32", "%r = arith.uitofp %i : i32 to f32", lambda a, b, i, j, h: _u(i).astype(f32)),
    ("f32", "%r = arith.extf %h : f16 to f32", lambda a, b, i, j, h: h.astype(f32)),
    ("i32", ("%c = arith.constant 100.0 : f32\n%d = arith.mulf %a, %c : f32\n"
             "%r = arith.fptosi %d : f32 to i32"), lambda a, b, i, j, h: np.trunc(a * 100).astype(i32)),
    ("i32", ("%c = arith.constant 100.0 : f32\n%d = arith.mulf %b, %c : f32\n"
             "%r = arith.fptoui %d : f32 to i32"), lambda a, b, i, j, h: np.trunc(b * 100).astype(i32)),
    ("i32", "%r = arith.addi %i, %j : i32", lambda a, b, i, j, h: i + j),
    ("i32", "%r = arith.subi %i, %j : i32", lambda a, b, i, j, h: i - j),
    ("i32", "%r = arith.muli %i, %j : i32", lambda a, b, i, j, h: i * j),
    ("i32", "%r = arith.divsi %i, %j : i32", lambda a, b, i, j, h: _trunc_div(i, j)),
    ("i32", "%r = arith.remsi %i, %j : i32", lambda a, b, i, j, h: np.fmod(i, j)),
    ("i32", "%r = arith.divui %i, %j : i32", lambda a, b, i, j, h: (_u(i) // _u(j)).astype(i32)),
    ("i32", "%r = arith.remui %i, %j : i32", lambda a, b, i, j, h: (_u(i) % _u(j)).astype(i32)),
    ("i32", "%r = arith.floordivsi %i, %j : i32", lambda a, b, i, j, h: np.floor_divide(i, j)),
    ("i32", "%r = arith.ceildivsi %i, %j : i32", lambda a, b, i, j, h: -np.floor_divide(-i, j)),
    ("i32", "%r = arith.andi %i, %j : i32", lambda a, b, i, j, h: i & j),
    ("i32", "%r = arith.ori %i, %j : i32", lambda a, b, i, j, h: i | j),
    ("i32", "%r = arith.xori %i, %j : i32", lambda a, b, i, j, h: i ^ j),
    ("i32", "%c = arith.constant 7 : i32\n%s = arith.andi %j, %c : i32\n%r = arith.shli %i, %s : i32",
     lambda a, b, i, j, h: i << (j & 7)),
    ("i32", "%c = arith.constant 7 : i32\n%s = arith.andi %j, %c : i32\n%r = arith.shrsi %i, %s : i32",
     lambda a, b, i, j, h: i >> (j & 7)),
    ("i32", "%c = arith.constant 7 : i32\n%s = arith.andi %j, %c : i32\n%r = arith.shrui %i, %s : i32",
     lambda a, b, i, j, h: (_u(i) >> _u(j & 7)).astype(i32)),
    ("i32", "%r = arith.maxsi %i, %j : i32", lambda a, b, i, j, h: np.maximum(i, j)),
    ("i32", "%r = arith.minsi %i, %j : i32", lambda a, b, i, j, h: np.minimum(i, j)),
    ("i32", "%r = arith.maxui %i, %j : i32", lambda a, b, i, j, h: np.maximum(_u(i), _u(j)).astype(i32)),
    ("i32", "%r = arith.minui %i, %j : i32", lambda a, b, i, j, h: np.minimum(_u(i), _u(j)).astype(i32)),
    ("i32", ("%x = arith.index_cast %i : i32 to index\n%y = arith.index_cast %j : i32 to index\n"
             "%z = arith.muli %x, %y : index\n%r = arith.index_cast %z : index to i32"),
     lambda a, b, i, j, h: i * j),
    ("i32", "%w = arith.extsi %i : i32 to i64\n%r = arith.trunci %w : i64 to i32", lambda a, b, i, j, h: i),
    ("i32", ("%x = arith.extsi %i : i32 to i64\n%y = arith.extsi %j : i32 to i64\n"
             "%z = arith.remui %x, %y : i64\n%r = arith.trunci %z : i64 to i32"),
     lambda a, b, i, j, h: (i.astype(np.int64).astype(np.uint64)
                            % j.astype(np.int64).astype(np.uint64)).astype(i32)),
    ("f32", "%w = arith.extui %i : i32 to i64\n%r = arith.uitofp %w : i64 to f32",
     lambda a, b, i, j, h: _u(i).astype(f32)),
]
# comparisons, stored as 0/1 through extui
for pred, ref in {"eq": np.equal, "ne": np.not_equal, "slt": np.less, "sle": np.less_equal,
                  "sgt": np.greater, "sge": np.greater_equal}.items():
    CASES.append(("i32", f"%c = arith.cmpi {pred}, %i, %j : i32\n%r = arith.extui %c : i1 to i32",
                  lambda a, b, i, j, h, ref=ref: ref(i, j).astype(i32)))
for pred, ref in {"ult": np.less, "ule": np.less_equal, "ugt": np.greater, "uge": np.greater_equal}.items():
    CASES.append(("i32", f"%c = arith.cmpi {pred}, %i, %j : i32\n%r = arith.extui %c : i1 to i32",
                  lambda a, b, i, j, h, ref=ref: ref(_u(i), _u(j)).astype(i32)))
for pred, ref in {"oeq": np.equal, "ogt": np.greater, "oge": np.greater_equal, "olt": np.less,
                  "ole": np.less_equal, "une": np.not_equal, "ugt": np.greater,
                  "uge": np.greater_equal, "ult": np.less, "ule": np.less_equal}.items():
    CASES.append(("i32", (f"%s = arith.mulf %a, %b : f32\n%c = arith.cmpf {pred}, %a, %s : f32\n"
                          "%r = arith.extui %c : i1 to i32"),
                  lambda a, b, i, j, h, ref=ref: ref(a, a * b).astype(i32)))
CASES += [  # f16: computed in float, rounded back
    ("f16", "%r = arith.addf %h, %h : f16", lambda a, b, i, j, h: (h.astype(f32) * 2).astype(f16)),
    ("f16", "%r = math.exp %h : f16", lambda a, b, i, j, h: np.exp(h.astype(f32)).astype(f16)),
    ("f16", "%r = arith.truncf %a : f32 to f16", lambda a, b, i, j, h: a.astype(f16)),
    ("f16", "%c = arith.constant 1.5 : f16\n%r = arith.maximumf %h, %c : f16",
     lambda a, b, i, j, h: np.maximum(h, f16(1.5))),
]


def kernel_ir() -> str:
    counts = {t: sum(1 for c in CASES if c[0] == t) for t in ("f32", "i32", "f16")}
    outs = {t: f"memref<{counts[t]}x{N}x{t}>" for t in counts}
    body, seen = [], {t: 0 for t in counts}
    for k, (t, lines, _) in enumerate(CASES):
        lines = lines.replace("%r", f"%r{k}").replace("%c ", f"%c{k} ").replace("%c,", f"%c{k},")
        for tmp in ("%d", "%s", "%x", "%y", "%z", "%w"):
            lines = lines.replace(f"{tmp} ", f"{tmp}{k} ").replace(f"{tmp},", f"{tmp}{k},")
        lines = lines.replace("%c\n", f"%c{k}\n")
        if lines.endswith("%c"):
            lines = lines[:-2] + f"%c{k}"
        body += [f"  {ln}" for ln in lines.split("\n")]
        body.append(f"  %k{k} = arith.constant {seen[t]} : index")
        body.append(f"  memref.store %r{k}, %o_{t}[%k{k}, %t] : {outs[t]}")
        seen[t] += 1
    args = (f"%A: memref<{N}xf32>, %B: memref<{N}xf32>, %I: memref<{N}xi32>, %J: memref<{N}xi32>, "
            f"%H: memref<{N}xf16>, %o_f32: {outs['f32']}, %o_i32: {outs['i32']}, %o_f16: {outs['f16']}")
    types = ", ".join([f"memref<{N}xf32>"] * 2 + [f"memref<{N}xi32>"] * 2 + [f"memref<{N}xf16>"])
    loads = "\n".join(f"  %{v} = memref.load %{v.upper()}[%t] : memref<{N}x{t}>"
                      for v, t in (("a", "f32"), ("b", "f32"), ("i", "i32"), ("j", "i32"), ("h", "f16")))
    return (f"kernel.func @scalar_ops({args}) grid(1, 1, 1) block({N}, 1, 1) {{\n"
            f"  %t = kernel.thread_id x\n{loads}\n" + "\n".join(body) + "\n}\n"
            f"func.func @main(%A: memref<{N}xf32>, %B: memref<{N}xf32>, %I: memref<{N}xi32>, "
            f"%J: memref<{N}xi32>, %H: memref<{N}xf16>) -> ({outs['f32']}, {outs['i32']}, {outs['f16']}) {{\n"
            + "".join(f"  %o_{t} = memref.alloc() : {outs[t]}\n" for t in counts)
            + f"  kernel.launch @scalar_ops(%A, %B, %I, %J, %H, %o_f32, %o_i32, %o_f16) : {types}, "
              f"{outs['f32']}, {outs['i32']}, {outs['f16']}\n"
            f"  func.return %o_f32, %o_i32, %o_f16 : {outs['f32']}, {outs['i32']}, {outs['f16']}\n}}\n")


@pytest.fixture(scope="module")
def lowered():
    return lower(kernel_ir())


def inputs(rng):
    j = rng.integers(-50, 50, N).astype(i32)
    return {"A": (rng.standard_normal(N) * 2).astype(f32), "B": rng.uniform(0.5, 2.0, N).astype(f32),
            "I": rng.integers(-1000, 1000, N).astype(i32), "J": np.where(j == 0, 7, j).astype(i32),
            "H": rng.standard_normal(N).astype(f16)}


@needs_cpu
def test_every_row_matches_numpy(lowered):
    module, src = lowered
    mod = cpu_module(module, src, "scalar_ops")
    ins = inputs(np.random.default_rng(0))
    outs = dict(zip(("f32", "i32", "f16"), run_host(module, mod, ins, "LR-fwd")))
    row = {"f32": 0, "i32": 0, "f16": 0}
    for t, lines, ref in CASES:
        got = outs[t][row[t]]
        row[t] += 1
        want = ref(ins["A"], ins["B"], ins["I"], ins["J"], ins["H"])
        tol = {"f32": {"rtol": 1e-5, "atol": 1e-6}, "i32": {"rtol": 0, "atol": 0},
               "f16": {"rtol": 1e-3, "atol": 1e-3}}[t]
        np.testing.assert_allclose(got, want, **tol, err_msg=lines)


@needs_nvrtc
def test_every_row_compiles(lowered):
    assert "scalar_ops" in nvrtc_compile(lowered[1])
