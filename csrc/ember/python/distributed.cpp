// Bindings of ember.distributed's C++ half (the submodule _C._distributed): the stores, the
// process group and its Work, and the error classes DistError,
// DistBackendError, DistStoreError, DistNetworkError.
#include <pybind11/chrono.h>
#include <pybind11/functional.h>

#include "ember/distributed/process_group.h"
#include "ember/distributed/tcp_store.h"
#include "ember/python/bind.h"

namespace ember::python {

namespace dist_bindings {
namespace {

using namespace ember::distributed;

PyObject* g_dist_error = nullptr;
PyObject* g_backend_error = nullptr;
PyObject* g_store_error = nullptr;
PyObject* g_network_error = nullptr;

// DistError and its kinds become their Python classes (tried before module.cpp's translator,
// which would make them plain RuntimeErrors).
void translate_dist(std::exception_ptr p) {
  try {
    if (p) std::rethrow_exception(p);
  } catch (const DistError& e) {
    PyObject* type = g_dist_error;
    switch (e.dist_kind()) {
      case DistErrorKind::Backend:
        type = g_backend_error;
        break;
      case DistErrorKind::Store:
        type = g_store_error;
        break;
      case DistErrorKind::Network:
        type = g_network_error;
        break;
      default:
        break;
    }
    PyErr_SetString(type, e.what());
  }
}

Bytes value_bytes(py::handle v, const char* op) {
  if (py::isinstance<py::bytes>(v)) {
    std::string s = py::reinterpret_borrow<py::bytes>(v);
    return to_bytes(s);
  }
  if (py::isinstance<py::str>(v)) return to_bytes(v.cast<std::string>());
  if (PyByteArray_Check(v.ptr())) {
    const char* p = PyByteArray_AsString(v.ptr());
    return Bytes(p, p + PyByteArray_Size(v.ptr()));
  }
  raise(ErrorKind::Type, op, ": the value must be str or bytes, not ", type_name(v));
}

py::bytes py_bytes(const Bytes& b) {
  return py::bytes(reinterpret_cast<const char*>(b.data()), b.size());
}

Millis millis_arg(py::handle h, Millis dflt) {
  if (h.is_none()) return dflt;
  if (py::isinstance<py::int_>(h) || py::isinstance<py::float_>(h))
    return Millis(int64_t(h.cast<double>() * 1000.0));                      // seconds
  double ms = h.cast<std::chrono::duration<double, std::milli>>().count();  // a timedelta
  return Millis(int64_t(ms > 0 ? ms : 0));
}

std::vector<std::string> key_list(py::handle keys) {
  if (py::isinstance<py::str>(keys)) return {keys.cast<std::string>()};
  return keys.cast<std::vector<std::string>>();
}

void bind_stores(py::module_& m) {
  using Rel = py::gil_scoped_release;
  py::class_<Store, std::shared_ptr<Store>>(m, "Store",
                                            "A key-value store shared by a job's processes.")
      .def(
          "set",
          [](Store& s, const std::string& k, py::handle v) {
            Bytes b = value_bytes(v, "Store.set");
            Rel nogil;
            s.set(k, b);
          },
          py::arg("key"), py::arg("value"))
      .def(
          "get",
          [](Store& s, const std::string& k) {
            Bytes b;
            {
              Rel nogil;
              b = s.get(k);
            }
            return py_bytes(b);
          },
          py::arg("key"))
      .def("add", &Store::add, py::arg("key"), py::arg("amount"), py::call_guard<Rel>())
      .def(
          "compare_set",
          [](Store& s, const std::string& k, py::handle e, py::handle d) {
            Bytes eb = value_bytes(e, "Store.compare_set"), db = value_bytes(d, "compare_set");
            Bytes r;
            {
              Rel nogil;
              r = s.compare_set(k, eb, db);
            }
            return py_bytes(r);
          },
          py::arg("key"), py::arg("expected_value"), py::arg("desired_value"))
      .def(
          "wait",
          [](Store& s, py::handle keys, py::handle timeout) {
            auto ks = key_list(keys);
            Millis t = millis_arg(timeout, s.timeout());
            Rel nogil;
            s.wait(ks, t);
          },
          py::arg("keys"), py::arg("timeout") = py::none())
      .def("num_keys", &Store::num_keys, py::call_guard<Rel>())
      .def("delete_key", &Store::delete_key, py::arg("key"), py::call_guard<Rel>())
      .def(
          "check", [](Store& s, py::handle keys) { return s.check(key_list(keys)); },
          py::arg("keys"))
      .def(
          "append",
          [](Store& s, const std::string& k, py::handle v) {
            Bytes b = value_bytes(v, "Store.append");
            Rel nogil;
            s.append(k, b);
          },
          py::arg("key"), py::arg("value"))
      .def(
          "multi_get",
          [](Store& s, const std::vector<std::string>& keys) {
            std::vector<Bytes> r;
            {
              Rel nogil;
              r = s.multi_get(keys);
            }
            py::list out;
            for (auto& b : r) out.append(py_bytes(b));
            return out;
          },
          py::arg("keys"))
      .def(
          "multi_set",
          [](Store& s, const std::vector<std::string>& keys, py::list values) {
            std::vector<Bytes> vs;
            for (py::handle v : values) vs.push_back(value_bytes(v, "Store.multi_set"));
            Rel nogil;
            s.multi_set(keys, vs);
          },
          py::arg("keys"), py::arg("values"))
      .def("clone", &Store::clone, py::call_guard<Rel>())
      .def("has_extended_api", [](Store&) { return true; })
      .def(
          "set_timeout", [](Store& s, py::handle t) { s.set_timeout(millis_arg(t, s.timeout())); },
          py::arg("timeout"))
      .def_property_readonly("timeout", [](Store& s) {
        return std::chrono::duration_cast<std::chrono::microseconds>(s.timeout());
      });

  py::class_<TCPStore, Store, std::shared_ptr<TCPStore>>(
      m, "TCPStore", "The store a job reaches over TCP; the master process hosts its server.")
      .def(py::init([](const std::string& host, int port, std::optional<int> world_size,
                       bool is_master, py::handle timeout, bool wait_for_workers, bool multi_tenant,
                       std::optional<int> master_listen_fd, bool) {
             TCPStoreOptions o;
             o.host = host;
             o.port = port;
             o.world_size = world_size;
             o.is_master = is_master;
             o.timeout = millis_arg(timeout, Store::kDefaultTimeout);
             o.wait_for_workers = wait_for_workers;
             o.multi_tenant = multi_tenant;
             o.master_listen_fd = master_listen_fd.value_or(-1);
             py::gil_scoped_release nogil;
             return std::make_shared<TCPStore>(o);
           }),
           py::arg("host_name"), py::arg("port"), py::arg("world_size") = py::none(),
           py::arg("is_master") = false, py::arg("timeout") = py::none(),
           py::arg("wait_for_workers") = true, py::arg("multi_tenant") = false,
           py::arg("master_listen_fd") = py::none(), py::arg("use_libuv") = true)
      .def_property_readonly("host", &TCPStore::host)
      .def_property_readonly("port", &TCPStore::port)
      .def_property_readonly("libuvBackend", [](TCPStore&) { return false; })
      .def("_local_address", &TCPStore::local_address);

  py::class_<FileStore, Store, std::shared_ptr<FileStore>>(
      m, "FileStore", "A store in a file that every process of the job can open.")
      .def(py::init([](const std::string& path, int world_size) {
             py::gil_scoped_release nogil;
             return std::make_shared<FileStore>(path, world_size);
           }),
           py::arg("file_name"), py::arg("world_size") = -1)
      .def_property_readonly("path", &FileStore::path);

  py::class_<HashStore, Store, std::shared_ptr<HashStore>>(m, "HashStore", "An in-process store.")
      .def(py::init([] { return std::make_shared<HashStore>(); }));

  py::class_<PrefixStore, Store, std::shared_ptr<PrefixStore>>(
      m, "PrefixStore", "Another store's keys under \"<prefix>/\".")
      .def(py::init([](const std::string& prefix, std::shared_ptr<Store> store) {
             return std::make_shared<PrefixStore>(prefix, std::move(store));
           }),
           py::arg("prefix"), py::arg("store"))
      .def_property_readonly("underlying_store", &PrefixStore::underlying);

  m.def("_find_free_port", &find_free_port, py::arg("host") = "127.0.0.1");
  // ember.multiprocessing: a tensor of any dtype and geometry over `base`'s storage (the
  // received shared storage of several tensors is mapped once per process).
  m.def(
      "_view_storage",
      [](const Tensor& base, py::handle dtype, py::handle sizes, py::handle strides,
         int64_t offset) {
        auto impl = std::make_shared<TensorImpl>();
        const Storage& st = base.storage();
        impl->version = std::shared_ptr<VersionCounter>(st, &st->version);
        impl->storage = st;
        impl->dtype = dtype_arg(dtype);
        impl->sizes = {0};
        impl->strides = {1};
        impl->numel = 0;
        return make_view(Tensor(impl), shape_arg(sizes, "_view_storage", "sizes"),
                         shape_arg(strides, "_view_storage", "strides"), offset);
      },
      py::arg("base"), py::arg("dtype"), py::arg("sizes"), py::arg("strides"), py::arg("offset"));
}

void bind_work(py::module_& m) {
  using Rel = py::gil_scoped_release;
  py::class_<Work, std::shared_ptr<Work>>(m, "Work", "The handle of an asynchronous operation.")
      .def(
          "wait",
          [](Work& w, py::handle timeout) {
            Millis t = millis_arg(timeout, Millis(0));
            Rel nogil;
            return w.wait(t);
          },
          py::arg("timeout") = py::none())
      .def("is_completed", &Work::is_completed)
      .def("is_success", &Work::is_success)
      .def("exception",
           [](Work& w) -> py::object {
             std::exception_ptr e = w.exception();
             if (!e) return py::none();
             try {
               std::rethrow_exception(e);
             } catch (const std::exception& ex) {
               return py::str(ex.what());
             }
           })
      .def("result", &Work::result)
      .def("source_rank", &Work::source_rank)
      .def("synchronize", &Work::synchronize, py::call_guard<Rel>())
      .def_property_readonly("_op", &Work::op)
      .def(
          "_then", [](Work& w, std::function<void()> fn) { w.then(std::move(fn)); },
          "Runs fn() (under the GIL) once the work is done.");
}

OpOptions op_options(ReduceOp op, int root, double timeout_s, bool async_op) {
  OpOptions o;
  o.op = op;
  o.root = root;
  o.timeout = Millis(int64_t(timeout_s * 1000.0));
  o.async_op = async_op;
  return o;
}

void bind_process_group(py::module_& m) {
  using Rel = py::gil_scoped_release;
  py::enum_<ReduceOp>(m, "ReduceOp", "The reduction of all_reduce, reduce and reduce_scatter.")
      .value("SUM", ReduceOp::SUM)
      .value("AVG", ReduceOp::AVG)
      .value("PRODUCT", ReduceOp::PRODUCT)
      .value("MIN", ReduceOp::MIN)
      .value("MAX", ReduceOp::MAX)
      .value("BAND", ReduceOp::BAND)
      .value("BOR", ReduceOp::BOR)
      .value("BXOR", ReduceOp::BXOR)
      .value("PREMUL_SUM", ReduceOp::PREMUL_SUM);

  // The ops take (..., op, root, timeout in seconds (0: the group's), async_op); the Python
  // layer (distributed_c10d.py) maps PyTorch's signatures onto them.
  py::class_<ProcessGroup, std::shared_ptr<ProcessGroup>>(m, "ProcessGroup",
                                                          "A group of processes and its engine.")
      .def("rank", &ProcessGroup::rank)
      .def("size", &ProcessGroup::size)
      .def("name", &ProcessGroup::backend_name)
      .def("_sequence_number", &ProcessGroup::sequence_number)
      .def("_shutdown", &ProcessGroup::shutdown, py::call_guard<Rel>())
      .def_property_readonly("_timeout_s",
                             [](ProcessGroup& g) { return double(g.timeout().count()) / 1000.0; })
      .def("_engine_address", &ProcessGroup::engine_address)
      .def(
          "_broadcast",
          [](ProcessGroup& g, const Tensor& t, int root, double to, bool async) {
            return g.broadcast(t, op_options(ReduceOp::SUM, root, to, async));
          },
          py::call_guard<Rel>())
      .def(
          "_allreduce",
          [](ProcessGroup& g, const Tensor& t, ReduceOp op, double to, bool async) {
            return g.allreduce(t, op_options(op, 0, to, async));
          },
          py::call_guard<Rel>())
      .def(
          "_allreduce_coalesced",
          [](ProcessGroup& g, const std::vector<Tensor>& ts, ReduceOp op, double to, bool async) {
            return g.allreduce_coalesced(ts, op_options(op, 0, to, async));
          },
          py::call_guard<Rel>())
      .def(
          "_reduce",
          [](ProcessGroup& g, const Tensor& t, int root, ReduceOp op, double to, bool async) {
            return g.reduce(t, op_options(op, root, to, async));
          },
          py::call_guard<Rel>())
      .def(
          "_allgather",
          [](ProcessGroup& g, const std::vector<Tensor>& outs, const Tensor& in, double to,
             bool async) { return g.allgather(outs, in, op_options(ReduceOp::SUM, 0, to, async)); },
          py::call_guard<Rel>())
      .def(
          "_allgather_into_tensor",
          [](ProcessGroup& g, const Tensor& out, const Tensor& in, double to, bool async) {
            return g.allgather_into_tensor(out, in, op_options(ReduceOp::SUM, 0, to, async));
          },
          py::call_guard<Rel>())
      .def(
          "_gather",
          [](ProcessGroup& g, const std::vector<Tensor>& outs, const Tensor& in, int root,
             double to,
             bool async) { return g.gather(outs, in, op_options(ReduceOp::SUM, root, to, async)); },
          py::call_guard<Rel>())
      .def(
          "_scatter",
          [](ProcessGroup& g, const Tensor& out, const std::vector<Tensor>& ins, int root,
             double to, bool async) {
            return g.scatter(out, ins, op_options(ReduceOp::SUM, root, to, async));
          },
          py::call_guard<Rel>())
      .def(
          "_reduce_scatter",
          [](ProcessGroup& g, const Tensor& out, const std::vector<Tensor>& ins, ReduceOp op,
             double to,
             bool async) { return g.reduce_scatter(out, ins, op_options(op, 0, to, async)); },
          py::call_guard<Rel>())
      .def(
          "_reduce_scatter_tensor",
          [](ProcessGroup& g, const Tensor& out, const Tensor& in, ReduceOp op, double to,
             bool async) { return g.reduce_scatter_tensor(out, in, op_options(op, 0, to, async)); },
          py::call_guard<Rel>())
      .def(
          "_alltoall_base",
          [](ProcessGroup& g, const Tensor& out, const Tensor& in,
             const std::vector<int64_t>& out_splits, const std::vector<int64_t>& in_splits,
             double to, bool async) {
            return g.alltoall_base(out, in, out_splits, in_splits,
                                   op_options(ReduceOp::SUM, 0, to, async));
          },
          py::call_guard<Rel>())
      .def(
          "_alltoall",
          [](ProcessGroup& g, const std::vector<Tensor>& outs, const std::vector<Tensor>& ins,
             double to,
             bool async) { return g.alltoall(outs, ins, op_options(ReduceOp::SUM, 0, to, async)); },
          py::call_guard<Rel>())
      .def("_send", &ProcessGroup::send, py::call_guard<Rel>())
      .def("_recv", &ProcessGroup::recv, py::call_guard<Rel>())
      .def(
          "_barrier",
          [](ProcessGroup& g, double to, bool async) {
            return g.barrier(op_options(ReduceOp::SUM, 0, to, async));
          },
          py::call_guard<Rel>())
      .def(
          "_explain_failure",
          [](ProcessGroup& g, int64_t seq, double grace_s) {
            return g.explain_failure(seq, Millis(int64_t(grace_s * 1000)));
          },
          py::call_guard<Rel>());

  m.def("_backend_registered", &backend_registered, py::arg("name"));
  m.def(
      "_new_process_group",
      [](const std::string& backend, std::shared_ptr<Store> store, int rank, int size,
         double timeout_s, const std::string& local_address, const std::string& group_name,
         int device_index) {
        BackendOptions o;
        o.timeout = Millis(int64_t(timeout_s * 1000.0));
        o.local_address = local_address;
        o.group_name = group_name;
        o.device_index = device_index;
        py::gil_scoped_release nogil;
        return create_process_group(backend, std::move(store), rank, size, o);
      },
      py::arg("backend"), py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout"),
      py::arg("local_address") = "", py::arg("group_name") = "", py::arg("device_index") = -1);
}

}  // namespace
}  // namespace dist_bindings

void init_distributed(py::module_& root) {
  using namespace dist_bindings;
  py::module_ m = root.def_submodule("_distributed", "ember.distributed's C++ half");
  g_dist_error = PyErr_NewException("ember.distributed.DistError", PyExc_RuntimeError, nullptr);
  g_backend_error = PyErr_NewException("ember.distributed.DistBackendError", g_dist_error, nullptr);
  g_store_error = PyErr_NewException("ember.distributed.DistStoreError", g_dist_error, nullptr);
  g_network_error = PyErr_NewException("ember.distributed.DistNetworkError", g_dist_error, nullptr);
  m.attr("DistError") = py::handle(g_dist_error);
  m.attr("DistBackendError") = py::handle(g_backend_error);
  m.attr("DistStoreError") = py::handle(g_store_error);
  m.attr("DistNetworkError") = py::handle(g_network_error);
  py::register_exception_translator(&translate_dist);
  bind_stores(m);
  bind_work(m);
  bind_process_group(m);
}

}  // namespace ember::python
