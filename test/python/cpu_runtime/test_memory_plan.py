"""Memory planning: buffers live at the same time never share bytes, dead ones do, returned
buffers stay out of the arena, and programs run through the arena still match PyTorch (every
CPU-runtime test runs through it too)."""

from __future__ import annotations

from xdsl.dialects import func, memref

from deplo.frontend.causal_lm import capture_model
from deplo.runtime.memory_plan import plan_function
from deplo.tools.api import Compiled


def _live_ranges(fn: func.FuncOp) -> dict:
    ops = list(fn.body.block.ops)
    ranges = {}
    for i, op in enumerate(ops):
        if isinstance(op, memref.AllocOp):
            ranges[op] = [i, i]
        for v in op.operands:
            if v.owner in ranges:
                ranges[v.owner][1] = i
    return ranges


def _tiny_llama(path) -> str:
    from transformers import LlamaConfig, LlamaForCausalLM

    LlamaForCausalLM(LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=48,
                                 num_hidden_layers=2, num_attention_heads=2,
                                 num_key_value_heads=1)).save_pretrained(path)
    return str(path)


def test_no_two_live_buffers_overlap_and_dead_ones_are_reused(tmp_path) -> None:
    # a Llama layer's buffers at toy sizes: the same kernels and lifetimes as TinyLlama's,
    # without minutes of ranking its big matmuls' plans
    compiled = Compiled(capture_model(_tiny_llama(tmp_path), layer=0, seq_len=16))
    (layer,) = [f for f in compiled.module("cuda").ops
                if isinstance(f, func.FuncOp) and f.sym_name.data == "main"]
    plan = plan_function(layer)
    ranges = _live_ranges(layer)
    returned = set(layer.body.block.last_op.operands)
    assert all(a.memref not in returned for a in plan.offsets)
    allocs = list(plan.offsets)
    for i, a in enumerate(allocs):
        assert plan.offsets[a] % 256 == 0
        for b in allocs[i + 1:]:
            live_together = ranges[a][0] <= ranges[b][1] and ranges[b][0] <= ranges[a][1]
            apart = (plan.offsets[a] + plan.sizes[a] <= plan.offsets[b]
                     or plan.offsets[b] + plan.sizes[b] <= plan.offsets[a])
            assert apart or not live_together, (a, b)
    assert plan.peak < plan.total, "a decoder layer's intermediates die early: bytes are shared"


def test_verbose_run_reports_the_arena(tmp_path) -> None:
    from test_cli import run

    p = run("deplo", "run", _tiny_llama(tmp_path), "--check", "-v")
    assert p.returncode == 0 and "PASS" in p.stdout, p.stderr
    assert "deplo: memory @decoder_layer: arena" in p.stderr
