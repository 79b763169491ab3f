// Bindings of the DataLoader's hot path: batch gather, collate, prefetch, and the
// shared-memory storage that DataLoader workers hand batches over in.
#include <optional>

#include "ember/data/crc32c.h"
#include "ember/data/loader.h"
#include "ember/data/pinned.h"
#include "ember/data/shared_memory.h"
#include "ember/python/bind.h"

namespace ember::python {

void init_data(py::module_& m) {
  using namespace ember::data;
  py::class_<Tensor> cls = tensor_class(m);
  cls.def(
      "share_memory_",
      [](py::object self) {
        share_memory_(self.cast<Tensor>());
        return self;
      },
      "Moves the storage into shared memory (in place; a no-op when already shared). "
      "See Note [Shared-memory storage].");
  cls.def(
      "is_shared", [](const Tensor& t) { return is_shared(t); },
      "True when the storage is in shared memory.");

  cls.def(
      "pin_memory",
      [](const Tensor& t, py::object device) {
        (void)device;
        py::gil_scoped_release nogil;
        return pin_memory(t);
      },
      py::arg("device") = py::none(),
      "A copy in pinned (page-locked) host memory, for fast and asynchronous copies to the GPU "
      "(RuntimeError without a CUDA driver). See Note [Pinned staging].");
  cls.def(
      "is_pinned",
      [](const Tensor& t, py::object device) {
        (void)device;
        return is_pinned(t);
      },
      py::arg("device") = py::none(), "True when the tensor is in pinned host memory.");
  m.def("_data_pinning_available", &pinning_available);

  m.def("_data_shared_fd", &shared_fd,
        "The fd of a shared tensor's storage (owned by the storage).");
  m.def("_data_storage_nbytes", [](const Tensor& t) { return t.storage()->nbytes; });
  m.def(
      "_data_from_shared_fd",
      [](int fd, size_t nbytes, py::handle dtype, py::handle sizes, py::handle strides,
         int64_t offset) {
        return from_shared_fd(fd, nbytes, dtype_arg(dtype),
                              shape_arg(sizes, "_data_from_shared_fd", "sizes"),
                              shape_arg(strides, "_data_from_shared_fd", "strides"), offset);
      },
      "A tensor over a received shared-memory fd (taken over).");
  m.def("_data_empty_shared", [](py::handle sizes, py::handle dtype) {
    return empty_shared(shape_arg(sizes, "_data_empty_shared", "sizes"), dtype_arg(dtype));
  });
  m.def(
      "_data_stack",
      [](py::handle list, bool shared) {
        std::vector<Tensor> ts = tensor_list_arg(list, "stack");
        // Without autograd in play the stack runs with the GIL released; a tensor that
        // requires grad records a node, which may need Python (anomaly mode), so keep it.
        bool grad = false;
        for (const Tensor& t : ts) grad = grad || t.impl()->requires_grad || t.impl()->autograd;
        std::optional<py::gil_scoped_release> nogil;
        if (!grad) nogil.emplace();
        return stack_batch(ts, shared);
      },
      py::arg("tensors"), py::arg("shared") = false);
  m.def(
      "_data_gather",
      [](py::handle field_list, const Tensor& idx, bool shared) {
        std::vector<Tensor> fields = tensor_list_arg(field_list, "_data_gather", "fields");
        py::gil_scoped_release nogil;
        std::vector<Tensor> out;
        out.reserve(fields.size());
        for (const Tensor& f : fields) {
          out.push_back(gather_rows(f, idx, shared ? BatchMemory::Shared : BatchMemory::Normal));
        }
        return out;
      },
      py::arg("fields"), py::arg("indices"), py::arg("shared") = false,
      "Rows `indices` of each field tensor, one strided gather per field (GIL released).");

  m.def(
      "_crc32c_masked",
      [](py::bytes b) {
        std::string_view v = b;
        return masked_crc32c(v.data(), v.size());
      },
      "TFRecord's masked CRC-32C of some bytes (TensorBoard event files).");
  m.def(
      "_crc32c",
      [](py::buffer b, uint32_t crc) {
        py::buffer_info info = b.request();
        EMBER_CHECK(info.ndim <= 1 || PyBuffer_IsContiguous(info.view(), 'C'),
                    "_crc32c: expected a contiguous buffer");
        const size_t n = size_t(info.size) * size_t(info.itemsize);
        py::gil_scoped_release nogil;
        return crc32c_extend(crc, info.ptr, n);
      },
      py::arg("data"), py::arg("crc") = 0,
      "CRC-32C of a contiguous buffer (bytes, memoryview, ndarray), continuing from `crc`: "
      "_crc32c(b, _crc32c(a)) == _crc32c(a + b).");

  py::class_<BatchPrefetcher>(m, "_BatchPrefetcher",
                              "Gathers index batches of tensor fields on a background thread "
                              "(Note [Batch prefetcher]).")
      .def(py::init<std::vector<Tensor>, Tensor, int64_t, bool, int64_t, bool>(), py::arg("fields"),
           py::arg("indices"), py::arg("batch_size"), py::arg("drop_last"), py::arg("depth"),
           py::arg("pinned") = false)
      .def("__len__", &BatchPrefetcher::num_batches)
      .def("__iter__", [](py::object self) { return self; })
      .def("__next__", [](BatchPrefetcher& p) {
        std::optional<std::vector<Tensor>> b;
        {
          py::gil_scoped_release nogil;
          b = p.next();
        }
        if (!b) throw py::stop_iteration();
        return py::cast(*b);
      });
}

}  // namespace ember::python
