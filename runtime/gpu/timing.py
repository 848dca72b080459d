"""GPU timing on a cold L2 with no host gaps: what `deplo bench`, `run --bench`, the tuner's
GPU evaluator and the validation pairs measure, for deplo and for the PyTorch baselines alike.

Why the L2 is flushed: timed again and again on the same buffers, a kernel finds its inputs in
L2 (50 MB on an H100 and an H200): a TinyLlama bf16 projection's 23 MB of weights would
be read at L2 bandwidth, and the cost model, which reads a program's inputs from DRAM, could
not be checked. Before each timed run a kernel reads a buffer twice the L2's size. Reads, not
a memset as nvbench does: a memset leaves the L2 full of dirty lines whose write-back would
then compete with the timed kernels for DRAM bandwidth.

Why a spin first: launches are enqueued from Python, several µs each; a kernel of a few µs
timed on an idle GPU would measure the host. A kernel spinning on %globaltimer holds the
stream while the flush, the events and the timed work are enqueued behind it (nvbench's
"blocking kernel" does the same with a host flag), so the timed work runs back to back, as in
a CUDA graph. Events between the steps time each one: a program's launches in order, its
intermediates where the launches before left them (in L2, as the model's l2_resident says).
"""

from __future__ import annotations

import functools
import statistics
from collections.abc import Callable, Sequence

from deplo.runtime.gpu import driver as cu

SPIN_BASE_NS = 50_000  # enqueueing the flush and the first event
SPIN_STEP_NS = 30_000  # per timed step: a launch (or a torch graph replay) and its event
SPIN_DOUBLINGS = 4  # a run the spin did not cover doubles it, this many times at most: a step
# that blocks the host until the GPU catches up (an uncapturable torch call that synchronizes,
# a full launch queue) would never be covered, and its runs are kept as they are

_SOURCE = r"""
extern "C" __global__ void deplo_spin(long long ns) {
  unsigned long long t0, t;
  long long c0 = clock64();
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {  // clock64 bounds it too (4 cycles a ns: past any SM clock) should the timer stall
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while ((long long)(t - t0) < ns && clock64() - c0 < 4 * ns);
}

extern "C" __global__ void deplo_l2_flush(const unsigned int* __restrict__ words, long long n,
                                          unsigned int* sink) {
  const uint4* p = reinterpret_cast<const uint4*>(words);  // n 16-byte vectors
  uint4 acc = make_uint4(0u, 0u, 0u, 0u);
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    uint4 v = p[i];
    acc.x ^= v.x; acc.y ^= v.y; acc.z ^= v.z; acc.w ^= v.w;
  }
  if ((acc.x ^ acc.y ^ acc.z ^ acc.w) == 0x9e3779b9u) *sink = acc.x;  // the loads stay
}
"""


class ColdTimer:
    """The spin and flush kernels, a flush buffer of twice the L2, on device 0."""

    def __init__(self):
        from deplo.runtime.gpu import compile_cubin, device_arch

        driver = cu._driver()
        attr = driver.CUdevice_attribute
        dev = cu._check(driver.cuDeviceGet(0), "cuDeviceGet")
        l2 = cu._check(driver.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev),
                       "cuDeviceGetAttribute(L2)")
        sms = cu._check(driver.cuDeviceGetAttribute(
            attr.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev), "cuDeviceGetAttribute(SMs)")
        self.flush_bytes = 2 * int(l2)
        self._mod = cu.GpuModule(compile_cubin(_SOURCE, arch=device_arch(), name="timing.cu").cubin,
                                 {"deplo_spin": ["long long"],
                                  "deplo_l2_flush": ["const unsigned int*", "long long",
                                                     "unsigned int*"]})
        self._buffer = cu.DeviceArray((self.flush_bytes // 16, 4), "uint32")
        self._buffer.fill_bytes(0x5A)
        self._sink = cu.DeviceArray((1,), "uint32")
        self._grid = 8 * int(sms)

    def _run(self, kernel: str, grid: int, block: int, args: list, stream) -> None:
        func, launch = self._mod._prepare(kernel, args, 0)
        self._mod._launch(func, kernel, grid, block, launch, 0, stream)
        launch.close()  # device arrays only: nothing to copy or free

    def time(self, steps: Sequence[Callable[[], None]], stream, warmup: int, iters: int
             ) -> tuple[float, list[float]]:
        """Median milliseconds of the steps run in order (each enqueues its work on `stream`),
        and of each step, over `iters` runs each after a spin and an L2 flush; `warmup` runs
        untimed first. A run whose first event had passed before the host enqueued the last
        step could hold host gaps: it is dropped and the spin doubled (SPIN_DOUBLINGS times at
        most; then such runs count)."""
        if not steps:  # a program without launches (an identity) takes no GPU time
            return 0.0, []
        driver = cu._driver()
        flags = driver.CUevent_flags.CU_EVENT_DEFAULT
        events = [cu._check(driver.cuEventCreate(flags), "cuEventCreate")
                  for _ in range(len(steps) + 1)]
        spin_ns = SPIN_BASE_NS + SPIN_STEP_NS * len(steps)
        doublings = 0
        runs: list[list[float]] = []
        try:
            for i in range(max(0, warmup) + 4 * max(1, iters) + SPIN_DOUBLINGS):
                if len(runs) == max(1, iters):
                    break
                self._run("deplo_spin", 1, 1, [spin_ns], stream)
                self._run("deplo_l2_flush", self._grid, 256,
                          [self._buffer, self._buffer.nbytes // 16, self._sink], stream)
                cu._check(driver.cuEventRecord(events[0], stream), "cuEventRecord")
                for step, event in zip(steps, events[1:], strict=True):
                    step()
                    cu._check(driver.cuEventRecord(event, stream), "cuEventRecord")
                started = driver.cuEventQuery(events[0])[0] == driver.CUresult.CUDA_SUCCESS
                cu._check(driver.cuEventSynchronize(events[-1]), "the timed steps")
                if started and doublings < SPIN_DOUBLINGS:  # the spin ended before the host
                    spin_ns, doublings = 2 * spin_ns, doublings + 1  # had enqueued it all
                    continue
                if i < warmup:
                    continue
                runs.append([cu._check(driver.cuEventElapsedTime(events[0], e),
                                       "cuEventElapsedTime") for e in events[1:]])
        finally:
            for e in events:
                driver.cuEventDestroy(e)
        return step_medians(runs)


def step_medians(runs: Sequence[Sequence[float]]) -> tuple[float, list[float]]:
    """Runs of cumulative marks (ms from the first event to the event after each step) ->
    (median of the whole, [median of each step]). Medians per step, not differences of medians:
    a step's time is its own run's gap."""
    if not runs or not runs[0]:
        raise ValueError("no timed steps")
    per_step = [[b - a for a, b in zip([0.0, *marks], marks)] for marks in runs]
    return (float(statistics.median(marks[-1] for marks in runs)),
            [float(statistics.median(col)) for col in zip(*per_step, strict=True)])


@functools.cache
def cold_timer() -> ColdTimer:
    """One per process: the flush buffer (twice the L2) is allocated once."""
    return ColdTimer()
