"""Tensor-core tiles of 8 and 16 warps with few fragments each (planner.MANY_WARP_TILES: the
cost model's shortlist offers them) on the CPU runtime against PyTorch: shapes with tails in
every dimension, split K summed by a second kernel and by each tile's last block, fp16 and
bf16, under the fiber schedules that expose a missing barrier or a refill racing its readers."""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn.functional as F

import deplo
from deplo.passes.tile import planner
from deplo.runtime import cpu
from deplo.tools.api import check_program, random_inputs

_OK, _WHY = cpu.cpu_runtime_available()
pytestmark = pytest.mark.skipif(not _OK, reason=f"CPU runtime unavailable: {_WHY}")


def _pinned(m: int, n: int, k: int, dtype, knobs: dict):
    x, w = torch.randn(m, k, dtype=dtype), torch.randn(n, k, dtype=dtype)
    fn = lambda x, w: F.linear(x, w)  # noqa: E731
    key, plan = next(iter(deplo.compile(fn, [x, w], rank=False).plans()["kernels"].items()))
    sched = {"format": "deplo-plans/1",
             "kernels": {key: {"kind": plan["kind"], "knobs": {**plan["knobs"], **knobs}}}}
    return deplo.compile(fn, [x, w], schedule=json.dumps(sched)), (x, w)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "f16"])
@pytest.mark.parametrize("tile, splits, split_sum", [
    ((4, 4, 1, 2), 1, "kernel"),
    ((4, 4, 1, 2), 2, "last_block"),
    ((2, 4, 1, 1), 2, "kernel"),
    ((4, 2, 2, 1), 2, "last_block"),
], ids=["4x4w-1x2f", "4x4w-1x2f-last", "2x4w-1x1f-sum", "4x2w-2x1f-last"])
def test_many_warp_tiles_match_pytorch(tile, splits, split_sum, dtype):
    """70 x 83 outputs over K = 320: partial tiles in both dimensions, 5 chunks of 32 a split."""
    assert tile in planner.MANY_WARP_TILES
    knobs = dict(zip(("warps_m", "warps_n", "frags_m", "frags_n"), tile), mma=True,
                 splits=splits, split_sum=split_sum, k_chunk=32)
    c, (x, w) = _pinned(70, 83, 320, dtype, knobs)
    got_knobs = next(iter(c.plans()["kernels"].values()))["knobs"]
    assert {k: got_knobs[k] for k in knobs} == knobs
    inputs = random_inputs(c.program, seed=4)
    ref = c.program.reference(inputs)
    exe = c.executable("cpu")
    for schedule in ("LR-fwd", "EG-fwd", "EG-rev"):
        got = check_program(exe.run(inputs, schedule=schedule), c.program, inputs,
                            c.output_element_types(), ref)
        assert got.ok, (schedule, got)


def test_the_shortlist_offers_many_warp_tiles_the_heuristic_does_not_pick():
    """The heuristic keeps its tiles (the peaks cannot weigh many warps against their extra
    shared-memory reads); the model's shortlist has many-warp ones among its candidates."""
    facts = {"chain": (1, 128, 2048), "k": 2048, "tensor_cores": True, "splittable": True,
             "slabs": ("ik2", "jk2")}
    tiles = [tuple(f.get(k) for k in ("warps_m", "warps_n", "frags_m", "frags_n"))
             for f in planner.matmul_shortlist(facts) if "warps_m" in f]
    assert any(t in planner.MANY_WARP_TILES for t in tiles), tiles
    mma, heuristic = planner._tiles(facts, {})
    assert mma and not any(t in planner.MANY_WARP_TILES for t, *_ in heuristic)


@pytest.mark.parametrize("tile, splits", [((2, 1, 4, 8), 1), ((1, 2, 8, 4), 2), ((2, 2, 4, 8), 1)],
                         ids=["2x1w-4x8f", "1x2w-8x4f-split", "2x2w-4x8f"])
def test_64x64_warp_tiles_match_pytorch(tile, splits):
    """Warps of 4 x 8 or 8 x 4 fragments (128 fp32 accumulators a lane; 4 x 8 is CUTLASS's 64 x 64
    warp tile): legal for plan files and the tuner, each B (A) fragment feeding 4 (8) mma."""
    knobs = dict(zip(("warps_m", "warps_n", "frags_m", "frags_n"), tile), mma=True,
                 splits=splits, split_sum="kernel", k_chunk=32)
    c, (x, w) = _pinned(100, 136, 320, torch.bfloat16, knobs)
    inputs = random_inputs(c.program, seed=5)
    got = check_program(c.executable("cpu").run(inputs), c.program, inputs,
                        c.output_element_types(), c.program.reference(inputs))
    assert got.ok, got


def test_64x64_warp_tiles_build_without_spills():
    """ptxas fits the 128 accumulators, the fragments and the addresses in 255 registers."""
    from deplo.runtime.gpu import compile_cubin

    knobs = dict(warps_m=2, warps_n=2, frags_m=4, frags_n=8, mma=True, splits=1, k_chunk=32)
    c, _ = _pinned(512, 1024, 2048, torch.bfloat16, knobs)
    res = compile_cubin(c.cuda_source, arch="sm_90", spills_are_errors=True)
    for name, report in res.kernels.items():
        assert (report.spill_stores, report.spill_loads) == (0, 0), (name, report)


def test_more_than_128_accumulators_are_refused():
    from deplo.passes.tile.plan import PlanFileError

    c, _ = _pinned(128, 256, 64, torch.bfloat16,
                   dict(warps_m=1, warps_n=1, frags_m=8, frags_n=8, mma=True, splits=1))
    with pytest.raises(PlanFileError, match="more than 128 fp32 accumulators a lane"):
        c.plans()
