"""tile-split-k on the CPU runtime: slices of K on their own blocks (block.z after tile-map-2d or
tile-tensor-core), partial sums in an fp32 buffer, reduced with the epilogue by a second kernel
or by the last block of each tile to finish (`split_sum = last_block`, one launch). Whole modules
run through the host function, several times in a row (the arrival counters reset)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from mm_harness import Case, context, loop_ir, run_module
from test_schedules import DEFAULT, SCHEDULE
from xdsl.parser import Parser
from xdsl.passes import PassPipeline

from deplo.passes import pipeline
from deplo.runtime import cpu

_OK, _WHY = cpu.cpu_runtime_available()
pytestmark = pytest.mark.skipif(not _OK, reason=f"CPU runtime unavailable: {_WHY}")

TO_TILE = [p for p in pipeline.PIPELINES["to-tile"] if p.startswith("tile-")]


@pytest.mark.parametrize(
    "case",
    [
        Case(16, 256, 24, b_nk=True, bias=True, relu=True),
        Case(37, 512, 40),
        Case(8, 1024, 8, batch=2),
        Case(16, 256, 24, dtype="f16"),
        Case(40, 512, 33, dtype="bf16", b_nk=True, residual=True),
    ],
    ids=["linear-bias-relu", "37x512x40", "bmm", "f16", "bf16-linear-residual"],
)
@pytest.mark.parametrize("passes", ["alone", "schedule", "to-tile"])
def test_split_k(case: Case, passes: str):
    # (tensor cores are not combined with a split K: half-precision slices take SCHEDULE too)
    rest = {"alone": [], "schedule": SCHEDULE, "to-tile": TO_TILE[1:]}[passes]
    _, text = run_module(case, ["tile-split-k{splits=4 split-sum=kernel}", *rest])
    assert "tile.kernel @mm_sum" in text and text.count("tile.launch") == 2


LAST_BLOCK_CASES = [
    Case(16, 256, 24, b_nk=True, bias=True, relu=True),
    Case(37, 512, 40),
    Case(64, 1024, 72, b_nk=True, residual=True),
    Case(16, 256, 24, dtype="f16"),
    Case(40, 512, 33, dtype="bf16", b_nk=True, residual=True),
]


@pytest.mark.parametrize("case", LAST_BLOCK_CASES,
                         ids=["linear-bias-relu", "37x512x40", "linear-residual-64x72", "f16",
                              "bf16-linear-residual"])
@pytest.mark.parametrize("passes", ["schedule", "to-tile"])
def test_split_k_finished_by_the_last_block(case: Case, passes: str):
    """One launch; the same sums in the same order as the second kernel's: bit-identical."""
    rest = {"schedule": SCHEDULE, "to-tile": TO_TILE[1:]}[passes]
    got, text = run_module(case, ["tile-split-k{splits=4 split-sum=last_block}", *rest])
    assert "tile.split_last" in text and "@mm_sum" not in text and text.count("tile.launch") == 1
    want, _ = run_module(case, ["tile-split-k{splits=4 split-sum=kernel}", *rest])
    np.testing.assert_array_equal(got, want)


def test_last_block_before_any_mapping():
    """Lowered right after tile-split-k (as `deplo bisect` does): one thread walks the splits in
    order, the last one finishes, no counter."""
    got, _ = run_module(LAST_BLOCK_CASES[1], ["tile-split-k{splits=4 split-sum=last_block}"])
    want, _ = run_module(LAST_BLOCK_CASES[1], ["tile-split-k{splits=4 split-sum=kernel}"])
    np.testing.assert_array_equal(got, want)


def test_last_block_refuses_a_batch():
    with pytest.raises(Exception, match="split_sum.*batch of products"):
        run_module(Case(8, 1024, 8, batch=2), ["tile-split-k{splits=4 split-sum=last_block}"])


def test_the_heuristic_splits_tall_skinny_matmuls():
    """64 x 64 outputs with K = 4096 fill few SMs: K is split (the peaks say it pays); a big
    square matmul already has many blocks and a short K has nothing to split."""

    def schedule(c: Case) -> str:
        ctx = context()
        module = Parser(ctx, loop_ir(c)).parse_module()
        PassPipeline.parse_spec(pipeline.PASSES, "loop-to-tile,tile-split-k").apply(ctx, module)
        return str(module)

    splits = re.search(r"\{splits = (\d+),", schedule(Case(64, 4096, 64)))
    assert splits and int(splits[1]) > 1
    assert "{splits = 1," in schedule(Case(2048, 4096, 2048))
    assert "{splits = 1," in schedule(Case(64, 128, 64))  # slices of at least 128


def test_split_k_with_the_default_pipeline_runs():
    _, text = run_module(Case(32, 2048, 32), ["tile-split-k", *DEFAULT])
    splits = re.search(r"\{splits = (\d+), split_sum = (\w+),", text)
    assert splits and int(splits[1]) > 1
    assert ("@mm_sum" in text) == (splits[2] == "kernel") and \
        ("tile.split_last" in text) == (splits[2] == "last_block")
