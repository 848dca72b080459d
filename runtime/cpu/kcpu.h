// kcpu.h — the CUDA-on-CPU shim, force-included (`g++ -include kcpu.h`) before an emitted `.cu`.
//
// Why: the CPU target compiles the *exact* text the CUDA printer emits, so that expression printing,
// integer types, indexing, barriers and shuffles are checked without a GPU. This header maps CUDA's
// keywords and device intrinsics onto plain C++ plus the fiber runtime in kcpu_rt.cpp (libkcpu.so):
//   - every CUDA thread of a block is a fiber; all fibers of a block run on one OS thread, so
//     `__shared__` is `thread_local` (one copy per OS thread = one per block being run);
//   - `threadIdx`/`blockIdx`/`blockDim`/`gridDim` are globals of libkcpu that the scheduler sets
//     before it resumes a fiber;
//   - `__syncthreads()` and the warp collectives are the only points where a fiber yields; they are
//     macros so that the runtime can name the file:line of a deadlocked barrier.
// Dynamic shared memory: every `extern __shared__ T name[];` in the source is defined by the
// generated launcher as `thread_local T name[KCPU_DYN_SMEM_MAX / sizeof(T)]` (aligned to 128), so
// each name has the full 227 KB opt-in capacity; the launch checks `smem_bytes` against it. Unlike
// on the GPU, two differently named `extern __shared__` arrays do NOT alias.
// Shared memory (static and the first `smem_bytes` of dynamic) is filled with 0xFF at every block
// start: uninitialised reads give NaN (f32/f16/bf16) or -1 (ints).
// fp16/bf16: with -DKCPU_CUDA_HEADERS=1 the real cuda_fp16.h / cuda_bf16.h / vector_types.h are
// included (their host paths work under g++); without it only a minimal uint3/dim3 is provided.
// Not emulated: grid-wide sync, spin-waits between threads (a fiber only yields at a barrier or a
// warp collective), inter-block memory ordering (blocks run one after another).
#pragma once
#define KCPU 1

// Standard headers first: CUDA's host_defines would otherwise rewrite libstdc++'s attributes.
#include <algorithm>
#include <cassert>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

#if KCPU_CUDA_HEADERS
#include <vector_types.h>
#include <vector_functions.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#define __DEVICE_LAUNCH_PARAMETERS_H__  // its threadIdx/blockIdx would clash with ours below
#else
struct uint3 { unsigned int x, y, z; };
struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
};
#endif

// ---- keywords ----------------------------------------------------------------------------------
#undef __global__
#undef __device__
#undef __host__
#undef __constant__
#undef __shared__
#undef __managed__
#undef __grid_constant__
#define __global__
#define __device__
#define __host__
#define __constant__
#define __managed__
#define __grid_constant__
#define __shared__ thread_local
#define __launch_bounds__(...)
#ifndef __forceinline__
#define __forceinline__ inline __attribute__((always_inline))
#endif
#ifndef __noinline__
#define __noinline__ __attribute__((noinline))
#endif
#ifndef __align__
#define __align__(n) __attribute__((aligned(n)))
#endif

#define KCPU_DYN_SMEM_MAX 232448  // 227 KB, the sm_90 opt-in maximum per block

// ---- runtime interface (kcpu_rt.cpp) -----------------------------------------------------------
extern "C" {
extern uint3 kcpu_threadIdx, kcpu_blockIdx;
extern dim3 kcpu_blockDim, kcpu_gridDim;
int kcpu_syncthreads(int kind, int pred, const char* file, int line);
unsigned long long kcpu_warp(int op, unsigned mask, unsigned long long val, int arg, int width,
                             const char* file, int line);
unsigned kcpu_activemask(void);
void kcpu_cp_async(void* dst, const void* src, int bytes, int src_bytes);
void kcpu_cp_async_commit(void);
void kcpu_cp_async_wait(int n);
[[noreturn]] void kcpu_fail(const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));
long long kcpu_clock(void);

// launch interface, used only by the generated launcher
struct kcpu_cfg {
  unsigned grid[3], block[3];
  unsigned long long smem_bytes;
  int cp_eager, greedy, order;  // order: 0 fwd, 1 rev, 2 rnd
  unsigned seed;
  int catch_signals;
  unsigned stack_kb;
};
struct kcpu_region { void* ptr; unsigned long long bytes; };
int kcpu_launch(const kcpu_cfg* cfg, void (*thunk)(void**), void** argv, const kcpu_region* dyn,
                int n_dyn, char* err, int errlen);
}

enum {  // kcpu_syncthreads kinds
  KCPU_BAR = 0, KCPU_BAR_COUNT = 1, KCPU_BAR_AND = 2, KCPU_BAR_OR = 3
};
enum {  // kcpu_warp ops; the names are in kcpu_rt.cpp's kOpNames
  KCPU_SYNCWARP = 0, KCPU_SHFL_IDX, KCPU_SHFL_UP, KCPU_SHFL_DOWN, KCPU_SHFL_XOR, KCPU_BALLOT,
  KCPU_ANY, KCPU_ALL, KCPU_REDUCE_ADD, KCPU_REDUCE_MIN, KCPU_REDUCE_MAX, KCPU_REDUCE_UMIN,
  KCPU_REDUCE_UMAX, KCPU_REDUCE_AND, KCPU_REDUCE_OR, KCPU_REDUCE_XOR, KCPU_MATCH_ANY, KCPU_MATCH_ALL
};

#define threadIdx kcpu_threadIdx
#define blockIdx kcpu_blockIdx
#define blockDim kcpu_blockDim
#define gridDim kcpu_gridDim
static constexpr int warpSize = 32;

// ---- barriers and warp collectives (macros: they carry the call site) --------------------------
#define __syncthreads() ((void)kcpu_syncthreads(KCPU_BAR, 0, __FILE__, __LINE__))
#define __syncthreads_count(p) kcpu_syncthreads(KCPU_BAR_COUNT, (p) ? 1 : 0, __FILE__, __LINE__)
#define __syncthreads_and(p) kcpu_syncthreads(KCPU_BAR_AND, (p) ? 1 : 0, __FILE__, __LINE__)
#define __syncthreads_or(p) kcpu_syncthreads(KCPU_BAR_OR, (p) ? 1 : 0, __FILE__, __LINE__)
#define __syncwarp(...) kcpu::syncwarp(__FILE__, __LINE__ __VA_OPT__(, ) __VA_ARGS__)
#define __shfl_sync(...) kcpu::shfl(__FILE__, __LINE__, KCPU_SHFL_IDX, __VA_ARGS__)
#define __shfl_up_sync(...) kcpu::shfl(__FILE__, __LINE__, KCPU_SHFL_UP, __VA_ARGS__)
#define __shfl_down_sync(...) kcpu::shfl(__FILE__, __LINE__, KCPU_SHFL_DOWN, __VA_ARGS__)
#define __shfl_xor_sync(...) kcpu::shfl(__FILE__, __LINE__, KCPU_SHFL_XOR, __VA_ARGS__)
#define __ballot_sync(m, p) ((unsigned)kcpu_warp(KCPU_BALLOT, m, (p) ? 1 : 0, 0, 32, __FILE__, __LINE__))
#define __any_sync(m, p) ((int)kcpu_warp(KCPU_ANY, m, (p) ? 1 : 0, 0, 32, __FILE__, __LINE__))
#define __all_sync(m, p) ((int)kcpu_warp(KCPU_ALL, m, (p) ? 1 : 0, 0, 32, __FILE__, __LINE__))
#define __match_any_sync(m, v) kcpu::match(__FILE__, __LINE__, KCPU_MATCH_ANY, m, v)
#define __match_all_sync(m, v, pred) kcpu::match_all(__FILE__, __LINE__, m, v, pred)
#define __reduce_add_sync(m, v) kcpu::reduce(__FILE__, __LINE__, KCPU_REDUCE_ADD, m, v)
#define __reduce_min_sync(m, v) kcpu::reduce_minmax(__FILE__, __LINE__, false, m, v)
#define __reduce_max_sync(m, v) kcpu::reduce_minmax(__FILE__, __LINE__, true, m, v)
#define __reduce_and_sync(m, v) ((unsigned)kcpu::reduce(__FILE__, __LINE__, KCPU_REDUCE_AND, m, v))
#define __reduce_or_sync(m, v) ((unsigned)kcpu::reduce(__FILE__, __LINE__, KCPU_REDUCE_OR, m, v))
#define __reduce_xor_sync(m, v) ((unsigned)kcpu::reduce(__FILE__, __LINE__, KCPU_REDUCE_XOR, m, v))
#define __activemask() kcpu_activemask()
#define __trap() kcpu_fail(__FILE__, __LINE__, "__trap() called")
#undef assert
#define assert(e) \
  ((e) ? (void)0 : kcpu_fail(__FILE__, __LINE__, "assertion failed: %s", #e))

namespace kcpu {
inline void syncwarp(const char* f, int l, unsigned mask = 0xffffffffu) {
  kcpu_warp(KCPU_SYNCWARP, mask, 0, 0, 32, f, l);
}
// Any trivially copyable T travels in 8-byte chunks, one warp exchange per chunk.
template <class T>
inline T shfl(const char* f, int l, int op, unsigned mask, T v, int arg, int width = 32) {
  constexpr int n = (sizeof(T) + 7) / 8;
  unsigned long long w[n] = {};
  std::memcpy(static_cast<void*>(w), static_cast<const void*>(&v), sizeof(T));
  for (int i = 0; i < n; ++i) w[i] = kcpu_warp(op, mask, w[i], arg, width, f, l);
  T out;
  std::memcpy(static_cast<void*>(&out), static_cast<const void*>(w), sizeof(T));
  return out;
}
template <class T>
inline unsigned long long bits(T v) {
  unsigned long long w = 0;
  std::memcpy(&w, &v, sizeof(T) < 8 ? sizeof(T) : 8);
  return w;
}
template <class T>
inline unsigned match(const char* f, int l, int op, unsigned mask, T v) {
  return (unsigned)kcpu_warp(op, mask, bits(v), 0, 32, f, l);
}
template <class T>
inline unsigned match_all(const char* f, int l, unsigned mask, T v, int* pred) {
  unsigned r = (unsigned)kcpu_warp(KCPU_MATCH_ALL, mask, bits(v), 0, 32, f, l);
  *pred = r != 0;
  return r;
}
template <class T>
inline T reduce(const char* f, int l, int op, unsigned mask, T v) {
  return (T)kcpu_warp(op, mask, (unsigned long long)(unsigned)v, 0, 32, f, l);
}
inline int reduce_minmax(const char* f, int l, bool mx, unsigned mask, int v) {
  return (int)kcpu_warp(mx ? KCPU_REDUCE_MAX : KCPU_REDUCE_MIN, mask, (unsigned)v, 0, 32, f, l);
}
inline unsigned reduce_minmax(const char* f, int l, bool mx, unsigned mask, unsigned v) {
  return (unsigned)kcpu_warp(mx ? KCPU_REDUCE_UMAX : KCPU_REDUCE_UMIN, mask, v, 0, 32, f, l);
}
template <class To, class From>
inline To bitcast(From v) {
  static_assert(sizeof(To) == sizeof(From), "bitcast size");
  To t;
  std::memcpy(&t, &v, sizeof(To));
  return t;
}
}  // namespace kcpu

// ---- fences, clocks: no-ops or host equivalents ------------------------------------------------
inline void __threadfence() {}
inline void __threadfence_block() {}
inline void __threadfence_system() {}
inline void __nanosleep(unsigned) {}
inline long long clock64() { return kcpu_clock(); }
inline long long __clock64() { return kcpu_clock(); }

// ---- min/max: CUDA has global overloads; mixed int/unsigned gives unsigned, as in CUDA ---------
template <class A, class B,
          class = std::enable_if_t<std::is_arithmetic<A>::value && std::is_arithmetic<B>::value>>
inline std::common_type_t<A, B> min(A a, B b) {
  using C = std::common_type_t<A, B>;
  return (C)b < (C)a ? (C)b : (C)a;
}
template <class A, class B,
          class = std::enable_if_t<std::is_arithmetic<A>::value && std::is_arithmetic<B>::value>>
inline std::common_type_t<A, B> max(A a, B b) {
  using C = std::common_type_t<A, B>;
  return (C)a < (C)b ? (C)b : (C)a;
}

// ---- fast-math and rounding intrinsics: the IEEE host function (not CUDA's approximation) ------
inline float __expf(float x) { return expf(x); }
inline float __exp10f(float x) { return powf(10.0f, x); }
inline float __logf(float x) { return logf(x); }
inline float __log2f(float x) { return log2f(x); }
inline float __log10f(float x) { return log10f(x); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __tanf(float x) { return tanf(x); }
inline void __sincosf(float x, float* s, float* c) { *s = sinf(x); *c = cosf(x); }
inline float __powf(float x, float y) { return powf(x, y); }
inline float __fdividef(float a, float b) { return a / b; }
inline float fdividef(float a, float b) { return a / b; }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float rcbrtf(float x) { return 1.0f / cbrtf(x); }
inline float __frsqrt_rn(float x) { return 1.0f / sqrtf(x); }
inline float __fsqrt_rn(float x) { return sqrtf(x); }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
inline double __fma_rn(double a, double b, double c) { return fma(a, b, c); }
inline float __saturatef(float x) { return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : (x != x ? 0.0f : x)); }
inline int __float2int_rn(float x) { return (int)nearbyintf(x); }
inline int __float2int_rz(float x) { return (int)x; }
inline int __float2int_rd(float x) { return (int)floorf(x); }
inline int __float2int_ru(float x) { return (int)ceilf(x); }
inline unsigned __float2uint_rn(float x) { return (unsigned)nearbyintf(x); }
inline unsigned __float2uint_rz(float x) { return (unsigned)x; }
inline long long __float2ll_rn(float x) { return (long long)nearbyintf(x); }
inline long long __float2ll_rz(float x) { return (long long)x; }
inline float __int2float_rn(int x) { return (float)x; }
inline float __uint2float_rn(unsigned x) { return (float)x; }
inline float __ll2float_rn(long long x) { return (float)x; }
inline float __double2float_rn(double x) { return (float)x; }
inline int __double2int_rn(double x) { return (int)nearbyint(x); }
inline int __float_as_int(float x) { return kcpu::bitcast<int>(x); }
inline unsigned __float_as_uint(float x) { return kcpu::bitcast<unsigned>(x); }
inline float __int_as_float(int x) { return kcpu::bitcast<float>(x); }
inline float __uint_as_float(unsigned x) { return kcpu::bitcast<float>(x); }
inline long long __double_as_longlong(double x) { return kcpu::bitcast<long long>(x); }
inline double __longlong_as_double(long long x) { return kcpu::bitcast<double>(x); }

// ---- fp16/bf16 math that cuda_fp16.h / cuda_bf16.h declare for the device only: through float ---
#if KCPU_CUDA_HEADERS
namespace kcpu {
inline float tof(__half h) { return __half2float(h); }
inline float tof(__nv_bfloat16 h) { return __bfloat162float(h); }
inline __half from(float f, __half) { return __float2half_rn(f); }
inline __nv_bfloat16 from(float f, __nv_bfloat16) { return __float2bfloat16_rn(f); }
inline __half2 pair(__half a, __half b) { return __halves2half2(a, b); }
inline __nv_bfloat162 pair(__nv_bfloat16 a, __nv_bfloat16 b) { return __halves2bfloat162(a, b); }
inline __half lo(__half2 h) { return __low2half(h); }
inline __half hi(__half2 h) { return __high2half(h); }
inline __nv_bfloat16 lo(__nv_bfloat162 h) { return __low2bfloat16(h); }
inline __nv_bfloat16 hi(__nv_bfloat162 h) { return __high2bfloat16(h); }
}  // namespace kcpu
#define KCPU_HMATH(name, name2, expr)                                                      \
  template <class H, class = decltype(kcpu::tof(H()))>                                     \
  inline H name(H h) { float x = kcpu::tof(h); return kcpu::from(expr, h); }               \
  template <class H2, class = decltype(kcpu::lo(H2()))>                                     \
  inline H2 name2(H2 h) { return kcpu::pair(name(kcpu::lo(h)), name(kcpu::hi(h))); }
KCPU_HMATH(hexp, h2exp, expf(x))
KCPU_HMATH(hexp2, h2exp2, exp2f(x))
KCPU_HMATH(hexp10, h2exp10, powf(10.0f, x))
KCPU_HMATH(hlog, h2log, logf(x))
KCPU_HMATH(hlog2, h2log2, log2f(x))
KCPU_HMATH(hlog10, h2log10, log10f(x))
KCPU_HMATH(hsqrt, h2sqrt, sqrtf(x))
KCPU_HMATH(hrsqrt, h2rsqrt, 1.0f / sqrtf(x))
KCPU_HMATH(hrcp, h2rcp, 1.0f / x)
KCPU_HMATH(hsin, h2sin, sinf(x))
KCPU_HMATH(hcos, h2cos, cosf(x))
KCPU_HMATH(htanh, h2tanh, tanhf(x))
KCPU_HMATH(htrunc, h2trunc, truncf(x))
KCPU_HMATH(hfloor, h2floor, floorf(x))
KCPU_HMATH(hceil, h2ceil, ceilf(x))
KCPU_HMATH(hrint, h2rint, nearbyintf(x))
#undef KCPU_HMATH
template <class H, class = decltype(kcpu::tof(H()))>
inline H __hfma(H a, H b, H c) { return kcpu::from(fmaf(kcpu::tof(a), kcpu::tof(b), kcpu::tof(c)), a); }
template <class H, class = decltype(kcpu::tof(H()))>
inline H __hfma_relu(H a, H b, H c) {
  float r = fmaf(kcpu::tof(a), kcpu::tof(b), kcpu::tof(c));
  return kcpu::from(r < 0.0f ? 0.0f : r, a);
}
template <class H2, class = decltype(kcpu::lo(H2()))>
inline H2 __hfma2(H2 a, H2 b, H2 c) {
  return kcpu::pair(__hfma(kcpu::lo(a), kcpu::lo(b), kcpu::lo(c)),
                    __hfma(kcpu::hi(a), kcpu::hi(b), kcpu::hi(c)));
}
#endif

// ---- integer intrinsics ------------------------------------------------------------------------
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline unsigned __brev(unsigned x) {
  unsigned r = 0;
  for (int i = 0; i < 32; ++i) r |= ((x >> i) & 1u) << (31 - i);
  return r;
}
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  unsigned long long v = ((unsigned long long)y << 32) | x;
  unsigned r = 0;
  for (int i = 0; i < 4; ++i) r |= (unsigned)((v >> (8 * ((s >> (4 * i)) & 7))) & 0xff) << (8 * i);
  return r;
}
inline int __mulhi(int a, int b) { return (int)(((long long)a * b) >> 32); }
inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a * b) >> 32); }
inline long long __mul64hi(long long a, long long b) { return (long long)(((__int128)a * b) >> 64); }
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
  return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
inline int __mul24(int a, int b) { return (int)((long long)((a << 8) >> 8) * ((b << 8) >> 8)); }
inline unsigned __umul24(unsigned a, unsigned b) { return (a & 0xffffffu) * (b & 0xffffffu); }

// ---- cache-hinted loads/stores: plain accesses -------------------------------------------------
template <class T> inline T __ldg(const T* p) { return *p; }
template <class T> inline T __ldcg(const T* p) { return *p; }
template <class T> inline T __ldca(const T* p) { return *p; }
template <class T> inline T __ldcs(const T* p) { return *p; }
template <class T> inline T __ldlu(const T* p) { return *p; }
template <class T> inline T __ldcv(const T* p) { return *p; }
template <class T> inline void __stcg(T* p, T v) { *p = v; }
template <class T> inline void __stcs(T* p, T v) { *p = v; }
template <class T> inline void __stwb(T* p, T v) { *p = v; }
template <class T> inline void __stwt(T* p, T v) { *p = v; }

// ---- atomics: fibers never switch inside one, so a plain read-modify-write is atomic -----------
#define KCPU_ATOMIC(name, expr)                                   \
  template <class T, class U> inline T name(T* p, U v) {          \
    T old = *p;                                                   \
    *p = (T)(expr);                                               \
    return old;                                                   \
  }                                                               \
  template <class T, class U> inline T name##_block(T* p, U v) { return name(p, v); } \
  template <class T, class U> inline T name##_system(T* p, U v) { return name(p, v); }
KCPU_ATOMIC(atomicAdd, old + v)
KCPU_ATOMIC(atomicSub, old - v)
KCPU_ATOMIC(atomicExch, v)
KCPU_ATOMIC(atomicMin, v < old ? (T)v : old)
KCPU_ATOMIC(atomicMax, old < v ? (T)v : old)
KCPU_ATOMIC(atomicAnd, old & v)
KCPU_ATOMIC(atomicOr, old | v)
KCPU_ATOMIC(atomicXor, old ^ v)
KCPU_ATOMIC(atomicInc, (old >= (T)v) ? (T)0 : (T)(old + 1))
KCPU_ATOMIC(atomicDec, (old == 0 || old > (T)v) ? (T)v : (T)(old - 1))
#undef KCPU_ATOMIC
template <class T, class U, class V> inline T atomicCAS(T* p, U cmp, V v) {
  T old = *p;
  if (old == (T)cmp) *p = (T)v;
  return old;
}
