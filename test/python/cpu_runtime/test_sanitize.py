"""ASan+UBSan builds (CpuModule(sanitize=True)) run in a subprocess and report the exact .cu line
of an out-of-bounds shared-array index (UBSan) or global read (ASan) that canaries only turn into
wrong numbers; a correct kernel gives its result back through the subprocess."""

import numpy as np
import pytest

from deplo.runtime.cpu import CpuModule, KernelError

SRC = r"""
extern "C" __global__ void __launch_bounds__(256)
shifted(const float* __restrict__ x, float* __restrict__ out, int ss, int gs) {
  __shared__ float buf[256];
  const int t = threadIdx.x;
  buf[t] = x[t];
  __syncthreads();
  out[t] = buf[t + ss] + x[t + gs];
}
"""


@pytest.fixture(scope="module")
def mod():
    return CpuModule(SRC, {"shifted": ["const float* __restrict__", "float* __restrict__", "int",
                                       "int"]},
                     sanitize=True, name="shifted")


def test_sanitized_run_is_right(mod):
    x = np.random.default_rng(7).standard_normal(256).astype(np.float32)
    out = np.zeros(256, np.float32)
    mod.launch("shifted", (1, 1, 1), (256, 1, 1), [x, out, 0, 0])
    np.testing.assert_array_equal(out, 2 * x)


def test_shared_out_of_bounds_names_the_line(mod):
    x = np.ones(512, np.float32)
    with pytest.raises(KernelError, match=r"shifted.cu:8:\d+: runtime error: index 256 out of "
                       r"bounds for type 'float \[256\]'"):
        mod.launch("shifted", (1, 1, 1), (256, 1, 1), [x, np.zeros(256, np.float32), 256, 0])


def test_global_out_of_bounds_read_names_the_line(mod):
    x = np.ones(256, np.float32)
    with pytest.raises(KernelError, match=r"(?s)heap-buffer-overflow.*shifted.cu:8"):
        mod.launch("shifted", (1, 1, 1), (256, 1, 1), [x, np.zeros(256, np.float32), 0, 1])
