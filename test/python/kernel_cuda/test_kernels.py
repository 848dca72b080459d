"""kernel IR -> kernel-to-cuda -> -t cuda -> the .cu run on the CPU runtime under every default
schedule and compared with numpy; the same .cu compiled by NVRTC for sm_90."""

from __future__ import annotations

import numpy as np
import pytest
from kc_harness import cpu_module, lower, needs_cpu, needs_nvrtc, nvrtc_compile, run_host

from deplo.lowering.emit_cuda import kernel_signatures, launch_plan
from deplo.lowering.legality import ConversionError

ROWS, COLS, THREADS = 8, 1024, 256

# Sum of squares of a row (strided loop, 256 threads), warp shuffles, one partial per warp in
# shared memory, a second shuffle stage over the 8 partials, broadcast of lane 0, then an
# elementwise epilogue: out = x * rsqrt(mean(x^2) + eps) * w.
RMS_NORM = """
kernel.func @rms_norm(%x: memref<8x1024xf32>, %w: memref<1024xf32>, %out: memref<8x1024xf32>) grid(8, 1, 1) block(256, 1, 1) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %c256 = arith.constant 256 : index
  %c1024 = arith.constant 1024 : index
  %zero = arith.constant 0.000000e+00 : f32
  %n = arith.constant 1.024000e+03 : f32
  %eps = arith.constant 9.99999997E-7 : f32
  %row = kernel.block_id x
  %tid = kernel.thread_id x
  %partial = scf.for %i = %tid to %c1024 step %c256 iter_args(%acc = %zero) -> (f32) {
    %v = memref.load %x[%row, %i] : memref<8x1024xf32>
    %sq = arith.mulf %v, %v : f32
    %next = arith.addf %acc, %sq : f32
    scf.yield %next : f32
  }
""" + "".join(f"""  %s{o} = kernel.shuffle xor %a{2 * o}, {o} width 32 : f32
  %a{o} = arith.addf %a{2 * o}, %s{o} : f32
""" for o in (16, 8, 4, 2, 1)).replace("%a32", "%partial") + """
  %lane = arith.remui %tid, %c32 : index
  %warp = arith.divui %tid, %c32 : index
  %red = kernel.shared : memref<8xf32, 3 : i64>
  %first = arith.cmpi eq, %lane, %c0 : index
  scf.if %first {
    memref.store %a1, %red[%warp] : memref<8xf32, 3 : i64>
  }
  kernel.barrier
  %has = arith.cmpi ult, %lane, %c8 : index
  %b8 = scf.if %has -> (f32) {
    %p = memref.load %red[%lane] : memref<8xf32, 3 : i64>
    scf.yield %p : f32
  } else {
    scf.yield %zero : f32
  }
""" + "".join(f"""  %t{o} = kernel.shuffle xor %b{2 * o}, {o} width 8 : f32
  %b{o} = arith.addf %b{2 * o}, %t{o} : f32
""" for o in (4, 2, 1)) + """
  %total = kernel.shuffle idx %b1, 0 width 32 : f32
  %mean = arith.divf %total, %n : f32
  %me = arith.addf %mean, %eps : f32
  %scale = math.rsqrt %me : f32
  scf.for %j = %tid to %c1024 step %c256 {
    %xv = memref.load %x[%row, %j] : memref<8x1024xf32>
    %wv = memref.load %w[%j] : memref<1024xf32>
    %xs = arith.mulf %xv, %scale : f32
    %y = arith.mulf %xs, %wv : f32
    memref.store %y, %out[%row, %j] : memref<8x1024xf32>
  }
}
func.func @main(%x: memref<8x1024xf32>, %w: memref<1024xf32>) -> memref<8x1024xf32> {
  %out = memref.alloc() : memref<8x1024xf32>
  kernel.launch @rms_norm(%x, %w, %out) : memref<8x1024xf32>, memref<1024xf32>, memref<8x1024xf32>
  func.return %out : memref<8x1024xf32>
}
"""

# out = exp(x) * y + 1 on a 100x37 matrix with 32x8 blocks: both edges need the tail guard.
ELEMENTWISE = """
kernel.func @ew(%x: memref<100x37xf32>, %y: memref<100x37xf32>, %out: memref<100x37xf32>) grid(2, 13, 1) block(32, 8, 1) {
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %c37 = arith.constant 37 : index
  %c100 = arith.constant 100 : index
  %one = arith.constant 1.000000e+00 : f32
  %bx = kernel.block_id x
  %by = kernel.block_id y
  %tx = kernel.thread_id x
  %ty = kernel.thread_id y
  %0 = arith.muli %bx, %c32 : index
  %col = arith.addi %0, %tx : index
  %1 = arith.muli %by, %c8 : index
  %row = arith.addi %1, %ty : index
  %2 = arith.cmpi slt, %col, %c37 : index
  %3 = arith.cmpi slt, %row, %c100 : index
  %inside = arith.andi %2, %3 : i1
  scf.if %inside {
    %a = memref.load %x[%row, %col] : memref<100x37xf32>
    %b = memref.load %y[%row, %col] : memref<100x37xf32>
    %4 = math.exp %a : f32
    %5 = arith.mulf %4, %b : f32
    %6 = arith.addf %5, %one : f32
    memref.store %6, %out[%row, %col] : memref<100x37xf32>
  }
}
func.func @main(%x: memref<100x37xf32>, %y: memref<100x37xf32>) -> memref<100x37xf32> {
  %out = memref.alloc() : memref<100x37xf32>
  kernel.launch @ew(%x, %y, %out) : memref<100x37xf32>, memref<100x37xf32>, memref<100x37xf32>
  func.return %out : memref<100x37xf32>
}
"""

# cp.async staging: each of 16 threads copies 16 bytes (4 floats) of row %b into shared memory,
# commit, wait, barrier, then every thread reads a reversed element.
CP_ASYNC = """
kernel.func @stage(%x: memref<4x64xf32>, %out: memref<4x64xf32>) grid(4, 1, 1) block(64, 1, 1) {
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %c63 = arith.constant 63 : index
  %b = kernel.block_id x
  %t = kernel.thread_id x
  %xs = kernel.shared : memref<64xf32, 3 : i64>
  %copier = arith.cmpi ult, %t, %c16 : index
  scf.if %copier {
    %i = arith.muli %t, %c4 : index
    kernel.cp_async %x[%b, %i] to %xs[%i] bytes 16 : memref<4x64xf32> to memref<64xf32, 3 : i64>
  }
  kernel.cp_async_commit
  kernel.cp_async_wait 0
  kernel.barrier
  %r = arith.subi %c63, %t : index
  %v = memref.load %xs[%r] : memref<64xf32, 3 : i64>
  memref.store %v, %out[%b, %t] : memref<4x64xf32>
}
func.func @main(%x: memref<4x64xf32>) -> memref<4x64xf32> {
  %out = memref.alloc() : memref<4x64xf32>
  kernel.launch @stage(%x, %out) : memref<4x64xf32>, memref<4x64xf32>
  func.return %out : memref<4x64xf32>
}
"""


def rms_norm_ref(x, w):
    x64 = x.astype(np.float64)
    return x64 / np.sqrt((x64 * x64).mean(1, keepdims=True) + 1e-6) * w


CASES = {
    "rms_norm": (RMS_NORM, lambda rng: {"x": rng.standard_normal((8, 1024), np.float32),
                                        "w": rng.standard_normal(1024, np.float32)},
                 lambda i: rms_norm_ref(i["x"], i["w"])),
    "elementwise": (ELEMENTWISE, lambda rng: {"x": rng.standard_normal((100, 37), np.float32),
                                              "y": rng.standard_normal((100, 37), np.float32)},
                    lambda i: np.exp(i["x"].astype(np.float64)) * i["y"] + 1),
    "cp_async": (CP_ASYNC, lambda rng: {"x": rng.standard_normal((4, 64), np.float32)},
                 lambda i: i["x"][:, ::-1]),
}


@pytest.fixture(scope="module", params=sorted(CASES))
def case(request):
    text, make_inputs, reference = CASES[request.param]
    module, src = lower(text)
    return request.param, module, src, make_inputs, reference


@needs_cpu
def test_runs_on_cpu(case):
    from deplo.runtime.cpu import DEFAULT_SCHEDULES

    name, module, src, make_inputs, reference = case
    mod = cpu_module(module, src, name)
    for seed, schedule in enumerate(DEFAULT_SCHEDULES):
        inputs = make_inputs(np.random.default_rng(seed))
        (out,) = run_host(module, mod, inputs, schedule)
        np.testing.assert_allclose(out, reference(inputs), rtol=1e-5, atol=1e-6,
                                   err_msg=f"{name} under {schedule}\n{src}")


@pytest.mark.gpu
def test_runs_on_gpu(case):
    from deplo.runtime.gpu import GpuModule, compile_cubin, gpu_probe

    ok, why = gpu_probe()
    if not ok:
        pytest.skip(why)
    _, module, src, make_inputs, reference = case
    gpu = GpuModule(compile_cubin(src, arch="sm_90").cubin, kernel_signatures(module))
    inputs = make_inputs(np.random.default_rng(0))
    (out,) = run_host(module, gpu, inputs, None)
    np.testing.assert_allclose(out, reference(inputs), rtol=1e-5, atol=1e-5, err_msg=src)


@needs_nvrtc
def test_nvrtc_compiles(case):
    _, module, src, *_ = case
    reports = nvrtc_compile(src)
    assert set(reports) == set(kernel_signatures(module))
    assert all(r.spill_stores == 0 and r.stack_bytes == 0 for r in reports.values())


def test_emitted_text():
    _, src = lower(RMS_NORM)
    assert src.startswith("// Generated by deplo")
    assert "// launch rms_norm(const float* x, const float* w, float* out): grid(" in src
    assert '#include "kc_prelude.cuh"' not in src and "// ---- kernels ----" in src
    assert ('extern "C" __global__ void __launch_bounds__(256) rms_norm(const float* __restrict__ x, '
            "const float* __restrict__ w, float* __restrict__ out) {") in src
    assert "__shared__ __align__(16) float red[8];" in src
    assert "__shfl_xor_sync(0xffffffffu, a16, 8, 32)" in src
    assert "__shfl_sync(0xffffffffu, b1, 0, 32)" in src
    assert "const float v = x[(row * 1024) + i];" in src
    assert src.split("// ---- kernels ----")[1].count("__syncthreads();") == 1
    assert "#define KC_ARRIVALS" not in src  # (the split-K counters only where a kernel arrives)


def test_signatures_and_launch_plan():
    module, _ = lower(RMS_NORM)
    assert kernel_signatures(module) == {
        "rms_norm": ["const float* __restrict__", "const float* __restrict__", "float* __restrict__"]}
    (la,) = launch_plan(module)
    assert (la.kernel, la.grid, la.block, la.smem) == ("rms_norm", (8, 1, 1), (256, 1, 1), 0)
    assert [a.name_hint for a in la.args] == ["x", "w", "out"]


def test_cuda_ir_round_trips():
    from io import StringIO

    from kc_harness import context
    from xdsl.parser import Parser
    from xdsl.printer import Printer

    def text(m, generic=False):
        s = StringIO()
        Printer(s, print_generic_format=generic).print_op(m)
        return s.getvalue()

    for source in (RMS_NORM, ELEMENTWISE, CP_ASYNC):
        module, _ = lower(source)
        custom = text(module)
        assert text(Parser(context(), custom).parse_module()) == custom
        assert text(Parser(context(), text(module, True)).parse_module()) == custom


def test_unsupported_op_is_named():
    bad = ELEMENTWISE.replace("%4 = math.exp %a : f32", "%4 = math.sinh %a : f32").replace(
        "%5 = arith.mulf %4, %b : f32", "%7 = math.ctpop %c8 : index\n    %5 = arith.mulf %4, %b : f32")
    with pytest.raises(ConversionError, match=r"no C translation for 'math.ctpop' in @ew"):
        lower(bad)


def test_printer_names_an_unknown_op():
    from kc_harness import context
    from xdsl.parser import Parser
    from xdsl.utils.exceptions import DiagnosticException

    from deplo.lowering.emit_cuda import emit_cuda

    module = Parser(context(), """
cuda.kernel @k(%n: i32) launch_bounds(1) {
  %m = arith.addi %n, %n : i32
}
""").parse_module()
    with pytest.raises(DiagnosticException, match=r"emit-cuda: no C construct for op 'arith.addi'"):
        emit_cuda(module)


@pytest.mark.parametrize(("value", "text"), [
    ("1.0 : f32", "1.0f"), ("0.1 : f32", "0.1f"), ("-2.5 : f32", "-2.5f"), ("1.0e-06 : f32", "1e-06f"),
    ("0x7F800000 : f32", "__int_as_float(0x7f800000)"), ("0xFF800000 : f32", "-__int_as_float(0x7f800000)"),
    ("0x7FC00000 : f32", "__int_as_float(0x7fffffff)"), ("0.1 : f64", "0.1"),
    ("1.5 : f16", "__float2half(1.5f)"), ("1.5 : bf16", "__float2bfloat16(1.5f)"),
    ("7 : i32", "7"), ("-7 : i64", "-7LL"), ("7 : ui32", "7u"), ("true", "true"),
])
def test_literals(value: str, text: str):
    from kc_harness import context
    from xdsl.parser import Parser

    from deplo.lowering.emit_cuda import literal

    assert literal(Parser(context(), value).parse_attribute()) == text
