// ember._C_cuda: the CUDA backend, loaded lazily by ember.cuda. Importing it
// registers the CUDA allocator and kernels into the core's registries; it
// never needs a GPU or driver to import (cudart is linked statically and only
// queries the driver on first use).
#include <pybind11/pybind11.h>

#include <cuda_runtime.h>

#include "ember/backends/cuda/cuda_backend.h"
#include "ember/backends/cuda/cuda_check.h"

namespace py = pybind11;

PYBIND11_MODULE(_C_cuda, m) {
  using namespace ember;
  register_allocator(DeviceType::CUDA, cuda::caching_allocator());
  cuda::register_kernels();
  m.def("device_count", &cuda::device_count);
  m.def("current_device", &cuda::current_device);
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
  m.def("empty_cache", &cuda::empty_cache);
  m.def("memory_allocated", &cuda::memory_allocated);
  m.def("memory_reserved", &cuda::memory_reserved);
  m.attr("cuda_version") = EMBER_CUDA_VERSION;
}
