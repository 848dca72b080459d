"""The two seed programs at every executable level against PyTorch, on fresh random inputs.

Levels: the numpy interpreters at torch, tensor and loop IR, and the emitted `.cu` on the CPU
runtime under every default fiber schedule. Shapes include non-powers of two.
"""

from __future__ import annotations

import numpy as np
import pytest

import deplo
from deplo.tools.api import random_inputs

RMS = "torch.nn.RMSNorm({n})(torch.randn({b},{r},{n}))"
MM = "torch.relu(torch.matmul(torch.randn({m},{k}) + torch.randn({k}), torch.randn({k},{n})))"

PROGRAMS = {
    "rms_1x32x2048": RMS.format(b=1, r=32, n=2048),
    "rms_2x3x1000": RMS.format(b=2, r=3, n=1000),
    "rms_1x1x40": RMS.format(b=1, r=1, n=40),
    "mm_16x64x16": MM.format(m=16, k=64, n=16),
    "mm_13x70x9": MM.format(m=13, k=70, n=9),
    "mm_3x300x5": MM.format(m=3, k=300, n=5),
}


@pytest.fixture(scope="module")
def compiled():
    return {name: deplo.compile(src, seed=0) for name, src in PROGRAMS.items()}


@pytest.mark.parametrize("level", ["torch", "tensor", "loop"])
@pytest.mark.parametrize("name", PROGRAMS)
def test_interpreters_match_pytorch(compiled, name: str, level: str) -> None:
    result = compiled[name].check(target="interp", level=level, seed=1)
    assert result.ok, result.line()


@pytest.mark.parametrize("name", PROGRAMS)
def test_cuda_on_cpu_runtime_matches_pytorch(compiled, name: str) -> None:
    from deplo.runtime.check import compare
    from deplo.runtime.cpu import DEFAULT_SCHEDULES

    c = compiled[name]
    inputs = random_inputs(c.program, seed=2)
    ref = c.program.reference(inputs[: len(c.program.example_inputs)])
    exe = c.executable("cpu")
    for schedule in DEFAULT_SCHEDULES:
        result = compare(exe.run(inputs, schedule=schedule), ref)
        assert result.ok, f"{schedule}: {result.line()}"


def test_each_program_is_one_kernel(compiled) -> None:
    for name, c in compiled.items():
        kernels = [op for op in c.module("loop").ops if op.name == "loop.kernel"]
        assert len(kernels) == 1, f"{name}: {len(kernels)} kernels"


def test_inputs_are_fresh_and_nonzero(compiled) -> None:
    c = compiled["mm_13x70x9"]
    a, b = random_inputs(c.program, seed=3), random_inputs(c.program, seed=4)
    assert all(np.count_nonzero(x) == x.size for x in a[:3])
    assert not np.array_equal(a[0], b[0])


def test_a_wrong_kernel_fails_the_check(compiled) -> None:
    """The check can fail: corrupt the emitted text and the comparison must say FAIL."""
    from deplo.runtime.check import compare
    from deplo.runtime.cpu import CpuModule
    from deplo.runtime.program import CudaExecutable

    c = compiled["mm_13x70x9"]
    exe = CudaExecutable(c.module("cuda"))
    bad = exe.source.replace("> 0.0f)", "< 0.0f)", 1)  # relu(acc) -> min(acc, 0)
    assert bad != exe.source
    exe._mod = CpuModule(bad, exe.signatures)
    inputs = random_inputs(c.program, seed=5)
    ref = c.program.reference(inputs[:3])
    assert not compare(exe.run(inputs), ref).ok


@pytest.mark.parametrize("arch", ["sm_90", "sm_90a"])
@pytest.mark.parametrize("name", PROGRAMS)
def test_emitted_cuda_compiles_with_nvrtc_without_spills(compiled, name: str, arch: str) -> None:
    """The exact text the CPU runtime ran also builds for Hopper, spills being errors."""
    from deplo.runtime.gpu import compile_cubin

    res = compile_cubin(compiled[name].cuda_source, arch=arch, spills_are_errors=True)
    assert res.kernels, res.log
    for kernel, report in res.kernels.items():
        assert report.spill_stores == 0 and report.spill_loads == 0, (kernel, report)
        assert report.registers > 0
