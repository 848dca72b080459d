"""Warp collectives of the shim against numpy: shuffles with widths, ballot/any/all, warp
reductions, __syncthreads_count, a partial last warp, and the errors of misuse."""

import numpy as np
import pytest

from deplo.runtime.cpu import DEFAULT_SCHEDULES, CpuModule, KernelError

WARP = r"""
extern "C" __global__ void warp_ops(const int* __restrict__ v, int* __restrict__ out) {
  const int t = threadIdx.x, lane = t % 32;
  const int x = v[t];
  int* o = out + 10 * t;
  o[0] = __shfl_sync(0xffffffffu, x, (lane * 7) % 32);
  o[1] = __shfl_up_sync(0xffffffffu, x, 3, 16);
  o[2] = __shfl_down_sync(0xffffffffu, x, 5);
  o[3] = __shfl_xor_sync(0xffffffffu, x, 9, 16);
  o[4] = (int)__ballot_sync(0xffffffffu, x > 0);
  o[5] = __any_sync(0xffffffffu, x > 90) + 2 * __all_sync(0xffffffffu, x > -100);
  o[6] = __reduce_add_sync(0xffffffffu, x);
  o[7] = __reduce_max_sync(0xffffffffu, x);
  o[8] = __syncthreads_count(x > 0);
  double d = __shfl_sync(0xffffffffu, (double)x * 0.5, 31 - lane);
  o[9] = (int)(d * 2.0);
}
"""


def expected_warp(v):
    out = np.zeros((len(v), 10), np.int64)
    for t in range(len(v)):
        w, lane = divmod(t, 32)
        wv = v[32 * w:32 * w + 32]
        seg = lane & ~15
        out[t, 0] = wv[(lane * 7) % 32]
        out[t, 1] = wv[lane - 3] if lane - 3 >= seg else wv[lane]
        out[t, 2] = wv[lane + 5] if lane + 5 < 32 else wv[lane]
        out[t, 3] = wv[lane ^ 9] if seg <= (lane ^ 9) < seg + 16 else wv[lane]
        out[t, 4] = sum(1 << i for i in range(32) if wv[i] > 0)
        out[t, 5] = int((wv > 90).any()) + 2 * int((wv > -100).all())
        out[t, 6] = wv.sum()
        out[t, 7] = wv.max()
        out[t, 8] = (v > 0).sum()
        out[t, 9] = wv[31 - lane]
    return out


@pytest.mark.parametrize("schedule", DEFAULT_SCHEDULES)
def test_warp_collectives_match_numpy(schedule):
    v = np.random.default_rng(4).integers(-100, 100, 64).astype(np.int32)
    out = np.zeros(64 * 10, np.int32)
    m = CpuModule(WARP, {"warp_ops": ["const int* __restrict__", "int* __restrict__"]},
                  name="warp_ops")
    m.launch("warp_ops", (1, 1, 1), (64, 1, 1), [v, out], schedule=schedule)
    want = expected_warp(v.astype(np.int64))
    want[:, 4] = want[:, 4].astype(np.uint32).view(np.int32)
    np.testing.assert_array_equal(out.reshape(64, 10), want)


PARTIAL = r"""
extern "C" __global__ void partial(const float* __restrict__ v, float* __restrict__ out) {
  const int t = threadIdx.x;
  const unsigned mask = __ballot_sync(MASK, 1);
  float x = v[t];
  for (int o = 1; o < 8; o <<= 1) x += __shfl_xor_sync(mask, x, o);
  out[t] = x;
}
"""


def test_partial_last_warp_and_nonexistent_lanes():
    v = np.random.default_rng(5).standard_normal(40).astype(np.float32)
    out = np.zeros_like(v)
    sig = {"partial": ["const float* __restrict__", "float* __restrict__"]}
    # 40 threads: warp 1 has lanes 0..7 only, so its full mask is 0xff
    ok = PARTIAL.replace("MASK", "(threadIdx.x < 32 ? 0xffffffffu : 0xffu)")
    CpuModule(ok, sig, name="partial").launch("partial", (1, 1, 1), (40, 1, 1), [v, out])
    np.testing.assert_allclose(out, v.reshape(5, 8).sum(1).repeat(8), rtol=1e-5)
    bad = PARTIAL.replace("MASK", "0xffffffffu")
    with pytest.raises(KernelError, match="names lanes that do not exist in warp 1"):
        CpuModule(bad, sig, name="partial").launch("partial", (1, 1, 1), (40, 1, 1), [v, out])


def test_divergent_masks_and_collectives_are_errors():
    sig = {"k": ["int* __restrict__"]}
    mixed = r"""
extern "C" __global__ void k(int* out) {
  const int lane = threadIdx.x;
  if (lane < 16) out[lane] = __shfl_sync(0xffffffffu, lane, 0);
  else out[lane] = __ballot_sync(0xffffffffu, 1);
}
"""
    with pytest.raises(KernelError, match="divergent warp collectives in warp 0"):
        CpuModule(mixed, sig, name="mixed").launch("k", (1, 1, 1), (32, 1, 1),
                                                   [np.zeros(32, np.int32)])
    masks = r"""
extern "C" __global__ void k(int* out) {
  const int lane = threadIdx.x;
  out[lane] = __shfl_sync(lane < 8 ? 0xffu : 0xffffffffu, lane, 0);
}
"""
    m = CpuModule(masks, sig, name="masks")
    with pytest.raises(KernelError, match="passes mask 0x000000ff while lanes of the same warp"):
        m.launch("k", (1, 1, 1), (32, 1, 1), [np.zeros(32, np.int32)], schedule="LR-rev")
    with pytest.raises(KernelError, match="lanes 0x000000ff never arrived"):  # lanes 0..7 left
        m.launch("k", (1, 1, 1), (32, 1, 1), [np.zeros(32, np.int32)], schedule="LR-fwd")
    halves = r"""
extern "C" __global__ void k(int* out) {
  const int lane = threadIdx.x;
  const unsigned m = lane < 16 ? 0xffffu : 0xffff0000u;
  out[lane] = __shfl_sync(m, lane * 3, 0, 16);
}
"""
    out = np.zeros(32, np.int32)  # two disjoint groups at once is legal
    CpuModule(halves, sig, name="halves").launch("k", (1, 1, 1), (32, 1, 1), [out],
                                                 schedule="LR-rnd")
    np.testing.assert_array_equal(out, np.repeat([0, 48], 16))
