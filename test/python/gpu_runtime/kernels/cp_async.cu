#include <cuda_pipeline.h>

// Stage 16 bytes per thread through shared memory with cp.async, reversed on the way out.
extern "C" __global__ void stage(const float4* __restrict__ x, float4* __restrict__ y) {
  __shared__ float4 buf[128];
  __pipeline_memcpy_async(&buf[threadIdx.x], &x[blockIdx.x * 128 + threadIdx.x], sizeof(float4));
  __pipeline_commit();
  __pipeline_wait_prior(0);
  __syncthreads();
  y[blockIdx.x * 128 + threadIdx.x] = buf[127 - threadIdx.x];
}
