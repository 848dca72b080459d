"""The cost model's validation pairs, and a runner that measures them where a GPU is lent.

Each pair is two kernels written in Kernel IR by hand that differ in exactly one thing whose
effect is known from first principles (CUDA Programming Guide, "Device Memory Accesses";
../shared/PERF-MODEL.md), with the range of slow/fast ratios the hardware allows. The tests
(test/python/cost_model) check the model orders every pair within its range; this module's
runner gives the same kernels to the GPU — each lowered by kernel-to-cuda, compiled by NVRTC and
timed like every deplo kernel (GpuModule.time: from a flushed L2, median) on random
inputs — and writes measured / predicted per kernel and the measured ratio per pair: the data a
refit of hardware.py takes. Without a GPU it runs each pair on the CPU runtime at a reduced size
and checks both kernels compute the same thing.

    python -m deplo.tuning.validation [-o pairs.json]      # GPU if there is one, else CPU check
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass

import numpy as np


def copy_kernel(rows: int, cols: int, grid: int, block: int, transposed: bool) -> str:
    """out[r, c] = 2 * x[r, c]: block b's threads walk its rows; threads on the columns
    (coalesced) or the same bytes read down the columns (stride `cols`; `out` is then 2 x^T)."""
    idx = "%j, %i" if transposed else "%i, %j"
    per = rows // grid
    return f"""
kernel.func @copy(%x: memref<{rows}x{cols}xf32>, %out: memref<{rows}x{cols}xf32>) grid({grid}, 1, 1) block({block}, 1, 1) {{
  %t = kernel.thread_id x
  %b = kernel.block_id x
  %c0 = arith.constant 0 : index
  %per = arith.constant {per} : index
  %n = arith.constant {cols} : index
  %step = arith.constant {block} : index
  %two = arith.constant 2.0 : f32
  %r0 = arith.muli %b, %per : index
  %r1 = arith.addi %r0, %per : index
  %one = arith.constant 1 : index
  scf.for %i = %r0 to %r1 step %one {{
    scf.for %j = %t to %n step %step {{
      %v = memref.load %x[{idx}] : memref<{rows}x{cols}xf32>
      %y = arith.mulf %v, %two : f32
      memref.store %y, %out[%i, %j] : memref<{rows}x{cols}xf32>
    }}
  }}
}}"""


def reuse_kernel(staged: bool, rows: int = 2048, width: int = 10240) -> str:
    """Each block makes 8 passes over a 40 KB slab of its input (coalesced, 256 threads): from
    global memory each time, or copied once into shared memory. Eight resident blocks' slabs
    (320 KB) do not fit in L1 (256 KB with shared memory), so unstaged passes go to L2; staged,
    shared memory (40 KB a block) leaves room for five blocks."""
    src, src_t = ("%xs[%j]", f"memref<{width}xf32, 3 : i64>") if staged else (
        "%x[%b, %j]", f"memref<{rows}x{width}xf32>")
    stage = f"""
  %xs = kernel.shared : memref<{width}xf32, 3 : i64>
  scf.for %k = %t to %n step %c256 {{
    %g = memref.load %x[%b, %k] : memref<{rows}x{width}xf32>
    memref.store %g, %xs[%k] : memref<{width}xf32, 3 : i64>
  }}
  kernel.barrier""" if staged else ""
    return f"""
kernel.func @reuse(%x: memref<{rows}x{width}xf32>, %out: memref<{rows}x256xf32>) grid({rows}, 1, 1) block(256, 1, 1) {{
  %t = kernel.thread_id x
  %b = kernel.block_id x
  %c0 = arith.constant 0 : index
  %one = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %passes = arith.constant 8 : index
  %n = arith.constant {width} : index
  %zero = arith.constant 0.0 : f32{stage}
  %s = scf.for %p = %c0 to %passes step %one iter_args(%acc = %zero) -> (f32) {{
    %q = scf.for %j = %t to %n step %c256 iter_args(%a2 = %acc) -> (f32) {{
      %v = memref.load {src} : {src_t}
      %a = arith.addf %a2, %v : f32
      scf.yield %a : f32
    }}
    scf.yield %q : f32
  }}
  memref.store %s, %out[%b, %t] : memref<{rows}x256xf32>
}}"""


def transpose_tile_kernel(pad: int, blocks: int = 128) -> str:
    """A 32 x 32 tile written by rows and read down its columns from shared memory: without
    padding every lane of a warp hits the same bank (32-way conflict). Each repetition reads a
    row further on (`(tx + r) % 32`): at one address nvcc hoisted the read out of the loop, and
    the first GPU run measured 1.19x for a pair whose hardware range is 4-32x."""
    w, rows = 32 + pad, 32 * blocks
    return f"""
kernel.func @tr(%x: memref<{rows}x32xf32>, %out: memref<{rows}x32xf32>) grid({blocks}, 1, 1) block(32, 32, 1) {{
  %tx = kernel.thread_id x
  %ty = kernel.thread_id y
  %b = kernel.block_id x
  %c32 = arith.constant 32 : index
  %c0 = arith.constant 0 : index
  %one = arith.constant 1 : index
  %reps = arith.constant 64 : index
  %row0 = arith.muli %b, %c32 : index
  %row = arith.addi %row0, %ty : index
  %s = kernel.shared : memref<32x{w}xf32, 3 : i64>
  %v = memref.load %x[%row, %tx] : memref<{rows}x32xf32>
  memref.store %v, %s[%ty, %tx] : memref<32x{w}xf32, 3 : i64>
  kernel.barrier
  %zero = arith.constant 0.0 : f32
  %acc = scf.for %r = %c0 to %reps step %one iter_args(%a = %zero) -> (f32) {{
    %moved = arith.addi %tx, %r : index
    %i = arith.remsi %moved, %c32 : index
    %u = memref.load %s[%i, %ty] : memref<32x{w}xf32, 3 : i64>
    %n = arith.addf %a, %u : f32
    scf.yield %n : f32
  }}
  memref.store %acc, %out[%row, %tx] : memref<{rows}x32xf32>
}}"""


@dataclass(frozen=True)
class Pair:
    name: str
    slow: str  # Kernel IR
    fast: str
    low: float  # the slow/fast ratio the hardware allows: low < ratio <= high
    high: float
    same_result: bool = True  # both kernels compute the same output (the CPU check)


def pairs(small: bool = False) -> list[Pair]:
    """The five pairs at full size (16 MB and more: past launch overhead, inside L2), or
    `small` for the CPU runtime (the same kernels, fewer rows: only their results are checked)."""
    n, g = (64, 8) if small else (2048, 512)
    return [
        # 32 sectors a warp read instead of 4: up to 8x the read's L2 traffic
        Pair("coalesced vs stride-K reads", copy_kernel(n, n, g, 256, True),
             copy_kernel(n, n, g, 256, False), 1.5, 8.0, same_result=False),
        # one lane a warp: each instruction does 1/32 of the work, each access a sector
        Pair("1 vs 256 threads a block", copy_kernel(n, n, g, 1, False),
             copy_kernel(n, n, g, 256, False), 8.0, 64.0),
        Pair("unstaged vs staged reused slab", reuse_kernel(False, *((16, 1024) if small else ())),
             reuse_kernel(True, *((16, 1024) if small else ())), 1.0, 8.0),
        Pair("bank-conflicting vs padded shared tile", transpose_tile_kernel(0, 4 if small else 128),
             transpose_tile_kernel(1, 4 if small else 128), 4.0, 32.0),
        # the same bytes on 8 of 132 SMs: slower by the SMs times at most the warps in flight
        Pair("8 vs 1024 blocks", copy_kernel(n, n, 8, 256, False),
             copy_kernel(n, n, 64 if small else 1024, 256, False), 132 / 8 / 2, 132 / 8 * 8),
    ]


def parse_kernel(text: str):
    """The one kernel.func of `text` and its module (Kernel IR, as written in a test)."""
    from xdsl.parser import Parser

    from deplo.dialects import kernel
    from deplo.tools.driver import make_context

    module = Parser(make_context(), text).parse_module()
    (f,) = [op for op in module.ops if isinstance(op, kernel.FuncOp)]
    return module, f


def predict(text: str, ptxas: dict | None = None, gpu: str = "h100"):
    """The model's prediction for the kernel of `text` (ptxas: name -> report, where known)."""
    from deplo.analysis import cost_model as cm

    module, _ = parse_kernel(text)
    (p,) = cm.predict_module(module, ptxas, cm.GPUS[gpu]).values()
    return p


def _lowered(text: str):
    """(.cu source, kernel name, signature, grid, block, argument shapes) of one kernel."""
    from deplo.lowering.emit_cuda import emit_cuda, kernel_signatures
    from deplo.tools.driver import run_passes

    module, f = parse_kernel(text)
    shapes = [tuple(a.type.get_shape()) for a in f.body.block.args]
    grid, block = tuple(f.grid_dims), tuple(f.block_dims)
    run_passes(module, "kernel-to-cuda")
    return emit_cuda(module), f.sym_name.data, kernel_signatures(module), grid, block, shapes


def _inputs(shapes, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


def check_on_cpu(pair: Pair) -> None:
    """Both kernels run on the CPU runtime; the same output where the pair says so."""
    from deplo.runtime.cpu import CpuModule

    outs = []
    for text in (pair.slow, pair.fast):
        source, name, sigs, grid, block, shapes = _lowered(text)
        args = _inputs(shapes, 0)
        CpuModule(source, sigs, name=name).launch(name, grid, block, args)
        outs.append(args[-1])
    if pair.same_result:
        np.testing.assert_allclose(outs[0], outs[1], rtol=1e-5, atol=1e-5, err_msg=pair.name)


def measure_on_gpu(pair: Pair, gpu: str) -> dict:
    """Each kernel's median µs on the GPU beside the model's prediction (ptxas registers)."""
    from deplo.runtime.gpu import GpuModule, compile_cubin

    row: dict = {"pair": pair.name, "allowed": [pair.low, pair.high]}
    for side, text in (("slow", pair.slow), ("fast", pair.fast)):
        source, name, sigs, grid, block, shapes = _lowered(text)
        res = compile_cubin(source, arch="sm_90", spills_are_errors=False)
        with GpuModule(res.cubin, sigs) as mod:
            us = 1e3 * mod.time(name, grid, block, _inputs(shapes, 0))
        row[side] = {"measured_us": us, "predicted_us": predict(text, res.kernels, gpu).us}
    row["measured_ratio"] = row["slow"]["measured_us"] / row["fast"]["measured_us"]
    row["predicted_ratio"] = row["slow"]["predicted_us"] / row["fast"]["predicted_us"]
    return row


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m deplo.tuning.validation",
                                description="measure the cost model's validation pairs")
    p.add_argument("-o", "--output", help="write the rows as JSON")
    from deplo.hardware import add_gpu_model_argument, model_for

    add_gpu_model_argument(p)
    args = p.parse_args(argv)
    from deplo.runtime.gpu import gpu_probe

    ok, reason = gpu_probe()
    args.gpu_model = model_for(args.gpu_model, ok, reason)
    rows = []
    if not ok:
        print(f"no GPU ({reason}): each pair checked on the CPU runtime at a reduced size",
              file=sys.stderr)
        for small, full in zip(pairs(small=True), pairs(), strict=True):
            check_on_cpu(small)
            ratio = predict(full.slow, gpu=args.gpu_model).us / predict(full.fast, gpu=args.gpu_model).us
            print(f"{full.name}: both kernels run on the CPU; predicted ratio at full size "
                  f"{ratio:.2f}x (allowed {full.low:g}-{full.high:g})")
    else:
        for pair in pairs():
            row = measure_on_gpu(pair, args.gpu_model)
            rows.append(row)
            print(f"{pair.name}: measured {row['measured_ratio']:.2f}x (allowed "
                  f"{pair.low:g}-{pair.high:g}), predicted {row['predicted_ratio']:.2f}x; "
                  + "; ".join(f"{s} {row[s]['measured_us']:.2f} us meas / "
                              f"{row[s]['predicted_us']:.2f} pred" for s in ("slow", "fast")))
    if args.output:
        with open(args.output, "w") as f:
            json.dump({"gpu": reason, "pairs": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
