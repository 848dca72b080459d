"""Building kernels: compile errors quote the offending .cu line, a rebuild of the same text is a
cache hit, and the prelude also compiles for the GPU (when nvcc is installed)."""

import shutil
import subprocess
import uuid
from pathlib import Path

import numpy as np
import pytest

from deplo.runtime.cpu import CpuCompileError, CpuModule, cpu_runtime_available

SIG = {"fill": ["float* __restrict__", "float", "int"]}
FILL = r"""#include "kc_prelude.cuh"

extern "C" __global__ void __launch_bounds__(128) fill(float* __restrict__ y, float v, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = v * (float)i;
}
"""


def test_available():
    ok, why = cpu_runtime_available()
    assert ok and "g++" in why


def test_syntax_error_quotes_the_line():
    bad = FILL.replace("y[i] = v * (float)i;", "y[i] = v * (float)i")
    with pytest.raises(CpuCompileError) as e:
        CpuModule(bad, SIG, name="fill_bad")
    msg = str(e.value)
    assert "fill_bad.cu:5" in msg and "error" in msg
    assert ">     5 |   if (i < n) y[i] = v * (float)i" in msg


def test_unknown_identifier_quotes_the_line():
    bad = FILL.replace("(float)i", "(float)j")
    with pytest.raises(CpuCompileError, match=r"'j' was not declared(.|\n)*>     5 \|"):
        CpuModule(bad, SIG, name="fill_undeclared")


def test_second_module_is_a_cache_hit():
    src = FILL + f"// {uuid.uuid4()}\n"  # text never built before
    first = CpuModule(src, SIG, name="fill_cache")
    mtime = first.lib_path.stat().st_mtime_ns
    second = CpuModule(src, SIG, name="fill_cache")
    assert not first.cache_hit and second.cache_hit
    assert second.lib_path == first.lib_path and second.lib_path.stat().st_mtime_ns == mtime
    y = np.zeros(300, np.float32)
    second.launch("fill", (3, 1, 1), (128, 1, 1), [y, 0.5, 300])
    np.testing.assert_array_equal(y, 0.5 * np.arange(300, dtype=np.float32))


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_prelude_compiles_for_the_gpu(tmp_path):
    cu = tmp_path / "copy.cu"
    cu.write_text(r"""#include "kc_prelude.cuh"
extern "C" __global__ void copy(const float* __restrict__ x, __half* __restrict__ y) {
  __shared__ __align__(16) float s[2][256];
  kc_cp_async16(&s[0][4 * threadIdx.x], x + 4 * threadIdx.x);
  kc_cp_async_commit();
  kc_cp_async16_zfill(&s[1][4 * threadIdx.x], x + 256 + 4 * threadIdx.x, 8);
  kc_cp_async4(&s[1][threadIdx.x], x + threadIdx.x);
  kc_cp_async_commit();
  kc_cp_async_wait(1);
  kc_cp_async_wait_all();
  __syncthreads();
  y[threadIdx.x] = __float2half(s[0][threadIdx.x] + s[1][threadIdx.x]);
}
""")
    include = Path(__import__("deplo.runtime", fromlist=["x"]).__file__).parent / "include"
    r = subprocess.run(["nvcc", "-arch=sm_80", "-ptx", f"-I{include}", str(cu), "-o", "-"],
                       capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr
    for ptx in ("cp.async.cg.shared.global", "cp.async.ca.shared.global", "cp.async.commit_group",
                "cp.async.wait_group 1", "cp.async.wait_group 0"):
        assert ptx in r.stdout
