// Bindings: sparse COO tensors (ops/sparse.h): sparse_coo_tensor, the parts and flags
// (Tensor._indices, values, coalesce, ...), to_dense/to_sparse/sparse_mask and the
// ember.sparse functions; and the op names of layout errors (Note [Layout errors]).
#include <unordered_map>

#include "ember/ops/sparse.h"
#include "ember/python/bind.h"

namespace ember::python {
namespace {

using py::arg;

std::optional<bool> optional_bool(py::handle h) {
  if (h.is_none()) return std::nullopt;
  return PyObject_IsTrue(h.ptr()) == 1;
}

// ---- Note [Layout errors], the Python half ----
// data_ptr() raises LayoutError without knowing the op. Once the first sparse tensor reaches
// Python (before that none can fail so), every pybind11 function of ember._C and of Tensor
// gets a trampoline around its dispatch that renames a LayoutError after the function the
// user called, as PyTorch's "Could not run 'aten::cumsum' with arguments from the
// 'SparseCPU' backend". Dense-only programs never pay for the trampoline's lookup.
using Impl = py::handle (*)(py::detail::function_call&);

std::unordered_map<const py::detail::function_record*, Impl>& original_impls() {
  static auto* m = new std::unordered_map<const py::detail::function_record*, Impl>();
  return *m;
}

const char* sparse_backend_of(const py::detail::function_call& call) {
  for (size_t i = 0; i < call.args.size(); ++i) {
    py::handle a = call.args[i];
    Tensor* t = nullptr;
    if (a && as_tensor(a, t) && t->defined() && t->is_sparse())
      return t->device().is_cpu() ? "SparseCPU" : "SparseCUDA";
  }
  return "SparseCPU";
}

py::handle name_layout_errors(py::detail::function_call& call) {
  Impl f = original_impls().at(&call.func);
  try {
    return f(call);
  } catch (const LayoutError& e) {
    const char* name = call.func.name;
    raise(ErrorKind::NotImplemented, "Could not run '", name, "' with arguments from the '",
          sparse_backend_of(call), "' backend: ", name,
          " does not support tensors with layout ember.", layout_name(e.layout),
          " (convert with .to_dense() first)");
  }
}

void wrap_function(py::handle h) {
  py::handle f = py::detail::get_function(h);
  if (!f || !PyCFunction_Check(f.ptr())) return;
  PyObject* self = PyCFunction_GET_SELF(f.ptr());
  if (!self) return;
  for (auto* rec = py::detail::function_record_ptr_from_PyObject(self); rec; rec = rec->next) {
    if (rec->impl == &name_layout_errors) continue;
    original_impls().emplace(rec, rec->impl);
    rec->impl = &name_layout_errors;
  }
}

void wrap_namespace(py::handle mapping) {
  for (auto item : py::dict(py::reinterpret_borrow<py::object>(mapping))) {  // a class's
                                                                             // mappingproxy too
    py::handle v = item.second;
    if (PyObject_TypeCheck(v.ptr(), &PyProperty_Type)) {
      for (const char* acc : {"fget", "fset"}) {
        py::object f = py::reinterpret_borrow<py::object>(v).attr(acc);
        if (!f.is_none()) wrap_function(f);
      }
    } else {
      wrap_function(v);
    }
  }
}

}  // namespace

void install_layout_error_names() {
  static bool done = false;
  if (done) return;
  done = true;
  py::module_ c = py::module_::import("ember._C");
  wrap_namespace(c.attr("__dict__"));
  wrap_namespace(c.attr("Tensor").attr("__dict__"));
  for (auto item : py::reinterpret_borrow<py::dict>(c.attr("__dict__")))
    if (PyModule_Check(item.second.ptr())) wrap_namespace(item.second.attr("__dict__"));
}

namespace {

void bind_sparse_construction(py::module_& m) {
  m.def(
      "_sparse_coo_tensor",
      [](const Tensor& indices, const Tensor& values, py::handle size, py::handle dtype,
         py::handle device, py::handle check_invariants, py::handle is_coalesced) {
        std::optional<Shape> sz;
        if (!size.is_none()) sz = shape_arg(size, "sparse_coo_tensor", "size");
        return sparse_coo_tensor(indices, values, sz, optional_dtype(dtype, "sparse_coo_tensor"),
                                 optional_device(device), optional_bool(check_invariants),
                                 optional_bool(is_coalesced));
      },
      arg("indices"), arg("values"), arg("size") = py::none(), arg("dtype") = py::none(),
      arg("device") = py::none(), arg("check_invariants") = py::none(),
      arg("is_coalesced") = py::none());
  m.def(
      "_validate_sparse_coo_tensor_args",
      [](const Tensor& indices, const Tensor& values, py::handle size, py::handle is_coalesced) {
        validate_sparse_coo_args(indices, values, shape_arg(size, "sparse_coo_tensor", "size"),
                                 optional_bool(is_coalesced));
      },
      arg("indices"), arg("values"), arg("size"), arg("is_coalesced") = py::none());
  // torch._sparse_coo_tensor_unsafe: trusted parts, shape checks only (the optimizers' path).
  m.def(
      "_sparse_coo_tensor_unsafe",
      [](const Tensor& indices, const Tensor& values, py::handle size, bool is_coalesced) {
        return sparse_from_parts(indices, values, shape_arg(size, "sparse_coo_tensor", "size"),
                                 is_coalesced);
      },
      arg("indices"), arg("values"), arg("size"), arg("is_coalesced") = false);
  m.def("_install_layout_error_names", &install_layout_error_names);
}

void bind_sparse_methods(py::module_& m) {
  py::class_<Tensor> cls = tensor_class(m);
  cls.def_property_readonly("is_sparse", [](const Tensor& t) { return t.is_sparse(); })
      .def_property_readonly("is_sparse_csr", [](const Tensor&) { return false; })
      .def_property_readonly("_layout_id", [](const Tensor& t) { return int(t.layout()); })
      .def("_indices", &sparse_indices_raw)
      .def("_values", &sparse_values_raw)
      .def("indices", &sparse_indices)
      .def("values", &sparse_values)
      .def("coalesce", &coalesce)
      .def("is_coalesced", &is_coalesced)
      .def("_coalesced_", &set_coalesced_, arg("coalesced"))
      .def("_nnz", &sparse_nnz)
      .def("sparse_dim", &sparse_dim)
      .def("dense_dim", &dense_dim)
      .def("sparse_mask", &sparse_mask, arg("mask"))
      .def(
          "to_dense",
          [](const Tensor& t, py::handle dtype, bool masked_grad) {
            return sparse_to_dense(t, optional_dtype(dtype, "to_dense"), masked_grad);
          },
          arg("dtype") = py::none(), py::kw_only(), arg("masked_grad") = true)
      .def(
          "to_sparse",
          [](const Tensor& t, py::handle sparse_dim, py::handle layout, py::handle blocksize,
             py::handle dense_dim) {
            if (!layout.is_none()) {
              std::string l = py::str(layout);
              EMBER_CHECK(l.find("sparse_coo") != std::string::npos,
                          "to_sparse: only the sparse_coo layout is supported, got ", l);
            }
            EMBER_CHECK(blocksize.is_none() && dense_dim.is_none(),
                        "to_sparse: blocksize and dense_dim apply to the compressed layouts, "
                        "which ember does not have");
            std::optional<int64_t> sd;
            if (!sparse_dim.is_none()) sd = int_arg(sparse_dim, "to_sparse", "sparse_dim");
            return to_sparse(t, sd);
          },
          arg("sparse_dim") = py::none(), py::kw_only(), arg("layout") = py::none(),
          arg("blocksize") = py::none(), arg("dense_dim") = py::none())
      .def("to_sparse_coo", [](const Tensor& t) { return to_sparse(t); });
}

void bind_sparse_functions(py::module_& m) {
  m.def("_sparse_mm", &sparse_mm, arg("mat1"), arg("mat2"));
  m.def(
      "_sparse_addmm",
      [](const Tensor& input, const Tensor& mat1, const Tensor& mat2, py::handle beta,
         py::handle alpha) {
        return sparse_addmm(input, mat1, mat2, scalar_arg(beta, "sparse.addmm", "beta"),
                            scalar_arg(alpha, "sparse.addmm", "alpha"));
      },
      arg("input"), arg("mat1"), arg("mat2"), py::kw_only(), arg("beta") = 1.0, arg("alpha") = 1.0);
  m.def(
      "_sparse_sum",
      [](const Tensor& t, py::handle dim, py::handle dtype) {
        std::optional<Shape> dims;
        if (!dim.is_none()) dims = shape_arg(dim, "sparse.sum", "dim");
        return sparse_sum(t, dims, optional_dtype(dtype, "sparse.sum"));
      },
      arg("input"), arg("dim") = py::none(), py::kw_only(), arg("dtype") = py::none());
  for (bool log : {false, true}) {
    m.def(
        log ? "_sparse_log_softmax" : "_sparse_softmax",
        [log](const Tensor& t, int64_t dim, py::handle dtype) {
          return sparse_softmax(t, dim, optional_dtype(dtype, "sparse.softmax"), log);
        },
        arg("input"), arg("dim"), py::kw_only(), arg("dtype") = py::none());
  }
  // torch.spmm: the sparse x dense product under its old name (mm's semantics).
  m.attr("spmm") = m.attr("mm");
}

}  // namespace

void init_sparse(py::module_& m) {
  bind_sparse_construction(m);
  bind_sparse_methods(m);
  bind_sparse_functions(m);
}

}  // namespace ember::python
