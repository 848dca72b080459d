"""The matmul schedule passes as data: after every prefix the tile IR verifies and its text parses
back to the same text; a pass run a second time changes nothing; pinning a kernel's printed plan
on the trivial schedule and running the same passes reproduces its IR."""

from __future__ import annotations

import json

import pytest
from mm_harness import Case, context, loop_ir
from test_schedules import DEFAULT, SCHEDULE
from xdsl.parser import Parser
from xdsl.passes import PassPipeline

from deplo.dialects import tile
from deplo.passes import pipeline
from deplo.passes.tile.plan import plans_json

CASES = {
    "37x53x70": Case(37, 53, 70),
    "linear": Case(37, 64, 48, b_nk=True, bias=True, residual=True),
    "bmm-f16": Case(33, 40, 72, batch=2, dtype="f16"),
}


def apply(text: str, passes: list[str]):
    ctx = context()
    module = Parser(ctx, text).parse_module()
    PassPipeline.parse_spec(pipeline.PASSES, ",".join(passes)).apply(ctx, module)
    module.verify()
    return module


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("passes", [SCHEDULE, DEFAULT], ids=["options", "heuristics"])
def test_prefixes_roundtrip_and_rerun_is_a_noop(case: str, passes: list[str]):
    text = loop_ir(CASES[case])
    for n in range(1, len(passes) + 1):
        module = apply(text, ["loop-to-tile", *passes[:n]])
        printed = str(module)
        assert str(apply(printed, [])) == printed
        again = apply(printed, [passes[n - 1]])
        assert str(again) == printed, f"{passes[n - 1]} changed its own output"


@pytest.mark.parametrize("case", CASES)
def test_pinning_the_printed_plan_reproduces_the_ir(case: str, tmp_path):
    text = loop_ir(CASES[case])
    scheduled = apply(text, ["loop-to-tile", *DEFAULT])
    (kernel,) = [k for k in scheduled.walk() if isinstance(k, tile.KernelOp)]
    assert len(kernel.done_steps) >= 4
    pinned = tmp_path / "plans.json"
    pinned.write_text(json.dumps(plans_json(scheduled)))
    replayed = apply(text, ["loop-to-tile", f"tile-plan{{schedule={json.dumps(str(pinned))}}}", *DEFAULT])
    assert str(replayed) == str(scheduled)


def test_the_matmul_passes_leave_other_kernels_alone():
    """RMSNorm's schedule with and without the matmul passes in front is the same."""
    rms = """builtin.module {
  loop.kernel @rms(%x: memref<4x1000xf32>, %out: memref<4x1000xf32>) {
    %zero = arith.constant 0.000000e+00 : f32
    loop.for %a0 = 0 to 4 free {
      %ss = loop.for %a1 = 0 to 1000 reduce iter(%acc = %zero) -> f32 {
        %v = loop.load %x[%a0, %a1] : memref<4x1000xf32>
        %sq = arith.mulf %v, %v : f32
        %s = arith.addf %acc, %sq : f32
        loop.yield %s : f32
      }
      loop.for %a2 = 0 to 1000 free {
        %v2 = loop.load %x[%a0, %a2] : memref<4x1000xf32>
        %y = arith.mulf %v2, %ss : f32
        loop.store %y, %out[%a0, %a2] : memref<4x1000xf32>
      }
    }
  }
}"""
    base = ["tile-map-grid", "tile-cooperative-reduce", "tile-map-threads", "tile-stage-inputs"]
    plain = apply(rms, ["loop-to-tile", *base, *DEFAULT[4:]])
    full = apply(rms, ["loop-to-tile", *DEFAULT[:4], *base, *DEFAULT[4:]])
    assert str(full) == str(plain)
