"""The model's latency unit: one warp issuing in order waits for its operands (Jia et al.;
GPUs issue a warp's instructions in program order). Kernels of one warp, so nothing hides it."""

from __future__ import annotations

import pytest

from deplo.analysis import cost_model as cm
from deplo.hardware import H100_SXM
from deplo.tuning.validation import parse_kernel, predict


def _gather(chained: bool, loads: int = 24) -> str:
    """One warp, one pass: `loads` loads of x, each address from the value loaded before
    (chained: a pointer chase) or from the lane (independent), then their sum stored."""
    lines, prev = [], "%t"
    for i in range(loads):
        idx = f"%a{i}" if chained else "%t"
        if chained:
            lines.append(f"  %a{i} = arith.addi {prev}, %c{i % 4} : index")
        lines.append(f"  %v{i} = memref.load %x[{idx}] : memref<4096xi32>")
        if chained:
            lines.append(f"  %n{i} = arith.index_cast %v{i} : i32 to index")
            prev = f"%n{i}"
    total = "%v0"
    for i in range(1, loads):
        lines.append(f"  %s{i} = arith.addi {total}, %v{i} : i32")
        total = f"%s{i}"
    body = "\n".join(lines)
    return f"""
kernel.func @gather(%x: memref<4096xi32>, %out: memref<32xi32>) grid(1, 1, 1) block(32, 1, 1) {{
  %t = kernel.thread_id x
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
{body}
  memref.store {total}, %out[%t] : memref<32xi32>
}}"""


def _stream(trips: int, unroll: bool) -> str:
    """One warp sums x over `trips` iterations of a small loop (marked `unroll` or not)."""
    attr = ' {"unroll"}' if unroll else ""
    return f"""
kernel.func @stream(%x: memref<{trips}x32xf32>, %out: memref<32xf32>) grid(1, 1, 1) block(32, 1, 1) {{
  %t = kernel.thread_id x
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant {trips} : index
  %z = arith.constant 0.0 : f32
  %s = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> (f32) {{
    %v = memref.load %x[%i, %t] : memref<{trips}x32xf32>
    %a = arith.addf %acc, %v : f32
    scf.yield %a : f32
  }}{attr}
  memref.store %s, %out[%t] : memref<32xf32>
}}"""


def _chain(text: str) -> tuple[float, float]:
    _, f = parse_kernel(text)
    w = cm.work(f)
    return w.chain_l1, w.chain_l2


def test_a_pointer_chase_waits_for_every_load():
    chased, independent = _chain(_gather(True)), _chain(_gather(False))
    # 24 loads one after another: 24 latencies; issued together: about one, and the adds
    assert chased[1] >= 24 * H100_SXM.l2_latency
    assert independent[1] < 2 * H100_SXM.l2_latency
    assert chased[0] >= 24 * H100_SXM.l1_latency > independent[0]


def test_a_lone_warp_is_latency_bound():
    p = predict(_gather(True))
    assert p.bound == "latency"
    # one warp, 24 dependent loads at L1's or L2's latency: between the two, plus a launch
    low = 24 * H100_SXM.l1_latency / (H100_SXM.clock_ghz * 1e3)
    high = 24 * (H100_SXM.l2_latency + 8) / (H100_SXM.clock_ghz * 1e3)
    assert low <= p.us - H100_SXM.launch_us <= high, p


@pytest.mark.parametrize("trips", [64, 512])
def test_unrolled_iterations_share_their_waits(trips):
    rolled, unrolled = _chain(_stream(trips, False)), _chain(_stream(trips, True))
    # a small loop nvcc unrolls 4x: a quarter of the waits; one unrolled entirely: one wait,
    # then the sum's adds one after another (4 cycles each: no unrolling shortens a chain)
    assert rolled[1] == pytest.approx(trips * (2 + (H100_SXM.l2_latency + 1 - 2) / 4), rel=0.05)
    assert trips * 4 <= unrolled[1] < H100_SXM.l2_latency + trips * 7 < rolled[1] / 4


def _invariant(before_loop: bool) -> str:
    """One warp: a load before a 512-trip loop whose body adds it (or loads it itself)."""
    outer = "  %v = memref.load %x[%t] : memref<32xf32>\n" if before_loop else ""
    inner = "" if before_loop else "    %v = memref.load %x[%t] : memref<32xf32>\n"
    return f"""
kernel.func @inv(%x: memref<32xf32>, %out: memref<32xf32>) grid(1, 1, 1) block(32, 1, 1) {{
  %t = kernel.thread_id x
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 512 : index
  %z = arith.constant 0.0 : f32
{outer}  %s = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> (f32) {{
{inner}    %a = arith.addf %acc, %v : f32
    scf.yield %a : f32
  }}
  memref.store %s, %out[%t] : memref<32xf32>
}}"""


def test_a_value_made_before_a_loop_is_waited_for_once():
    hoisted, reloaded = _chain(_invariant(True)), _chain(_invariant(False))
    # one L2 wait, then 512 dependent adds (the carried sum: 4 cycles each)
    assert hoisted[1] == pytest.approx(H100_SXM.l2_latency + 512 * 4, rel=0.05)
    assert hoisted[1] < reloaded[1] / 4


def test_an_if_result_is_ready_when_its_branch_is():
    text = """
kernel.func @pick(%x: memref<32xf32>, %out: memref<32xf32>) grid(1, 1, 1) block(32, 1, 1) {
  %t = kernel.thread_id x
  %c0 = arith.constant 0 : index
  %c = arith.cmpi eq, %t, %c0 : index
  %v = scf.if %c -> (f32) {
    %a = memref.load %x[%t] : memref<32xf32>
    scf.yield %a : f32
  } else {
    %z = arith.constant 0.0 : f32
    scf.yield %z : f32
  }
  %w = arith.addf %v, %v : f32
  memref.store %w, %out[%t] : memref<32xf32>
}"""
    l1, l2 = _chain(text)
    assert l2 >= H100_SXM.l2_latency and l1 >= H100_SXM.l1_latency  # the add waits for the load


def test_a_threads_array_at_unrolled_indices_is_registers():
    """The fp32 attention row's accumulator and q (`memref.alloca`), read and written inside
    loops marked `unroll` (constant bounds, `#pragma unroll`): registers, no instruction; the
    same array at a thread id's index would be local memory, an instruction."""
    import torch
    import torch.nn.functional as F
    from xdsl.dialects import memref

    import deplo
    from deplo.analysis import cost_model as cm
    from deplo.dialects import kernel

    c = deplo.compile(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                      [torch.randn(1, 2, 16, 16)] * 3)
    funcs = [op for op in c.module("kernel").ops if isinstance(op, kernel.FuncOp)]
    private = [op for f in funcs for op in f.walk()
               if isinstance(op, memref.LoadOp | memref.StoreOp) and cm._is_private(op.memref)]
    assert private and all(cm._in_register(op) for op in private)
    tid = next(op for f in funcs for op in f.walk() if isinstance(op, kernel.ThreadIdOp))
    op = private[0]
    saved = list(op.indices)
    op.operands[len(op.operands) - len(saved)] = tid.result  # an index a thread id moves
    assert not cm._in_register(op)
