"""tile-attention-rows: the flash-attention kernel on threads over the head dim.

sdpa (causal and not, GQA 4 / 2, S = 7, D = 16 and 64) and the tiny Llama / Qwen2 logits on the
CPU runtime under several fiber schedules; the flash kernel gets the pass (block > 1, a
tile.combine in the key loop), and every emitted kernel builds with NVRTC sm_90 without spills.
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
        assert all(isinstance(op.parent_op(), tile.ForOp)
                                and op.parent_op().binding == tile.Bind.SERIAL
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
    assert k.block_dims == (32, 1, 1)
    xs = random_inputs(c.program, seed=1)
    (want,) = c.program.reference(xs)
    exe = c.executable("cpu")
    for schedule in SCHEDULES:
        (got,) = exe.run(xs, schedule=schedule)
        assert _max_rel(got, want) <= 1e-5, (schedule, _max_rel(got, want))
    _no_spills(c)
