// kc_prelude.cuh — the one prelude every emitted .cu includes (`#include "kc_prelude.cuh"`).
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

// ---- ldmatrix / mma.sync: not yet (a later issue adds kc_ldmatrix_x4, kc_mma_16816 here) --------
