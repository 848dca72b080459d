"""The sm_90 model on kernels whose behaviour is known from first principles: for each pair, the
model must order them and give a ratio within what the hardware allows (CUDA Programming Guide,
"Device Memory Accesses"; PERF-MODEL.md). The kernels are written in Kernel IR by hand so that
each pair differs in exactly one thing. Where a GPU is lent, the same pairs are measured
(`deplo run --bench` on their programs) and the constants refit from them only."""

from __future__ import annotations

import pytest
from xdsl.parser import Parser

from deplo.dialects import kernel
from deplo.tools.driver import make_context
from deplo.tuning import cost_model as cm

N = 1 << 22  # 16 MB of fp32: well past launch overhead, well inside L2


def _predict(text: str, registers: int = 32) -> cm.Prediction:
    module = Parser(make_context(), text).parse_module()
    (f,) = [op for op in module.ops if isinstance(op, kernel.FuncOp)]
    smem = cm._static_smem(f)
    return cm.predict(cm.work(f), f.grid_dims, f.block_dims, registers, smem)


def _copy(rows: int, cols: int, grid: int, block: int, transposed: bool) -> str:
    """out[r, c] = 2 * x[r, c]: block b's threads walk its rows; threads on the columns
    (coalesced) or the same bytes read down the columns (stride `cols`)."""
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


def test_coalesced_against_stride_k_reads_of_the_same_bytes():
    rows = cols = 2048
    good = _predict(_copy(rows, cols, 512, 256, transposed=False))
    bad = _predict(_copy(rows, cols, 512, 256, transposed=True))
    ratio = bad.us / good.us
    # 32 sectors per warp read instead of 4: up to 8x the L2 traffic of the read (the write
    # stays coalesced); DRAM traffic is the same (L2 holds the lines)
    assert 1.5 < ratio <= 8.0, (good, bad)
    assert bad.l2_bytes > 4 * good.l2_bytes / 2


def test_one_against_256_threads_per_block():
    one = _predict(_copy(2048, 2048, 512, 1, transposed=False))
    many = _predict(_copy(2048, 2048, 512, 256, transposed=False))
    ratio = one.us / many.us
    # one lane per warp: every warp instruction does 1/32 of the work, each access a sector
    # for 4 bytes; the block count and the bytes are the same
    assert 8.0 < ratio <= 64.0, (one, many)


def _reuse(staged: bool) -> str:
    """Each block makes 8 passes over a 40 KB slab of its input (coalesced, 256 threads): from
    global memory each time, or copied once into shared memory. Eight resident blocks' slabs
    (320 KB) do not fit in L1 (256 KB with shared memory), so unstaged passes go to L2; staged,
    shared memory (40 KB a block) leaves room for five blocks."""
    src, src_t = ("%xs[%j]", "memref<10240xf32, 3 : i64>") if staged else (
        "%x[%b, %j]", "memref<2048x10240xf32>")
    stage = """
  %xs = kernel.shared : memref<10240xf32, 3 : i64>
  scf.for %k = %t to %n step %c256 {
    %g = memref.load %x[%b, %k] : memref<2048x10240xf32>
    memref.store %g, %xs[%k] : memref<10240xf32, 3 : i64>
  }
  kernel.barrier""" if staged else ""
    return f"""
kernel.func @reuse(%x: memref<2048x10240xf32>, %out: memref<2048x256xf32>) grid(2048, 1, 1) block(256, 1, 1) {{
  %t = kernel.thread_id x
  %b = kernel.block_id x
  %c0 = arith.constant 0 : index
  %one = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %passes = arith.constant 8 : index
  %n = arith.constant 10240 : index
  %zero = arith.constant 0.0 : f32{stage}
  %s = scf.for %p = %c0 to %passes step %one iter_args(%acc = %zero) -> (f32) {{
    %q = scf.for %j = %t to %n step %c256 iter_args(%a2 = %acc) -> (f32) {{
      %v = memref.load {src} : {src_t}
      %a = arith.addf %a2, %v : f32
      scf.yield %a : f32
    }}
    scf.yield %q : f32
  }}
  memref.store %s, %out[%b, %t] : memref<2048x256xf32>
}}"""


def _transpose_tile(pad: int) -> str:
    """A 32 x 32 tile written by rows and read down its columns from shared memory: without
    padding every lane of a warp hits the same bank (32-way conflict)."""
    w = 32 + pad
    return f"""
kernel.func @tr(%x: memref<4096x32xf32>, %out: memref<4096x32xf32>) grid(128, 1, 1) block(32, 32, 1) {{
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
  %v = memref.load %x[%row, %tx] : memref<4096x32xf32>
  memref.store %v, %s[%ty, %tx] : memref<32x{w}xf32, 3 : i64>
  kernel.barrier
  %zero = arith.constant 0.0 : f32
  %acc = scf.for %r = %c0 to %reps step %one iter_args(%a = %zero) -> (f32) {{
    %u = memref.load %s[%tx, %ty] : memref<32x{w}xf32, 3 : i64>
    %n = arith.addf %a, %u : f32
    scf.yield %n : f32
  }}
  memref.store %acc, %out[%row, %tx] : memref<4096x32xf32>
}}"""


def test_a_bank_conflicting_against_a_padded_shared_tile():
    conflicting, padded = _predict(_transpose_tile(0)), _predict(_transpose_tile(1))
    ratio = conflicting.us / padded.us
    assert conflicting.units["smem"] > 16 * padded.units["smem"]
    assert 4.0 < ratio <= 32.0, (conflicting, padded)


def test_8_against_256_blocks():
    few = _predict(_copy(2048, 2048, 8, 256, transposed=False))
    many = _predict(_copy(2048, 2048, 1024, 256, transposed=False))
    ratio = few.us / many.us
    # the same bytes on 8 of 132 SMs, with one block (8 warps) each instead of a full SM of
    # warps: slower by the SMs (16.5x) times at most the warps in flight (8x; Little's law),
    # and at least half the SM ratio
    assert 132 / 8 / 2 < ratio <= 132 / 8 * 8, (few, many)


def test_a_prediction_is_never_below_its_roofline():
    for text in (_copy(2048, 2048, 512, 256, False), _reuse(True), _transpose_tile(1)):
        p = _predict(text)
        floor = cm.roofline_us(p.dram_bytes, p.flops, False)
        assert p.us >= floor * (1 - 1e-9), (p, floor)


@pytest.mark.parametrize("gpu", ["h100", "h200"])
def test_h200_is_faster_on_memory_bound_kernels_only(gpu):
    text = _copy(4096, 8192, 1024, 256, False)
    module = Parser(make_context(), text).parse_module()
    (f,) = [op for op in module.ops if isinstance(op, kernel.FuncOp)]
    w = cm.work(f)
    h100 = cm.predict(w, f.grid_dims, f.block_dims, gpu=cm.H100_SXM)
    other = cm.predict(w, f.grid_dims, f.block_dims, gpu=cm.GPUS[gpu])
    assert other.us <= h100.us
