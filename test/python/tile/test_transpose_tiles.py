"""Reads across rows (`x.t()`, `transpose(1, 2)`): the threads of a pointwise plan walk the
output's innermost dim, which is not the input's, so a warp's 32 lanes read 32 rows, a sector
each for one element. The planner gives such a kernel (fact `crossed`, the element's bytes) a
2-D tile (`tile_rows`): blocks of rows beside the chunks of columns, the input's slab of the
tile staged row by row (`stage_inputs = crossed`) with a padded row, each thread walking the
rows of its column (the model, H100: [4096, 4096].t().contiguous() 206 -> 48 us)."""

from __future__ import annotations

import pytest
import torch

import deplo
from deplo.analysis.nest import tile_kernels
from deplo.dialects import tile
from deplo.passes.tile.plan import PlanFileError
from deplo.tools.profile import profile


def _plans(c) -> list[dict]:
    return [p for p in c.plans()["kernels"].values()]


@pytest.mark.parametrize("fn,shapes,dtype,rows", [
    (lambda x: x.t().contiguous(), [(64, 4096)], torch.float32, 8),
    (lambda x, y: x.t() + y, [(8192, 160), (160, 8192)], torch.bfloat16, 16),  # 16: a sector
    (lambda x: x.transpose(1, 2) * 2, [(32, 64, 256)], torch.float16, 16),  # a batch on block.z
    (lambda x: torch.relu(x.t()), [(96, 2816)], torch.float32, 8),  # chunks of 96 columns
    # NCHW -> NHWC: the images and rows, two loops outside the tile, one index on block.z
    (lambda x: x.permute(0, 2, 3, 1).contiguous(), [(8, 64, 8, 48)], torch.float32, 8),
], ids=["t", "t-plus-y-bf16", "batched-f16", "three-warps", "channels-last"])
def test_reads_across_rows_are_staged_tiles(fn, shapes, dtype, rows) -> None:
    inputs = [torch.randn(*s, dtype=dtype) for s in shapes]
    c = deplo.compile(fn, inputs)
    (plan,) = _plans(c)
    assert plan["knobs"]["tile_rows"] == rows and plan["knobs"]["stage_inputs"] == "crossed"
    stages = [o for k in tile_kernels(c.module("tile")) for o in k.walk()
              if isinstance(o, tile.StageOp)]
    assert len(stages) == 1 and stages[0].pad.data == 1  # x only: y is read along its rows
    result = c.check(seed=21)
    assert result.ok, result.line()


@pytest.mark.parametrize("expr", [
    "torch.randn(100, 36).t().contiguous()",  # 36 rows: no multiple of 8
    "torch.randn(72, 40).t().contiguous()",  # 72 columns: no multiple of a warp
    "torch.randn(256, 512) * 2",  # nothing read across
    "torch.randn(256, 256).t() + torch.randn(256, 256)",  # 32 tiles: fewer than the SMs
])
def test_no_tile_where_it_would_not_fit(expr: str) -> None:
    c = deplo.compile(expr)
    assert all(p["knobs"].get("tile_rows", 0) == 0 for p in _plans(c))
    assert c.check(seed=22).ok


def test_no_tile_past_the_grid_or_a_pinned_grid_of_one_axis() -> None:
    """131073 tiles of rows would not fit on block.y (65535): the plain plan, not one block."""
    c = deplo.compile("torch.randn(32, 1048584).t().contiguous()")
    (plan,) = _plans(c)
    assert plan["knobs"]["tile_rows"] == 0
    expr = "torch.randn(64, 4096).t().contiguous()"
    plans = deplo.compile(expr).plans()
    next(iter(plans["kernels"].values()))["knobs"] = {"grid_dims": 1}
    c = deplo.compile(expr, schedule=plans)
    assert _plans(c)[0]["knobs"]["tile_rows"] == 0 and c.check(seed=23).ok


def test_the_tile_is_faster_by_the_model() -> None:
    expr = "torch.randn(4096, 4096).t().contiguous()"
    tiled = profile(deplo.compile(expr))
    plans = deplo.compile(expr).plans()
    next(iter(plans["kernels"].values()))["knobs"] = {"tile_rows": 0, "stage_inputs": "reused"}
    flat = profile(deplo.compile(expr, schedule=plans))
    assert tiled["predicted_us"] * 3 < flat["predicted_us"]
    assert tiled["predicted_us"] >= tiled["roofline_us"]


def test_rows_that_do_not_divide_are_a_one_line_error() -> None:
    expr = "torch.randn(512, 256).t().contiguous()"
    plans = deplo.compile(expr).plans()
    next(iter(plans["kernels"].values()))["knobs"]["tile_rows"] = 12
    with pytest.raises(PlanFileError, match="knob tile_rows"):
        deplo.compile(expr, schedule=plans).module("tile")


def test_crossed_pinned_beside_a_scalar_buffer() -> None:
    """`stage_inputs = crossed` pinned on a row reduction that also reads a 0-d buffer
    (cosine_similarity's eps): that slab has no rows to cross, and no stage (it had raised)."""
    import torch.nn.functional as F

    fn = lambda x, y: F.cosine_similarity(x, y)  # noqa: E731
    inputs = [torch.randn(64, 128), torch.randn(64, 128)]
    plans = deplo.compile(fn, inputs).plans()
    for p in plans["kernels"].values():
        p["knobs"]["stage_inputs"] = "crossed"
    assert deplo.compile(fn, inputs, schedule=plans).check(seed=2).ok
