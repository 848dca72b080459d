"""Differential tests of the tile schedules: every prefix of the schedule passes, lowered through
tile-to-kernel and kernel-to-cuda, printed, run on the CPU runtime and compared with numpy.

Any prefix of the schedule passes is a runnable program (DESIGN.md §3.1), so a wrong pass shows
up as the first prefix whose result differs. The two programs are the fused Loop IR of RMSNorm
and of relu((x + b) @ w), at several shapes including non-powers of two.
"""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects import arith, builtin, func, math, memref, scf
from xdsl.parser import Parser
from xdsl.passes import PassPipeline

from deplo.passes import pipeline
from deplo.passes.tile.kernel_pass import PassOptionError

cpu = pytest.importorskip("deplo.runtime.cpu")
emit = pytest.importorskip("deplo.lowering.emit_cuda")
_OK, _WHY = cpu.cpu_runtime_available()
pytestmark = pytest.mark.skipif(not _OK, reason=f"CPU runtime unavailable: {_WHY}")

EPS = 1e-6
SCHEDULE = ["tile-map-grid", "tile-cooperative-reduce", "tile-map-threads", "tile-stage-inputs"]


def rms_norm_ir(b: int, r: int, n: int) -> str:
    t = f"memref<{b}x{r}x{n}xf32>"
    return f"""
  loop.kernel @rms_norm(%x: {t}, %w: memref<{n}xf32>, %out: {t}) {{
    %zero = arith.constant 0.000000e+00 : f32
    %n = arith.constant {float(n):.8e} : f32
    %eps = arith.constant {EPS:.8e} : f32
    loop.for %a0 = 0 to {b} free {{
      loop.for %a1 = 0 to {r} free {{
        %ss = loop.for %a2 = 0 to {n} reduce iter(%acc = %zero) -> f32 {{
          %v = loop.load %x[%a0, %a1, %a2] : {t}
          %sq = arith.mulf %v, %v : f32
          %s = arith.addf %acc, %sq : f32
          loop.yield %s : f32
        }}
        %mean = arith.divf %ss, %n : f32
        %me = arith.addf %mean, %eps : f32
        %rs = math.rsqrt %me : f32
        loop.for %a3 = 0 to {n} free {{
          %v2 = loop.load %x[%a0, %a1, %a3] : {t}
          %wv = loop.load %w[%a3] : memref<{n}xf32>
          %y = arith.mulf %v2, %rs : f32
          %o = arith.mulf %y, %wv : f32
          loop.store %o, %out[%a0, %a1, %a3] : {t}
        }}
      }}
    }}
  }}""" + host("rms_norm", [("x", t), ("w", f"memref<{n}xf32>")], t)


def host(name: str, inputs: list[tuple[str, str]], out: str) -> str:
    """The host function: allocate the output, launch the kernel."""
    params = ", ".join(f"%{a}: {t}" for a, t in inputs)
    types = ", ".join([t for _, t in inputs] + [out])
    args = ", ".join([f"%{a}" for a, _ in inputs] + ["%out"])
    return f"""
  func.func @main({params}) -> {out} {{
    %out = memref.alloc() : {out}
    loop.launch @{name}({args}) : {types}
    func.return %out : {out}
  }}"""


def relu_matmul_ir(m: int, k: int, n: int) -> str:
    return f"""
  loop.kernel @relu_matmul(%x: memref<{m}x{k}xf32>, %b: memref<{k}xf32>, %w: memref<{k}x{n}xf32>, %out: memref<{m}x{n}xf32>) {{
    %zero = arith.constant 0.000000e+00 : f32
    loop.for %a0 = 0 to {m} free {{
      loop.for %a1 = 0 to {n} free {{
        %acc = loop.for %a2 = 0 to {k} reduce iter(%s = %zero) -> f32 {{
          %xv = loop.load %x[%a0, %a2] : memref<{m}x{k}xf32>
          %bv = loop.load %b[%a0, %a2] map (d0, d1) -> (d1) : memref<{k}xf32>
          %xb = arith.addf %xv, %bv : f32
          %wv = loop.load %w[%a2, %a1] : memref<{k}x{n}xf32>
          %p = arith.mulf %xb, %wv : f32
          %nx = arith.addf %s, %p : f32
          loop.yield %nx : f32
        }}
        %r = arith.maximumf %acc, %zero : f32
        loop.store %r, %out[%a0, %a1] : memref<{m}x{n}xf32>
      }}
    }}
  }}""" + host(
        "relu_matmul",
        [("x", f"memref<{m}x{k}xf32>"), ("b", f"memref<{k}xf32>"), ("w", f"memref<{k}x{n}xf32>")],
        f"memref<{m}x{n}xf32>",
    )


def context() -> Context:
    ctx = Context()
    for d in (builtin.Builtin, func.Func, arith.Arith, math.Math, scf.Scf, memref.MemRef):
        ctx.load_dialect(d)
    for get in pipeline.DIALECTS.values():
        try:
            ctx.load_dialect(get())
        except ModuleNotFoundError:
            pass  # a dialect another engineer has not written yet
    return ctx


def compile_cuda(kernel_ir: str, passes: list[str]):
    """Loop IR text -> (module at tile level, .cu text, signatures, launches)."""
    ctx = context()
    module = Parser(ctx, "builtin.module {" + kernel_ir + "\n}").parse_module()
    spec = ",".join(["loop-to-tile", *passes])
    PassPipeline.parse_spec(pipeline.PASSES, spec).apply(ctx, module)
    module.verify()
    tile_text = str(module)
    PassPipeline.parse_spec(pipeline.PASSES, "tile-to-kernel,kernel-to-cuda").apply(ctx, module)
    module.verify()
    return tile_text, emit.emit_cuda(module), emit.kernel_signatures(module), module


def run(kernel_ir: str, name: str, passes: list[str], args: list[np.ndarray], schedules) -> str:
    tile_text, src, sigs, module = compile_cuda(kernel_ir, passes)
    (launch,) = emit.launch_plan(module)
    grid, block = launch.grid, launch.block
    mod = cpu.CpuModule(src, sigs, name=name)
    out = args[-1]
    results = []
    for s in schedules:
        out[...] = np.nan
        mod.launch(name, grid=grid, block=block, args=args, schedule=s)
        results.append(out.copy())
    for r in results[1:]:
        np.testing.assert_array_equal(r, results[0])
    args[-1][...] = results[0]
    return tile_text


def prefixes(extra: list[list[str]] = ()) -> list[list[str]]:
    return [SCHEDULE[:i] for i in range(len(SCHEDULE) + 1)] + list(extra)


RMS_SHAPES = [(1, 32, 2048), (1, 3, 1000), (2, 3, 100), (1, 2, 48)]
MM_SHAPES = [(16, 64, 16), (13, 70, 9), (3, 300, 40)]


def rms_reference(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    x64 = x.astype(np.float64)
    ms = (x64 * x64).mean(axis=-1, keepdims=True)
    return (x64 / np.sqrt(ms + EPS) * w).astype(np.float32)


@pytest.mark.parametrize("shape", RMS_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize(
    "passes",
    prefixes(
        [
            [
                "tile-map-grid",
                "tile-cooperative-reduce{threads=64}",
                "tile-stage-inputs",
                "tile-cp-async{copy=cp_async}",
            ],
            ["tile-plan{kind=pointwise}", "tile-map-grid", "tile-map-threads{threads=96}",
             "tile-stage-inputs"],
            [
                "tile-map-grid{grid-dims=1}",
                "tile-cooperative-reduce{threads=128}",
                "tile-stage-inputs{stage-inputs=all}",
            ],
        ]
    ),
    ids=lambda p: "+".join(p) or "trivial",
)
def test_rms_norm(shape, passes):
    b, r, n = shape
    if passes[:1] != ["tile-map-grid"] and b * r * n > 8192:
        pytest.skip("one thread for the whole tensor: slow on the CPU runtime")
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape, dtype=np.float32)
    w = rng.standard_normal(n, dtype=np.float32)
    out = np.empty_like(x)
    if "tile-cooperative-reduce{threads=128}" in passes and n < 96:  # (a row of 48: a warp's)
        with pytest.raises(PassOptionError, match="128 threads for 48 elements: at most 64"):
            run(rms_norm_ir(b, r, n), "rms_norm", passes, [x, w, out], schedules=("LR-fwd",))
        return
    run(rms_norm_ir(b, r, n), "rms_norm", passes, [x, w, out], schedules=("LR-fwd", "EG-rev"))
    np.testing.assert_allclose(out, rms_reference(x, w), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape", MM_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize(
    "passes",
    prefixes(
        [
            ["tile-map-grid", "tile-map-threads", "tile-stage-inputs{stage-inputs=all}",
             "tile-cp-async{copy=cp_async}"],
            ["tile-plan{kind=row_reduce}", "tile-map-grid", "tile-cooperative-reduce{threads=64}"],
            ["tile-map-grid", "tile-map-threads{threads=32}", "tile-stage-inputs{stage-inputs=all}"],
        ]
    ),
    ids=lambda p: "+".join(p) or "trivial",
)
def test_relu_matmul(shape, passes):
    m, k, n = shape
    rng = np.random.default_rng(1)
    x = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal(k, dtype=np.float32)
    w = rng.standard_normal((k, n), dtype=np.float32)
    out = np.empty((m, n), dtype=np.float32)
    run(relu_matmul_ir(m, k, n), "relu_matmul", passes, [x, b, w, out], ("LR-fwd", "EG-rev"))
    xb = x.astype(np.float64) + b
    ref = np.maximum(xb @ w, 0)
    # rtol 1e-5 of the sum of |terms|: fp32 sums of K terms cancel, the bound does not
    tol = 1e-5 * (np.abs(xb) @ np.abs(w)) + 1e-6
    assert np.all(np.abs(out - ref) <= tol), np.max(np.abs(out - ref) / tol)


def test_default_schedules():
    """What the default pipeline decides for the two programs."""
    rms, _, _, _ = compile_cuda(rms_norm_ir(1, 32, 2048), SCHEDULE)
    assert "grid(32, 1, 1) block(256, 1, 1)" in rms
    assert "tile.combine add" in rms and "tile.stage %x" in rms
    mm, _, _, _ = compile_cuda(relu_matmul_ir(16, 64, 16), SCHEDULE)
    assert "grid(16, 1, 1) block(32, 1, 1)" in mm
    assert "bind(thread.x)" in mm and "tile.combine" not in mm
