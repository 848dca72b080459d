"""The tile passes as data: after every prefix of the schedule the IR verifies and its text
parses back to the same text; each pass run a second time changes nothing; the schedule list
on the kernel names exactly the passes that fired, with their options."""

from __future__ import annotations

import pytest
from xdsl.context import Context
from xdsl.dialects import arith, builtin, func, math, memref, scf
from xdsl.parser import Parser
from xdsl.passes import PassPipeline

from deplo.dialects import tile
from deplo.passes import pipeline

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


def test_schedule_records_the_passes_that_fired():
    ctx = context()
    module = Parser(ctx, RMS + MATMUL).parse_module()
    apply(ctx, module, ",".join(["loop-to-tile", *SCHEDULE]))
    kernels = {k.sym_name.data: k for k in module.walk() if isinstance(k, tile.KernelOp)}
    assert kernels["rms_norm"].schedule_list == [
        "tile-map-grid{max-dims=3 leave-innermost=true}",
        "tile-cooperative-reduce{threads=256 min-extent=64}",
        "tile-stage-inputs{max-bytes=49152 copy=sync min-loads=2}",
    ]
    assert kernels["rms_norm"].grid_dims == (3, 2, 1)
    assert kernels["rms_norm"].block_dims == (256, 1, 1)
    assert kernels["relu_matmul"].schedule_list == [
        "tile-map-grid{max-dims=3 leave-innermost=true}",
        "tile-map-threads{threads=256}",
    ]
    assert kernels["relu_matmul"].grid_dims == (13, 1, 1)
    assert kernels["relu_matmul"].block_dims == (32, 1, 1)


def test_schedule_replays():
    """A kernel's schedule list, run as a pipeline on the trivial schedule, gives the same IR."""
    ctx = context()
    module = Parser(ctx, RMS).parse_module()
    scheduled = apply(
        ctx, module, "loop-to-tile,tile-map-grid{max-dims=1},tile-cooperative-reduce{threads=64}"
    )
    (k,) = [k for k in module.walk() if isinstance(k, tile.KernelOp)]
    again = Parser(context(), RMS).parse_module()
    assert apply(ctx, again, ",".join(["loop-to-tile", *k.schedule_list])) == scheduled
