// ember.compile's CUDA fusion kernels: a CUBIN or PTX image that NVRTC built (python/
// compile_nvrtc.cpp) is loaded once as a context-independent CUDA library and its
// `ember_kernel` launched on the current stream of its operands' device. The kernel's
// source and its argument block are described in Note [CUDA fusion kernels]
// (python/ember/_compile/_cuda.py); the operand checks are the CPU runner's
// (kernels/fusion_args.h).
#include "ember/backends/cuda/fusion.h"

#include <algorithm>
#include <mutex>
#include <vector>

#include "ember/backends/cuda/cuda_backend.h"
#include "ember/backends/cuda/cuda_check.h"
#include "ember/core/device_guard.h"
#include "ember/kernels/fusion_args.h"

namespace ember::cuda {
namespace {

struct Loaded {
  cudaLibrary_t lib;
  cudaKernel_t kernel;
  int64_t nargs;  // int64 words in the kernel's argument block
};
std::mutex g_mu;
std::vector<Loaded> g_loaded;

int sm_count(int device) {
  static std::mutex mu;
  static std::vector<int> counts;
  std::lock_guard<std::mutex> lock(mu);
  if (size_t(device) >= counts.size()) counts.resize(size_t(device) + 1, 0);
  int& c = counts[size_t(device)];
  if (c == 0) EMBER_CUDA_CHECK(cudaDeviceGetAttribute(&c, cudaDevAttrMultiProcessorCount, device));
  return c;
}

}  // namespace

int64_t fusion_load(const std::string& image, int64_t nargs) {
  EMBER_CHECK(!image.empty(), "ember.compile: empty CUDA kernel image");
  EMBER_CHECK(nargs > 0 && nargs * 8 <= kFusionMaxArgBytes, "ember.compile: a fused kernel with ",
              nargs, " argument words exceeds the ", kFusionMaxArgBytes, "-byte parameter limit");
  Loaded l{};
  EMBER_CUDA_CHECK(
      cudaLibraryLoadData(&l.lib, image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  const cudaError_t e = cudaLibraryGetKernel(&l.kernel, l.lib, "ember_kernel");
  if (e != cudaSuccess) {
    cudaLibraryUnload(l.lib);
    EMBER_CUDA_CHECK(e);
  }
  l.nargs = nargs;
  std::lock_guard<std::mutex> lock(g_mu);
  g_loaded.push_back(l);
  return int64_t(g_loaded.size() - 1);
}

void fusion_launch(int64_t handle, const std::vector<Tensor>& ts, const std::vector<int64_t>& shape,
                   const std::vector<bool>& scalar, int64_t rows) {
  Loaded l;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    EMBER_CHECK(handle >= 0 && size_t(handle) < g_loaded.size(),
                "ember.compile: bad CUDA kernel handle ", handle);
    l = g_loaded[size_t(handle)];
  }
  EMBER_CHECK(!ts.empty(), "ember.compile: a fused kernel needs operands");
  const Device device = ts[0].device();
  EMBER_CHECK(device.is_cuda(), "ember.compile: the CUDA fused kernel got an operand on ",
              device.str());
  FusionArgs a = fusion_args(ts, shape, scalar, rows, device);
  // The argument block: pointers, meta, work items (Note [CUDA fusion kernels]).
  std::vector<int64_t> block;
  block.reserve(a.ptrs.size() + a.meta.size() + 1);
  for (char* p : a.ptrs) block.push_back(int64_t(reinterpret_cast<uintptr_t>(p)));
  block.insert(block.end(), a.meta.begin(), a.meta.end());
  block.push_back(a.work);
  EMBER_CHECK(int64_t(block.size()) == l.nargs, "ember.compile: the fused kernel takes ", l.nargs,
              " argument words but its ", ts.size(), " operands over ", shape.size(),
              " dimensions make ", block.size());
  if (a.work == 0) return;
  const int index = device.index >= 0 ? int(device.index) : current_device();
  DeviceGuard guard(Device(DeviceType::CUDA, index));
  const int64_t threads = rows > 0 ? kFusionRowThreads : kFusionThreads;
  const int64_t per_block =
      rows > 0 ? kFusionRowThreads / 32 : kFusionThreads;  // rows: a warp each
  const int64_t cap = int64_t(sm_count(index)) * 32;
  const int64_t blocks = std::max<int64_t>(1, std::min(cap, (a.work + per_block - 1) / per_block));
  void* params[] = {block.data()};
  EMBER_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(l.kernel), dim3(unsigned(blocks)),
                                    dim3(unsigned(threads)), params, 0, current_stream(index)));
}

}  // namespace ember::cuda
