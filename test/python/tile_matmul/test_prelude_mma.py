"""The prelude's tensor-core functions (kc_ldmatrix_*, kc_mma_16816_*, kc_pack_halves) on their
own: one warp multiplies a 16 x 16 by a 16 x 8 tile through shared memory, in the PTX fragment
layouts, on the CPU runtime against numpy (fp16 and bf16); NVRTC turns the same text into LDSM +
HMMA. B is read both ways a schedule stores it: [K][N] (ldmatrix .trans) and [N][K] (plain)."""

from __future__ import annotations

import numpy as np
import pytest
from mm_harness import from_storage, to_storage

from deplo.runtime import cpu

_OK, _WHY = cpu.cpu_runtime_available()

KERNEL = r"""
#include "kc_prelude.cuh"
extern "C" __global__ void __launch_bounds__(32) tc(const T* __restrict__ a, const T* __restrict__ b,
                                                     const T* __restrict__ bt, float* __restrict__ d,
                                                     float* __restrict__ d2) {
  __shared__ __align__(16) T as[16 * 24];   // rows padded to 24 halves (48 bytes, 16-aligned)
  __shared__ __align__(16) T bs[16 * 8];    // [k][n]
  __shared__ __align__(16) T bts[8 * 16];   // [n][k]
  const int l = threadIdx.x;
  for (int i = l; i < 256; i += 32) as[(i / 16) * 24 + i % 16] = a[i];
  for (int i = l; i < 128; i += 32) { bs[i] = b[i]; bts[i] = bt[i]; }
  __syncthreads();
  int ar[4], br[2], btr[2];
  kc_ldmatrix_x4(ar, &as[(l % 16) * 24 + (l / 16) * 8]);
  kc_ldmatrix_x2_trans(br, &bs[(l % 16) * 8]);
  kc_ldmatrix_x2(btr, &bts[(l % 8) * 16 + ((l / 8) % 2) * 8]);
  const float zero[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  float acc[4], acc2[4];
  MMA(acc, ar, br, zero);
  MMA(acc2, ar, btr, zero);
  const int g = l / 4, t = l % 4;
  for (int i = 0; i < 4; ++i) {
    d[(g + 8 * (i / 2)) * 8 + 2 * t + i % 2] = acc[i];
    d2[(g + 8 * (i / 2)) * 8 + 2 * t + i % 2] = acc2[i];
  }
  // the element-by-element path: a[g][2t], a[g][2t+1] packed like ldmatrix's first register
  const int p = kc_pack_halves(a[g * 16 + 2 * t], a[g * 16 + 2 * t + 1]);
  if (p != ar[0]) __trap();
}
"""
TYPES = {"f16": ("__half", "kc_mma_16816_f16"), "bf16": ("__nv_bfloat16", "kc_mma_16816_bf16")}


def source(dtype: str) -> str:
    t, mma = TYPES[dtype]
    return f"#define T {t}\n#define MMA {mma}\n" + KERNEL


@pytest.mark.skipif(not _OK, reason=f"CPU runtime unavailable: {_WHY}")
@pytest.mark.parametrize("dtype", TYPES)
def test_one_warp_mma_on_the_cpu(dtype: str):
    rng = np.random.default_rng(0)
    a = to_storage(rng.standard_normal((16, 16)).astype(np.float32), dtype)
    b = to_storage(rng.standard_normal((16, 8)).astype(np.float32), dtype)
    bt = to_storage(from_storage(b, dtype).T.copy(), dtype)
    d, d2 = np.empty((16, 8), np.float32), np.empty((16, 8), np.float32)
    t = TYPES[dtype][0] + "*"
    sig = [f"const {t} __restrict__"] * 3 + ["float* __restrict__"] * 2
    mod = cpu.CpuModule(source(dtype), {"tc": sig}, name="tc")
    for s in ("LR-fwd", "EG-rev"):
        mod.launch("tc", grid=(1, 1, 1), block=(32, 1, 1), args=[a, b, bt, d, d2], schedule=s)
        ref = from_storage(a, dtype).astype(np.float64) @ from_storage(b, dtype).astype(np.float64)
        np.testing.assert_allclose(d, ref, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(d2, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", TYPES)
@pytest.mark.parametrize("arch", ["sm_90", "sm_90a"])
def test_the_same_text_is_ldsm_and_hmma(dtype: str, arch: str):
    gpu = pytest.importorskip("deplo.runtime.gpu")
    pytest.importorskip("cuda.bindings.nvrtc")
    ops = gpu.sass_opcodes(gpu.compile_cubin(source(dtype), arch=arch).cubin)
    assert gpu.count_prefix(ops, "HMMA") == 2, ops
    assert gpu.count_prefix(ops, "LDSM") == 3, ops
    assert gpu.count_prefix(ops, "LDL") == gpu.count_prefix(ops, "STL") == 0, ops
