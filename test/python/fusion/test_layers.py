"""Decoder layers of tiny Llama / Qwen2 checkpoints after loop fusion: the kernel list per layer
(what the fusion rules are meant to produce) and the logits at loop level against transformers.

Per layer, 7 kernels (was 11 before the rules of this file's era):
  q, k, v projections   RMSNorm statistic recomputed per row in each (reads only the hidden row)
  attention             flash: rotary (the concat as a select) in the q·k loop, online softmax
  o projection          + residual in the epilogue
  gate and up           one K loop for both, silu(gate)·up in the epilogue, RMSNorm recomputed
  down projection       + residual in the epilogue
"""

from __future__ import annotations

import pytest
import torch
from xdsl.dialects import func

from deplo.dialects import loop
from deplo.frontend.causal_lm import capture_model
from deplo.passes import pipeline
from deplo.runtime.interp import InterpExecutable
from deplo.tools.api import Compiled, random_inputs
from deplo.tools.driver import run_passes

SMALL = {"vocab_size": 96, "hidden_size": 64, "intermediate_size": 112, "num_hidden_layers": 2,
         "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 64}


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    root = tmp_path_factory.mktemp("fusion_models")
    torch.manual_seed(0)
    LlamaForCausalLM(LlamaConfig(**SMALL)).save_pretrained(root / "llama")
    Qwen2ForCausalLM(Qwen2Config(**SMALL)).save_pretrained(root / "qwen")
    return root


def _layer(module) -> func.FuncOp:
    return next(op for op in module.ops
                if isinstance(op, func.FuncOp) and op.sym_name.data == "decoder_layer")


def _launched(module) -> list[loop.KernelOp]:
    kernels = {k.sym_name.data: k for k in module.ops if isinstance(k, loop.KernelOp)}
    return [kernels[op.callee.root_reference.data] for op in _layer(module).walk()
            if isinstance(op, loop.LaunchOp)]


@pytest.mark.parametrize("arch", ["llama", "qwen"])
def test_kernels_per_layer(checkpoints, arch: str) -> None:
    program = capture_model(str(checkpoints / arch), materialize=True, seq_len=7)
    kernels = _launched(Compiled(program).module("loop"))
    assert len(kernels) == 7, [k.sym_name.data for k in kernels]
    # one flash attention kernel (private output row), no materialized concat (several nests)
    flash = [k for k in kernels if any(isinstance(o, loop.PrivateOp) for o in k.walk())]
    assert len(flash) == 1
    for k in kernels:
        tops = [o for o in k.body.block.ops if isinstance(o, loop.ForOp)]
        assert len(tops) == 1, f"@{k.sym_name.data} has {len(tops)} nests"
    # gate and up share one K loop (two accumulators)
    assert any(len(op.inits) == 2 and op.kind.data == loop.LoopKind.REDUCE and op.extent == 64
               for k in kernels for op in k.walk() if isinstance(op, loop.ForOp)
               and any("gate_proj" in (a.name_hint or "") for a in k.args))


@pytest.mark.parametrize("arch", ["llama", "qwen"])
def test_logits_at_loop_level(checkpoints, arch: str) -> None:
    program = capture_model(str(checkpoints / arch), materialize=True, seq_len=7)
    result = Compiled(program).check(target="interp", level="loop", seed=3)
    assert result.ok and result.max_rel <= 1e-4, result.line()


def test_shared_norm_statistic_option(checkpoints) -> None:
    """`loop-fuse{recompute-reductions=false}`: the input RMSNorm's statistic is one kernel that
    q, k and v read (8 kernels per layer), and the logits still match."""
    program = capture_model(str(checkpoints / "llama"), materialize=True, seq_len=5)
    spec = ",".join("loop-fuse{recompute-reductions=false}" if p == "loop-fuse" else p
                    for p in pipeline.PIPELINES["to-loop"])
    module = run_passes(program.module.clone(), spec)
    assert len(_launched(module)) == 8
    inputs = random_inputs(program, seed=4)
    ref = program.reference(inputs[: len(program.example_inputs)])
    out = InterpExecutable(module).run(inputs)
    from deplo.runtime.check import compare

    assert compare(out, ref).ok
