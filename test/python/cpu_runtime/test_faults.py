"""Kernel faults never kill the process: segfaults, integer division by zero, fiber stack
overflow, assert and __trap become KernelErrors, and the next launch still works."""

import numpy as np
import pytest

from deplo.runtime.cpu import CpuModule, KernelError

FAULTS = r"""
extern "C" __global__ void segv(int* out, int z) {
  const int* p = (const int*)(long long)z;
  out[threadIdx.x] = p[threadIdx.x];
}
extern "C" __global__ void fpe(int* out, int z) { out[threadIdx.x] = 10 / (z - 100); }
__device__ int deep(int d) {
  volatile char big[3000];
  big[0] = (char)d;
  return d == 0 ? big[0] : deep(d - 1) + big[0];
}
extern "C" __global__ void overflow(int* out, int z) { out[threadIdx.x] = deep(z); }
extern "C" __global__ void asserts(int* out, int z) {
  assert(threadIdx.x < 5);
  out[threadIdx.x] = z;
}
extern "C" __global__ void traps(int* out, int z) {
  if (threadIdx.x == 3) __trap();
  out[threadIdx.x] = z;
}
"""
NAMES = ["segv", "fpe", "overflow", "asserts", "traps"]


@pytest.fixture(scope="module")
def mod():
    return CpuModule(FAULTS, {k: ["int* __restrict__", "int"] for k in NAMES}, name="faults")


@pytest.mark.parametrize("kernel, message", [
    ("segv", r"SIGSEGV \(invalid memory access\) in thread \(0,0,0\) .* at address 0x64"),
    ("fpe", r"SIGFPE"),
    ("overflow", r"fiber stack overflow: 64 KB per thread"),
    ("asserts", r"thread \(5,0,0\) of block \(0,0,0\) at faults.cu:14: assertion failed"),
    ("traps", r"thread \(3,0,0\) of block \(0,0,0\) at faults.cu:18: __trap\(\) called"),
])
def test_fault_is_a_kernel_error(mod, kernel, message):
    with pytest.raises(KernelError, match=message):
        mod.launch(kernel, (2, 1, 1), (32, 1, 1), [np.zeros(32, np.int32), 100])
    out = np.zeros(32, np.int32)  # the process and the runtime are still fine
    mod.launch("asserts", (1, 1, 1), (5, 1, 1), [out, 7])
    assert (out[:5] == 7).all() and (out[5:] == 0).all()
