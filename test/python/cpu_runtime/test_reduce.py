"""A block reduction (shared memory + shuffles) on the CPU runtime, right under every default
schedule, and the bug-injection matrix of CPU-RUNTIME.md §2b: each injected bug must either
change the result under some schedule or raise a KernelError that says what and where."""

import numpy as np
import pytest

from deplo.runtime.cpu import DEFAULT_SCHEDULES, CpuModule, KernelError

N = 65613  # not a multiple of the 1024 elements one block sums
PER_BLOCK = 1024
BLOCKS = (N + PER_BLOCK - 1) // PER_BLOCK
SIG = {"block_sum": ["const float* __restrict__", "float* __restrict__", "int"]}

REDUCE = r"""#include "kc_prelude.cuh"

extern "C" __global__ void __launch_bounds__(256)
block_sum(const float* __restrict__ x, float* __restrict__ out, int n) {
  __shared__ float buf[256];
  const int tid = threadIdx.x;
  const int base = blockIdx.x * 1024;
  float acc = 0.0f;
  for (int j = base + tid; j < min(n, base + 1024); j += 256) acc += x[j];
  buf[tid] = acc;
  __syncthreads();
  for (int s = 128; s >= 32; s >>= 1) {
    if (tid < s) buf[tid] += buf[tid + s];
    __syncthreads();
  }
  if (tid < 32) {
    float v = buf[tid];
    for (int o = 16; o >= 4; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    for (int o = 2; o >= 1; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if (tid == 0) out[blockIdx.x] = v;
  }
}
"""


def variant(*edits: tuple[str, str]) -> str:
    src = REDUCE
    for old, new in edits:
        assert src.count(old) == 1, old
        src = src.replace(old, new)
    return src


def line_of(src: str, text: str) -> int:
    return next(i for i, ln in enumerate(src.splitlines(), 1) if text in ln)


@pytest.fixture(scope="module")
def x():
    return np.random.default_rng(0).standard_normal(N).astype(np.float32)


def expected(x):
    return np.pad(x, (0, BLOCKS * PER_BLOCK - N)).reshape(BLOCKS, PER_BLOCK).sum(1, np.float64)


def run(src: str, x, schedule: str, name: str = "reduce") -> np.ndarray:
    out = np.zeros(BLOCKS, np.float32)
    CpuModule(src, SIG, name=name).launch("block_sum", (BLOCKS, 1, 1), (256, 1, 1),
                                          [x, out, N], schedule=schedule)
    return out


def is_right(out, x) -> bool:
    return bool(np.allclose(out, expected(x), rtol=1e-5, atol=1e-4))


@pytest.mark.parametrize("schedule", DEFAULT_SCHEDULES + ("LR-rev", "ER-rnd:7"))
def test_reduce_matches_numpy(x, schedule):
    out = run(REDUCE, x, schedule)
    np.testing.assert_allclose(out, expected(x), rtol=1e-5, atol=1e-4)


def test_missing_barrier_is_wrong_under_some_schedule(x):
    src = variant(("  buf[tid] = acc;\n  __syncthreads();\n", "  buf[tid] = acc;\n"))
    wrong = [s for s in DEFAULT_SCHEDULES if not is_right(run(src, x, s, "reduce_A"), x)]
    assert "LR-fwd" in wrong  # thread 0 reads buf[128] before thread 128 wrote it


def test_barrier_in_divergent_if_is_a_deadlock_naming_the_line(x):
    inside = "    if (tid < s) {\n      buf[tid] += buf[tid + s];\n      __syncthreads();\n    }\n"
    src = variant(("    if (tid < s) buf[tid] += buf[tid + s];\n    __syncthreads();\n", inside))
    line = line_of(src, "      __syncthreads();")
    for s in DEFAULT_SCHEDULES:
        with pytest.raises(KernelError) as e:
            run(src, x, s, "reduce_B")
        msg = str(e.value)
        assert "deadlock in block (" in msg  # the first block run: its order is the schedule's
        assert f"128 threads wait at __syncthreads (reduce_B.cu:{line})" in msg
        assert "128 exited" in msg


def test_early_return_before_barrier_is_a_deadlock(x):
    src = variant(("  const int base = blockIdx.x * 1024;\n",
                   "  const int base = blockIdx.x * 1024;\n  if (base + tid >= n) return;\n"))
    with pytest.raises(KernelError, match=r"deadlock in block \(64,0,0\): 77 threads wait at "
                       r"__syncthreads \(reduce_G\.cu:\d+\).*179 exited"):
        run(src, x, "LR-fwd", "reduce_G")


def test_bad_shuffle_mask_is_an_error(x):
    src = variant(("__shfl_down_sync(0xffffffffu", "__shfl_down_sync(0x0000ffffu"))
    with pytest.raises(KernelError, match=r"reads lane \d+, which is not in mask 0x0000ffff"):
        run(src, x, "LR-fwd", "reduce_F")
    with pytest.raises(KernelError, match=r"lane 31 of warp 0 is not in its own mask 0x0000ffff"):
        run(src, x, "LR-rev", "reduce_F")


def test_out_of_bounds_write_names_the_argument(x):
    src = variant(("out[blockIdx.x] = v", "out[blockIdx.x + 1] = v"))
    for s in DEFAULT_SCHEDULES:
        with pytest.raises(KernelError, match="out-of-bounds write next to argument 1"):
            run(src, x, s, "reduce_H")


def test_a_nan_made_from_the_canary_and_written_past_the_end_is_seen(x):
    """One block too many reads past the input's end and writes its sum past the output's:
    seen either way. Its reads reach 947 to 1971 floats past the end, beyond the 4 KB pad, so
    what they meet depends on the heap: the canary and whatever lies after it (a NaN sum whose
    bytes differ from the output pad's canary: arithmetic quiets its signalling NaN, 1 to 4 of
    them changed, CI saw 1 and 3) or an unmapped page (SIGSEGV)."""
    src = variant(("j < min(n, base + 1024)", "j < base + 1024"))
    out = np.zeros(BLOCKS, np.float32)
    with pytest.raises(KernelError, match="out-of-bounds write next to argument 1: [1-4] bytes "
                                          "changed up to 3 bytes past its end|SIGSEGV"):
        CpuModule(src, SIG, name="reduce_C").launch("block_sum", (BLOCKS + 1, 1, 1),
                                                    (256, 1, 1), [x, out, N], schedule="LR-fwd")


def test_out_of_bounds_read_is_wrong(x):
    src = variant(("j < min(n, base + 1024)", "j < base + 1024"))
    assert not is_right(run(src, x, "LR-fwd", "reduce_C"), x)  # reads the canary: NaN


def test_uninitialised_shared_read_is_nan(x):
    src = variant(("  buf[tid] = acc;\n", "  if (tid < 128) buf[tid] = acc;\n"))
    for s in DEFAULT_SCHEDULES:
        assert np.isnan(run(src, x, s, "reduce_E")).all()
