"""Matmul-like Loop IR (matmul, batched, linear with bias / residual epilogues; fp32, fp16,
bf16), its lowering through a list of schedule passes to CUDA, runs on the CPU runtime under
several fiber schedules, and numpy references with dtype-aware tolerances."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from xdsl.context import Context
from xdsl.dialects import arith, builtin, func, math, memref, scf
from xdsl.parser import Parser
from xdsl.passes import PassPipeline

from deplo.passes import pipeline

# LR-fwd + EG-fwd + EG-rev: missing barriers, missing cp.async waits, races on double buffers
# (docs CPU-RUNTIME.md, the bug-injection matrix).
MATRIX = ("LR-fwd", "EG-fwd", "EG-rev")
KERNEL_PASSES = ["tile-to-kernel", "kernel-vectorize", "kernel-remove-barriers", "kernel-to-cuda"]
MLIR_TYPE = {"f32": "f32", "f16": "f16", "bf16": "bf16"}


@dataclass(frozen=True)
class Case:
    """out[b, i, j] = epilogue(sum_k A[b, i, k] * B[b, k, j]) with B stored [n, k] when
    `b_nk` (a linear layer's weight), optional bias[j], residual[b, i, j] and relu."""

    m: int
    k: int
    n: int
    batch: int = 0
    dtype: str = "f32"
    b_nk: bool = False
    bias: bool = False
    residual: bool = False
    relu: bool = False

    @property
    def name(self) -> str:
        return "mm"

    def shapes(self) -> dict[str, tuple[int, ...]]:
        lead = (self.batch,) if self.batch else ()
        s = {
            "a": (*lead, self.m, self.k),
            "b": (*lead, *((self.n, self.k) if self.b_nk else (self.k, self.n))),
        }
        if self.bias:
            s["bias"] = (self.n,)
        if self.residual:
            s["res"] = (*lead, self.m, self.n)
        s["out"] = (*lead, self.m, self.n)
        return s


def memref_t(shape, dt: str) -> str:
    return f"memref<{'x'.join(map(str, shape))}x{MLIR_TYPE[dt]}>"


def loop_ir(c: Case) -> str:
    """The Loop IR tir-to-loop + loop-fuse produce for the case (one kernel + host function)."""
    sh = c.shapes()
    t = {name: memref_t(shape, c.dtype) for name, shape in sh.items()}
    lead = ["%a0"] if c.batch else []
    ivs = [*lead, "%i", "%j"]
    a_idx = ", ".join([*lead, "%i", "%r"])
    b_idx = ", ".join([*lead, "%j", "%r"] if c.b_nk else [*lead, "%r", "%j"])
    half = c.dtype != "f32"

    def ext(v: str) -> str:
        return f"%{v}e = arith.extf %{v} : {c.dtype} to f32" if half else ""

    body = [
        f"%a = loop.load %a_in[{a_idx}] : {t['a']}",
        ext("a"),
        f"%b = loop.load %b_in[{b_idx}] : {t['b']}",
        ext("b"),
        f"%p = arith.mulf %a{'e' if half else ''}, %b{'e' if half else ''} : f32",
        "%nx = arith.addf %acc, %p : f32",
        "loop.yield %nx : f32",
    ]
    epi = []
    v = "%s"
    if c.bias:
        epi += [f"%bv = loop.load %bias_in[%j] : {t['bias']}", ext("bv")]
        epi += [f"%sb = arith.addf {v}, %bv{'e' if half else ''} : f32"]
        v = "%sb"
    if c.residual:
        epi += [f"%rv = loop.load %res_in[{', '.join(ivs)}] : {t['res']}", ext("rv")]
        epi += [f"%sr = arith.addf {v}, %rv{'e' if half else ''} : f32"]
        v = "%sr"
    if c.relu:
        epi += [f"%sz = arith.maximumf {v}, %zero : f32"]
        v = "%sz"
    if half:
        epi += [f"%st = arith.truncf {v} : f32 to {c.dtype}"]
        v = "%st"
    epi += [f"loop.store {v}, %out[{', '.join(ivs)}] : {t['out']}"]
    names = [n for n in sh if n != "out"]
    params = ", ".join(f"%{n}_in: {t[n]}" for n in names) + f", %out: {t['out']}"
    loops_open = (f"loop.for %a0 = 0 to {c.batch} free {{\n" if c.batch else "") + (
        f"loop.for %i = 0 to {c.m} free {{\nloop.for %j = 0 to {c.n} free {{\n"
    )
    loops_close = "}\n}\n" + ("}\n" if c.batch else "")
    kernel = (
        f"loop.kernel @mm({params}) {{\n%zero = arith.constant 0.000000e+00 : f32\n"
        + loops_open
        + f"%s = loop.for %r = 0 to {c.k} reduce iter(%acc = %zero) -> f32 {{\n"
        + "\n".join(x for x in body if x)
        + "\n}\n"
        + "\n".join(x for x in epi if x)
        + "\n"
        + loops_close
        + "}\n"
    )
    host_params = ", ".join(f"%{n}_in: {t[n]}" for n in names)
    args = ", ".join([f"%{n}_in" for n in names] + ["%out"])
    types = ", ".join([t[n] for n in names] + [t["out"]])
    host = (
        f"func.func @main({host_params}) -> {t['out']} {{\n%out = memref.alloc() : {t['out']}\n"
        f"loop.launch @mm({args}) : {types}\nfunc.return %out : {t['out']}\n}}\n"
    )
    return "builtin.module {\n" + kernel + host + "}\n"


def context() -> Context:
    ctx = Context()
    for d in (builtin.Builtin, func.Func, arith.Arith, math.Math, scf.Scf, memref.MemRef):
        ctx.load_dialect(d)
    for get in pipeline.DIALECTS.values():
        try:
            ctx.load_dialect(get())
        except ModuleNotFoundError:
            pass
    return ctx


@dataclass
class Lowered:
    tile: str  # the module at tile level
    kernel: str  # at kernel level
    source: str  # the .cu text
    signatures: dict[str, list[str]]
    grid: tuple[int, ...]
    block: tuple[int, ...]


def lower(c: Case, passes: list[str], kernel_passes: list[str] = KERNEL_PASSES) -> Lowered:
    from deplo.lowering import emit_cuda as emit

    ctx = context()
    module = Parser(ctx, loop_ir(c)).parse_module()
    spec = ",".join(["loop-to-tile", *passes])
    PassPipeline.parse_spec(pipeline.PASSES, spec).apply(ctx, module)
    module.verify()
    tile_text = str(module)
    kernel_text = ""
    for p in kernel_passes:
        PassPipeline.parse_spec(pipeline.PASSES, p).apply(ctx, module)
        module.verify()
        if p == kernel_passes[-2]:
            kernel_text = str(module)
    (launch,) = emit.launch_plan(module)
    return Lowered(
        tile_text,
        kernel_text,
        emit.emit_cuda(module),
        emit.kernel_signatures(module),
        launch.grid,
        launch.block,
    )


# --- data ---------------------------------------------------------------------------------


def to_storage(x: np.ndarray, dt: str) -> np.ndarray:
    """float32 values -> the kernel's buffer (bf16 as uint16 bit patterns)."""
    if dt == "f32":
        return x.astype(np.float32)
    if dt == "f16":
        return x.astype(np.float16)
    return (
        torch.from_numpy(x.astype(np.float32))
        .to(torch.bfloat16)
        .view(torch.int16)
        .numpy()
        .view(np.uint16)
    )


def from_storage(x: np.ndarray, dt: str) -> np.ndarray:
    if dt == "bf16":
        return torch.from_numpy(x.view(np.int16)).view(torch.bfloat16).to(torch.float32).numpy()
    return x.astype(np.float32)


def inputs(c: Case, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        n: to_storage(rng.standard_normal(s).astype(np.float32), c.dtype)
        for n, s in c.shapes().items()
        if n != "out"
    }


def reference(c: Case, ins: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(result in float64, a bound on the rounding error of a float32 computation of it)."""
    f = {n: from_storage(v, c.dtype).astype(np.float64) for n, v in ins.items()}
    a, b = f["a"], f["b"]
    if c.b_nk:
        b = np.swapaxes(b, -1, -2)
    out = a @ b
    mag = np.abs(a) @ np.abs(b)
    if c.bias:
        out, mag = out + f["bias"], mag + np.abs(f["bias"])
    if c.residual:
        out, mag = out + f["res"], mag + np.abs(f["res"])
    if c.relu:
        out = np.maximum(out, 0)
    tol = 1e-5 * mag + 1e-6
    if c.dtype != "f32":  # one rounding of the result to the storage type
        tol = tol + np.abs(out) * {"f16": 2.0**-10, "bf16": 2.0**-7}[c.dtype]
    return out, tol


def run(
    c: Case,
    passes: list[str],
    schedules=MATRIX,
    seed: int = 0,
    low: Lowered | None = None,
    source: str | None = None,
) -> tuple[np.ndarray, Lowered]:
    """Run the lowered kernel under each fiber schedule (all must agree bit for bit) and return
    its result as float32."""
    from deplo.runtime import cpu

    low = low or lower(c, passes)
    ins = inputs(c, seed)
    mod = cpu.CpuModule(source or low.source, low.signatures, name="mm")
    out = np.empty(c.shapes()["out"], to_storage(np.zeros(1, np.float32), c.dtype).dtype)
    first = None
    for s in schedules:
        out[...] = 0xFF if out.dtype == np.uint16 else np.nan
        mod.launch("mm", grid=low.grid, block=low.block, args=[*ins.values(), out], schedule=s)
        if first is None:
            first = out.copy()
        np.testing.assert_array_equal(
            out, first, err_msg=f"schedule {s} differs from {schedules[0]}"
        )
    return from_storage(first, c.dtype), low


def check(c: Case, passes: list[str], schedules=MATRIX, seed: int = 0, **kw) -> Lowered:
    got, low = run(c, passes, schedules, seed, **kw)
    ref, tol = reference(c, inputs(c, seed))
    err = np.abs(got - ref)
    bad = ~(err <= tol)
    assert not bad.any(), (
        f"{bad.sum()} of {bad.size} wrong, worst {np.nanmax(err / tol):.3g} x tol, first at "
        f"{np.argwhere(bad)[:3].tolist()}"
    )
    return low


def run_module(c: Case, passes: list[str], schedules=MATRIX, seed: int = 0):
    """Lower the whole module (any number of kernels and launches) and replay its host function
    on the CPU runtime under each schedule (all must agree); returns (float32 result, tile text)."""
    from deplo.runtime.program import CudaExecutable

    ctx = context()
    module = Parser(ctx, loop_ir(c)).parse_module()
    spec = ",".join(["loop-to-tile", *passes])
    PassPipeline.parse_spec(pipeline.PASSES, spec).apply(ctx, module)
    module.verify()
    tile_text = str(module)
    PassPipeline.parse_spec(pipeline.PASSES, ",".join(KERNEL_PASSES)).apply(ctx, module)
    module.verify()
    exe = CudaExecutable(module)
    ins = [from_storage(x, c.dtype) for x in inputs(c, seed).values()]
    first = None
    for s in schedules:
        (out,) = exe.run(ins, schedule=s)
        out = np.asarray(out, dtype=np.float32)
        if first is None:
            first = out
        np.testing.assert_array_equal(out, first, err_msg=f"schedule {s}")
    ref, tol = reference(c, inputs(c, seed))
    err = np.abs(first - ref)
    assert np.all(err <= tol), f"worst {np.nanmax(err / tol):.3g} x tol"
    return first, tile_text
