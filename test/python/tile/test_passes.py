"""The tile passes as data: after every prefix of the schedule the IR verifies and its text
parses back to the same text; each pass run a second time changes nothing; the kernel's plan
says what every pass does and its `done` list which steps are carried out; pinning the printed
plans reproduces the IR."""

from __future__ import annotations

import json

import pytest
from xdsl.context import Context
from xdsl.dialects import arith, builtin, func, math, memref, scf
from xdsl.parser import Parser
from xdsl.passes import PassPipeline

from deplo.dialects import tile
from deplo.passes import pipeline
from deplo.passes.tile.plan import TilePlanPass, plans_json

SCHEDULE = ["tile-map-grid", "tile-cooperative-reduce", "tile-map-threads", "tile-stage-inputs"]

RMS = """
loop.kernel @rms_norm(%x: memref<2x3x1000xf32>, %w: memref<1000xf32>, %out: memref<2x3x1000xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %n = arith.constant 1.000000e+03 : f32
  loop.for %a0 = 0 to 2 free {
    loop.for %a1 = 0 to 3 free {
      %ss = loop.for %a2 = 0 to 1000 reduce iter(%acc = %zero) -> f32 {
        %v = loop.load %x[%a0, %a1, %a2] : memref<2x3x1000xf32>
        %sq = arith.mulf %v, %v : f32
        %s = arith.addf %acc, %sq : f32
        loop.yield %s : f32
      }
      %r = arith.divf %ss, %n : f32
      loop.for %a3 = 0 to 1000 free {
        %v2 = loop.load %x[%a0, %a1, %a3] : memref<2x3x1000xf32>
        %wv = loop.load %w[%a3] : memref<1000xf32>
        %y = arith.mulf %v2, %r : f32
        %o = arith.mulf %y, %wv : f32
        loop.store %o, %out[%a0, %a1, %a3] : memref<2x3x1000xf32>
      }
    }
  }
}
"""

MATMUL = """
loop.kernel @relu_matmul(%x: memref<13x70xf32>, %b: memref<70xf32>, %w: memref<70x9xf32>, %out: memref<13x9xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  loop.for %a0 = 0 to 13 free {
    loop.for %a1 = 0 to 9 free {
      %acc = loop.for %a2 = 0 to 70 reduce iter(%s = %zero) -> f32 {
        %xv = loop.load %x[%a0, %a2] : memref<13x70xf32>
        %bv = loop.load %b[%a0, %a2] map (d0, d1) -> (d1) : memref<70xf32>
        %xb = arith.addf %xv, %bv : f32
        %wv = loop.load %w[%a2, %a1] : memref<70x9xf32>
        %p = arith.mulf %xb, %wv : f32
        %n = arith.addf %s, %p : f32
        loop.yield %n : f32
      }
      %r = arith.maximumf %acc, %zero : f32
      loop.store %r, %out[%a0, %a1] : memref<13x9xf32>
    }
  }
}
"""


def context() -> Context:
    ctx = Context()
    for d in (builtin.Builtin, func.Func, arith.Arith, math.Math, scf.Scf, memref.MemRef):
        ctx.load_dialect(d)
    for d in ("loop", "tile"):
        ctx.load_dialect(pipeline.DIALECTS[d]())
    return ctx


def apply(ctx: Context, module: builtin.ModuleOp, spec: str) -> str:
    PassPipeline.parse_spec(pipeline.PASSES, spec).apply(ctx, module)
    module.verify()
    return str(module)


@pytest.mark.parametrize("program", [RMS, MATMUL], ids=["rms_norm", "relu_matmul"])
@pytest.mark.parametrize("n", range(len(SCHEDULE) + 1))
def test_prefix_round_trips_and_is_idempotent(program: str, n: int):
    ctx = context()
    module = Parser(ctx, program).parse_module()
    text = apply(ctx, module, ",".join(["loop-to-tile", *SCHEDULE[:n]]))
    assert str(Parser(context(), text).parse_module()) == text
    if n:
        assert apply(ctx, module, SCHEDULE[n - 1]) == text


def test_the_plan_and_its_done_steps():
    ctx = context()
    module = Parser(ctx, RMS + MATMUL).parse_module()
    apply(ctx, module, ",".join(["loop-to-tile", *SCHEDULE]))
    kernels = {k.sym_name.data: k for k in module.walk() if isinstance(k, tile.KernelOp)}
    rms, mm = kernels["rms_norm"], kernels["relu_matmul"]
    assert rms.the_plan.text() == (
        "row_reduce(rows = [2, 3], extent = 1000, contiguous = 4) {grid_dims = 2, threads = 256, "
        "vector = 4, stage_inputs = reused, copy = sync, unroll = 32}"
    )
    assert rms.done_steps == ["tile-map-grid", "tile-cooperative-reduce", "tile-stage-inputs"]
    assert rms.grid_dims == (3, 2, 1) and rms.block_dims == (256, 1, 1)
    assert mm.the_plan.kind == "pointwise"
    assert mm.done_steps == ["tile-map-grid", "tile-map-threads", "tile-stage-inputs"]
    assert mm.grid_dims == (13, 1, 1) and mm.block_dims == (32, 1, 1)


@pytest.mark.parametrize(
    "spec",
    [
        "loop-to-tile,tile-map-grid{grid-dims=1},tile-cooperative-reduce{threads=64}",
        "to-tile",
        "loop-to-tile,tile-plan{kind=pointwise},tile-map-grid,tile-map-threads{threads=64}",
    ],
)
def test_pinning_the_printed_plans_reproduces_the_ir(spec: str):
    """The plans of a scheduled module, pinned through tile-plan on the same Loop IR (with the
    passes given no options), give the same IR."""
    ctx = context()
    passes = pipeline.expand_pipeline(spec).split(",")
    passes = passes[passes.index("loop-to-tile"):]
    module = Parser(ctx, RMS + MATMUL).parse_module()
    scheduled = apply(ctx, module, ",".join(passes))
    pinned = json.dumps(plans_json(module))
    plain = [p.split("{")[0] for p in passes if p.split("{")[0] != "tile-plan"]
    again = Parser(context(), RMS + MATMUL).parse_module()
    PassPipeline((pipeline.PASSES["loop-to-tile"]()(), TilePlanPass(schedule=pinned))).apply(
        ctx, again
    )
    assert apply(ctx, again, ",".join(plain[1:])) == scheduled


def test_a_step_cannot_run_after_a_later_one():
    ctx = context()
    module = Parser(ctx, RMS).parse_module()
    apply(ctx, module, "loop-to-tile,tile-map-grid,tile-stage-inputs")
    with pytest.raises(Exception, match="runs after tile-stage-inputs"):
        apply(ctx, module, "tile-cooperative-reduce")


def test_a_plan_that_does_not_fit_its_loops_is_an_error():
    """The row reduction is carried out before its rows are on blocks: the region is the whole
    kernel, which is no row reduction."""
    ctx = context()
    module = Parser(ctx, RMS).parse_module()
    with pytest.raises(Exception, match="does not match its loops"):
        apply(ctx, module, "loop-to-tile,tile-cooperative-reduce")
