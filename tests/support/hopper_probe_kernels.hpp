// Hand-written kernels over the Hopper primitives (kernels_templates/attnjit/sm90_*.cuh), each
// probing one encoding the sm90 kernel relies on (hopper_probes.hpp): built under the SIMT
// emulator by tests/simt/simt_hopper_test.cpp and by NVRTC for sm_90a by
// tests/gpu/hopper_probe_test.cpp, which check the same expectations. Every kernel takes
// FwdParams (the forward entry's signature): p.q points at an array of tensor maps, p.k at extra
// input (the P matrix), p.o at the fp32 output, and the int fields carry the test's knobs. The
// kernels past producer_consumer_ring make the mistakes the emulator must report; they never run
// on a GPU.
#pragma once

namespace attnjit::hopper_probe {

constexpr const char* kProbeKernels = R"(
#if defined(__CUDACC_RTC__)
// On the GPU a wait that never completes records itself and faults after 2 s instead of hanging
// the test (sm90_barrier.cuh); the runner attaches the record when it loads the module.
#define ATTNJIT_SM90_WATCHDOG_NS 2000000000ull
#endif
#include "attnjit/copy.cuh"
#include "attnjit/fwd_params.cuh"
#include "attnjit/sm90_barrier.cuh"
#include "attnjit/sm90_tma.cuh"
#include "attnjit/sm90_wgmma.cuh"
using namespace attnjit;

namespace {

ATTNJIT_DEVICE const TensorMap* tensor_map(const FwdParams& p, int i) {
  return static_cast<const TensorMap*>(p.q) + i;
}

// Dynamic shared memory from its first 1024-byte boundary, where 128-byte swizzled TMA boxes and
// the wgmma descriptors over them must start (the sm90 kernel pads the same way). The emulator's
// shared memory starts at byte 0; on a GPU the runner adds 1024 bytes for the padding.
ATTNJIT_DEVICE unsigned char* probe_smem() {
  const unsigned address = smem_address(attnjit_dynamic_smem);
  return attnjit_dynamic_smem + (1024u - address % 1024u) % 1024u;
}

// Stores accumulators of one warp's 16 rows of a 64 x N wgmma result to a row-major fp32 [64][N].
template <int N>
ATTNJIT_DEVICE void store_accumulators(const FwdParams& p, const float (&d)[N / 2]) {
  float* out = static_cast<float*>(p.o);
  const int warp = threadIdx.x / 32 % 4, lane = threadIdx.x % 32;
#pragma unroll
  for (int e = 0; e < N / 2; ++e) {
    const int row = 16 * warp + lane / 4 + 8 * ((e % 4) / 2);
    const int col = 8 * (e / 4) + 2 * (lane % 4) + e % 2;
    store_global_f32(out + row * N + col, d[e]);
  }
}

// Thread 0 initialises the barriers at `bars` (count arrivals each), fenced for the async proxy.
ATTNJIT_DEVICE void init_barriers(unsigned bars, int num, unsigned count) {
  if (threadIdx.x == 0) {
    for (int i = 0; i < num; ++i) mbarrier_init(bars + 8 * i, count);
    fence_mbarrier_init();
  }
  __syncthreads();
}

}  // namespace

// One TMA box of map 0 at (p.num_heads_kv, p.kv_len, 1, p.num_splits) into shared byte p.num_heads_q, copied out
// byte for byte (p.q_len bytes) so the test sees the swizzled placement. p.batch 1: read after a
// __syncthreads instead of the mbarrier wait, which orders the issue but not the landing.
extern "C" __global__ void tma_box(FwdParams p) {
  unsigned char* smem = probe_smem();
  const unsigned bar = smem_address(smem);
  // The destination first holds a pattern, so that a box TMA leaves unwritten (one wholly out of
  // range) shows as 0xa5 bytes where zeros are expected. The fence orders these generic stores
  // before the async proxy's writes.
  for (int word = threadIdx.x; word < p.q_len / 4; word += blockDim.x) {
    store_shared_32(smem + p.num_heads_q + 4 * word, 0xa5a5a5a5u);
  }
  fence_proxy_async_shared();
  init_barriers(bar, 1, 1);
  if (threadIdx.x == 0) {
    tma_prefetch_descriptor(tensor_map(p, 0));
    mbarrier_arrive_expect_tx(bar, static_cast<unsigned>(p.q_len));
    tma_load_4d(tensor_map(p, 0), bar, bar + p.num_heads_q, p.num_heads_kv, p.kv_len, 1,
                p.num_splits);
  }
  if (p.batch == 1) {
    __syncthreads();
  } else {
    mbarrier_wait(bar, 0);
  }
  for (int chunk = threadIdx.x; chunk < p.q_len / 16; chunk += blockDim.x) {
    store_global_16(static_cast<unsigned short*>(p.o) + 8 * chunk,
                    load_shared_16(smem + p.num_heads_q + 16 * chunk));
  }
}

// D[64][N] = A[64][K] * B[N][K]^T with one warpgroup: A (map 0) and B (map 1) TMA-loaded as
// K / 64 boxes of 64 columns, then K / 16 wgmma.ss with the descriptors advanced 32 bytes per
// step inside a box and a box apart between boxes. p.batch: 1 reads an accumulator before the
// wait, 2 never waits.
template <typename ELEM, int N, int K>
ATTNJIT_DEVICE void wgmma_ss_kernel(FwdParams p) {
  constexpr int kBoxes = (K + 63) / 64;
  constexpr unsigned kATile = 1024, kBTile = kATile + kBoxes * 64 * 128;
  const unsigned base = smem_address(probe_smem());
  const unsigned bar = base;
  init_barriers(bar, 1, 1);
  if (threadIdx.x == 0) {
    mbarrier_arrive_expect_tx(bar, kBoxes * (64 + N) * 128);
    for (int box = 0; box < kBoxes; ++box) {
      tma_load_4d(tensor_map(p, 0), bar, base + kATile + box * 64 * 128, 64 * box, 0, 0, 0);
      tma_load_4d(tensor_map(p, 1), bar, base + kBTile + box * N * 128, 64 * box, 0, 0, 0);
    }
  }
  mbarrier_wait(bar, 0);
  float d[N / 2];
  wgmma_fence();
#pragma unroll
  for (int step = 0; step < K / 16; ++step) {
    const unsigned in_box = (step % 4) * 32;
    Wgmma<ELEM, N>::ss(d, wgmma_desc_k_major(base + kATile + (step / 4) * 64 * 128 + in_box),
                       wgmma_desc_k_major(base + kBTile + (step / 4) * N * 128 + in_box),
                       step > 0);
  }
  wgmma_commit_group();
  if (p.batch == 1) store_global_f32(static_cast<float*>(p.o), d[0]);
  if (p.batch == 2) return;
  wgmma_wait_group<0>();
  wgmma_fence_accumulators(d);
  store_accumulators<N>(p, d);
}

#define WGMMA_SS_KERNEL(ELEM, N, K)                                    \
  extern "C" __global__ void wgmma_ss_##ELEM##_n##N##_k##K(FwdParams p) { \
    wgmma_ss_kernel<ELEM##_t, N, K>(p);                                  \
  }
WGMMA_SS_KERNEL(bf16, 64, 16)
WGMMA_SS_KERNEL(fp16, 64, 16)
WGMMA_SS_KERNEL(bf16, 128, 16)
WGMMA_SS_KERNEL(fp16, 128, 16)
WGMMA_SS_KERNEL(bf16, 64, 128)
WGMMA_SS_KERNEL(fp16, 64, 128)
WGMMA_SS_KERNEL(bf16, 128, 128)
WGMMA_SS_KERNEL(fp16, 128, 128)

// The P.V shape: O[64][128] = P[64][64] * V[64][128], V (map 0: [keys][128]) TMA-loaded as two
// 64-column boxes and read MN-major, 16 keys (2048 bytes) per step. P from registers (wgmma.rs,
// the default schedule; row-major 16-bit elements at p.k) or, as in the sm90_p_smem schedule,
// from shared memory (wgmma.ss; map 1: [64][64], TMA-loaded as the K-major A operand).
template <typename ELEM, bool P_FROM_SMEM>
ATTNJIT_DEVICE void p_times_v_kernel(FwdParams p) {
  constexpr unsigned kBoxBytes = 64 * 128, kVTile = 1024, kPTile = kVTile + 2 * kBoxBytes;
  const unsigned base = smem_address(probe_smem());
  init_barriers(base, 1, 1);
  if (threadIdx.x == 0) {
    mbarrier_arrive_expect_tx(base, (P_FROM_SMEM ? 3 : 2) * kBoxBytes);
    for (int box = 0; box < 2; ++box) {
      tma_load_4d(tensor_map(p, 0), base, base + kVTile + box * kBoxBytes, 64 * box, 0, 0, 0);
    }
    if (P_FROM_SMEM) tma_load_4d(tensor_map(p, 1), base, base + kPTile, 0, 0, 0, 0);
  }
  const unsigned short* pm = static_cast<const unsigned short*>(p.k);
  const int warp = threadIdx.x / 32 % 4, lane = threadIdx.x % 32;
  mbarrier_wait(base, 0);
  float d[64];
  wgmma_fence();
#pragma unroll
  for (int step = 0; step < 4; ++step) {
    const unsigned long long desc_v =
        wgmma_desc_mn_major(base + kVTile + step * 16 * 128, kBoxBytes);
    if constexpr (P_FROM_SMEM) {
      Wgmma<ELEM, 128>::ss_mn(d, wgmma_desc_k_major(base + kPTile + 32 * step), desc_v, step > 0);
    } else {
      // The m16n8k16 A fragment of rows 16 * warp ..: register i holds (row g + 8 * (i % 2),
      // cols 2q + 8 * (i / 2) + {0, 1}) of this 16-key step, the smaller column in the low half.
      unsigned a[4];
      for (int i = 0; i < 4; ++i) {
        const int row = 16 * warp + lane / 4 + 8 * (i % 2);
        const int col = 16 * step + 2 * (lane % 4) + 8 * (i / 2);
        a[i] = pm[row * 64 + col] | (static_cast<unsigned>(pm[row * 64 + col + 1]) << 16);
      }
      Wgmma<ELEM, 128>::rs(d, a, desc_v, step > 0);
    }
  }
  wgmma_commit_group();
  wgmma_wait_group<0>();
  store_accumulators<128>(p, d);
}

extern "C" __global__ void wgmma_rs_bf16(FwdParams p) { p_times_v_kernel<bf16_t, false>(p); }
extern "C" __global__ void wgmma_rs_fp16(FwdParams p) { p_times_v_kernel<fp16_t, false>(p); }
extern "C" __global__ void wgmma_ss_mn_bf16(FwdParams p) { p_times_v_kernel<bf16_t, true>(p); }
extern "C" __global__ void wgmma_ss_mn_fp16(FwdParams p) { p_times_v_kernel<fp16_t, true>(p); }

// Warp specialisation over a 2-stage ring: warps 0-3 consume, warp 4 produces. The producer loads
// Q (map 0, [64][64]) once and p.num_heads_q key tiles (map 1, [64 * tiles][64]) into the stage
// whose "empty" barrier the consumers released; the consumers accumulate D = sum_i Q K_i^T with
// wgmma and release the stage after their wait. p.batch 1: they release it while keeping its
// wgmma group in flight (wgmma_wait_group<1>), a race with the producer's next load into it;
// p.batch 2: they release it just before the wait that retires the group, the same race with
// nothing between the arrival and the wait.
extern "C" __global__ void __launch_bounds__(160, 1) producer_consumer_ring(FwdParams p) {
  constexpr unsigned kTileBytes = 64 * 128;
  const unsigned base = smem_address(probe_smem());
  const unsigned q_full = base, full = base + 8, empty = base + 24;
  const unsigned q_tile = base + 1024, k_tiles = q_tile + kTileBytes;
  const int tiles = p.num_heads_q;
  if (threadIdx.x == 0) {
    mbarrier_init(q_full, 1);
    for (int s = 0; s < 2; ++s) {
      mbarrier_init(full + 8 * s, 1);
      mbarrier_init(empty + 8 * s, 128);
    }
    fence_mbarrier_init();
  }
  __syncthreads();
  if (threadIdx.x >= 128) {
    warpgroup_reg_dealloc<40>();
    const int leader = elect_one_lane();
    if (leader) {
      tma_prefetch_descriptor(tensor_map(p, 1));
      mbarrier_arrive_expect_tx(q_full, kTileBytes);
      tma_load_4d(tensor_map(p, 0), q_full, q_tile, 0, 0, 0, 0);
    }
    // The producer warp signals without waiting: a bar.arrive / bar.sync pair.
    named_barrier_arrive(1, 160);
    if (leader) {
      for (int i = 0; i < tiles; ++i) {
        const int s = i % 2;
        mbarrier_wait(empty + 8 * s, ((i / 2) & 1) ^ 1);
        mbarrier_arrive_expect_tx(full + 8 * s, kTileBytes);
        tma_load_4d(tensor_map(p, 1), full + 8 * s, k_tiles + s * kTileBytes, 0, 64 * i, 0, 0);
      }
    }
    return;
  }
  warpgroup_reg_alloc<232>();
  named_barrier_sync(1, 160);
  mbarrier_wait(q_full, 0);
  float d[32];
  for (int i = 0; i < tiles; ++i) {
    const int s = i % 2;
    mbarrier_wait(full + 8 * s, (i / 2) & 1);
    wgmma_fence();
#pragma unroll
    for (int step = 0; step < 4; ++step) {
      Wgmma<bf16_t, 64>::ss(d, wgmma_desc_k_major(q_tile + 32 * step),
                            wgmma_desc_k_major(k_tiles + s * kTileBytes + 32 * step),
                            i > 0 || step > 0);
    }
    wgmma_commit_group();
    if (p.batch == 1) {
      mbarrier_arrive(empty + 8 * s);
      wgmma_wait_group<1>();
    } else if (p.batch == 2) {
      mbarrier_arrive(empty + 8 * s);
      wgmma_wait_group<0>();
    } else {
      wgmma_wait_group<0>();
      mbarrier_arrive(empty + 8 * s);
    }
  }
  wgmma_wait_group<0>();
  store_accumulators<64>(p, d);
}

// A and B of a 64 x 64 x 16 wgmma written with st.shared (every word 1.0 in bf16 pairs) and
// ordered for the async proxy by fence.proxy.async. p.batch 1: without the fence; 2: only warps 0
// and 1 of the warpgroup issue the wgmma; 3: each thread stores into A while the wgmma is in
// flight; 4: B one tile further on, and each thread stores into the tile between A and B while
// the wgmma is in flight (read by neither operand).
extern "C" __global__ void generic_writes_then_wgmma(FwdParams p) {
  constexpr int kTile = 64 * 128;
  unsigned char* smem = probe_smem();
  const int tiles = p.batch == 4 ? 3 : 2;
  for (int word = threadIdx.x; word < tiles * kTile / 4; word += blockDim.x) {
    store_shared_32(smem + 4 * word, 0x3f803f80u);
  }
  if (p.batch != 1) fence_proxy_async_shared();
  __syncthreads();
  if (p.batch == 2 && threadIdx.x >= 64) return;
  const unsigned base = smem_address(smem);
  float d[32];
  wgmma_fence();
  Wgmma<bf16_t, 64>::ss(d, wgmma_desc_k_major(base),
                        wgmma_desc_k_major(base + (tiles - 1) * kTile), 0);
  wgmma_commit_group();
  if (p.batch == 3) store_shared_32(smem + 4 * threadIdx.x, 0u);
  if (p.batch == 4) store_shared_32(smem + kTile + 4 * threadIdx.x, 0u);
  wgmma_wait_group<0>();
  store_accumulators<64>(p, d);
}

// Warps 0-3 wait at named barrier 1 for 160 threads; warp 4 exits without arriving.
extern "C" __global__ void named_barrier_deadlock(FwdParams p) {
  if (threadIdx.x < 128) named_barrier_sync(1, 160);
}

// Warp 0 signals named barrier 2 for 64 threads and nobody waits for it: the block ends with the
// barrier half complete.
extern "C" __global__ void named_barrier_left_half_complete(FwdParams p) {
  if (threadIdx.x < 32) named_barrier_arrive(2, 64);
}

// A plain st.shared handed from warp 0 to warp 1 by an mbarrier (the sm90 kernel's tile words):
// thread 0 writes the word, then arrives (release); thread 32 waits for the phase (acquire) and
// copies the word out. p.batch 1: thread 32 reads without waiting, a race.
extern "C" __global__ void mbarrier_handoff(FwdParams p) {
  unsigned char* smem = probe_smem();
  const unsigned bar = smem_address(smem) + 64;
  init_barriers(bar, 1, 1);
  if (threadIdx.x == 0) {
    store_shared_32(smem, 7u);
    mbarrier_arrive(bar);
  } else if (threadIdx.x == 32) {
    if (p.batch != 1) mbarrier_wait(bar, 0);
    store_global_f32(static_cast<float*>(p.o), static_cast<float>(load_shared_u32(smem)));
  }
}

// A slot handed back by an mbarrier for reuse (the sm90 kernel's tile words, which the producer
// rewrites once the consumers released their stage): thread 32 reads the word, then arrives
// (release); thread 0 waits for the phase (acquire), then overwrites it. p.batch 1: thread 64
// arrives instead, and thread 32 never does, so nothing orders its read before the write: a race.
extern "C" __global__ void mbarrier_slot_reuse(FwdParams p) {
  unsigned char* smem = probe_smem();
  const unsigned bar = smem_address(smem) + 64;
  if (threadIdx.x == 0) store_shared_32(smem, 7u);
  init_barriers(bar, 1, 1);
  if (threadIdx.x == 32) {
    const unsigned word = load_shared_u32(smem);
    if (p.batch != 1) mbarrier_arrive(bar);
    store_global_f32(static_cast<float*>(p.o), static_cast<float>(word));
  } else if (threadIdx.x == 64) {
    if (p.batch == 1) mbarrier_arrive(bar);
  } else if (threadIdx.x == 0) {
    mbarrier_wait(bar, 0);
    store_shared_32(smem, 9u);
  }
}

// Two arrivals expected, one made: every thread waits for a phase that never completes (batch 1:
// in a wait labelled as the watchdog's waits are).
extern "C" __global__ void mbarrier_deadlock(FwdParams p) {
  const unsigned bar = smem_address(probe_smem()) + 64;
  init_barriers(bar, 1, 2);
  if (threadIdx.x == 0) mbarrier_arrive(bar);
  if (p.batch == 1) {
    mbarrier_wait(bar, 0, "test full");
  } else {
    mbarrier_wait(bar, 0);
  }
}
)";

}  // namespace attnjit::hopper_probe
