"""tile-attention-rows with lane_keys: each lane of a row owns keys (passes/tile/attention_keys).

sdpa (causal and not, GQA 4 / 2, ragged key steps, head dims 16 / 32 / 64 / 128 in 1 to 8
parts: 128 in one keeps q out of registers), an additive mask with more keys than queries, and
bf16 rows off tensor cores, on the CPU runtime under two fiber schedules against float64
PyTorch; the heuristic's plan and the plan's checks; no spills up to 64 of the head dim a lane.
"""

from __future__ import annotations

import pytest
import torch
from test_attention_rows import (
    _flash_kernels,
    _max_rel,
    _no_spills,
    _sdpa,
    _with_rows_options,
    masked_longer_keys,
    matches_float64,
)

import deplo
from deplo.dialects import tile
from deplo.dialects.tile_plan import Plan
from deplo.runtime.cpu import cpu_runtime_available
from deplo.tools.api import random_inputs

pytestmark = pytest.mark.skipif(not cpu_runtime_available(), reason="no g++ for the CPU runtime")

CASES = [  # (S, D, causal, threads, rows, lane_keys, head_parts)
    (7, 16, True, 4, 4, 2, 1),  # 6 keys of a step of 8: the last keys masked
    (37, 64, True, 8, 4, 2, 1),
    (37, 64, False, 8, 4, 1, 1),
    (40, 64, True, 32, 2, 4, 1),
    (9, 16, True, 1, 8, 1, 1),  # one lane a row: no combine
    (33, 128, True, 8, 4, 1, 1),  # q read where it is (past HOISTED_Q)
    (37, 64, True, 16, 4, 2, 2),  # two lanes a key, 32 of the head dim each
    (33, 128, False, 16, 8, 1, 4),  # four lanes a key (Qwen2.5's head dim)
    (21, 128, True, 8, 2, 2, 8),  # eight: one key lane
    (9, 32, True, 2, 8, 1, 2),  # one key lane of two parts
]


def _qkv(s: int, d: int, dtype=torch.float32):
    g = torch.Generator().manual_seed(s + d)
    return [torch.randn(1, 4, s, d, generator=g, dtype=dtype),
            torch.randn(1, 2, s, d, generator=g, dtype=dtype),
            torch.randn(1, 2, s, d, generator=g, dtype=dtype)]


def _combines(k: tile.KernelOp) -> int:
    return sum(isinstance(op, tile.CombineOp) for op in k.walk())


@pytest.mark.parametrize("s,d,causal,threads,rows,lane_keys,parts", CASES)
def test_lanes_own_keys(s: int, d: int, causal: bool, threads: int, rows: int,
                        lane_keys: int, parts: int) -> None:
    c = deplo.compile(_sdpa(causal), _qkv(s, d))
    _with_rows_options(c, f"threads={threads} rows={rows} lane-keys={lane_keys} "
                          f"head-parts={parts}")
    (k,) = _flash_kernels(c)
    assert k.block_dims[:2] == (threads, rows)
    # a q . k sum over the parts a key, one max over the key lanes a step, then l and every
    # accumulator element of a part summed over the key lanes once (none with one key lane)
    owners = threads // parts
    want = (lane_keys if parts > 1 else 0) + (2 + d // parts) * (owners > 1)
    assert _combines(k) == want, _combines(k)
    matches_float64(c, _sdpa(causal))
    if d // parts <= 64:
        _no_spills(c)


def test_mask_and_more_keys_than_queries() -> None:
    """An additive (row, key) mask read in the chain of every key a lane owns; Sk > Sq."""
    f, inputs = masked_longer_keys()
    c = deplo.compile(f, inputs)
    _with_rows_options(c, "threads=8 rows=4 lane-keys=2 head-parts=2")
    matches_float64(c, f, seed=4)


def test_bf16_rows_off_tensor_cores() -> None:
    """mma off: a bf16 row's lanes own keys too (fp32 (m, l) and accumulator); K and V rows
    widen by 16 bytes (8 elements)."""
    from deplo.passes import pipeline
    from deplo.tools.driver import run_passes

    c = deplo.compile(_sdpa(True), _qkv(21, 64, torch.bfloat16))
    options = {"tile-attention-mma": "{mma=false}",
               "tile-attention-rows": "{threads=8 rows=4 lane-keys=2 head-parts=1}"}
    tile_passes = pipeline.PIPELINES["to-tile"][len(pipeline.PIPELINES["to-loop"]):]
    spec = ",".join(p + options.get(p, "") for p in tile_passes)
    c._levels["tile"] = run_passes(c.module("loop").clone(), spec, 0)
    (k,) = _flash_kernels(c)
    steps = [op.step.data for op in k.walk() if isinstance(op, tile.ForOp) and op.inits
             and op.binding == tile.Bind.UNROLL]
    assert steps and set(steps) == {8}, steps  # q . k over the head dim 8 elements a step
    xs = random_inputs(c.program, seed=1)
    (want,) = c.program.reference(xs)
    (got,) = c.executable("cpu").run(xs)
    assert _max_rel(got, want) <= 1e-2, _max_rel(got, want)


def test_lane_keys_knob_is_checked() -> None:
    c = deplo.compile(_sdpa(True), _qkv(37, 64))
    (k,) = _flash_kernels(c)
    plan = k.the_plan  # the heuristic's: 16 lanes (37 keys), two parts of 32
    assert (plan.knob("lane_keys"), plan.knob("threads"), plan.knob("head_parts")) == (1, 16, 2)
    knobs = dict(plan.knobs)
    for changes, why in (({"lane_keys": 3}, "expected 0 (the head dim split) or 1, 2, 4 or 8"),
                         ({"lane_keys": 2, "threads": 64, "rows": 1}, "one warp's at most"),
                         ({"lane_keys": 2, "stage_keys": 16}, "stage_keys must be 0"),
                         ({"head_parts": 3}, "expected 1, 2, 4 or 8 parts"),
                         ({"head_parts": 2, "lane_keys": 0}, "with lane_keys")):
        bad = Plan(plan.kind, plan.facts, tuple(
            (n, changes.get(n, v)) for n, v in knobs.items())).violations()
        assert bad and why in bad[0][1], bad
    # a row whose update lanes cannot own keys (no fact own_keys): the knob names the fact
    facts = tuple((n, v) for n, v in plan.facts if n != "own_keys")
    bad = Plan(plan.kind, facts, tuple(knobs.items())).violations()
    assert bad and bad[0][0] == "lane_keys" and "fact own_keys" in bad[0][1], bad
    # the tuner offers lane_keys only where it can be: a warp a row, nothing staged
    from deplo.dialects.tile_plan import CLASSES

    cls, f = CLASSES["attention"], dict(plan.facts)
    assert cls.domain("lane_keys", f, knobs) == (0, 1, 2, 4)
    assert cls.domain("lane_keys", f, {**knobs, "threads": 64}) == (0,)
    # parts: dividing the head dim and the lanes, each at most 64 of the head dim (HOISTED_Q)
    assert cls.domain("head_parts", f, {**knobs, "threads": 2}) == (1, 2)
    assert cls.domain("head_parts", {**f, "head_dim": 256}, knobs) == (4, 8)
    assert cls.domain("lane_keys", {**f, "head_dim": 1024}, knobs) == (0,)  # no part fits
    assert cls.domain("head_parts", f, {**knobs, "lane_keys": 0}) == (1,)
    assert cls.domain("lane_keys", {k: v for k, v in f.items() if k != "own_keys"}, knobs) == (0,)
