"""Cold-L2 timing (runtime/gpu/timing.py) on the fake driver: every timed run is a spin, a
flush, then the program's launches in order with an event after each; the medians are per
launch and of the whole; the results stay those of the CPU runtime."""

from __future__ import annotations

import pytest
import torch
from gpu_runtime.fake_driver import FakeDriver

import deplo
from deplo.runtime.bench import (
    TINY,
    from_numpy,
    llm_suite,
    rel_err,
    time_cuda_program,
    to_numpy,
)
from deplo.runtime.gpu import timing
from deplo.runtime.gpu.timing import step_medians
from deplo.runtime.program import CudaExecutable


@pytest.fixture
def fake(monkeypatch) -> FakeDriver:
    driver = FakeDriver()
    driver.install(monkeypatch)
    return driver


@pytest.mark.parametrize("kernel", ["attention_naive", "o_proj_residual"])
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_program_timed_cold_per_launch(fake, kernel: str, dtype: str) -> None:
    (case,) = [c for c in llm_suite([dtype], models=[TINY], suite="tiny") if c.kernel == kernel]
    compiled = deplo.compile(case.fn, case.example_inputs())
    exe = CudaExecutable(compiled.module("cuda"), target="gpu")
    inputs = case.random_inputs("cpu", seed=1)
    ms, per_launch, outs = time_cuda_program(exe, [to_numpy(t) for t in inputs], 2, 3)
    launches = len(per_launch)
    # the fake's clock: 1 ms a kernel run, so each launch's median is 1 and the whole is n
    assert [p["ms"] for p in per_launch] == [1.0] * launches and ms == launches >= 1
    assert {p["kernel"] for p in per_launch} <= set(fake.signatures)
    assert fake.calls["deplo_l2_flush"] == fake.calls["deplo_spin"] == 2 + 3
    assert fake.calls["kernel runs"] == launches * (1 + 2 + 3)  # the run, warm-up, timed
    timer = {b.ptr for b in (timing.cold_timer()._buffer, timing.cold_timer()._sink)}
    assert set(fake.memory) == timer  # the program's device copy is freed; the timer's stays
    ref = case.fn(*[t.double() for t in inputs])
    err = rel_err(from_numpy(outs[0], case.torch_dtype), ref)
    assert err < (1e-5 if dtype == "fp32" else 2e-2), err


def test_flush_buffer_is_twice_the_l2(fake) -> None:
    from deplo.runtime.gpu import timing

    timer = timing.cold_timer()
    assert timer.flush_bytes == 2 * (1 << 16)
    assert timer._buffer.nbytes == timer.flush_bytes


def test_step_medians() -> None:
    # marks are cumulative: steps of (1, 2), (2, 1), (1, 3) -> medians 1 and 2; whole 3
    assert step_medians([[1.0, 3.0], [2.0, 3.0], [1.0, 4.0]]) == (3.0, [1.0, 2.0])
    with pytest.raises(ValueError, match="no timed steps"):
        step_medians([])


def test_time_needs_a_first_run(fake) -> None:
    compiled = deplo.compile(lambda a: a * 2, (torch.randn(8),))
    exe = CudaExecutable(compiled.module("cuda"), target="gpu")
    with pytest.raises(RuntimeError, match="first run"):
        exe.resident(0).time(1, 1)


def test_a_run_the_spin_did_not_cover_is_dropped(fake) -> None:
    compiled = deplo.compile(lambda a: torch.relu(a) * 2, (torch.randn(64),))
    exe = CudaExecutable(compiled.module("cuda"), target="gpu")
    exe.run([torch.randn(64).numpy()])
    fake.ready_answers = 2  # two runs started before the host had enqueued them
    ms, per_step = exe.resident(0).time(0, 3)
    assert fake.calls["deplo_spin"] == 2 + 3 and ms == len(per_step)


def test_a_host_that_never_gets_ahead_still_gets_timed(fake) -> None:
    """A step that blocks the host (an uncapturable torch call that synchronizes): the spin is
    doubled SPIN_DOUBLINGS times, then the runs count as they are; no hang."""
    from deplo.runtime.gpu.timing import SPIN_DOUBLINGS

    compiled = deplo.compile(lambda a: torch.relu(a) * 2, (torch.randn(64),))
    exe = CudaExecutable(compiled.module("cuda"), target="gpu")
    exe.run([torch.randn(64).numpy()])
    fake.ready_answers = 10**6
    ms, per_step = exe.resident(0).time(0, 3)
    assert fake.calls["deplo_spin"] == SPIN_DOUBLINGS + 3 and ms == len(per_step)


def test_a_program_without_launches_takes_no_time(fake) -> None:
    compiled = deplo.compile(lambda a: a, (torch.randn(8),))
    exe = CudaExecutable(compiled.module("cuda"), target="gpu")
    x = torch.randn(8).numpy()
    ms, per_launch, (out,) = time_cuda_program(exe, [x], 1, 3)
    assert (ms, per_launch) == (0.0, []) and (out == x).all()
    assert fake.calls["deplo_spin"] == 0
