"""tile-to-kernel on hand-written schedules the passes do not (yet) produce: double-buffered
stages in a serial loop, a padded 2-D stage, sub-warp combines in a 2-D block, a combine in a
loop, stores outside the thread loops. Each is run on the CPU runtime against numpy."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects import arith, builtin, func, math, memref, scf
from xdsl.parser import Parser
from xdsl.passes import PassPipeline

from deplo.passes import pipeline

cpu = pytest.importorskip("deplo.runtime.cpu")
emit = pytest.importorskip("deplo.lowering.emit_cuda")
_OK, _WHY = cpu.cpu_runtime_available()
pytestmark = pytest.mark.skipif(not _OK, reason=f"CPU runtime unavailable: {_WHY}")

SCHEDULES = ("LR-fwd", "LR-rnd", "EG-fwd", "EG-rev")


def run_tile(text: str, name: str, inputs: list[np.ndarray], outputs: list[np.ndarray]) -> str:
    """Lower one tile kernel to CUDA, run it under several fiber schedules (all must agree),
    leave the results in `outputs`; returns the Kernel IR text."""
    ctx = Context()
    for d in (builtin.Builtin, func.Func, arith.Arith, math.Math, scf.Scf, memref.MemRef):
        ctx.load_dialect(d)
    for d in ("loop", "tile", "kernel", "cuda"):
        ctx.load_dialect(pipeline.DIALECTS[d]())
    module = Parser(ctx, text).parse_module()
    module.verify()
    PassPipeline.parse_spec(pipeline.PASSES, "tile-to-kernel").apply(ctx, module)
    module.verify()
    kernel_text = str(module)
    PassPipeline.parse_spec(pipeline.PASSES, "kernel-to-cuda").apply(ctx, module)
    mod = cpu.CpuModule(emit.emit_cuda(module), emit.kernel_signatures(module), name=name)
    grid, block = _launch(text)
    first = None
    for s in SCHEDULES:
        for o in outputs:
            o[...] = np.nan
        mod.launch(name, grid=grid, block=block, args=[*inputs, *outputs], schedule=s)
        if first is None:
            first = [o.copy() for o in outputs]
        for o, f in zip(outputs, first):
            np.testing.assert_array_equal(o, f, err_msg=f"schedule {s}")
    return kernel_text


def _launch(text: str):
    head = text[text.index("grid(") :]
    grid = tuple(int(v) for v in head[5 : head.index(")")].split(","))
    head = head[head.index("block(") :]
    block = tuple(int(v) for v in head[6 : head.index(")")].split(","))
    return grid + (1,) * (3 - len(grid)), block + (1,) * (3 - len(block))


CHUNKED_MAX = """
tile.kernel @chunked_max(%x: memref<4x256xf32>, %out: memref<4x4xf32>) grid(4) block(64) {
  %c64 = arith.constant 64 : index
  tile.for %r = 0 to 4 bind(block.x) {
    tile.for %c = 0 to 4 bind(serial) {
      %off = arith.muli %c, %c64 : index
      %xs = tile.stage %x[%r, %off] [1, 64] into shared buffers(2)
          : memref<4x256xf32> -> memref<64xf32, 3 : i64>
      tile.for %t = 0 to 64 bind(thread.x) {
        %v = loop.load %xs[%t] : memref<64xf32, 3 : i64>
        %m = tile.combine max %v over thread.x : f32
        loop.store %m, %out[%r, %c] : memref<4x4xf32>
      }
    }
  }
}
"""


def test_double_buffered_stage_and_combine_in_a_loop():
    x = np.random.default_rng(0).standard_normal((4, 256), dtype=np.float32)
    out = np.empty((4, 4), dtype=np.float32)
    kir = run_tile(CHUNKED_MAX, "chunked_max", [x], [out])
    assert "memref<2x64xf32, 3 : i64>" in kir  # two halves
    np.testing.assert_array_equal(out, x.reshape(4, 4, 64).max(axis=-1))


ROW_SUMS = """
tile.kernel @row_sums(%x: memref<4x100xf32>, %out: memref<4xf32>, %flag: memref<2xf32>)
    grid(2) block(16, 2) {
  %zero = arith.constant 0.000000e+00 : f32
  %one = arith.constant 1.000000e+00 : f32
  tile.for %b = 0 to 2 bind(block.x) {
    loop.store %one, %flag[%b] : memref<2xf32>
    tile.for %ty = 0 to 2 bind(thread.y) {
      tile.for %tx = 0 to 16 bind(thread.x) {
        %p = tile.for %k = %tx to 100 step 16 bind(serial) iter(%acc = %zero) -> f32 {
          %v = loop.load %x[%b, %ty, %k] map (d0, d1, d2) -> (d0 * 2 + d1, d2) : memref<4x100xf32>
          %s = arith.addf %acc, %v : f32
          tile.yield %s : f32
        }
        %sum = tile.combine add %p over thread.x : f32
        loop.store %sum, %out[%b, %ty] map (d0, d1) -> (d0 * 2 + d1) : memref<4xf32>
      }
    }
  }
}
"""


def test_sub_warp_combine_in_a_2d_block_and_a_store_by_thread_0():
    x = np.random.default_rng(1).standard_normal((4, 100), dtype=np.float32)
    out = np.empty(4, dtype=np.float32)
    flag = np.empty(2, dtype=np.float32)
    kir = run_tile(ROW_SUMS, "row_sums", [x], [out, flag])
    assert "width 16" in kir and "kernel.barrier" not in kir
    np.testing.assert_allclose(out, x.astype(np.float64).sum(axis=1), rtol=1e-5)
    np.testing.assert_array_equal(flag, [1.0, 1.0])


TRANSPOSE = """
tile.kernel @transpose(%x: memref<16x16xf32>, %out: memref<16x16xf32>) grid(2, 2) block(8, 8) {
  %c8 = arith.constant 8 : index
  tile.for %bi = 0 to 2 bind(block.y) {
    tile.for %bj = 0 to 2 bind(block.x) {
      %r0 = arith.muli %bi, %c8 : index
      %c0 = arith.muli %bj, %c8 : index
      %xs = tile.stage %x[%r0, %c0] [8, 8] into shared pad(1)
          : memref<16x16xf32> -> memref<8x9xf32, 3 : i64>
      tile.for %ty = 0 to 8 bind(thread.y) {
        tile.for %tx = 0 to 8 bind(thread.x) {
          %v = loop.load %xs[%tx, %ty] : memref<8x9xf32, 3 : i64>
          loop.store %v, %out[%bj, %ty, %bi, %tx] map (d0, d1, d2, d3) -> (d0 * 8 + d1, d2 * 8 + d3)
              : memref<16x16xf32>
        }
      }
    }
  }
}
"""


def test_padded_2d_stage():
    x = np.random.default_rng(2).standard_normal((16, 16), dtype=np.float32)
    out = np.empty_like(x)
    kir = run_tile(TRANSPOSE, "transpose", [x], [out])
    assert "memref<8x9xf32, 3 : i64>" in kir
    np.testing.assert_array_equal(out, x.T)
