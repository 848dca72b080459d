"""sass_opcodes: cuobjdump -sass (pip) on NVRTC cubins."""

import collections
from pathlib import Path

import pytest

from deplo.runtime.gpu import compile_cubin, count_prefix, count_regex, sass_opcodes

KERNELS = Path(__file__).parent / "kernels"


@pytest.fixture(autouse=True)
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DEPLO_CACHE_DIR", str(tmp_path / "cache"))


def test_float4_loads_are_128_bit():
    ops = sass_opcodes(compile_cubin((KERNELS / "copy4.cu").read_text()).cubin)
    assert count_regex(ops, r"LDG\..*128.*") >= 1, ops
    assert count_regex(ops, r"STG\..*128.*") >= 1, ops
    assert ops["EXIT"] >= 1


def test_cp_async_is_ldgsts_on_sm_90():
    res = compile_cubin((KERNELS / "cp_async.cu").read_text(), arch="sm_90")
    ops = sass_opcodes(res.cubin, kernel="stage")
    assert count_prefix(ops, "LDGSTS") >= 1, ops
    assert "LDGSTS.E.BYPASS.128" in ops


def test_inline_cp_async_ptx():
    src = r"""
extern "C" __global__ void stage_ptx(const float4* __restrict__ x, float4* __restrict__ y) {
  __shared__ float4 buf[128];
  unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(&buf[threadIdx.x]));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(dst), "l"(x + threadIdx.x));
  asm volatile("cp.async.wait_all;\n" ::);
  __syncthreads();
  y[threadIdx.x] = buf[127 - threadIdx.x];
}
"""
    ops = sass_opcodes(compile_cubin(src).cubin)
    assert count_prefix(ops, "LDGSTS") >= 1, ops


def test_unknown_kernel_is_a_key_error():
    cubin = compile_cubin((KERNELS / "copy4.cu").read_text()).cubin
    with pytest.raises(KeyError, match="copy4"):
        sass_opcodes(cubin, kernel="nope")


def test_count_prefix_matches_whole_parts():
    ops = collections.Counter({"LDG.E.128": 2, "LDGSTS.E.BYPASS.128": 1, "LDG.E": 1})
    assert count_prefix(ops, "LDG") == 3
    assert count_prefix(ops, "LDG.E.128") == 2
    assert count_prefix(ops, "LDGSTS") == 1
    assert count_regex(ops, r".*\.128") == 3
