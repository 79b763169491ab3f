// Bindings of DistributedDataParallel's C++ half (in _C._distributed): the Reducer, its
// GradBucket, Python comm hooks, bucket assignment and the coalesced broadcast.
#include "ember/distributed/reducer.h"
#include "ember/python/bind.h"

namespace ember::python {

namespace ddp_bindings {
namespace {

using namespace ember::distributed;

// A Python object that a C++ object keeps: released under the GIL.
std::shared_ptr<py::object> keep_py(py::object o) {
  return std::shared_ptr<py::object>(new py::object(std::move(o)), [](py::object* p) {
    if (Py_IsInitialized()) {
      py::gil_scoped_acquire gil;
      delete p;
    } else {
      p->release();
      delete p;
    }
  });
}

// DistributedDataParallel.register_comm_hook(state, hook): hook(state, bucket) returns a
// Future whose value is the reduced buffer (a Tensor, or a list holding one).
struct PyCommHook : CommHook {
  std::shared_ptr<py::object> state, hook;
  std::shared_ptr<void> run(GradBucket& bucket) override {
    py::gil_scoped_acquire gil;
    py::object fut = (*hook)(*state, bucket);
    EMBER_CHECK_TYPE(py::hasattr(fut, "wait"),
                     "DistributedDataParallel: a comm hook must return a Future (got ",
                     type_name(fut), ")");
    return keep_py(std::move(fut));
  }
  Tensor wait(const std::shared_ptr<void>& handle) override {
    py::gil_scoped_acquire gil;
    py::object fut = *static_cast<py::object*>(handle.get());
    py::object v = fut.attr("wait")();
    if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
      EMBER_CHECK_TYPE(py::len(v) == 1,
                       "DistributedDataParallel: a comm hook's Future must hold one tensor, "
                       "got a sequence of ",
                       py::len(v));
      v = v[py::int_(0)];
    }
    Tensor* t;
    EMBER_CHECK_TYPE(as_tensor(v, t),
                     "DistributedDataParallel: a comm hook's Future must hold a Tensor, got ",
                     type_name(v));
    return *t;
  }
};

}  // namespace
}  // namespace ddp_bindings

void init_ddp(py::module_& root) {
  using namespace ddp_bindings;
  using Rel = py::gil_scoped_release;
  py::module_ m = root.attr("_distributed");

  py::enum_<BuiltinCommHook>(m, "BuiltinCommHookType")
      .value("ALLREDUCE", BuiltinCommHook::ALLREDUCE)
      .value("FP16_COMPRESS", BuiltinCommHook::FP16_COMPRESS);

  py::class_<GradBucket>(m, "GradBucket",
                         "A bucket of gradients as a DDP communication hook sees it.")
      .def("index", [](const GradBucket& b) { return b.index; })
      .def("buffer", [](const GradBucket& b) { return b.buffer; })
      .def("gradients", [](const GradBucket& b) { return b.gradients; })
      .def("parameters", [](const GradBucket& b) { return b.parameters; })
      .def("is_last", [](const GradBucket& b) { return b.is_last; })
      .def("set_buffer", [](GradBucket& b, const Tensor& t) { b.buffer = t; });

  m.def(
      "_compute_bucket_assignment_by_size",
      [](const std::vector<Tensor>& tensors, const std::vector<int64_t>& limits,
         py::handle expect_sparse, const std::vector<int64_t>& order) {
        (void)expect_sparse;
        return compute_bucket_assignment_by_size(tensors, limits, order);
      },
      py::arg("tensors"), py::arg("bucket_size_limits"),
      py::arg("expect_sparse_gradient") = py::none(),
      py::arg("tensor_indices") = std::vector<int64_t>{}, py::call_guard<Rel>());
  m.def(
      "_broadcast_coalesced",
      [](std::shared_ptr<ProcessGroup> pg, const std::vector<Tensor>& tensors, int64_t buffer_size,
         int src) { broadcast_coalesced(*pg, tensors, buffer_size, src); },
      py::arg("process_group"), py::arg("tensors"), py::arg("buffer_size"), py::arg("src") = 0,
      py::call_guard<Rel>());

  py::class_<Reducer, std::shared_ptr<Reducer>>(m, "Reducer", "Note [DDP reducer].")
      .def(py::init([](std::vector<Tensor> params, std::vector<std::vector<int64_t>> buckets,
                       std::vector<int64_t> limits, std::shared_ptr<ProcessGroup> pg,
                       int64_t bucket_bytes_cap, bool find_unused, bool as_view, bool static_graph,
                       int64_t first_bucket_bytes, std::vector<std::string> names) {
             Reducer::Options o;
             o.bucket_bytes_cap = bucket_bytes_cap;
             o.first_bucket_bytes = first_bucket_bytes;
             o.find_unused_parameters = find_unused;
             o.gradient_as_bucket_view = as_view;
             o.static_graph = static_graph;
             o.param_names = std::move(names);
             auto r = std::make_shared<Reducer>(std::move(params), std::move(buckets),
                                                std::move(limits), std::move(pg), o);
             r->install_hooks();
             return r;
           }),
           py::arg("params"), py::arg("bucket_indices"), py::arg("per_bucket_size_limits"),
           py::arg("process_group"), py::arg("bucket_bytes_cap") = 25 * 1024 * 1024,
           py::arg("find_unused_parameters") = false, py::arg("gradient_as_bucket_view") = false,
           py::arg("static_graph") = false, py::arg("first_bucket_bytes") = 1024 * 1024,
           py::arg("param_names") = std::vector<std::string>{})
      .def("prepare_for_forward", &Reducer::prepare_for_forward, py::call_guard<Rel>())
      .def("prepare_for_backward", &Reducer::prepare_for_backward, py::arg("outputs"),
           py::call_guard<Rel>())
      .def("_rebuild_buckets", &Reducer::rebuild_buckets, py::call_guard<Rel>())
      .def("_push_all_rebuilt_params", &Reducer::push_all_rebuilt_params, py::call_guard<Rel>())
      .def(
          "_register_comm_hook",
          [](Reducer& r, py::object state, py::object hook) {
            auto h = std::make_shared<PyCommHook>();
            h->state = keep_py(std::move(state));
            h->hook = keep_py(std::move(hook));
            r.register_comm_hook(h);
          },
          py::arg("state"), py::arg("hook"))
      .def("_register_builtin_comm_hook", &Reducer::register_builtin_comm_hook)
      .def("_set_forward_pass_work_handle", &Reducer::set_forward_pass_work_handle)
      .def("_run_join_shadow", &Reducer::run_join_shadow, py::call_guard<Rel>())
      .def("_get_grad_buckets", &Reducer::grad_buckets)
      .def("_bucket_indices", &Reducer::bucket_indices)
      .def("_globally_unused", &Reducer::globally_unused)
      .def("_has_rebuilt_buckets", &Reducer::has_rebuilt_buckets)
      .def_property_readonly("num_iterations", &Reducer::num_iterations);
}

}  // namespace ember::python
