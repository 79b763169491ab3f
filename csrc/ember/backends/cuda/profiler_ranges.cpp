// The CUDA half of ProfilerActivity.CUDA (Note [Profiler device ranges] in
// core/profiler.h): a pair of CUDA events around each CUDA kernel dispatch while a
// profiler collects with device activity, converted to host-clock times when collected.
#include <cuda_runtime.h>

#include <mutex>
#include <vector>

#include "ember/backends/cuda/cuda_backend.h"
#include "ember/backends/cuda/cuda_check.h"
#include "ember/core/profiler.h"

namespace ember::cuda {
namespace {

struct Range {
  int64_t correlation;
  int device;
  cudaStream_t stream;
  cudaEvent_t start = nullptr, end = nullptr;
};

struct Ranges {
  std::mutex mu;
  std::vector<Range> done;
  std::vector<cudaEvent_t> pool;  // events of collected ranges, reused
  std::vector<cudaEvent_t> base;  // per device: recorded when collection started
  std::vector<int64_t> base_ns;   // per device: the host clock at that moment
};
Ranges& ranges() {
  static Ranges r;
  return r;
}
thread_local std::vector<Range> t_open;  // this thread's ranges begun, not yet ended

cudaEvent_t take_event(Ranges& r) {
  if (!r.pool.empty()) {
    cudaEvent_t e = r.pool.back();
    r.pool.pop_back();
    return e;
  }
  cudaEvent_t e = nullptr;
  if (cudaEventCreate(&e) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  return e;
}

void range_begin(int64_t correlation) {
  Ranges& r = ranges();
  Range g{correlation, current_device(), current_stream()};
  {
    std::lock_guard<std::mutex> lk(r.mu);
    g.start = take_event(r);
  }
  if (g.start && cudaEventRecord(g.start, g.stream) != cudaSuccess) {
    cudaGetLastError();
    return;  // timing is best effort: an untimed range is dropped, the op still runs
  }
  t_open.push_back(g);
}

void range_end(int64_t correlation) {
  // Ranges nest per thread; one whose end was skipped is dropped here.
  while (!t_open.empty() && t_open.back().correlation != correlation) t_open.pop_back();
  if (t_open.empty()) return;
  Range g = t_open.back();
  t_open.pop_back();
  Ranges& r = ranges();
  std::lock_guard<std::mutex> lk(r.mu);
  g.end = take_event(r);
  if (!g.start || !g.end || cudaEventRecord(g.end, g.stream) != cudaSuccess) {
    cudaGetLastError();
    return;
  }
  r.done.push_back(g);
}

}  // namespace

void install_profiler_hooks() {
  profiler::DeviceHooks h;
  h.begin = &range_begin;
  h.end = &range_end;
  profiler::set_device_hooks(h);
}

void profiler_gpu_start() {
  Ranges& r = ranges();
  std::lock_guard<std::mutex> lk(r.mu);
  for (Range& g : r.done) {
    r.pool.push_back(g.start);
    r.pool.push_back(g.end);
  }
  r.done.clear();
  for (cudaEvent_t e : r.base)
    if (e) cudaEventDestroy(e);
  const int n = device_count(), cur = current_device();
  r.base.assign(size_t(n), nullptr);
  r.base_ns.assign(size_t(n), 0);
  for (int d = 0; d < n; ++d) {
    EMBER_CUDA_CHECK(cudaSetDevice(d));
    EMBER_CUDA_CHECK(cudaDeviceSynchronize());
    EMBER_CUDA_CHECK(cudaEventCreate(&r.base[size_t(d)]));
    EMBER_CUDA_CHECK(cudaEventRecord(r.base[size_t(d)], current_stream(d)));
    EMBER_CUDA_CHECK(cudaEventSynchronize(r.base[size_t(d)]));
    r.base_ns[size_t(d)] = profiler::now_ns();
  }
  EMBER_CUDA_CHECK(cudaSetDevice(cur));
}

std::vector<GpuRange> profiler_gpu_collect() {
  Ranges& r = ranges();
  std::lock_guard<std::mutex> lk(r.mu);
  std::vector<GpuRange> out;
  for (Range& g : r.done) {
    const size_t d = size_t(g.device);
    float s_ms = 0, e_ms = 0;
    if (d < r.base.size() && r.base[d] && cudaEventSynchronize(g.end) == cudaSuccess &&
        cudaEventElapsedTime(&s_ms, r.base[d], g.start) == cudaSuccess &&
        cudaEventElapsedTime(&e_ms, r.base[d], g.end) == cudaSuccess) {
      out.push_back({g.correlation, g.device, reinterpret_cast<uintptr_t>(g.stream),
                     r.base_ns[d] + int64_t(double(s_ms) * 1e6),
                     r.base_ns[d] + int64_t(double(e_ms) * 1e6)});
    } else {
      cudaGetLastError();
    }
    r.pool.push_back(g.start);
    r.pool.push_back(g.end);
  }
  r.done.clear();
  return out;
}

}  // namespace ember::cuda
