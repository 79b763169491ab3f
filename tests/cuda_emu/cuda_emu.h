// A host emulation of the little CUDA that ember.compile's generated fusion kernels use
// (python/ember/_compile/_cuda.py, Note [CUDA fusion kernels]), so that the tests run those
// kernels on machines without a GPU: the source is compiled as C++ with this header
// force-included, every CUDA thread of a block is a std::thread, and the 32 threads of a
// warp exchange values in __shfl_xor_sync through a barrier, which is the warp-synchronous
// behaviour the kernels rely on. A warp whose lanes diverge around a shuffle (undefined on a
// GPU) stops the process with a message instead of hanging. Tests only; not shipped.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(n)

struct EmuDim3 {
  unsigned x = 0, y = 0, z = 0;
};
inline thread_local EmuDim3 threadIdx, blockIdx;
inline EmuDim3 blockDim, gridDim;

inline float __int_as_float(int i) {
  float f;
  std::memcpy(&f, &i, 4);
  return f;
}

// One warp: a reusable barrier with a deadline, and a slot per lane.
struct EmuWarp {
  std::mutex mu;
  std::condition_variable cv;
  int arrived = 0, phase = 0, lanes = 32;
  uint64_t slot[32] = {};
  void wait() {
    std::unique_lock<std::mutex> lock(mu);
    const int my = phase;
    if (++arrived == lanes) {
      arrived = 0;
      ++phase;
      cv.notify_all();
      return;
    }
    if (!cv.wait_for(lock, std::chrono::seconds(20), [&] { return phase != my; })) {
      std::fprintf(stderr, "cuda_emu: the lanes of a warp diverged around __shfl_xor_sync\n");
      std::abort();
    }
  }
};
inline thread_local EmuWarp* t_warp = nullptr;

template <typename T>
T __shfl_xor_sync(unsigned, T v, int lane_mask) {
  static_assert(sizeof(T) <= 8, "cuda_emu: shuffles of at most 8 bytes");
  EmuWarp& w = *t_warp;
  const unsigned lane = threadIdx.x & 31u;
  std::memcpy(&w.slot[lane], &v, sizeof(T));
  w.wait();
  T r;
  std::memcpy(&r, &w.slot[lane ^ unsigned(lane_mask)], sizeof(T));
  w.wait();
  return r;
}

// Runs `kernel` over `grid` blocks of `block` threads (a multiple of 32), block after block:
// on a std::thread each when `threaded` (a kernel with warp shuffles), else one CUDA thread
// after another on the caller's (a kernel whose threads never meet).
template <typename Args>
void emu_launch(void (*kernel)(Args), const Args& a, unsigned grid, unsigned block, bool threaded) {
  gridDim.x = grid;
  blockDim.x = block;
  for (unsigned b = 0; b < grid; ++b) {
    if (!threaded) {
      for (unsigned t = 0; t < block; ++t) {
        blockIdx.x = b;
        threadIdx.x = t;
        kernel(a);
      }
      continue;
    }
    std::vector<EmuWarp> warps(block / 32);
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < block; ++t)
      threads.emplace_back([&, b, t] {
        blockIdx.x = b;
        threadIdx.x = t;
        t_warp = &warps[t / 32];
        kernel(a);
      });
    for (std::thread& th : threads) th.join();
  }
}

// The entry the tests call (ctypes): the argument block's words, as the CUDA launcher
// (backends/cuda/fusion.cpp) builds them.
#define EMBER_EMU_ENTRY                                                                        \
  extern "C" int ember_emulate(const int64_t* words, int64_t n, unsigned grid, unsigned block, \
                               int threaded) {                                                 \
    EmberArgs a;                                                                               \
    if (n != int64_t(sizeof(a.v) / sizeof(a.v[0]))) return 1;                                  \
    std::memcpy(a.v, words, sizeof(a.v));                                                      \
    emu_launch(&ember_kernel, a, grid, block, threaded != 0);                                  \
    return 0;                                                                                  \
  }
