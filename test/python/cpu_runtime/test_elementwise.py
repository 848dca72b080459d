"""Indexing on the CPU runtime: 2-D grids with tail guards, 3-D blocks and grids, scalar
parameters of each C type, fp16/bf16 buffers and dynamic shared memory."""

import numpy as np
import pytest

from deplo.runtime.cpu import DEFAULT_SCHEDULES, CpuModule, KernelError

AXPBY_2D = r"""#include "kc_prelude.cuh"

extern "C" __global__ void __launch_bounds__(128)
axpby_2d(const float* __restrict__ x, const float* __restrict__ y, float* __restrict__ out,
         float a, double b, int rows, long long cols) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  const int r = blockIdx.y * blockDim.y + threadIdx.y;
  if (r < rows && c < cols) out[r * cols + c] = a * x[r * cols + c] + (float)b * y[r * cols + c];
}
"""


@pytest.mark.parametrize("schedule", DEFAULT_SCHEDULES)
def test_2d_grid_with_tail_guard(schedule):
    rows, cols = 37, 53  # neither a multiple of the (16, 8) block
    rng = np.random.default_rng(1)
    x, y = (rng.standard_normal((rows, cols)).astype(np.float32) for _ in range(2))
    out = np.full((rows, cols), 7.0, np.float32)
    m = CpuModule(AXPBY_2D, {"axpby_2d": [
        "const float* __restrict__", "const float* __restrict__", "float* __restrict__",
        "float", "double", "int", "long long"]}, name="axpby_2d")
    grid = ((cols + 15) // 16, (rows + 7) // 8, 1)
    m.launch("axpby_2d", grid, (16, 8, 1), [x, y, out, 1.5, -0.25, rows, cols], schedule=schedule)
    np.testing.assert_allclose(out, 1.5 * x - 0.25 * y, rtol=1e-6)


IDS_3D = r"""
extern "C" __global__ void ids_3d(int* __restrict__ out, unsigned int salt) {
  const int bx = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  const int tx = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const int nthreads = blockDim.x * blockDim.y * blockDim.z;
  out[bx * nthreads + tx] = (int)(salt ^ (unsigned)(tx * 1000 + bx));
}
"""


def test_3d_block_and_grid_indices():
    grid, block = (3, 2, 2), (4, 3, 2)
    nb, nt = 12, 24
    out = np.zeros(nb * nt, np.int32)
    m = CpuModule(IDS_3D, {"ids_3d": ["int* __restrict__", "unsigned int"]}, name="ids_3d")
    m.launch("ids_3d", grid, block, [out, 0xABC], schedule="LR-rnd")
    b, t = np.divmod(np.arange(nb * nt), nt)
    np.testing.assert_array_equal(out, (0xABC ^ (t * 1000 + b)).astype(np.int32))


HALF = r"""#include "kc_prelude.cuh"

extern "C" __global__ void scale_half(const __half* __restrict__ x, __half* __restrict__ y,
                                      const __nv_bfloat16* __restrict__ b, float* __restrict__ bf,
                                      __half s, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  y[i] = __float2half(__half2float(x[i]) * __half2float(s) + 1.0f);
  bf[i] = __bfloat162float(b[i]) * 2.0f;
}
"""


def test_fp16_and_bf16_buffers():
    n = 300
    rng = np.random.default_rng(2)
    x = rng.standard_normal(n).astype(np.float16)
    y = np.zeros(n, np.float16)
    b_f32 = rng.standard_normal(n).astype(np.float32)
    b_bits = (b_f32.view(np.uint32) >> 16).astype(np.uint16)  # truncation is exact bf16
    bf = np.zeros(n, np.float32)
    m = CpuModule(HALF, {"scale_half": [
        "const __half* __restrict__", "__half* __restrict__", "const __nv_bfloat16* __restrict__",
        "float* __restrict__", "__half", "int"]}, name="scale_half")
    m.launch("scale_half", ((n + 127) // 128, 1, 1), (128, 1, 1), [x, y, b_bits, bf, 0.5, n])
    np.testing.assert_array_equal(y, (x.astype(np.float32) * 0.5 + 1.0).astype(np.float16))
    np.testing.assert_array_equal(bf, (b_bits.astype(np.uint32) << 16).view(np.float32) * 2)


DYN = r"""#include "kc_prelude.cuh"

extern "C" __global__ void __launch_bounds__(256) reverse_block(const float* __restrict__ x,
                                                                 float* __restrict__ y) {
  extern __shared__ __align__(16) unsigned char kc_smem[];
  float* s = reinterpret_cast<float*>(kc_smem);
  const int t = threadIdx.x, base = blockIdx.x * blockDim.x;
  s[t] = x[base + t];
  __syncthreads();
  y[base + t] = s[blockDim.x - 1 - t];
}
"""


def test_dynamic_shared_memory():
    x = np.random.default_rng(3).standard_normal(4 * 256).astype(np.float32)
    y = np.zeros_like(x)
    m = CpuModule(DYN, {"reverse_block": ["const float* __restrict__", "float* __restrict__"]},
                  name="reverse_block")
    m.launch("reverse_block", (4, 1, 1), (256, 1, 1), [x, y], smem_bytes=256 * 4,
             schedule="EG-rev")
    np.testing.assert_array_equal(y, x.reshape(4, 256)[:, ::-1].ravel())
    with pytest.raises(KernelError, match="exceeds the 232448 bytes"):
        m.launch("reverse_block", (4, 1, 1), (256, 1, 1), [x, y], smem_bytes=300_000)


def test_argument_checks():
    m = CpuModule(IDS_3D, {"ids_3d": ["int* __restrict__", "unsigned int"]}, name="ids_3d")
    with pytest.raises(TypeError, match="needs dtype int32"):
        m.launch("ids_3d", (1, 1, 1), (1, 1, 1), [np.zeros(1, np.float32), 0])
    with pytest.raises(TypeError, match="takes 2 arguments"):
        m.launch("ids_3d", (1, 1, 1), (1, 1, 1), [np.zeros(1, np.int32)])
    with pytest.raises(ValueError, match="does not fit"):
        m.launch("ids_3d", (1, 1, 1), (1, 1, 1), [np.zeros(1, np.int32), -1])
    with pytest.raises(ValueError, match="bad schedule"):
        m.launch("ids_3d", (1, 1, 1), (1, 1, 1), [np.zeros(1, np.int32), 0], schedule="XX-fwd")
    with pytest.raises(ValueError, match="more than 1024"):
        m.launch("ids_3d", (1, 1, 1), (32, 33, 1), [np.zeros(1, np.int32), 0])
