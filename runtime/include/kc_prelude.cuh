// kc_prelude.cuh — the one prelude of every emitted .cu (lowering/emit_cuda.py inlines it, so the .cu stands alone).
//
// Why one prelude: kernel bodies never contain inline asm. Every PTX-level feature is a kc_*
// function here with two implementations of the same contract:
//   - under nvcc/NVRTC (__CUDACC__): the real instruction as inline PTX;
//   - under g++ with the kcpu.h shim (KCPU): an emulation on the fiber runtime, so the CPU run of
//     the same text checks indexing, grouping and waits.
// The PTX strings themselves are only checked by ptxas/SASS inspection and on a GPU, so keep each
// one tiny and give each a GPU test.
//
// Sections: cp.async (now); ldmatrix and mma.sync (kc_ldmatrix_x4, kc_mma_16816: later, built on
// kcpu_warp exchanges like the shuffles).
#pragma once

#if defined(__CUDACC__)
#define KC_DEVICE __device__ __forceinline__
// fp16/bf16 types for kernels that use them (under kcpu, kcpu.h already has them). NVRTC needs
// -I<cuda include> for these; define KC_NO_FP16_HEADERS to skip them (~100 ms less NVRTC time).
#if !defined(KC_NO_FP16_HEADERS)
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#endif
#elif defined(KCPU)
#define KC_DEVICE inline
#else
#error "kc_prelude.cuh: compile with nvcc/NVRTC (__CUDACC__) or with g++ and the kcpu.h shim (KCPU)"
#endif

// ---- cp.async (sm_80+): global -> shared copies that complete at a later wait ---------------------
// kc_cp_async16 / kc_cp_async4 issue one copy of 16 / 4 bytes (both addresses aligned to the size);
// kc_cp_async16_zfill copies src_bytes (0..16) and zero-fills the rest (predicated tail loads);
// kc_cp_async_commit closes the current group; kc_cp_async_wait(n) waits until at most n committed
// groups are still in flight (cp.async.wait_group n). On the CPU: lazy schedules copy at the wait
// (a missing or short wait reads stale or NaN data), eager schedules copy at issue (a refill racing
// with readers shows up), and a thread that exits with copies pending is an error.
#if defined(__CUDACC__)
KC_DEVICE unsigned kc_smem_u32(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
KC_DEVICE void kc_cp_async16(void* smem_dst, const void* gmem_src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(kc_smem_u32(smem_dst)),
               "l"(gmem_src) : "memory");
}
KC_DEVICE void kc_cp_async16_zfill(void* smem_dst, const void* gmem_src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(kc_smem_u32(smem_dst)),
               "l"(gmem_src), "r"(src_bytes) : "memory");
}
KC_DEVICE void kc_cp_async4(void* smem_dst, const void* gmem_src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(kc_smem_u32(smem_dst)),
               "l"(gmem_src) : "memory");
}
KC_DEVICE void kc_cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
// wait_group takes an immediate: the switch folds away when n is a constant.
template <int N>
KC_DEVICE void kc_cp_async_wait_n() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
KC_DEVICE void kc_cp_async_wait(int n) {
  switch (n) {
    case 0: kc_cp_async_wait_n<0>(); break;
    case 1: kc_cp_async_wait_n<1>(); break;
    case 2: kc_cp_async_wait_n<2>(); break;
    case 3: kc_cp_async_wait_n<3>(); break;
    case 4: kc_cp_async_wait_n<4>(); break;
    case 5: kc_cp_async_wait_n<5>(); break;
    case 6: kc_cp_async_wait_n<6>(); break;
    default: kc_cp_async_wait_n<7>(); break;  // more than 7 in flight: waiting for more is safe
  }
}
#else
KC_DEVICE void kc_cp_async16(void* smem_dst, const void* gmem_src) {
  kcpu_cp_async(smem_dst, gmem_src, 16, 16);
}
KC_DEVICE void kc_cp_async16_zfill(void* smem_dst, const void* gmem_src, int src_bytes) {
  kcpu_cp_async(smem_dst, gmem_src, 16, src_bytes);
}
KC_DEVICE void kc_cp_async4(void* smem_dst, const void* gmem_src) {
  kcpu_cp_async(smem_dst, gmem_src, 4, 4);
}
KC_DEVICE void kc_cp_async_commit() { kcpu_cp_async_commit(); }
KC_DEVICE void kc_cp_async_wait(int n) { kcpu_cp_async_wait(n > 7 ? 7 : n); }
#endif

KC_DEVICE void kc_cp_async_wait_all() {
  kc_cp_async_commit();
  kc_cp_async_wait(0);
}

// ---- vector loads and stores --------------------------------------------------------------------
// kc_ld128(regs, src) / kc_st128(dst, regs): 16 bytes in one access (LDG.128 / LDS.128 / STG.128 /
// STS.128); kc_ld64 / kc_st64 and kc_ld32 / kc_st32 the same for 8 and 4 bytes (an mma
// accumulator's column pair). `regs` is a thread's local array (kept in registers when indexed by
// constants); the memory side must be aligned to the width, which the CPU emulation checks.
#if defined(__CUDACC__)
template <int B> struct kc_bits_of;
template <> struct kc_bits_of<16> { typedef uint4 type; };
template <> struct kc_bits_of<8> { typedef uint2 type; };
template <> struct kc_bits_of<4> { typedef unsigned int type; };
template <int B, class T>
KC_DEVICE void kc_ldv(T* regs, const T* src) {
  typedef typename kc_bits_of<B>::type V;
  *reinterpret_cast<V*>(regs) = *reinterpret_cast<const V*>(src);
}
template <int B, class T>
KC_DEVICE void kc_stv(T* dst, const T* regs) {
  typedef typename kc_bits_of<B>::type V;
  *reinterpret_cast<V*>(dst) = *reinterpret_cast<const V*>(regs);
}
#else
template <int B, class T>
KC_DEVICE void kc_ldv(T* regs, const T* src) {
  if (reinterpret_cast<uintptr_t>(src) % B)
    kcpu_fail(__FILE__, __LINE__, "kc_ld%d: address %p is not %d-byte aligned", 8 * B,
              (const void*)src, B);
  std::memcpy(static_cast<void*>(regs), static_cast<const void*>(src), B);
}
template <int B, class T>
KC_DEVICE void kc_stv(T* dst, const T* regs) {
  if (reinterpret_cast<uintptr_t>(dst) % B)
    kcpu_fail(__FILE__, __LINE__, "kc_st%d: address %p is not %d-byte aligned", 8 * B,
              (void*)dst, B);
  std::memcpy(static_cast<void*>(dst), static_cast<const void*>(regs), B);
}
#endif
template <class T> KC_DEVICE void kc_ld128(T* regs, const T* src) { kc_ldv<16>(regs, src); }
template <class T> KC_DEVICE void kc_st128(T* dst, const T* regs) { kc_stv<16>(dst, regs); }
template <class T> KC_DEVICE void kc_ld64(T* regs, const T* src) { kc_ldv<8>(regs, src); }
template <class T> KC_DEVICE void kc_st64(T* dst, const T* regs) { kc_stv<8>(dst, regs); }
template <class T> KC_DEVICE void kc_ld32(T* regs, const T* src) { kc_ldv<4>(regs, src); }
template <class T> KC_DEVICE void kc_st32(T* dst, const T* regs) { kc_stv<4>(dst, regs); }

// ---- ldmatrix / mma.sync m16n8k16 (sm_80+): tensor-core matmul on fp16 / bf16, fp32 accumulators ---
// Warp-collective: all 32 lanes of a warp call them together (no divergence). Fragment registers are
// `int` arrays (two halves each, the low half first), accumulators `float` arrays:
//   kc_ldmatrix_x4(r, row)        r[j] = lane's pair of matrix j (8 x 8 halves); lane l gives the
//                                 address of row l % 8 of matrix l / 8 (16-byte aligned, shared);
//   kc_ldmatrix_x2(r, row)        matrices 0 and 1 (lanes 0..15 give addresses);
//   kc_ldmatrix_x2_trans(r, row)  the same, each matrix transposed (x4_trans: of all four);
//   kc_mma_16816_f16 / _bf16(d, a, b, c)   d = a * b + c: a 16 x 16 (4 regs), b 16 x 8 (2 regs),
//                                 c, d 16 x 8 fp32 (4 each), the PTX fragment layouts;
//   kc_pack_halves(lo, hi)        two halves in one register (fragments read element by element).
// On the CPU a warp meets in a per-warp scratch area between two __syncwarp()s; the mma adds the 16
// products of each output in k order with fp32 FMA (tensor cores use their own order: compare with
// tolerances).
#if defined(__CUDACC__)
KC_DEVICE void kc_ldmatrix_x4(int* r, const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(kc_smem_u32(row)));
}
KC_DEVICE void kc_ldmatrix_x4_trans(int* r, const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(kc_smem_u32(row)));
}
KC_DEVICE void kc_ldmatrix_x2(int* r, const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1]) : "r"(kc_smem_u32(row)));
}
KC_DEVICE void kc_ldmatrix_x2_trans(int* r, const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1]) : "r"(kc_smem_u32(row)));
}
KC_DEVICE void kc_mma_16816_f16(float* d, const int* a, const int* b, const float* c) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%10, %11, %12, %13};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]),
        "f"(c[2]), "f"(c[3]));
}
KC_DEVICE void kc_mma_16816_bf16(float* d, const int* a, const int* b, const float* c) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%10, %11, %12, %13};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]),
        "f"(c[2]), "f"(c[3]));
}
#if !defined(KC_NO_FP16_HEADERS)
KC_DEVICE int kc_pack_halves(__half lo, __half hi) {
  return (int)((unsigned)__half_as_ushort(lo) | ((unsigned)__half_as_ushort(hi) << 16));
}
KC_DEVICE int kc_pack_halves(__nv_bfloat16 lo, __nv_bfloat16 hi) {
  return (int)((unsigned)__bfloat16_as_ushort(lo) | ((unsigned)__bfloat16_as_ushort(hi) << 16));
}
#endif
#else
namespace kc_warp {
// The calling thread's lane and warp (linear thread id within the block / 32).
inline unsigned linear() {
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}
struct Scratch {  // one per warp of the block (thread_local = per block being run)
  const char* rows[32];
  int a[32][4];
  int b[32][2];
};
inline Scratch& scratch() {
  static thread_local Scratch s[32];
  return s[linear() / 32];
}
inline void share_row(const void* row, const char* what) {
  if (reinterpret_cast<uintptr_t>(row) % 16)
    kcpu_fail(__FILE__, __LINE__, "%s: row address %p is not 16-byte aligned", what, row);
  scratch().rows[linear() % 32] = static_cast<const char*>(row);
  __syncwarp();
}
inline unsigned short half_at(const char* row, unsigned col) {
  unsigned short h;
  std::memcpy(&h, row + 2 * col, 2);
  return h;
}
inline void ldmatrix(int* r, const void* row, int n, bool trans, const char* what) {
  share_row(row, what);
  Scratch& s = scratch();
  unsigned l = linear() % 32, g = l / 4, t = l % 4;
  for (int j = 0; j < n; ++j) {
    unsigned lo, hi;
    if (trans) {  // (row 2t, col g) and (row 2t + 1, col g) of matrix j
      lo = half_at(s.rows[8 * j + 2 * t], g);
      hi = half_at(s.rows[8 * j + 2 * t + 1], g);
    } else {  // (row g, cols 2t and 2t + 1)
      lo = half_at(s.rows[8 * j + g], 2 * t);
      hi = half_at(s.rows[8 * j + g], 2 * t + 1);
    }
    r[j] = (int)(lo | (hi << 16));
  }
  __syncwarp();  // nobody shares the next rows before every lane has read these
}
#if KCPU_CUDA_HEADERS
inline float f16_bits(unsigned short h) {
  __half x;
  std::memcpy(static_cast<void*>(&x), &h, 2);
  return __half2float(x);
}
#endif
inline float bf16_bits(unsigned short h) {
  unsigned u = (unsigned)h << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline void mma(float* d, const int* a, const int* b, const float* c, float (*cvt)(unsigned short)) {
  Scratch& s = scratch();
  unsigned l = linear() % 32, g = l / 4, t = l % 4;
  std::memcpy(s.a[l], a, sizeof s.a[l]);
  std::memcpy(s.b[l], b, sizeof s.b[l]);
  __syncwarp();
  auto half = [](int reg, unsigned k) { return (unsigned short)((unsigned)reg >> (16 * (k % 2))); };
  float out[4];
  for (int i = 0; i < 4; ++i) {
    unsigned row = g + 8 * (i / 2), col = 2 * t + i % 2;
    float acc = c[i];
    for (unsigned k = 0; k < 16; ++k) {
      int areg = s.a[(row % 8) * 4 + (k % 8) / 2][(row / 8) + 2 * (k / 8)];
      int breg = s.b[col * 4 + (k % 8) / 2][k / 8];
      acc = fmaf(cvt(half(areg, k)), cvt(half(breg, k)), acc);
    }
    out[i] = acc;
  }
  __syncwarp();
  std::memcpy(d, out, sizeof out);
}
}  // namespace kc_warp
KC_DEVICE void kc_ldmatrix_x4(int* r, const void* row) {
  kc_warp::ldmatrix(r, row, 4, false, "kc_ldmatrix_x4");
}
KC_DEVICE void kc_ldmatrix_x4_trans(int* r, const void* row) {
  kc_warp::ldmatrix(r, row, 4, true, "kc_ldmatrix_x4_trans");
}
KC_DEVICE void kc_ldmatrix_x2(int* r, const void* row) {
  kc_warp::ldmatrix(r, row, 2, false, "kc_ldmatrix_x2");
}
KC_DEVICE void kc_ldmatrix_x2_trans(int* r, const void* row) {
  kc_warp::ldmatrix(r, row, 2, true, "kc_ldmatrix_x2_trans");
}
#if KCPU_CUDA_HEADERS
KC_DEVICE void kc_mma_16816_f16(float* d, const int* a, const int* b, const float* c) {
  kc_warp::mma(d, a, b, c, kc_warp::f16_bits);
}
#endif
KC_DEVICE void kc_mma_16816_bf16(float* d, const int* a, const int* b, const float* c) {
  kc_warp::mma(d, a, b, c, kc_warp::bf16_bits);
}
#if KCPU_CUDA_HEADERS
KC_DEVICE int kc_pack_halves(__half lo, __half hi) {
  unsigned short a, b;
  std::memcpy(&a, &lo, 2);
  std::memcpy(&b, &hi, 2);
  return (int)((unsigned)a | ((unsigned)b << 16));
}
KC_DEVICE int kc_pack_halves(__nv_bfloat16 lo, __nv_bfloat16 hi) {
  unsigned short a, b;
  std::memcpy(&a, &lo, 2);
  std::memcpy(&b, &hi, 2);
  return (int)((unsigned)a | ((unsigned)b << 16));
}
#endif
#endif

// ---- arrivals: the last of n blocks to arrive (split-K finished in the same kernel) ------------
// kc_arrive_last(slot, n): every thread of a block calls it once its stores are done. Each thread
// fences its stores (device scope), the block meets at a barrier, thread 0 adds one to counter
// `slot`; the block that brings it to n gets true (after a fence it may read every other block's
// stores), and resets the counter for the next launch. kc_arrivals are zero at module load. The
// emitter defines KC_ARRIVALS (the counters) only in a program that arrives. Same code on the CPU
// (kcpu: fences are no-ops, atomics plain, blocks run one after another).
#if defined(KC_ARRIVALS)
__device__ unsigned kc_arrivals[KC_ARRIVALS];
KC_DEVICE bool kc_arrive_last(int slot, int n) {
  __shared__ bool kc_last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) {
    kc_last = atomicAdd(&kc_arrivals[slot], 1u) == (unsigned)n - 1u;
    if (kc_last) kc_arrivals[slot] = 0u;
  }
  __syncthreads();
  const bool last = kc_last;
  if (last) __threadfence();
  return last;
}
#endif
