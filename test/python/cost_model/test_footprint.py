"""A kernel's DRAM bytes are the distinct bytes its blocks touch: an access repeated in the same
loops (a thread's neighbours loaded one by one, at a flattened `i floordiv c, i mod c`) is
the same sectors, not more of them. The model counted each copy: x.sum() over [4096, 4096],
whose 4 loads a step read 4 neighbours, was charged 4x x's bytes (96.7 us, 4.3x its
roofline). A block's second pass over bytes it read before comes from L2 where the resident
blocks' windows fit it (instance_norm's statistics over a 64 KB row were charged to DRAM
at every pass)."""

from __future__ import annotations

import pytest

import deplo
from deplo.tools.profile import profile
from deplo.tuning.validation import predict

ROWS = COLS = 4096  # 64 MB of fp32: past L2, so DRAM bytes are the blocks' footprints
X_BYTES = ROWS * COLS * 4
X = f"memref<{ROWS}x{COLS}xf32>"


def _sum_kernel(one_by_one: bool) -> str:
    """A split sum of x: 512 blocks of 256 threads, each thread 4 neighbours a step, loaded
    one by one at `i floordiv COLS, i mod COLS` (as the lowering emits a flattened sum) or
    in one vector load."""
    if one_by_one:
        loads = "\n".join(f"""
      %i{k} = arith.addi %i, %c{k} : index
      %a{k} = arith.floordivsi %i{k}, %cols : index
      %b{k} = arith.remsi %i{k}, %cols : index
      %v{k} = memref.load %x[%a{k}, %b{k}] : {X}""" for k in range(4))
    else:
        loads = f"""
      %a = arith.floordivsi %i, %cols : index
      %b = arith.remsi %i, %cols : index
      %v0, %v1, %v2, %v3 = kernel.vector_load %x[%a, %b] : {X} -> f32, f32, f32, f32"""
    return f"""
kernel.func @sum_part(%x: {X}, %part: memref<512xf32>) grid(512, 1, 1) block(256, 1, 1) {{
  %bid = kernel.block_id x
  %tid = kernel.thread_id x
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c1024 = arith.constant 1024 : index
  %slice = arith.constant 32768 : index
  %cols = arith.constant {COLS} : index
  %zero = arith.constant 0.000000e+00 : f32
  %start = arith.muli %tid, %c4 : index
  %base = arith.muli %bid, %slice : index
  %s = scf.for %r = %start to %slice step %c1024 iter_args(%acc = %zero) -> (f32) {{
      %i = arith.addi %base, %r : index{loads}
      %s0 = arith.addf %acc, %v0 : f32
      %s1 = arith.addf %s0, %v1 : f32
      %s2 = arith.addf %s1, %v2 : f32
      %s3 = arith.addf %s2, %v3 : f32
      scf.yield %s3 : f32
  }}
  memref.store %s, %part[%bid] : memref<512xf32>
}}"""


def test_neighbours_loaded_one_by_one_are_read_once():
    one_by_one, vector = predict(_sum_kernel(True)), predict(_sum_kernel(False))
    assert X_BYTES <= one_by_one.dram_bytes < 1.01 * X_BYTES, one_by_one
    assert one_by_one.dram_bytes == vector.dram_bytes
    # L1 serves the copies: L2 is asked for each sector once, as by the vector load
    assert one_by_one.l2_bytes == vector.l2_bytes


@pytest.mark.parametrize("expr", [
    *(f"torch.randn({s}).{r}" for s in ("4096,4096", "1000,37")
      for r in ("sum()", "sum(0)", "sum(1)", "mean()")),
    "torch.softmax(torch.randn(4096,4096), -1)",
    "F.layer_norm(torch.randn(4096,4096),(4096,))",
    "F.instance_norm(torch.randn(8,64,128,128))",
])
def test_reductions_are_charged_their_bytes_and_no_fewer(expr: str):
    """Every kernel at least the bytes it must move (predicted >= roofline), and the flattened
    x.sum() no more than x's bytes (and its 512 partials)."""
    report = profile(deplo.compile(expr))
    assert report["predicted_us"] >= report["roofline_us"], report
    for k in report["kernels"]:
        assert k["predicted_us"] >= k["roofline_us"], k
    if expr == "torch.randn(4096,4096).sum()":
        part = report["kernels"][0]
        assert X_BYTES <= part["dram_bytes"] < 1.01 * X_BYTES, part


def _two_pass_kernel(rows: int, cols: int) -> str:
    """A row's sum, then its sum of squares about it: each block of 256 threads reads its
    row twice, in two loops, 4 neighbours a thread a step."""
    x = f"memref<{rows}x{cols}xf32>"
    def row_loop(name: str, body: str) -> str:
        return f"""
  %{name} = scf.for %c = %start to %cols step %c1024 iter_args(%acc = %zero) -> (f32) {{
      %v0, %v1, %v2, %v3 = kernel.vector_load %x[%bid, %c] : {x} -> f32, f32, f32, f32{body}
      scf.yield %a3 : f32
  }}"""

    sums = "".join(f"""
      %a{k} = arith.addf {'%acc' if k == 0 else f'%a{k - 1}'}, %v{k} : f32""" for k in range(4))
    squares = "".join(f"""
      %d{k} = arith.subf %v{k}, %sum : f32
      %q{k} = arith.mulf %d{k}, %d{k} : f32
      %a{k} = arith.addf {'%acc' if k == 0 else f'%a{k - 1}'}, %q{k} : f32""" for k in range(4))
    return f"""
kernel.func @two_pass(%x: {x}, %out: memref<{rows}xf32>) grid({rows}, 1, 1) block(256, 1, 1) {{
  %bid = kernel.block_id x
  %tid = kernel.thread_id x
  %c4 = arith.constant 4 : index
  %c1024 = arith.constant 1024 : index
  %cols = arith.constant {cols} : index
  %zero = arith.constant 0.000000e+00 : f32
  %start = arith.muli %tid, %c4 : index{row_loop("sum", sums)}{row_loop("var", squares)}
  memref.store %var, %out[%bid] : memref<{rows}xf32>
}}"""


@pytest.mark.parametrize("cols, passes", [(8192, 1), (16384, 2)])
def test_a_second_pass_over_a_row_reads_l2_when_the_rows_fit(cols: int, passes: int):
    """128 MB of x (past L2), 1056 blocks resident (8 an SM): rows of 32 KB are 35 MB at once,
    in L2 when the second pass reads them; rows of 64 KB are 69 MB, evicted before it."""
    rows = (128 << 20) // (cols * 4)
    p = predict(_two_pass_kernel(rows, cols))
    x, out = rows * cols * 4, rows * 4
    assert passes * x + out <= p.dram_bytes < 1.01 * (passes * x + out), p
    assert p.l2_bytes >= 2 * x  # both passes ask L2


def test_instance_norm_reads_its_row_from_dram_once_for_its_statistics():
    """instance_norm over [8, 64, 128, 128]: a block a 64 KB row, read three times (mean,
    variance, output) and written once; 512 blocks resident. The variance's pass finds the
    row in L2 (32 MB of rows), the output's pass does not (with the rows of out it writes
    beside: 64 MB)."""
    report = profile(deplo.compile("F.instance_norm(torch.randn(8,64,128,128))"))
    (k,) = report["kernels"]
    row_bytes = 8 * 64 * 128 * 128 * 4
    assert 3 * row_bytes <= k["dram_bytes"] < 3.01 * row_bytes, k
    assert k["predicted_us"] >= k["roofline_us"], k
