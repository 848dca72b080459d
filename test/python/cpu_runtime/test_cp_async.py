"""cp.async through kc_prelude.cuh: a two-stage staged copy is right with its waits, wrong under
the lazy schedules when a wait is missing, and copies left pending at exit are an error."""

import numpy as np
import pytest

from deplo.runtime.cpu import DEFAULT_SCHEDULES, CpuModule, KernelError

STAGED = r"""#include "kc_prelude.cuh"

// Each block stages 512 floats in two cp.async groups; each thread then writes elements that
// other threads copied (reversed within a stage), so the waits and barriers matter.
extern "C" __global__ void __launch_bounds__(64)
staged(const float* __restrict__ x, float* __restrict__ y, int n) {
  __shared__ __align__(16) float s[2][256];
  const int t = threadIdx.x;
  const int base = blockIdx.x * 512;
  for (int stage = 0; stage < 2; ++stage) {
    const int i = base + 256 * stage + 4 * t;
    const int bytes = max(0, min(16, 4 * (n - i)));
    kc_cp_async16_zfill(&s[stage][4 * t], bytes > 0 ? x + i : x, bytes);
    kc_cp_async_commit();
  }
  kc_cp_async_wait(1);
  __syncthreads();
  for (int k = t; k < 256; k += 64)
    if (base + k < n) y[base + k] = 2.0f * s[0][255 - k];
  kc_cp_async_wait(0);
  __syncthreads();
  for (int k = t; k < 256; k += 64)
    if (base + 256 + k < n) y[base + 256 + k] = 2.0f * s[1][255 - k];
}
"""
SIG = {"staged": ["const float* __restrict__", "float* __restrict__", "int"]}
N = 4 * 512 + 297  # the last block's tail is zero-filled, and one chunk is partial


def expected(x):
    blocks = (len(x) + 511) // 512
    xp = np.pad(x, (0, blocks * 512 - len(x))).reshape(blocks, 2, 256)
    return (2 * xp[:, :, ::-1]).ravel()[:len(x)]


def run(src, schedule, name):
    x = np.random.default_rng(6).standard_normal(N).astype(np.float32)
    y = np.zeros(N, np.float32)
    CpuModule(src, SIG, name=name).launch("staged", ((N + 511) // 512, 1, 1), (64, 1, 1),
                                          [x, y, N], schedule=schedule)
    return x, y


@pytest.mark.parametrize("schedule", DEFAULT_SCHEDULES)
def test_staged_copy_is_right(schedule):
    x, y = run(STAGED, schedule, "staged")
    np.testing.assert_array_equal(y, expected(x))


def test_missing_wait_is_wrong_under_lazy_copies():
    src = STAGED.replace("  kc_cp_async_wait(1);\n", "")
    for schedule in ("LR-fwd", "LR-rnd"):
        x, y = run(src, schedule, "staged_nowait")
        assert np.isnan(y[:256]).any()  # read before the copy: poisoned shared memory
    x, y = run(src, "EG-fwd", "staged_nowait")  # eager copies hide the bug
    np.testing.assert_array_equal(y, expected(x))


def test_copies_pending_at_exit_are_an_error():
    src = STAGED.replace("  kc_cp_async_wait(0);\n", "")
    with pytest.raises(KernelError, match="exited with 1 cp.async copies pending"):
        run(src, "EG-fwd", "staged_pending")
