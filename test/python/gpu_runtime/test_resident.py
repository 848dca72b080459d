"""The program kept on the device between runs (runtime/gpu/resident.py), on a fake driver that
runs every kernel on the CPU runtime (fake_driver.py): results equal the CPU runtime's, weights
cross to the device once, intermediates live in one device arena, the second run on replays a
CUDA graph; `deplo generate --target gpu` gives the CPU runtime's ids this way, its KV cache
written on the device."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gpu_runtime.fake_driver import FakeDriver

from deplo.tools.api import Compiled, capture


@pytest.fixture
def fake(monkeypatch) -> FakeDriver:
    driver = FakeDriver()
    driver.install(monkeypatch)
    return driver


def test_runs_stay_on_the_device(fake) -> None:
    model = torch.nn.Sequential(torch.nn.Linear(32, 48), torch.nn.GELU(), torch.nn.Linear(48, 16))
    program = capture(model, (torch.randn(4, 32),))
    compiled = Compiled(program)
    gpu, cpu = compiled.executable("gpu"), compiled.executable("cpu")
    weights = [np.asarray(p) for p in program.params]
    kept = sum(w.nbytes for w in weights)
    for run in range(4):
        x = np.random.default_rng(run).standard_normal((4, 32)).astype(np.float32)
        (got,) = gpu.run([x, *weights], keep=len(weights))
        (want,) = cpu.run([x, *weights])
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
        assert fake.htod_bytes == kept + (run + 1) * x.nbytes  # weights once, x each run
    r = gpu.resident(len(weights))
    launches = len(r.steps)
    assert fake.calls["kernel runs"] == 4 * launches
    assert fake.calls["cuGraphLaunch"] == 3 and r.replays_graph  # runs 2-4 replay a graph
    plan = gpu.plans["main"]
    assert plan.peak and len(fake.memory) == len(weights) + 1 + 1 + 1  # + x, the arena, out
    r.close()
    assert not fake.memory


def test_a_fresh_keep_rebinds(fake) -> None:
    compiled = Compiled(capture(lambda a, b: a @ b + 1, (torch.randn(8, 16), torch.randn(16, 4))))
    gpu = compiled.executable("gpu")
    a, b = np.ones((8, 16), np.float32), np.full((16, 4), 0.5, np.float32)
    assert np.all(gpu.run([a, b])[0] == 9.0)
    b2 = np.full((16, 4), 0.25, np.float32)
    assert np.all(gpu.run([a, b2])[0] == 5.0)  # keep=0: every input uploaded again
    assert np.all(gpu.run([a, b2], keep=1)[0] == 5.0)


def test_generate_on_the_gpu_path(fake, tmp_path) -> None:
    from transformers import LlamaConfig, LlamaForCausalLM

    from deplo.tools.generate import generate

    torch.manual_seed(3)
    cfg = LlamaConfig(vocab_size=96, hidden_size=64, intermediate_size=112, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32,
                      eos_token_id=None)
    LlamaForCausalLM(cfg).save_pretrained(tmp_path)
    want = generate(str(tmp_path), [5, 17, 3], 5, target="cpu")
    got = generate(str(tmp_path), [5, 17, 3], 5, target="gpu", dtype="fp32")
    assert got.new == want.new and got.kv_cache
    assert "kept on the device" in got.device and "replayed as one CUDA graph" in got.device
    weights = sum(p.numel() * 4 for p in LlamaForCausalLM(cfg).parameters())
    assert fake.htod_bytes < 1.5 * weights  # 7 steps: the weights crossed once
    # the KV cache stays too: each step writes its slot on the device, 4 caches (2 layers x k, v)
    assert fake.calls["cuMemcpy2DAsync"] == 4 * fake.calls["cuStreamSynchronize"]


def test_a_plain_launch_copies_host_arrays_in_and_back(fake) -> None:
    """GpuModule.launch (no resident program): host arrays copied to the device, the written one
    copied back in place, every copy freed."""
    from deplo.runtime.gpu import GpuModule
    from deplo.runtime.program import CudaExecutable

    exe = CudaExecutable(Compiled(capture("torch.softmax(torch.randn(4,64),-1)")).module("cuda"))
    (la,) = exe.plan
    x = np.random.default_rng(0).standard_normal((4, 64)).astype(np.float32)
    out = np.zeros_like(x)
    GpuModule(exe.source.encode(), exe.signatures).launch(la.kernel, la.grid, la.block,
                                                          [x, out], smem_bytes=la.smem)
    np.testing.assert_allclose(out, torch.softmax(torch.from_numpy(x), -1).numpy(), atol=1e-6)
    assert fake.htod_bytes == 2 * x.nbytes and not fake.memory
