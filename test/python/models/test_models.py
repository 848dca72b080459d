"""Whole models through Torch IR, Tensor IR and Loop IR, checked against transformers.

Small configs of both architectures are built with transformers and saved as HF directories (a
single safetensors file for Llama, a sharded checkpoint with an index for Qwen2, whose q/k/v
projections carry biases); the interpreters must match transformers' own forward on the same
random input ids.
"""

from __future__ import annotations

import copy
import json
import re

import numpy as np
import pytest
import torch
from xdsl.dialects import func

from deplo.frontend.causal_lm import capture_model
from deplo.frontend.errors import FrontendError
from deplo.tools.api import Compiled, random_inputs

SMALL = {"vocab_size": 96, "hidden_size": 64, "intermediate_size": 112, "num_hidden_layers": 2,
         "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 64}


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    root = tmp_path_factory.mktemp("models")
    torch.manual_seed(0)
    LlamaForCausalLM(LlamaConfig(**SMALL)).save_pretrained(root / "llama")
    Qwen2ForCausalLM(Qwen2Config(**SMALL)).save_pretrained(root / "qwen", max_shard_size="60KB")
    assert (root / "qwen" / "model.safetensors.index.json").is_file()
    return root


@pytest.mark.parametrize("arch", ["llama", "qwen"])
@pytest.mark.parametrize("level", ["torch", "tensor"])
def test_logits_match_transformers(checkpoints, arch: str, level: str) -> None:
    program = capture_model(str(checkpoints / arch), materialize=True, seq_len=7)
    result = Compiled(program).check(target="interp", level=level, seed=3)
    assert result.ok and result.max_rel <= 1e-4, result.line()


@pytest.mark.parametrize("arch", ["llama", "qwen"])
def test_tied_embeddings_and_odd_heads(tmp_path, arch: str) -> None:
    """Published checkpoints tie lm_head to embed_tokens (Qwen2.5-0.5B, Llama-3.2-1B): the
    safetensors file then holds the weight once, under the embedding's name."""
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    config, model = {"llama": (LlamaConfig, LlamaForCausalLM),
                     "qwen": (Qwen2Config, Qwen2ForCausalLM)}[arch]
    torch.manual_seed(1)
    cfg = {**SMALL, "hidden_size": 96, "num_attention_heads": 6, "num_key_value_heads": 3,
           "tie_word_embeddings": True}
    model(config(**cfg)).save_pretrained(tmp_path)
    program = capture_model(str(tmp_path), materialize=True, seq_len=5)
    assert "lm_head.weight" in program.param_names
    result = Compiled(program).check(target="interp", level="tensor", seed=2)
    assert result.ok and result.max_rel <= 1e-4, result.line()


def test_reference_is_transformers_forward(checkpoints) -> None:
    from transformers import AutoModelForCausalLM

    program = capture_model(str(checkpoints / "qwen"), materialize=True, seq_len=5)
    ids = random_inputs(program, seed=1)[0]
    hf = AutoModelForCausalLM.from_pretrained(checkpoints / "qwen").eval()
    with torch.no_grad():
        want = hf(input_ids=torch.from_numpy(ids)).logits.numpy()
    np.testing.assert_allclose(program.reference([ids])[0], want, rtol=1e-5, atol=1e-5)
    assert ids.max() > 1, "input ids must be drawn over the vocabulary"


def test_one_layer_many_calls(checkpoints) -> None:
    program = capture_model(str(checkpoints / "llama"), materialize=True)
    funcs = {op.sym_name.data: op for op in program.module.ops if isinstance(op, func.FuncOp)}
    assert set(funcs) == {"decoder_layer", "main"}
    calls = [op for op in funcs["main"].walk() if isinstance(op, func.CallOp)]
    assert len(calls) == 2 and all(c.callee.root_reference.data == "decoder_layer" for c in calls)
    names = [a.name_hint for a in funcs["decoder_layer"].body.block.args]
    assert "self_attn.q_proj.weight" in names
    text = str(program.module)
    assert "is_causal" in text and "cumsum" not in text


def test_layer_and_truncation(checkpoints) -> None:
    one = capture_model(str(checkpoints / "llama"), layer=1, materialize=True)
    assert one.input_names == ["hidden"]
    assert Compiled(one).check(target="interp", level="tensor").ok
    with pytest.raises(FrontendError, match="--layer 5"):
        capture_model(str(checkpoints / "llama"), layer=5)
    with pytest.raises(FrontendError, match="--num-layers 9"):
        capture_model(str(checkpoints / "llama"), num_layers=9)


def test_loop_ir_of_a_whole_model(checkpoints) -> None:
    program = capture_model(str(checkpoints / "llama"), materialize=True, seq_len=4)
    compiled = Compiled(program)
    layer = next(op for op in compiled.module("loop").ops
                 if isinstance(op, func.FuncOp) and op.sym_name.data == "decoder_layer")
    launches = [op for op in layer.walk() if op.name == "loop.launch"]
    assert 0 < len(launches) < 40
    assert compiled.check(target="interp", level="loop", seed=2).ok


def test_known_id_offline_builds_on_meta() -> None:
    program = capture_model("TinyLlama/TinyLlama-1.1B-Chat-v1.0", num_layers=2)
    main = next(op for op in program.module.ops if isinstance(op, func.FuncOp)
                and op.sym_name.data == "main")
    assert "tensor<1x8x32000xf32>" in str(main.function_type)
    assert any("built-in config table" in n for n in program.notes)


def test_missing_model_lists_what_was_tried() -> None:
    with pytest.raises(FrontendError, match="not found offline; looked for") as e:
        capture_model("nobody/no-such-model")
    assert "built-in configs" in str(e.value) and "snapshots" in str(e.value)


def test_corrupt_safetensors_is_a_clear_error(checkpoints, tmp_path) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "config.json").write_text((checkpoints / "llama" / "config.json").read_text())
    (bad / "model.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(FrontendError, match="cannot read safetensors"):
        capture_model(str(bad), materialize=True)


def test_config_that_does_not_match_weights(checkpoints, tmp_path) -> None:
    bad = tmp_path / "mismatch"
    bad.mkdir()
    cfg = json.loads((checkpoints / "llama" / "config.json").read_text())
    cfg["intermediate_size"] = 100
    (bad / "config.json").write_text(json.dumps(cfg))
    (bad / "model.safetensors").write_bytes((checkpoints / "llama" / "model.safetensors").read_bytes())
    with pytest.raises(FrontendError, match="does not match the config"):
        capture_model(str(bad), materialize=True)


def test_torch_compile_backend_small_module() -> None:
    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = torch.nn.RMSNorm(48)
            self.w = torch.nn.Parameter(torch.randn(48, 24))

        def forward(self, x):
            return torch.relu(torch.matmul(self.norm(x), self.w))

    m = Block().eval()
    x = torch.randn(5, 48)
    with torch.no_grad():
        want = m(x)
        got = torch.compile(m, backend="deplo")(x)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dynamic", [None, True])
def test_torch_compile_backend_new_shapes(dynamic) -> None:
    """A second shape makes Dynamo hand over symbolic sizes (automatic dynamic shapes; at once
    with dynamic=True): each call's concrete shapes compile, once each."""
    m = torch.nn.Sequential(torch.nn.Linear(16, 24), torch.nn.GELU(), torch.nn.LayerNorm(24))
    m = m.eval()
    torch._dynamo.reset()
    f = torch.compile(m, backend="deplo", dynamic=dynamic)
    with torch.no_grad():
        for shape in [(3, 16), (5, 16), (2, 7, 16), (5, 16)]:
            x = torch.randn(*shape)
            torch.testing.assert_close(f(x), m(x), rtol=1e-5, atol=1e-5)
        xb = torch.randn(4, 16, dtype=torch.bfloat16)
        mb = m.to(torch.bfloat16)
        torch.testing.assert_close(torch.compile(mb, backend="deplo", dynamic=dynamic)(xb),
                                   mb(xb), rtol=1e-2, atol=1e-2)


def test_torch_compile_backend_float_arguments_and_autocast() -> None:
    """A Python float Dynamo stops specializing (its second value: read by .item()) compiles
    per value; an autocast region (a higher-order op after export) runs as its casts."""
    def scaled(x, s):
        return torch.relu(x) * s

    def autocast(x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            y = torch.mm(x, x.t())
        return y.float().softmax(-1)

    torch._dynamo.reset()
    x = torch.randn(4, 8)
    f = torch.compile(scaled, backend="deplo")
    for s in (2.0, 3.0, 4.5):
        torch.testing.assert_close(f(x, s), scaled(x, s), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(torch.compile(autocast, backend="deplo")(x), autocast(x),
                               rtol=1e-2, atol=1e-2)


def test_torch_compile_backend_autocast_grad_modes_and_optimizer_steps(capsys) -> None:
    """An autocast region's output keeps its dtype; a module called under the caller's autocast
    computes as eager does there, gradients too (its backward recomputes in the region); a
    `no_grad` block inside a training forward compiles (and stops the gradient, as in eager);
    an input marked dynamic compiles at its size; an optimizer step, which writes its state in
    place, runs eagerly, said once (deplo would have dropped the update)."""
    w = torch.randn(4, 4, generator=torch.Generator().manual_seed(0))

    def region(x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            y = x @ w
        return y.float(), y

    torch._dynamo.reset()
    x = torch.randn(3, 4)
    got, want = torch.compile(region, backend="deplo")(x), region(x)
    assert [t.dtype for t in got] == [torch.float32, torch.bfloat16]
    torch.testing.assert_close(got, want)

    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    twin = copy.deepcopy(m)
    cm = torch.compile(m, backend="deplo")
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out, ref = cm(x), twin(x)
        assert out.dtype == torch.bfloat16
        out.float().pow(2).mean().backward()
        ref.float().pow(2).mean().backward()
    torch.testing.assert_close(out, ref)
    torch.testing.assert_close(m[0].weight.grad, twin[0].weight.grad)

    def target(x):
        with torch.no_grad():
            y = x * 2
        return y + x

    xg = torch.randn(3, requires_grad=True)
    torch.compile(target, backend="deplo")(xg).sum().backward()
    assert torch.equal(xg.grad, torch.ones(3))
    outs = torch.compile(lambda t: (t.detach() * 2, t * 3), backend="deplo")(xg)
    assert [o.requires_grad for o in outs] == [False, True]  # (as eager's)
    marked = torch.randn(2, 5)
    torch._dynamo.mark_dynamic(marked, 0)
    torch.testing.assert_close(torch.compile(lambda t: t.softmax(-1), backend="deplo")(marked),
                               marked.softmax(-1))

    for opt_class in (torch.optim.SGD, torch.optim.Adam):
        torch._dynamo.reset()
        a, b = torch.nn.Linear(3, 3), torch.nn.Linear(3, 3)
        b.load_state_dict(a.state_dict())
        oa, ob = opt_class(a.parameters(), lr=0.1), opt_class(b.parameters(), lr=0.1)
        step = torch.compile(oa.step, backend="deplo")
        for _ in range(2):
            batch = torch.randn(2, 3)
            for model, opt in ((a, oa), (b, ob)):
                opt.zero_grad()
                model(batch).sum().backward()
            step()
            ob.step()
        torch.testing.assert_close(a.weight, b.weight)
    lin = torch.nn.Linear(2, 2)
    lin(torch.ones(1, 2)).sum().backward()

    @torch.no_grad()
    def by_hand():  # (through a view and by setitem: the same writes)
        lin.weight.view(-1).sub_(lin.weight.grad.view(-1), alpha=0.5)
        lin.bias[...] = lin.bias - 0.5 * lin.bias.grad

    want = [(p - 0.5 * p.grad).detach() for p in (lin.weight, lin.bias)]
    torch._dynamo.reset()
    torch.compile(by_hand, backend="deplo")()
    torch.testing.assert_close([lin.weight, lin.bias], want)
    assert "writes 2 tensor(s) of its state or inputs in place" in capsys.readouterr().err


def test_torch_compile_backend_runs_a_training_mode_batch_norm_eagerly(capsys) -> None:
    """Dynamo passes a training-mode BatchNorm's statistics as inputs it updates: deplo would
    drop the update, so that graph runs eagerly, said with the buffers' names in the model (an
    input the caller passes and the graph updates the same); in eval mode it compiles."""
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU())
    twin = copy.deepcopy(m)
    torch._dynamo.reset()
    cm = torch.compile(m, backend="deplo")
    x = torch.randn(2, 3, 8, 8)
    for _ in range(2):
        torch.testing.assert_close(cm(x), twin(x))
    for a, b in ((m[1].running_mean, twin[1].running_mean), (m[1].running_var,
                 twin[1].running_var), (m[1].num_batches_tracked, twin[1].num_batches_tracked)):
        torch.testing.assert_close(a, b)
    err = capsys.readouterr().err
    assert re.search(r"writes \d tensor\(s\) of its state or inputs in place \(1\.(running_mean|"
                     r"running_var|num_batches_tracked)", err), err

    def bump(t):
        t.add_(1)
        return t * 2

    a, b = torch.randn(3), torch.randn(3)
    b.copy_(a)
    torch.testing.assert_close(torch.compile(bump, backend="deplo")(a), bump(b))
    torch.testing.assert_close(a, b)
    assert "in place (t:" in capsys.readouterr().err
    m.eval(), twin.eval()
    torch._dynamo.reset()
    torch.testing.assert_close(torch.compile(m, backend="deplo")(x), twin(x))
    assert "runs eagerly" not in capsys.readouterr().err


def test_torch_compile_backend_small_llm(checkpoints, monkeypatch) -> None:
    from transformers import AutoModelForCausalLM

    monkeypatch.setenv("DEPLO_TARGET", "interp")
    hf = AutoModelForCausalLM.from_pretrained(checkpoints / "llama").eval()
    ids = torch.randint(0, SMALL["vocab_size"], (1, 6))
    with torch.no_grad():
        want = hf(input_ids=ids, use_cache=False).logits
        torch._dynamo.reset()
        got = torch.compile(lambda t: hf(input_ids=t, use_cache=False).logits, backend="deplo")(ids)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)


def test_kernels_name_the_modules_whose_weights_they_read(checkpoints) -> None:
    from deplo.tools.profile import profile

    compiled = Compiled(capture_model(str(checkpoints / "llama"), seq_len=4))
    src = compiled.cuda_source
    # q, k and v: one launch (kernel-horizontal-fuse), each with the norm's statistic
    assert "reads the weights of input_layernorm, self_attn.q_proj, self_attn.k_proj, " \
        "self_attn.v_proj" in src
    assert "reads the weights of post_attention_layernorm, mlp.gate_proj, mlp.up_proj" in src
    rows = {r["name"]: r["modules"] for r in profile(compiled)["kernels"]}
    assert ["self_attn.o_proj"] in rows.values()
    # and the torch ops they implement, by module, with the model's source lines
    assert re.search(r"// linear_mean_\d(_linear_mean_\d)* implements:\n//   input_layernorm: mean, "
                     r"pow, add, rsqrt, mul \(modeling_llama\.py:\d+-\d+\)\n//   self_attn\.q_proj: "
                     r"linear \(modeling_llama\.py:\d+\)\n//   self_attn\.k_proj: linear", src)
    assert re.search(r"//   self_attn: .*scaled_dot_product_attention \(modeling_llama", src)
    assert "//   lm_head: linear (modeling_llama.py:" in src
    assert "//   model.embed_tokens: embedding (modeling_llama.py:" in src


def test_a_bf16_checkpoint_compiles_in_the_dtype_asked_for(tmp_path) -> None:
    """`--dtype` sets a model's weights and activations; without it a bf16 checkpoint runs in
    fp32 and says so (an expression sets its own dtype: --dtype is a usage error there)."""
    from test_cli import run
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=96, hidden_size=64, intermediate_size=112, num_hidden_layers=1,
                      num_attention_heads=4, num_key_value_heads=2, dtype="bfloat16")
    LlamaForCausalLM(cfg).to(torch.bfloat16).save_pretrained(tmp_path)
    p = run("deplo", "run", str(tmp_path), "--check", "--seq-len", "5")
    assert p.returncode == 0 and "(tol 1e-05)  PASS" in p.stdout, p.stdout + p.stderr
    assert "the checkpoint stores bf16; compiled in fp32 (--dtype bf16 keeps it)" in p.stderr
    p = run("deplo", "run", str(tmp_path), "--check", "--seq-len", "5", "--dtype", "bf16")
    assert p.returncode == 0 and "(tol 1e-02)" in p.stdout and "PASS" in p.stdout, p.stdout
    ir = run("deplo", "compile", str(tmp_path), "--dtype", "bf16", "--ir", "torch").stdout
    assert "tensor<96x64xbf16>" in ir
    # one layer: its input a bf16 hidden state (not ids), as the example input too
    p = run("deplo", "run", str(tmp_path), "--layer", "0", "--check", "--seq-len", "5",
            "--dtype", "bf16")
    assert p.returncode == 0 and "(tol 1e-02)" in p.stdout and "PASS" in p.stdout, \
        p.stdout + p.stderr
    p = run("deplo", "compile", "-c", "torch.randn(4) * 2", "--dtype", "bf16")
    assert p.returncode != 0 and "--dtype is for a MODEL" in p.stderr
    p = run("deplo", "compile", "-c", "torch.randn(4) * 2", "--layer", "0", "--seq-len", "5")
    assert p.returncode != 0 and "--layer, --seq-len: for a MODEL" in p.stderr  # not ignored


def test_the_float64_second_opinion_leaves_the_model_as_it_was(tmp_path) -> None:
    """Program.reference(float64=True) widens the module in place: every parameter and buffer
    (a float32 rotary table beside bf16 weights) is narrowed back, eager's answer unchanged."""
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(vocab_size=96, hidden_size=64, intermediate_size=112, num_hidden_layers=1,
                      num_attention_heads=4, num_key_value_heads=2)
    LlamaForCausalLM(cfg).save_pretrained(tmp_path)
    program = capture_model(str(tmp_path), seq_len=5, materialize=True, dtype=torch.bfloat16)
    module = program.torch_module
    dtypes = {n: t.dtype for n, t in (*module.named_parameters(), *module.named_buffers())}
    assert {torch.bfloat16, torch.float32} <= set(dtypes.values())
    ids = random_inputs(program, 0)[: len(program.example_inputs)]
    eager = program.reference(ids)
    exact = program.reference(ids, float64=True)
    assert exact[0].dtype == np.float64 and 0 < np.abs(exact[0] - eager[0]).max() < 0.1
    assert dtypes == {n: t.dtype for n, t in (*module.named_parameters(), *module.named_buffers())}
    assert np.array_equal(program.reference(ids)[0], eager[0])


def test_a_causal_lm_compiles_as_given_and_checks_its_ids(checkpoints) -> None:
    """`deplo.compile(hf_model, ids)` as a user writes it: the forward would return a KV cache
    object (not tensors), so use_cache is off while deplo exports and runs the reference (and
    on again after); the logits come back in the model's output class, and an id past the
    vocabulary is eager's IndexError, naming the embedding, not a read past the table."""
    from transformers import AutoModelForCausalLM

    import deplo

    hf = AutoModelForCausalLM.from_pretrained(checkpoints / "llama").eval()
    ids = torch.randint(0, SMALL["vocab_size"], (1, 5), generator=torch.Generator().manual_seed(2))
    c = deplo.compile(hf, ids)
    assert hf.config.use_cache is True
    with torch.no_grad():
        want = hf(input_ids=ids, use_cache=False).logits
    torch.testing.assert_close(c(ids).logits, want, rtol=1e-4, atol=1e-4)
    with pytest.raises(IndexError, match=r"index 96 .*model\.embed_tokens.*valid 0\.\.95"):
        c(torch.tensor([[1, 2, 96, 3, 4]]))
