"""tile-attention-mma: f16/bf16 flash attention on warps of mma.sync, against float64.

Shapes the fragments do not tile (S = 20, 37, 50, 70; D = 40) and one they do (S = 64: the
global fragment loads unmasked), causal and not, GQA, an additive mask, Sq != Sk; every knob (warps, frags_m, key_block, stage, copy) on the CPU runtime, whose mma and
ldmatrix are emulated lane by lane (runtime/include/kc_prelude.cuh); the heuristic's plan for the
LLM shapes builds with NVRTC sm_90 without spills; a tiny bf16 Llama's attention takes the path.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import deplo
from deplo.dialects import tile
from deplo.dialects.tile_plan import CLASSES
from deplo.runtime.cpu import cpu_runtime_available
from deplo.tools.api import Compiled, random_inputs

pytestmark = pytest.mark.skipif(not cpu_runtime_available(), reason="no g++ for the CPU runtime")


def _inputs(hq: int, hk: int, sq: int, sk: int, d: int, dtype=torch.bfloat16, mask=False):
    g = torch.Generator().manual_seed(0)
    xs = [torch.randn(1, hq, sq, d, generator=g), torch.randn(1, hk, sk, d, generator=g),
          torch.randn(1, hk, sk, d, generator=g)]
    if mask:
        xs.append(torch.randn(1, 1, sq, sk, generator=g))
    return [x.to(dtype) for x in xs]


def _sdpa(causal: bool, mask: bool = False):
    if mask:
        return lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m,
                                                                 enable_gqa=True)
    return lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=causal,
                                                          enable_gqa=True)


def _float64(fn, xs: list[np.ndarray]) -> np.ndarray:
    return fn(*(torch.from_numpy(_as_float(x)) for x in xs)).numpy()


def _as_float(x: np.ndarray) -> np.ndarray:
    if x.dtype == np.uint16:  # bf16 bits
        return (x.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return x.astype(np.float64)


def _compile_with(fn, xs, knobs: dict | None) -> Compiled:
    from deplo.passes import pipeline
    from deplo.tools.driver import run_passes

    c = deplo.compile(fn, xs)
    if knobs is not None:  # each knob as an option of the pass that owns it
        owner = CLASSES["attention"].owner
        passes = pipeline.PIPELINES["to-tile"][len(pipeline.PIPELINES["to-loop"]):]
        spec = ",".join(p + ("{" + " ".join(f"{k.replace('_', '-')}={str(v).lower()}"
                                            for k, v in knobs.items() if owner(k) == p) + "}"
                             if any(owner(k) == p for k in knobs) else "") for p in passes)
        c._levels["tile"] = run_passes(c.module("loop").clone(), spec, 0)
    return c


def _mma_kernels(c: Compiled) -> list[tile.KernelOp]:
    return [k for k in c.module("tile").walk() if isinstance(k, tile.KernelOp)
            and k.the_plan is not None and k.the_plan.knob("mma")
            and "tile-attention-mma" in k.done_steps]


def _check(c: Compiled, fn, rel: float = 1e-2) -> None:
    (k,) = _mma_kernels(c)
    assert any(isinstance(op, tile.MmaOp) for op in k.walk())
    xs = random_inputs(c.program, seed=1)
    want = _float64(fn, xs)
    (got,) = c.executable("cpu").run(xs)
    err = np.max(np.abs(_as_float(got) - want)) / np.max(np.abs(want))
    assert err <= rel, err


SHAPES = [  # (q heads, kv heads, Sq, Sk, D, causal)
    (4, 2, 20, 20, 16, True),
    (2, 2, 37, 70, 64, False),
    (4, 1, 50, 50, 32, True),
    (2, 2, 33, 33, 40, True),
    (2, 1, 64, 64, 32, True),  # tiled exactly: the fragments' global loads are unmasked
]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s[:5])) + "c" * s[5])
@pytest.mark.parametrize("knobs", [
    None,  # the heuristic's
    {"warps": 1, "key_block": 64, "stage": False},
    {"warps": 2, "key_block": 16, "stage": True, "copy": "cp_async"},
], ids=["heuristic", "w1k64", "w2k16-staged-cp"])
def test_sdpa_mma_on_cpu(shape, knobs) -> None:
    from deplo.passes.tile.kernel_pass import PassOptionError

    hq, hk, sq, sk, d, causal = shape
    fn = _sdpa(causal)
    if knobs and knobs["stage"] and d % 16:  # the staged rows' padding would be read
        with pytest.raises(PassOptionError, match="knob stage: a head dim of 40"):
            _compile_with(fn, _inputs(hq, hk, sq, sk, d), knobs)
        return
    c = _compile_with(fn, _inputs(hq, hk, sq, sk, d), knobs)
    _check(c, fn)


def test_fp16_and_four_warps() -> None:
    fn = _sdpa(True)
    c = _compile_with(fn, _inputs(2, 2, 70, 70, 32, torch.float16),
                      {"warps": 4, "key_block": 32, "stage": True})
    (k,) = _mma_kernels(c)
    assert k.block_dims == (32, 4, 1) and k.grid_dims[0] == 2
    _check(c, fn)


def test_additive_mask_is_loaded_per_score() -> None:
    fn = _sdpa(False, mask=True)
    c = _compile_with(fn, _inputs(2, 2, 24, 24, 32, mask=True), None)
    _check(c, fn)


def test_fp32_keeps_the_simt_rows() -> None:
    c = deplo.compile(_sdpa(True), _inputs(2, 2, 20, 20, 16, torch.float32))
    assert not _mma_kernels(c)
    plans = [k.the_plan for k in c.module("tile").walk() if isinstance(k, tile.KernelOp)]
    assert [p.knob("mma") for p in plans if p.kind == "attention"] == [False]


@pytest.mark.parametrize("hq,hk,s,d", [(32, 4, 128, 64), (28, 4, 128, 128)],
                         ids=["tinyllama", "qwen2.5-7b"])
def test_llm_shapes_build_without_spills(hq, hk, s, d) -> None:
    """The heuristic's plan for the LLM suite's attention shapes: 4 warps, staged, no spills."""
    from deplo.runtime.gpu import compile_cubin

    c = deplo.compile(_sdpa(True), [x.to("meta") for x in _inputs(hq, hk, s, s, d)], rank=False)
    (k,) = _mma_kernels(c)
    assert dict(k.the_plan.knobs)["warps"] == 4 and dict(k.the_plan.knobs)["stage"]
    res = compile_cubin(c.cuda_source, arch="sm_90", spills_are_errors=True)
    for name, report in res.kernels.items():
        assert (report.spill_stores, report.spill_loads) == (0, 0), (name, report)


def test_tiny_llama_bf16_attention_on_tensor_cores(tmp_path) -> None:
    from transformers import LlamaConfig, LlamaForCausalLM

    from deplo.frontend.causal_lm import capture_model

    # head dim 32 and 32 tokens: q.k is a matmul's shape, so the rotary embeddings stay out of
    # it (loop-fuse) and the flash loop reads q and k as they are
    config = {"vocab_size": 96, "hidden_size": 128, "intermediate_size": 224,
              "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
              "max_position_embeddings": 64}
    torch.manual_seed(0)
    LlamaForCausalLM(LlamaConfig(**config)).save_pretrained(tmp_path / "llama")
    c = Compiled(capture_model(str(tmp_path / "llama"), materialize=True, seq_len=32,
                               dtype=torch.bfloat16))
    assert _mma_kernels(c), "the decoder layer's attention did not get tensor cores"
    result = c.check(seed=2)
    assert result.ok, result.line()


SPLITS = [  # (shape as SHAPES, knobs): slices on block.z, the last one combining
    ((4, 2, 20, 20, 16, True), {"warps": 1, "key_block": 16, "stage": True, "key_splits": 2}),
    ((2, 2, 37, 70, 64, False), {"warps": 2, "key_block": 16, "stage": False, "key_splits": 2}),
    ((4, 1, 50, 50, 32, True), {"warps": 1, "key_block": 16, "stage": True, "key_splits": 4,
                                "copy": "cp_async"}),
    ((2, 2, 33, 33, 40, True), {"warps": 2, "key_block": 16, "stage": False, "key_splits": 2}),
    ((2, 1, 70, 70, 32, True), {"warps": 4, "key_block": 16, "stage": True, "key_splits": 2}),
    # more queries than keys: the causal stop passes the last key, a slice must not
    ((2, 2, 96, 80, 32, True), {"warps": 1, "key_block": 16, "stage": False, "key_splits": 2}),
]


@pytest.mark.parametrize("shape,knobs", SPLITS, ids=lambda v: "x".join(map(str, v[:5]))
                         if isinstance(v, tuple) else f"s{v['key_splits']}w{v['warps']}")
def test_key_splits_on_cpu(shape, knobs) -> None:
    """Split-KV: a causal row block's later slices are empty for its first rows (m at its
    init, l = 0: weight 0 in the combine), ragged last slices, GQA, a ragged head dim."""
    hq, hk, sq, sk, d, causal = shape
    fn = _sdpa(causal)
    c = _compile_with(fn, _inputs(hq, hk, sq, sk, d), knobs)
    (k,) = _mma_kernels(c)
    assert k.grid_dims[2] == knobs["key_splits"]
    assert any(isinstance(op, tile.SplitLastOp) for op in k.walk())
    _check(c, fn)


ROW_TILES = [  # (shape as SHAPES, knobs): warps of 2 or 4 16-row tiles
    ((4, 2, 20, 20, 16, True), {"warps": 1, "frags_m": 2, "key_block": 16, "stage": True}),
    ((2, 2, 37, 70, 64, False), {"warps": 1, "frags_m": 2, "key_block": 32, "stage": False}),
    # 50 rows in blocks of 64 (two warps of two tiles): the second warp's rows past the end
    ((4, 1, 50, 50, 32, True), {"warps": 2, "frags_m": 2, "key_block": 16, "stage": True,
                                "copy": "cp_async", "buffers": 2}),
    ((2, 2, 33, 33, 40, True), {"warps": 1, "frags_m": 2, "key_block": 16, "stage": False,
                                "key_splits": 2}),
    ((2, 1, 70, 70, 32, True), {"warps": 1, "frags_m": 4, "key_block": 32, "stage": True,
                                "key_splits": 2}),
]


@pytest.mark.parametrize("shape,knobs", ROW_TILES, ids=lambda v: "x".join(map(str, v[:5]))
                         if isinstance(v, tuple) else f"w{v['warps']}f{v['frags_m']}")
def test_row_tiles_a_warp_on_cpu(shape, knobs) -> None:
    """frags_m: each K and V fragment feeds the mma of every row tile of the warp; the causal
    stop, the rows past the end, split-KV's scratch rows follow the warp's 16 x frags_m rows."""
    hq, hk, sq, sk, d, causal = shape
    fn = _sdpa(causal)
    c = _compile_with(fn, _inputs(hq, hk, sq, sk, d), knobs)
    (k,) = _mma_kernels(c)
    rows = 16 * knobs["frags_m"] * knobs["warps"]
    assert k.block_dims == (32, knobs["warps"], 1) and k.grid_dims[0] == -(-sq // rows)
    frags = [op for op in k.walk() if isinstance(op, tile.FragmentLoadOp)]
    mmas = [op for op in k.walk() if isinstance(op, tile.MmaOp)]
    # one K / V fragment load per frags_m mma in the key loop (Q's loads are outside it)
    in_loop = [f for f in frags if f.kind.data != tile.FragmentKind.A]
    assert len(mmas) == knobs["frags_m"] * len(in_loop)
    _check(c, fn)


def test_row_tiles_with_a_mask() -> None:
    """An additive mask's loads clamp the rows of a warp's second tile past the end."""
    fn = _sdpa(False, mask=True)
    c = _compile_with(fn, _inputs(2, 2, 40, 24, 32, mask=True),
                      {"warps": 1, "frags_m": 2, "key_block": 16})
    _check(c, fn)


def test_row_tiles_fixed_alone_get_warps_that_fit() -> None:
    """A plan file fixing frags_m alone: the heuristic's warps count the warp's 16 x frags_m
    rows (64 rows: 2 warps of 2 tiles, not 4)."""
    key = next(iter(deplo.compile(_sdpa(True), _inputs(2, 2, 64, 64, 32)).plans()["kernels"]))
    sched = {"format": "deplo-plans/1", "kernels": {key: {"kind": "attention",
                                                          "knobs": {"frags_m": 2}}}}
    c = deplo.compile(_sdpa(True), _inputs(2, 2, 64, 64, 32), schedule=json.dumps(sched))
    knobs = next(iter(c.plans()["kernels"].values()))["knobs"]
    assert (knobs["frags_m"], knobs["warps"]) == (2, 2)
    _check(c, _sdpa(True))


@pytest.mark.parametrize("d,frags", [(64, 4), (128, 2)])
def test_row_tiles_that_would_spill_are_refused(d, frags) -> None:
    """More than 64 accumulators a lane (frags_m x D / 2): ptxas spills (NVRTC sm_90)."""
    from deplo.passes.tile.kernel_pass import PassOptionError

    with pytest.raises(PassOptionError, match="more than 64 fp32 accumulators a lane"):
        _compile_with(_sdpa(True), _inputs(2, 2, 128, 128, d), {"warps": 1, "frags_m": frags})


def test_row_tiles_past_the_queries_are_refused() -> None:
    from deplo.passes.tile.kernel_pass import PassOptionError

    with pytest.raises(PassOptionError, match="knob frags_m: expected 1, 2 or 4 tiles"):
        _compile_with(_sdpa(True), _inputs(2, 2, 20, 20, 16), {"warps": 2, "frags_m": 2})


def test_key_splits_with_a_mask_and_fp16() -> None:
    fn = _sdpa(False, mask=True)
    xs = _inputs(2, 2, 24, 40, 32, torch.float16, mask=True)
    c = _compile_with(fn, xs, {"warps": 1, "key_block": 16, "key_splits": 2})
    _check(c, fn)


def test_key_splits_need_the_rows_on_the_grid() -> None:
    """A batch of 2 is a third loop around the rows: its blocks would share the counters."""
    from deplo.passes.tile.kernel_pass import PassOptionError

    xs = [torch.cat([x, x]) for x in _inputs(2, 2, 32, 32, 16)]
    with pytest.raises(PassOptionError, match="knob key_splits: slices of the keys go on block.z"):
        _compile_with(_sdpa(True), xs, {"key_block": 16, "key_splits": 2})


@pytest.mark.parametrize("s,splits", [(128, 1), (512, 2)])
def test_heuristic_splits_long_rows(s, splits) -> None:
    """Two slices where a row has 8 steps or more and twice the blocks still fit at once."""
    c = deplo.compile(_sdpa(True), [x.to("meta") for x in _inputs(32, 4, s, s, 64)], rank=False)
    (k,) = _mma_kernels(c)
    assert k.the_plan.knob("key_splits") == splits


def test_leading_keys_masked_with_minus_infinity() -> None:
    """Left padding (-inf) over the first key steps of every row, on tensor cores."""
    fn = _sdpa(False, mask=True)
    c = _compile_with(fn, _inputs(2, 2, 64, 64, 32, mask=True), {"key_block": 16})
    xs = random_inputs(c.program, seed=1)
    xs[3][..., :40] = 0xFF80  # bf16 -inf
    (got,) = c.executable("cpu").run(xs)
    want = _float64(fn, xs)
    assert not np.isnan(_as_float(got)).any()
    assert np.max(np.abs(_as_float(got) - want)) / np.max(np.abs(want)) <= 1e-2


@pytest.mark.parametrize("buffers", [2, 3])
@pytest.mark.parametrize("causal", [True, False], ids=["causal", "full"])
def test_pipelined_key_steps_under_every_fiber_schedule(buffers: int, causal: bool) -> None:
    """K and V of the next steps copied (cp.async) while this one's are read: 50 keys in 4
    steps of 16 (the last partial), a causal loop's bound dynamic; under the schedules that
    expose a refill racing the warps still reading a buffer, or a short wait."""
    from deplo.runtime.cpu import DEFAULT_SCHEDULES

    fn = _sdpa(causal)
    c = _compile_with(fn, _inputs(4, 2, 50, 50, 32), {"warps": 2, "key_block": 16,
                                                       "stage": True, "buffers": buffers,
                                                       "copy": "cp_async"})
    assert f"kc_cp_async_wait({buffers - 1})" in c.cuda_source
    xs = random_inputs(c.program, seed=2)
    want = _float64(fn, xs)
    exe = c.executable("cpu")
    for schedule in DEFAULT_SCHEDULES:
        (got,) = exe.run(xs, schedule=schedule)
        err = np.max(np.abs(_as_float(got) - want)) / np.max(np.abs(want))
        assert err <= 1e-2, (schedule, err)


def test_the_heuristic_pipelines_staged_key_steps() -> None:
    """Two buffers and cp.async where both fit in static shared memory (64 keys of a 64-wide
    head: 36 KB); one buffer, plain copies, where two would not (a 256-wide head)."""
    c = deplo.compile(_sdpa(True), _inputs(2, 2, 64, 64, 64))
    (k,) = _mma_kernels(c)
    assert (k.the_plan.knob("buffers"), k.the_plan.knob("copy")) == (2, "cp_async")
    c = deplo.compile(_sdpa(True), _inputs(2, 2, 64, 64, 256))
    (k,) = _mma_kernels(c)
    assert (k.the_plan.knob("buffers"), k.the_plan.knob("copy")) == (1, "sync")


@pytest.mark.parametrize("option", ["{buffers=1}", "{buffers=3}"])
def test_a_buffers_option_leaves_simt_attention_alone(option: str) -> None:
    """tile-double-buffer's option pins the buffers of the kernels whose plan has the step in
    its mode: an fp32 (SIMT) attention's plan has none, and keeps its plan."""
    from deplo.passes import pipeline
    from deplo.tools.driver import run_passes

    c = deplo.compile(_sdpa(True), _inputs(2, 2, 50, 50, 32, torch.float32))
    passes = pipeline.PIPELINES["to-tile"][len(pipeline.PIPELINES["to-loop"]):]
    spec = ",".join(p + option if p == "tile-double-buffer" else p for p in passes)
    (k,) = [k for k in run_passes(c.module("loop").clone(), spec, 0).walk()
            if isinstance(k, tile.KernelOp) and k.the_plan.kind == "attention"]
    assert k.the_plan.knob("mma") is False and "buffers" not in k.the_plan.knob_dict
