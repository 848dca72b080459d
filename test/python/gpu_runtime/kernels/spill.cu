// __launch_bounds__(256, 8) caps ptxas at 32 registers; 48 live floats must spill.
extern "C" __global__ void __launch_bounds__(256, 8) spill(const float* x, float* y, int n) {
  float a[48];
#pragma unroll
  for (int k = 0; k < 48; ++k) a[k] = x[threadIdx.x + k * n];
  float s = 0.f;
#pragma unroll
  for (int k = 0; k < 48; ++k) s += a[k] * a[(k * 7 + 5) % 48] + a[47 - k];
  y[threadIdx.x] = s;
}
