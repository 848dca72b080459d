"""`deplo bisect`: after every pass the program runs on the CPU (interpreters, then the CPU
runtime from tile level down) and the first pass whose result no longer matches is named. A
broken pass is injected by monkeypatching: the tool must name exactly that pass."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from xdsl.dialects import arith
from xdsl.rewriter import Rewriter

import deplo
from deplo.tools.api import random_inputs
from deplo.tools.bisect import bisect
from deplo.tools.deplo_main import main

EXPR = "torch.softmax(torch.randn(3, 40), -1) * 2.0"


@dataclass
class Run:
    result: object
    steps: list[str]


def _bisect(spec: str = "to-cuda") -> Run:
    c = deplo.compile(EXPR, seed=0)
    inputs = random_inputs(c.program, seed=1)
    ref = c.program.reference(inputs[: len(c.program.example_inputs)])
    result = bisect(c.program.module, inputs, ref, spec)
    return Run(result, [s.after for s in result.steps])


def _flip_first_add(module) -> None:
    """The injected bug: the first float add of the first kernel becomes a subtraction."""
    for op in module.walk():
        if isinstance(op, arith.AddfOp):
            Rewriter.replace_op(op, arith.SubfOp(op.lhs, op.rhs))
            return


def _break(monkeypatch, cls) -> None:
    original = cls.apply

    def broken(self, ctx, module):
        original(self, ctx, module)
        _flip_first_add(module)

    monkeypatch.setattr(cls, "apply", broken)


def test_clean_pipeline_matches_everywhere() -> None:
    run = _bisect()
    assert run.result.first_bad is None
    hows = {s.after: s.how for s in run.result.steps}
    assert hows["loop-simplify"] == "interp" and hows["loop-to-tile"] == "cpu"
    assert hows["kernel-to-cuda"] == "cpu"


def test_names_a_broken_loop_pass(monkeypatch) -> None:
    from deplo.passes.loop.simplify import LoopSimplifyPass

    _break(monkeypatch, LoopSimplifyPass)
    run = _bisect()
    assert run.result.first_bad.after == "loop-simplify"
    assert run.steps[-1] == "loop-simplify"  # stops at the first mismatch


def test_names_a_broken_tile_pass(monkeypatch) -> None:
    """A tile-level step runs by lowering a copy the rest of the way to CUDA on the CPU."""
    from deplo.passes.tile.map_threads import TileMapThreadsPass

    _break(monkeypatch, TileMapThreadsPass)
    run = _bisect()
    bad = run.result.first_bad
    assert bad.after == "tile-map-threads" and bad.how == "cpu"
    assert all(s.ok for s in run.result.steps[:-1])


def test_names_a_broken_lowering(monkeypatch) -> None:
    from deplo.dialects.tir import ElementwiseKind
    from deplo.lowering import scalar_ops

    monkeypatch.setitem(scalar_ops.ELEMENTWISE, ElementwiseKind.MUL,
                        lambda b, x, y: b.insert(arith.DivfOp(x, y)).result)
    run = _bisect("to-loop")
    assert run.result.first_bad.after == "tir-to-loop"


def test_a_crashing_pass_is_named(monkeypatch) -> None:
    from deplo.passes.loop.merge_reductions import LoopMergeReductionsPass

    def crash(self, ctx, module):
        raise RuntimeError("boom")

    monkeypatch.setattr(LoopMergeReductionsPass, "apply", crash)
    bad = _bisect("to-loop").result.first_bad
    assert bad.after == "loop-merge-reductions" and "boom" in bad.error


def test_cli(capsys) -> None:
    assert main(["bisect", "-c", EXPR, "-p", "to-loop"]) == 0
    out = capsys.readouterr()
    assert "every pass matches" in out.out
    assert "loop-online-softmax" in out.err and "PASS" in out.err


@pytest.mark.parametrize("spec", ["kernel-to-cuda", "loop-to-tile,tile-plan"])
def test_cli_refuses_a_conversion_the_ir_has_not_reached(spec, capsys) -> None:
    """As deplo-opt does: the torch-level program cannot run kernel-to-cuda (it would change
    nothing and every step would "match")."""
    assert main(["bisect", "-c", EXPR, "-p", spec]) == 1
    err = capsys.readouterr().err
    assert "converts" in err and "the IR is at the torch level there" in err
    assert "every pass matches" not in err


def test_cli_names_the_pass(monkeypatch, capsys) -> None:
    from deplo.passes.loop.fuse import LoopFusePass

    _break(monkeypatch, LoopFusePass)
    assert main(["bisect", "-c", EXPR, "-p", "to-loop"]) == 1
    assert "first mismatch after pass 'loop-fuse'" in capsys.readouterr().out


@pytest.mark.parametrize("arch", ["llama"])
def test_tiny_model_layer(tmp_path, arch: str) -> None:
    """A whole tiny model, pass by pass to CUDA on the CPU runtime."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from deplo.frontend.causal_lm import capture_model

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=32, hidden_size=32, intermediate_size=48, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=16)
    LlamaForCausalLM(cfg).save_pretrained(tmp_path / arch)
    program = capture_model(str(tmp_path / arch), materialize=True, seq_len=5)
    inputs = random_inputs(program, seed=0)
    ref = program.reference(inputs[: len(program.example_inputs)])
    result = bisect(program.module, inputs, ref)
    assert result.first_bad is None, [s.line() for s in result.steps if not s.ok]


def test_bisect_judges_bf16_as_run_check_does(capsys) -> None:
    """A bf16 program's outputs travel as float32: bisect holds them to bf16's tolerance, as
    `deplo run --check` does (before, to fp32's: the captured program itself 'failed')."""
    expr = ("F.scaled_dot_product_attention(*[torch.randn(1,2,16,32,dtype=torch.bfloat16)]*3,"
            " is_causal=True)")
    assert main(["bisect", "-c", expr, "-p", "to-loop"]) == 0
    err = capsys.readouterr().err
    assert "(tol 1e-02)  PASS" in err and "FAIL" not in err
