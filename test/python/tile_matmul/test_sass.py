"""What the matmul schedules become in SASS (NVRTC + pip cuobjdump, no GPU needed), for sm_90 and
sm_90a with ptxas spills as errors: cp.async copies are LDGSTS, 16-byte pieces and register-tile
columns are 128-bit loads and stores, the register tiles stay in registers (no LDL / STL)."""

from __future__ import annotations

import pytest
from mm_harness import Case, lower
from test_schedules import DEFAULT, SCHEDULE

try:
    from cuda.bindings import nvrtc  # noqa: F401

    from deplo.runtime.gpu import compile_cubin, count_prefix, count_regex, sass_opcodes
except ImportError as e:  # pragma: no cover - the GPU toolchain is optional
    pytest.skip(f"NVRTC unavailable: {e}", allow_module_level=True)

ARCHS = ["sm_90", "sm_90a"]


def opcodes(c: Case, passes: list[str], arch: str):
    res = compile_cubin(lower(c, passes).source, arch=arch)  # spills are errors
    (report,) = res.kernels.values()
    assert report.spill_stores == report.spill_loads == 0
    ops = sass_opcodes(res.cubin)
    assert count_prefix(ops, "LDL") == count_prefix(ops, "STL") == 0, ops
    return ops, report


@pytest.mark.parametrize("arch", ARCHS)
def test_default_fp32_schedule(arch: str):
    """cp.async (LDGSTS of 16 bytes), 128-bit shared loads of B's columns, 128-bit stores of the
    register tile's rows, an unrolled K chunk of 16 x 32 FFMA, 2 barriers per chunk."""
    ops, report = opcodes(Case(256, 256, 256), DEFAULT, arch)
    assert ops["LDGSTS.E.BYPASS.128"] >= 1, ops
    assert count_regex(ops, r"LDS(\..*)?\.128") >= 32, ops
    assert count_regex(ops, r"STG\..*128") >= 4, ops
    assert ops["FFMA"] >= 16 * 32, ops
    assert report.registers <= 128


@pytest.mark.parametrize("arch", ARCHS)
def test_sync_stages_load_128_bits(arch: str):
    passes = [*DEFAULT[:5], "tile-double-buffer", "tile-unroll"]  # no cp.async
    ops, _ = opcodes(Case(256, 256, 256), passes, arch)
    assert count_regex(ops, r"LDG\..*128.*") >= 1, ops
    assert count_regex(ops, r"STS(\..*)?\.128") >= 1, ops
    assert count_prefix(ops, "LDGSTS") == 0, ops


@pytest.mark.parametrize("arch", ARCHS)
def test_tails_and_4_byte_cp_async(arch: str):
    """37 x 53 x 70: rows of 53 fp32 are not 16-byte multiples: 4-byte cp.async (LDGSTS.E)."""
    ops, _ = opcodes(Case(37, 53, 70), SCHEDULE, arch)
    assert count_prefix(ops, "LDGSTS") >= 1, ops


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("b_nk", [False, True], ids=["b-kn", "b-nk"])
def test_tensor_cores(arch: str, dtype: str, b_nk: bool):
    """A 64 x 64 tensor-core schedule: HMMA.16816 (2 x 4 fragments x 2 k-steps per chunk),
    ldmatrix (LDSM; .MT88 = transposed, for B stored [K][N]), cp.async of 16 bytes."""
    passes = ["tile-tensor-core{warps-m=2 warps-n=2 frags-m=2 frags-n=4}",
              "tile-chunk-reduce{k-chunk=32}", *DEFAULT[4:]]
    ops, report = opcodes(Case(128, 128, 128, dtype=dtype, b_nk=b_nk), passes, arch)
    assert count_prefix(ops, "HMMA.16816.F32") == 16, ops
    assert count_prefix(ops, "LDSM.16.M88.4") >= 1, ops
    assert count_prefix(ops, "LDSM.16.MT88" if not b_nk else "LDSM.16.M88.2") >= 1, ops
    assert ops["LDGSTS.E.BYPASS.128"] >= 1, ops
    assert report.registers <= 128
