"""tile-attention-rows: the flash-attention kernel on a row's threads (the heuristic's lanes
owning keys up to a head dim of 64, test_attention_keys.py; the head dim split otherwise and
where a plan gives `threads` or `stage_keys`).

sdpa (causal and not, GQA 4 / 2, S = 7, D = 16 and 64) and the tiny Llama / Qwen2 logits on the
CPU runtime under several fiber schedules; the flash kernel gets the pass (block > 1, a
tile.combine), and every emitted kernel builds with NVRTC sm_90 without spills.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import deplo
from deplo.dialects import tile
from deplo.runtime.cpu import cpu_runtime_available
from deplo.tools.api import Compiled, random_inputs

pytestmark = pytest.mark.skipif(not cpu_runtime_available(), reason="no g++ for the CPU runtime")

SCHEDULES = ("LR-fwd", "EG-rev")
SEQ = 7
SMALL = {"vocab_size": 96, "hidden_size": 64, "intermediate_size": 112, "num_hidden_layers": 2,
         "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 64}
"""test/python/models/test_models.py's tiny config: head dim 16, GQA 4 / 2."""


def _qkv(d: int):
    g = torch.Generator().manual_seed(0)
    return [torch.randn(1, 4, SEQ, d, generator=g), torch.randn(1, 2, SEQ, d, generator=g),
            torch.randn(1, 2, SEQ, d, generator=g)]


def _sdpa(causal: bool):
    return lambda q, k, v: F.scaled_dot_product_attention(
        q, k, v, is_causal=causal, enable_gqa=True)


def _max_rel(got, want) -> float:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.max(np.abs(got - want)) / np.max(np.abs(want)))


def _flash_kernels(c: Compiled) -> list[tile.KernelOp]:
    return [k for k in c.module("tile").walk() if isinstance(k, tile.KernelOp)
            and "tile-attention-rows" in k.done_steps]


def _check_flash(c: Compiled, d: int) -> None:
    flash = _flash_kernels(c)
    assert flash, "no kernel got tile-attention-rows"
    for k in flash:
        assert k.block_dims[0] * k.block_dims[1] > 1, k.block_dims  # lanes a row x rows
        assert k.block_dims[0] <= max(32, d)
        combines = [op for op in k.walk() if isinstance(op, tile.CombineOp)]
        assert k.block_dims[0] == 1 or combines
        assert all(isinstance(op.parent_op(), tile.ForOp)  # the key loop's; lane_keys: after it
                   and op.parent_op().binding in (tile.Bind.SERIAL, tile.Bind.THREAD_X)
                   for op in combines)


def _no_spills(c: Compiled) -> None:
    from deplo.runtime.gpu import compile_cubin

    res = compile_cubin(c.cuda_source, arch="sm_90", spills_are_errors=True)
    kernels = {op.sym_name.data for op in c.module("cuda").walk() if op.name == "cuda.kernel"}
    assert set(res.kernels) == kernels, res.log
    for name, report in res.kernels.items():
        assert (report.spill_stores, report.spill_loads) == (0, 0), (name, report)


@pytest.mark.parametrize("d", [16, 64])
@pytest.mark.parametrize("causal", [True, False])
def test_sdpa_on_cpu(causal: bool, d: int) -> None:
    c = deplo.compile(_sdpa(causal), _qkv(d))
    _check_flash(c, d)
    xs = random_inputs(c.program, seed=1)
    (want,) = c.program.reference(xs)
    exe = c.executable("cpu")
    for schedule in SCHEDULES:
        (got,) = exe.run(xs, schedule=schedule)
        assert _max_rel(got, want) <= 1e-5, (schedule, _max_rel(got, want))
    _no_spills(c)


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, tuple]:
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    from deplo.frontend.causal_lm import capture_model

    root = tmp_path_factory.mktemp("models")
    torch.manual_seed(0)
    LlamaForCausalLM(LlamaConfig(**SMALL)).save_pretrained(root / "llama")
    Qwen2ForCausalLM(Qwen2Config(**SMALL)).save_pretrained(root / "qwen")
    return {arch: (root / arch, Compiled(capture_model(str(root / arch), materialize=True,
                                                        seq_len=SEQ)))
            for arch in ("llama", "qwen")}


@pytest.mark.parametrize("arch", ["llama", "qwen"])
def test_tiny_model_logits(models, arch: str) -> None:
    from transformers import AutoModelForCausalLM

    path, c = models[arch]
    _check_flash(c, 16)
    inputs = random_inputs(c.program, seed=3)
    hf = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    with torch.no_grad():
        want = hf(input_ids=torch.from_numpy(inputs[0]), use_cache=False).logits.numpy()
    exe = c.executable("cpu")
    for schedule in SCHEDULES:
        (got,) = exe.run(inputs, schedule=schedule)
        assert _max_rel(got, want) <= 1e-4, (schedule, _max_rel(got, want))
    _no_spills(c)


@pytest.mark.parametrize("causal", [True, False])
def test_fewer_threads_than_head_dim(causal: bool) -> None:
    """threads=32 on D = 64: two accumulator registers per thread, `(a - t) floordiv 32`."""
    from deplo.passes import pipeline
    from deplo.tools.driver import run_passes

    c = deplo.compile(_sdpa(causal), _qkv(64))
    tile_passes = pipeline.PIPELINES["to-tile"][len(pipeline.PIPELINES["to-loop"]):]
    spec = ",".join("tile-attention-rows{threads=32}" if p == "tile-attention-rows" else p
                    for p in tile_passes)
    c._levels["tile"] = run_passes(c.module("loop").clone(), spec, 0)
    (k,) = _flash_kernels(c)
    assert k.block_dims == (32, 1, 2)  # (GQA 4 / 2: a K/V head's 2 query heads, group_heads)
    xs = random_inputs(c.program, seed=1)
    (want,) = c.program.reference(xs)
    exe = c.executable("cpu")
    for schedule in SCHEDULES:
        (got,) = exe.run(xs, schedule=schedule)
        assert _max_rel(got, want) <= 1e-5, (schedule, _max_rel(got, want))
    _no_spills(c)


def _with_rows_options(c: Compiled, options: str) -> None:
    from deplo.passes import pipeline
    from deplo.tools.driver import run_passes

    tile_passes = pipeline.PIPELINES["to-tile"][len(pipeline.PIPELINES["to-loop"]):]
    spec = ",".join(f"tile-attention-rows{{{options}}}" if p == "tile-attention-rows" else p
                    for p in tile_passes)
    c._levels["tile"] = run_passes(c.module("loop").clone(), spec, 0)


def _key_loop_loads(k: tile.KernelOp) -> tuple[int, int]:
    """(global loads, shared-memory stages) inside the kernel's serial key loops."""
    loops = [op for op in k.walk() if isinstance(op, tile.ForOp) and op.res
             and op.binding == tile.Bind.SERIAL and len(op.res) >= 2]
    outer = [lp for lp in loops if not any(p in loops for p in tile.enclosing_loops(lp))]
    ops = [op for lp in outer for op in lp.walk()]
    globals_ = [op for op in ops if op.name == "loop.load" and isinstance(
        op.buffer.owner, type(k.body.block)) and op.buffer.owner.parent_op() is k]
    return len(globals_), sum(isinstance(op, tile.StageOp) for op in ops)


STAGED = [  # (S, D, causal, threads, rows, stage_keys)
    (37, 16, True, 1, 32, 16),
    (37, 16, False, 4, 8, 32),
    (70, 64, True, 4, 8, 32),
    (70, 64, True, 8, 32, 64),
    (33, 40, True, 8, 4, 16),  # a ragged head dim: strided threads
    (50, 64, False, 32, 1, 16),
]


@pytest.mark.parametrize("s,d,causal,threads,rows,step", STAGED)
def test_staged_keys(s: int, d: int, causal: bool, threads: int, rows: int, step: int) -> None:
    """stage_keys: each step's K and V tiles in shared memory (keys past the end read as zero,
    the last step partial), q read once into registers; against float64 PyTorch."""
    g = torch.Generator().manual_seed(s + d)
    qkv = [torch.randn(1, 4, s, d, generator=g), torch.randn(1, 2, s, d, generator=g),
           torch.randn(1, 2, s, d, generator=g)]
    c = deplo.compile(_sdpa(causal), qkv)
    _with_rows_options(c, f"threads={threads} rows={rows} stage-keys={step}")
    (k,) = _flash_kernels(c)
    loads, stages = _key_loop_loads(k)
    assert (loads, stages) == (0, 2), (loads, stages)  # K and V staged; q hoisted
    matches_float64(c, _sdpa(causal))
    _no_spills(c)


def matches_float64(c: Compiled, fn, seed: int = 2) -> None:
    """`c` on the CPU runtime, under each fiber schedule, within 1e-5 of `fn` in float64."""
    xs = random_inputs(c.program, seed=seed)
    want = fn(*(torch.from_numpy(x).double() for x in xs)).numpy()
    exe = c.executable("cpu")
    for schedule in SCHEDULES:
        (got,) = exe.run(xs, schedule=schedule)
        assert _max_rel(got, want) <= 1e-5, (schedule, _max_rel(got, want))


def masked_longer_keys():
    """sdpa with an additive (row, key) mask, 9 queries on 45 keys, k = v: (fn, inputs)."""
    g = torch.Generator().manual_seed(5)
    q = torch.randn(1, 2, 9, 32, generator=g)
    kv = torch.randn(1, 2, 45, 32, generator=g)
    mask = torch.randn(1, 1, 9, 45, generator=g)

    def f(q, kv, mask):
        return F.scaled_dot_product_attention(q, kv, kv, attn_mask=mask)

    return f, [q, kv, mask]


def test_staged_keys_with_mask_and_longer_keys() -> None:
    """An additive mask read by (row, key) stays in global memory; Sq != Sk; self-attention
    with q = k = v (one buffer staged once per step, for both products)."""
    f, inputs = masked_longer_keys()
    c = deplo.compile(f, inputs)
    _with_rows_options(c, "threads=4 rows=8 stage-keys=16")
    (k,) = _flash_kernels(c)
    loads, stages = _key_loop_loads(k)
    assert stages == 1 and loads == 1, (loads, stages)  # kv staged once; the mask read in place
    xs = random_inputs(c.program, seed=4)
    want = f(*(torch.from_numpy(x).double() for x in xs)).numpy()
    (got,) = c.executable("cpu").run(xs)
    assert _max_rel(got, want) <= 1e-5, _max_rel(got, want)


def test_stage_keys_knob_is_checked() -> None:
    """stage_keys takes 0 or 16..128 keys a step within shared memory; the space offers only
    what fits; the heuristic reads K and V through L1 (0)."""
    from deplo.dialects.tile_plan import CLASSES, Plan

    c = deplo.compile(_sdpa(True), _qkv(64))
    (k,) = _flash_kernels(c)
    plan = k.the_plan
    assert plan.knob("stage_keys") == 0 and not plan.violations()
    knobs = dict(plan.knobs) | {"lane_keys": 0, "head_parts": 1}  # (staging: the head-dim split)
    for step, why in ((24, "expected 0 (no staging), 16, 32, 64 or 128"),
                      (128, "more than")):
        bad = Plan(plan.kind, plan.facts, tuple(
            (n, step if n == "stage_keys" else v) for n, v in knobs.items())).violations()
        assert [n for n, _ in bad] == ["stage_keys"] and why in bad[0][1], bad
    domain = CLASSES["attention"].domain("stage_keys", {"head_dim": 128}, knobs)
    assert domain == (0, 16, 32)


@pytest.mark.parametrize("dtype,masked", [(torch.float32, False), (torch.bfloat16, False),
                                          (torch.float32, True)])
def test_attention_written_through_a_transpose(dtype, masked) -> None:
    """ViT's `sdpa(q, k, v).transpose(1, 2).reshape(b, s, h * d)`: fusion writes the output
    transposed, in (batch, query, head) order; loop-order-contractions puts the query rows
    innermost again, where the planner blocks them (rows [2, 3, 13], not [2, 13, 3]; a mask,
    read by key and query, does not count as K's or V's loads), and the reshape's copy goes
    (loop-simplify): one launch."""
    mask = torch.randn(13, 13) if masked else None

    def fn(q, k, v):
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return out.transpose(1, 2).reshape(2, 13, 48)

    c = deplo.compile(fn, [torch.randn(2, 3, 13, 16, dtype=dtype) for _ in range(3)])
    (k,) = [k for k in c.module("tile").walk() if isinstance(k, tile.KernelOp)]
    assert dict(k.the_plan.facts)["rows"] == (2, 3, 13)
    assert len([op for op in c.module("loop").walk() if op.name == "loop.launch"]) == 1
    if dtype == torch.float32 and not masked:
        matches_float64(c, fn)
    else:
        xs = [torch.randn(2, 3, 13, 16, dtype=dtype) for _ in range(3)]
        tol = 2e-2 if dtype == torch.bfloat16 else 1e-5
        torch.testing.assert_close(c(*xs), fn(*xs), rtol=tol, atol=tol)
