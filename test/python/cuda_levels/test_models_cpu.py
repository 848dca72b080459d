"""Tiny 2-layer Llama and Qwen2 end to end on the CPU runtime, against transformers.

The whole model goes through every level to CUDA; the host function `@main` calls the outlined
`@decoder_layer` once per layer, which the CUDA executor runs recursively. Checked under several
fiber schedules, through `torch.compile(backend="deplo")` on the CPU target (fp32, and bf16
weights), and every emitted kernel must build with NVRTC for sm_90 without spills.
"""

from __future__ import annotations

import copy

import re

import numpy as np
import pytest
import torch
from cpu_cases import load_cases
from xdsl.dialects import func

from deplo.frontend.causal_lm import capture_model
from deplo.runtime.cpu import cpu_runtime_available
from deplo.tools.api import Compiled, random_inputs

pytestmark = pytest.mark.skipif(not cpu_runtime_available(), reason="no g++ for the CPU runtime")

SMALL = load_cases("models/test_models.py").SMALL
SEQ = 7


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    root = tmp_path_factory.mktemp("models")
    torch.manual_seed(0)
    LlamaForCausalLM(LlamaConfig(**SMALL)).save_pretrained(root / "llama")
    Qwen2ForCausalLM(Qwen2Config(**SMALL)).save_pretrained(root / "qwen")
    return root


@pytest.fixture(scope="module")
def compiled(checkpoints) -> dict[str, Compiled]:
    return {arch: Compiled(capture_model(str(checkpoints / arch), materialize=True, seq_len=SEQ))
            for arch in ("llama", "qwen")}


def _transformers_logits(path, ids: np.ndarray, dtype=torch.float32) -> torch.Tensor:
    from transformers import AutoModelForCausalLM

    hf = AutoModelForCausalLM.from_pretrained(path, dtype=dtype).eval()
    with torch.no_grad():
        return hf(input_ids=torch.from_numpy(ids), use_cache=False).logits


def _max_rel(got, want) -> float:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.max(np.abs(got - want)) / np.max(np.abs(want)))


@pytest.mark.parametrize("arch", ["llama", "qwen"])
def test_logits_match_transformers_under_schedules(compiled, checkpoints, arch: str) -> None:
    c = compiled[arch]
    main = next(op for op in c.module("cuda").ops
                if isinstance(op, func.FuncOp) and op.sym_name.data == "main")
    assert sum(isinstance(op, func.CallOp) for op in main.walk()) == SMALL["num_hidden_layers"]
    inputs = random_inputs(c.program, seed=3)
    want = _transformers_logits(checkpoints / arch, inputs[0]).numpy()
    exe = c.executable("cpu")
    for schedule in ("LR-fwd", "EG-rev", "LR-rnd"):
        (got,) = exe.run(inputs, schedule=schedule)
        assert np.isfinite(got).all(), schedule
        assert _max_rel(got, want) <= 1e-4, (schedule, _max_rel(got, want))


def test_every_kernel_builds_for_sm90_without_spills(compiled) -> None:
    from deplo.runtime.gpu import compile_cubin

    for arch, c in compiled.items():
        res = compile_cubin(c.cuda_source, arch="sm_90", spills_are_errors=True)
        kernels = {op.sym_name.data for op in c.module("cuda").walk() if op.name == "cuda.kernel"}
        assert set(res.kernels) == kernels, (arch, res.log)
        for name, report in res.kernels.items():
            assert (report.spill_stores, report.spill_loads) == (0, 0), (arch, name, report)


@pytest.fixture
def cpu_target(monkeypatch):
    """The default target where there is no GPU; forced to the CPU where there is one."""
    from deplo.runtime.gpu import gpu_probe

    monkeypatch.delenv("DEPLO_TARGET", raising=False)
    if gpu_probe()[0]:
        monkeypatch.setenv("DEPLO_TARGET", "cpu")
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.mark.parametrize(("arch", "dtype", "tol"), [("qwen", torch.float32, 1e-4),
                                                    ("llama", torch.bfloat16, 3e-2)])
def test_torch_compile_on_cpu(checkpoints, cpu_target, arch: str, dtype, tol: float) -> None:
    from transformers import AutoModelForCausalLM

    from deplo.tools.dynamo_backend import best_target

    assert best_target() == "cpu"
    hf = AutoModelForCausalLM.from_pretrained(checkpoints / arch, dtype=dtype).eval()
    ids = torch.randint(0, SMALL["vocab_size"], (1, SEQ), generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        want = hf(input_ids=ids).logits
        got = torch.compile(hf, backend="deplo")(input_ids=ids).logits
    assert got.dtype == want.dtype
    assert _max_rel(got.float(), want.float()) <= tol


def test_cli_run_check_on_the_default_target(checkpoints, cpu_target, capsys) -> None:
    """`deplo run ./hf-dir --check`: the CPU runtime (no GPU) against transformers."""
    from deplo.tools.deplo_main import main

    assert main(["run", str(checkpoints / "llama"), "--check"]) == 0
    out = capsys.readouterr().out
    assert "cpu: " in out and "PASS" in out, out


def test_torch_compile_returns_uint8_as_uint8(cpu_target) -> None:
    """uint8 travels in int16 (frontend/dtypes.py); the backend hands it back as uint8."""
    x = torch.randint(0, 256, (4, 5), dtype=torch.uint8)
    got = torch.compile(lambda x: (x * 3) ^ 7, backend="deplo")(x)
    assert got.dtype == torch.uint8 and torch.equal(got, (x * 3) ^ 7)


def test_torch_compile_trains_with_pytorchs_backward(cpu_target) -> None:
    """With grad enabled the outputs carry gradients (the backward is PyTorch's, recomputing the
    forward): a training step's gradients equal eager's, for parameters and inputs; an integer
    output is not differentiable; under no_grad nothing is recorded."""
    torch.manual_seed(0)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.body = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.LayerNorm(16),
                                            torch.nn.GELU(), torch.nn.Linear(16, 6))

        def forward(self, x, rows):
            y = self.body(x)
            return y.log_softmax(-1)[rows], y.argmax(-1)

    net, x, rows = Net(), torch.randn(5, 6), torch.tensor([4, 0, 4])
    grads = []
    for model in (torch.compile(net, backend="deplo"), net):
        xg = x.clone().requires_grad_()
        loss, top = model(xg, rows)
        assert loss.requires_grad and not top.requires_grad
        (loss * torch.arange(6.0)).sum().backward()
        grads.append([xg.grad, *(p.grad.clone() for p in net.parameters())])
        net.zero_grad()
    for got, want in zip(*grads):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    with torch.no_grad():
        assert not torch.compile(net, backend="deplo")(x, rows)[0].requires_grad
    loss = torch.compile(net, backend="deplo")(x.clone().requires_grad_(), rows)[0].sum()
    with pytest.raises(RuntimeError, match="first-order gradients only"):
        torch.autograd.grad(loss, net.body[0].weight, create_graph=True)


def test_torch_compile_refusals_run_eagerly_naming_the_users_modules_and_inputs(
        cpu_target, capsys) -> None:
    """A graph deplo refuses (a buffer updated in place, dropout in training mode) runs eagerly,
    as torch.compile promises eager's results, with a note on stderr in the model's names
    (Dynamo's are `L['self'].enc.1`, `L_self_buffers_acc_`)."""

    class Counter(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("acc", torch.zeros(4))

        def forward(self, x):
            self.acc.add_(x.sum(0))
            return x + self.acc

    class Outer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.5))

        def forward(self, x):
            return self.enc(x) * 2

    cases = [(Counter(), r"in place \(acc: "),
             (Outer().train(), r"dropout in training mode .* in module 'enc\.1' at .*runs eagerly"),
             (torch.nn.BatchNorm1d(4).train(), r"in place \((running_mean|num_batches_tracked)")]
    for model, message in cases:
        torch._dynamo.reset()
        twin = copy.deepcopy(model)
        x = torch.randn(3, 4)
        with torch.no_grad():
            torch.manual_seed(0)
            got = torch.compile(model, backend="deplo")(x)
            torch.manual_seed(0)
            torch.testing.assert_close(got, twin(x))
        torch.testing.assert_close(list(model.buffers()), list(twin.buffers()))
        note = capsys.readouterr().err
        assert re.search(message, note), note
        assert "L[" not in note and "L_" not in note
