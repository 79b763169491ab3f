// ember._C_cuda: the CUDA backend, loaded lazily by ember.cuda. Importing it
// registers the CUDA allocator and kernels into the core's registries; it
// never needs a GPU or driver to import (cudart is linked statically and only
// queries the driver on first use).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cuda_runtime.h>

#include <cstring>

#include "ember/backends/cuda/cuda_backend.h"
#include "ember/backends/cuda/cuda_check.h"
#include "ember/backends/cuda/cudnn_loader.h"
#include "ember/backends/cuda/fusion.h"
#include "ember/core/device_guard.h"
#include "ember/core/tensor.h"
#include "ember/data/pinned.h"

namespace py = pybind11;

namespace {

using namespace ember;

// The ember.Tensor a Python object wraps (ember._C's class).
Tensor tensor_of(py::handle h) { return py::cast<Tensor>(h); }

cudaStream_t as_stream(uintptr_t h) { return reinterpret_cast<cudaStream_t>(h); }
cudaEvent_t as_event(uintptr_t h) { return reinterpret_cast<cudaEvent_t>(h); }

Device cuda_device(int d) { return Device(DeviceType::CUDA, d); }

}  // namespace

PYBIND11_MODULE(_C_cuda, m) {
  using namespace ember;
  register_allocator(DeviceType::CUDA, cuda::caching_allocator());
  // The kernels registered themselves when this module was loaded (Note [Kernel registration]).
  // CUDA out-of-memory errors become ember.cuda.OutOfMemoryError.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const cuda::OutOfMemory& e) {
      py::object cls = py::module_::import("ember.cuda").attr("OutOfMemoryError");
      PyErr_SetString(cls.ptr(), e.what());
    }
  });

  m.def("device_count", &cuda::device_count);
  // ProfilerActivity.CUDA: kernel dispatches timed with events (profiler_ranges.cpp).
  cuda::install_profiler_hooks();
  m.def("_profiler_gpu_start", &cuda::profiler_gpu_start);
  m.def("_profiler_gpu_collect", [] {
    py::list out;
    for (const cuda::GpuRange& g : cuda::profiler_gpu_collect())
      out.append(py::make_tuple(g.correlation, g.device, g.stream, g.start_ns, g.end_ns));
    return out;
  });
  // ember.backends.cudnn.version(): the loaded cuDNN (0: none; conv.cu loads it on demand).
  m.def("_cudnn_version", [] { return ember::cuda::cudnn_version(); });
  // ember.compile's CUDA fusion groups (fusion.cpp; NVRTC builds the image in _C).
  m.def(
      "_fusion_load",
      [](py::bytes image, int64_t nargs) { return cuda::fusion_load(std::string(image), nargs); },
      py::arg("image"), py::arg("nargs"));
  m.def("_fusion_launch", &cuda::fusion_launch, py::arg("handle"), py::arg("operands"),
        py::arg("shape"), py::arg("scalar"), py::arg("rows") = 0);
  m.def("_fusion_constants", [] {
    return py::make_tuple(cuda::kFusionThreads, cuda::kFusionRowThreads, cuda::kFusionMaxArgBytes);
  });
  m.def("current_device", [] { return cuda::current_device(); });
  m.def("set_device", [](int d) { EMBER_CUDA_CHECK(cudaSetDevice(d)); });
  m.def("synchronize", [] {
    py::gil_scoped_release nogil;
    EMBER_CUDA_CHECK(cudaDeviceSynchronize());
  });
  m.def("get_device_name", [](int d) {
    cudaDeviceProp p;
    EMBER_CUDA_CHECK(cudaGetDeviceProperties(&p, d));
    return std::string(p.name);
  });
  m.def("get_device_properties", [](int d) {
    cudaDeviceProp p;
    EMBER_CUDA_CHECK(cudaGetDeviceProperties(&p, d));
    py::dict r;
    r["name"] = std::string(p.name);
    r["major"] = p.major;
    r["minor"] = p.minor;
    r["total_memory"] = int64_t(p.totalGlobalMem);
    r["multi_processor_count"] = p.multiProcessorCount;
    r["is_integrated"] = bool(p.integrated);
    r["is_multi_gpu_board"] = bool(p.isMultiGpuBoard);
    r["max_threads_per_multi_processor"] = p.maxThreadsPerMultiProcessor;
    r["warp_size"] = p.warpSize;
    r["L2_cache_size"] = p.l2CacheSize;
    r["regs_per_multiprocessor"] = p.regsPerMultiprocessor;
    char uuid[37];
    const unsigned char* u = reinterpret_cast<const unsigned char*>(p.uuid.bytes);
    std::snprintf(uuid, sizeof uuid,
                  "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
                  u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
                  u[14], u[15]);
    r["uuid"] = std::string(uuid);
    return r;
  });
  m.def("mem_get_info", [](int d) {
    DeviceGuard g(cuda_device(d));
    size_t free_b = 0, total_b = 0;
    EMBER_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    return py::make_tuple(int64_t(free_b), int64_t(total_b));
  });

  // ---- allocator
  m.def("empty_cache", &cuda::empty_cache);
  m.def("memory_allocated", &cuda::memory_allocated);
  m.def("memory_reserved", &cuda::memory_reserved);
  m.def("memory_stats", &cuda::memory_stats);
  m.def("reset_peak_memory_stats", &cuda::reset_peak_memory_stats);
  m.def("reset_accumulated_memory_stats", &cuda::reset_accumulated_memory_stats);
  m.def("set_memory_fraction", &cuda::set_memory_fraction);
  m.def("get_memory_fraction", &cuda::get_memory_fraction);
  m.def("record_memory_history", &cuda::record_history);
  m.def("memory_snapshot", [] {
    py::list segs;
    for (auto& s : cuda::segments()) {
      py::dict d;
      d["device"] = s.device;
      d["address"] = s.address;
      d["total_size"] = s.total_size;
      d["allocated_size"] = s.allocated_size;
      d["stream"] = s.stream;
      d["segment_type"] = s.is_large ? "large" : "small";
      segs.append(d);
    }
    py::list traces;
    for (auto& t : cuda::trace()) {
      py::dict d;
      d["action"] = t.action;
      d["addr"] = t.addr;
      d["size"] = t.size;
      d["stream"] = t.stream;
      d["device"] = t.device;
      traces.append(d);
    }
    py::dict r;
    r["segments"] = segs;
    r["device_traces"] = py::make_tuple(traces);
    r["allocator_settings"] = py::dict();
    return r;
  });
  m.def("record_stream", [](py::handle t, uintptr_t stream) {
    Tensor x = tensor_of(t);
    EMBER_CHECK(x.device().is_cuda(), "record_stream: expected a CUDA tensor, got one on ",
                x.device().str());
    const DataPtr& dp = x.storage()->data;
    EMBER_CHECK(dp.deleter != nullptr,
                "record_stream: the tensor's memory is not owned by "
                "ember's CUDA caching allocator");
    cuda::record_stream(dp.ctx, as_stream(stream));
  });

  // ---- streams and events
  m.def("stream_create", [](int device, int priority) {
    DeviceGuard g(cuda_device(device));
    int lo = 0, hi = 0;
    EMBER_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&lo, &hi));
    int p = std::min(std::max(priority, hi), lo);
    cudaStream_t s;
    EMBER_CUDA_CHECK(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, p));
    return reinterpret_cast<uintptr_t>(s);  // pooled for the process lifetime, as PyTorch's
  });
  m.def("stream_priority", [](uintptr_t s) {
    int p = 0;
    EMBER_CUDA_CHECK(cudaStreamGetPriority(as_stream(s), &p));
    return p;
  });
  m.def("stream_query", [](uintptr_t s) {
    cudaError_t e = cudaStreamQuery(as_stream(s));
    if (e == cudaErrorNotReady) {
      (void)cudaGetLastError();
      return false;
    }
    EMBER_CUDA_CHECK(e);
    return true;
  });
  m.def("stream_synchronize", [](uintptr_t s) {
    py::gil_scoped_release nogil;
    EMBER_CUDA_CHECK(cudaStreamSynchronize(as_stream(s)));
  });
  m.def("stream_wait_event", [](uintptr_t s, uintptr_t e) {
    EMBER_CUDA_CHECK(cudaStreamWaitEvent(as_stream(s), as_event(e), 0));
  });
  m.def("current_stream",
        [](int d) { return reinterpret_cast<uintptr_t>(cuda::current_stream(d)); });
  m.def("set_current_stream",
        [](int d, uintptr_t s) { cuda::set_current_stream(d, as_stream(s)); });
  m.def("event_create", [](bool timing, bool blocking) {
    unsigned flags =
        (timing ? 0u : cudaEventDisableTiming) | (blocking ? cudaEventBlockingSync : 0u);
    cudaEvent_t e;
    EMBER_CUDA_CHECK(cudaEventCreateWithFlags(&e, flags));
    return reinterpret_cast<uintptr_t>(e);
  });
  m.def("event_record", [](uintptr_t e, uintptr_t s) {
    EMBER_CUDA_CHECK(cudaEventRecord(as_event(e), as_stream(s)));
  });
  m.def("event_query", [](uintptr_t e) {
    cudaError_t r = cudaEventQuery(as_event(e));
    if (r == cudaErrorNotReady) {
      (void)cudaGetLastError();
      return false;
    }
    EMBER_CUDA_CHECK(r);
    return true;
  });
  m.def("event_synchronize", [](uintptr_t e) {
    py::gil_scoped_release nogil;
    EMBER_CUDA_CHECK(cudaEventSynchronize(as_event(e)));
  });
  m.def("event_elapsed_time", [](uintptr_t a, uintptr_t b) {
    float ms = 0;
    EMBER_CUDA_CHECK(cudaEventElapsedTime(&ms, as_event(a), as_event(b)));
    return double(ms);
  });
  m.def("event_destroy", [](uintptr_t e) { cudaEventDestroy(as_event(e)); });

  // ---- pinned host memory
  // One pinned allocator for the whole library (Note [One pinned host allocator]); memory
  // pinned elsewhere (cudaHostRegister) counts too.
  m.def("is_pinned", [](py::handle t) {
    Tensor x = tensor_of(t);
    return x.device().is_cpu() && x.storage()->data.ptr &&
           (data::is_pinned(x) || cuda::is_pinned_ptr(x.storage()->data.ptr));
  });
  m.def("pin_memory", [](py::handle t) {
    Tensor x = tensor_of(t);
    EMBER_CHECK(x.device().is_cpu(), "cannot pin a tensor on ", x.device().str(),
                ": only dense CPU tensors can be pinned");
    py::gil_scoped_release nogil;
    return data::pin_memory(x);
  });
  m.attr("cuda_version") = EMBER_CUDA_VERSION;
}
