"""gpu_probe and GpuModule: clean failure without a driver; launch/time on a real GPU."""

from pathlib import Path

import numpy as np
import pytest

from deplo.runtime.gpu import GpuModule, NoGpuError, compile_cubin, device_arch, gpu_probe
from deplo.runtime.gpu.driver import _dim3, _scalar

KERNELS = Path(__file__).parent / "kernels"
HAS_GPU, REASON = gpu_probe()
SIGNATURES = {"block_sum": ["const float* __restrict__", "float* __restrict__", "int"]}


def test_probe_never_raises_and_is_one_line():
    ok, reason = gpu_probe()
    assert isinstance(ok, bool)
    assert reason and "\n" not in reason


@pytest.mark.skipif(HAS_GPU, reason="a GPU is present")
def test_no_gpu_is_a_clean_error():
    assert gpu_probe() == (False, "no NVIDIA driver (libcuda.so.1 not found)")
    with pytest.raises(NoGpuError) as err:
        GpuModule(b"\x7fELF", signatures=SIGNATURES)
    assert str(err.value) == REASON
    with pytest.raises(NoGpuError, match="no NVIDIA driver"):
        device_arch()  # the probe's line, not a driver error about cuInit


def test_launch_helpers():
    assert _dim3(4) == (4, 1, 1)
    assert _dim3((2, 3)) == (2, 3, 1)
    with pytest.raises(ValueError):
        _dim3((1, 0))
    assert _scalar("int", np.int64(7)).value == 7
    assert _scalar("float", 0.5).value == 0.5
    assert _scalar("__half", 1.0).value == 0x3C00
    assert _scalar("__nv_bfloat16", 1.0).value == 0x3F80


@pytest.fixture(scope="module")
def block_sum_module():
    if not HAS_GPU:
        pytest.skip(REASON)
    res = compile_cubin((KERNELS / "block_sum.cu").read_text(), arch=device_arch())
    with GpuModule(res.cubin, signatures=SIGNATURES) as mod:
        yield mod


@pytest.mark.gpu
def test_block_sum_matches_numpy(block_sum_module):
    rng = np.random.default_rng(0)
    n, block = 10_000, 256
    x = rng.standard_normal(n).astype(np.float32)
    grid = (n + block - 1) // block
    out = np.zeros(grid, np.float32)
    block_sum_module.launch("block_sum", grid, block, [x, out, n])
    want = np.pad(x, (0, grid * block - n)).reshape(grid, block).sum(axis=1)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-4)


@pytest.mark.gpu
def test_block_sum_inferred_signature_and_time(block_sum_module):
    x = np.ones(1 << 20, np.float32)
    out = np.zeros((1 << 20) // 256, np.float32)
    ms = block_sum_module.time("block_sum", out.size, 256, [x, out, x.size], iters=5)
    assert ms > 0
    np.testing.assert_array_equal(out, 256.0)
    mod = GpuModule(block_sum_module_cubin())  # no signatures: types inferred from the args
    out2 = np.zeros_like(out)
    mod.launch("block_sum", (out.size,), (256,), [x, out2, x.size])
    np.testing.assert_array_equal(out2, 256.0)


def block_sum_module_cubin() -> bytes:
    return compile_cubin((KERNELS / "block_sum.cu").read_text(), arch=device_arch()).cubin


@pytest.mark.gpu
def test_cold_timing_of_a_program_and_of_torch():
    """The program timed whole from a flushed L2, an event between launches; torch alike."""
    import torch

    import deplo
    from deplo.runtime.bench import time_cuda_program, time_torch
    from deplo.runtime.program import CudaExecutable

    if not HAS_GPU:
        pytest.skip(REASON)
    a, b = torch.randn(256, 512), torch.randn(512, 128)
    compiled = deplo.compile(lambda x, w: torch.softmax(torch.relu(x @ w), -1), (a, b))
    exe = CudaExecutable(compiled.module("cuda"), target="gpu", arch=device_arch())
    ms, per_launch, (out,) = time_cuda_program(exe, [a.numpy(), b.numpy()], 2, 5)
    assert len(per_launch) == len(exe.plan) >= 1
    assert 0 < ms < 1e3 and all(0 < p["ms"] <= ms * 2 for p in per_launch)
    np.testing.assert_allclose(out, torch.softmax(torch.relu(a @ b), -1).numpy(), rtol=1e-4,
                               atol=1e-6)
    if torch.cuda.is_available():
        assert 0 < time_torch(torch.matmul, [a.cuda(), b.cuda()], 2, 5) < 1e3
