// Bindings of the joining, rearranging and sorting ops (ops/join.h, ops/sort.h):
// module functions and the Tensor methods PyTorch has for them. The results of
// sort/topk/kthvalue are ember.return_types named tuples (values, indices), as
// torch.return_types; their out= forms return <op>_out as PyTorch's do.
#include "ember/ops/join.h"
#include "ember/ops/out.h"
#include "ember/ops/sort.h"
#include "ember/python/bind.h"

namespace ember::python {
namespace {

// A list or tuple of Tensors, with PyTorch's TypeErrors.
std::optional<int64_t> optional_int(py::handle h, const char* op, const char* arg) {
  if (h.is_none()) return std::nullopt;
  return int_arg(h, op, arg);
}

// `dim` or its NumPy alias `axis` (at most one of them).
int64_t dim_or_axis(py::handle dim, py::handle axis, const char* op) {
  if (!axis.is_none()) {
    EMBER_CHECK_TYPE(dim.is_none(), op, "(): got both 'dim' and its alias 'axis'");
    return int_arg(axis, op, "axis");
  }
  return dim.is_none() ? 0 : int_arg(dim, op, "dim");
}

// flip(0, 1) / flip((0, 1)) / flip([0, 1]) on a Tensor.
Shape dims_from_args(const py::args& args, const char* op) {
  EMBER_CHECK_TYPE(args.size() > 0, op, "(): missing required argument 'dims'");
  return shape_from_args(args, op, "dims");
}

py::object repeat_interleave_py(const Tensor& self, py::handle repeats, py::handle dim,
                                py::handle output_size) {
  const char* op = "repeat_interleave";
  std::optional<int64_t> d = optional_int(dim, op, "dim");
  std::optional<int64_t> want = optional_int(output_size, op, "output_size");
  Tensor r;
  if (repeats.is_none()) {  // repeat_interleave(repeats): the index form
    EMBER_CHECK_TYPE(!d, op, "(): dim given without repeats");
    r = repeat_interleave(self);
  } else {
    Tensor* t;
    r = as_tensor(repeats, t) ? repeat_interleave(self, *t, d)
                              : repeat_interleave(self, int_arg(repeats, op, "repeats"), d);
  }
  // output_size promises the length of the repeated dim (PyTorch uses it to skip a sync);
  // a wrong promise is an error, never a silently different result.
  if (want) {
    int64_t got = r.dim() ? r.sizes()[repeats.is_none() || !d ? 0 : wrap_dim(*d, r.dim())] : 1;
    EMBER_CHECK(*want == got, op, ": Invalid output_size, expected ", got, " but got ", *want);
  }
  return wrap(r);
}

py::object unique_result(const std::tuple<Tensor, Tensor, Tensor>& r, bool inv, bool cnt) {
  if (!inv && !cnt) return wrap(std::get<0>(r));
  py::list out;
  out.append(wrap(std::get<0>(r)));
  if (inv) out.append(wrap(std::get<1>(r)));
  if (cnt) out.append(wrap(std::get<2>(r)));
  return py::tuple(out);
}

std::optional<Tensor> optional_tensor(py::handle h, const char* op, const char* arg) {
  if (h.is_none()) return std::nullopt;
  Tensor* t;
  if (!as_tensor(h, t))
    raise(ErrorKind::Type, op, "(): argument '", arg, "' must be Tensor, not ", type_name(h));
  return *t;
}

// cat/stack into an out= of a dtype the inputs can't be cast to: PyTorch's TypeError.
void check_join_out(const Tensor& r, py::handle out, const char* op) {
  const Tensor* o = out_arg(out, op);
  if (!o) return;
  EMBER_CHECK_TYPE(can_cast(r.dtype(), o->dtype()), "ember.", op,
                   "(): input types can't be cast to the desired output type ",
                   dtype_name(o->dtype()));
}

// sort/topk/kthvalue(..., out=(values, indices)): values of the input's dtype and int64
// indices (PyTorch's structured-kernel check), each resized as resize_output; the
// result is ember.return_types.<op>_out as torch's, or <op> without out=.
py::object values_indices(const char* op, const std::tuple<Tensor, Tensor>& r, py::handle out) {
  auto [v, i] = out_pair_arg(out, op);
  if (v) {
    for (auto [o, dt] : {std::pair{v, std::get<0>(r).dtype()}, std::pair{i, DType::Int64}})
      EMBER_CHECK(o->dtype() == dt, op, "(): expected out tensor to have dtype ", dtype_name(dt),
                  ", but got ", dtype_name(o->dtype()), " instead");
  }
  return pair_or_out(op, std::get<0>(r), std::get<1>(r), out);
}

void bind_joining(py::module_& m, py::class_<Tensor>& cls) {
  using py::arg;
  const auto none = py::none();
  // ---- joining ---------------------------------------------------------------------
  for (const char* name : {"cat", "concat", "concatenate"}) {
    m.def(
        name,
        [name](py::handle tensors, py::object dim, py::object axis, py::handle out) {
          Tensor r = cat(tensor_list_arg(tensors, name), dim_or_axis(dim, axis, name));
          check_join_out(r, out, name);
          return result_or_out(r, out, name);
        },
        py::arg("tensors"), py::arg("dim") = py::none(), py::kw_only(),
        py::arg("axis") = py::none(), py::arg("out") = py::none());
  }
  m.def(
      "stack",
      [](py::handle tensors, py::object dim, py::object axis, py::handle out) {
        Tensor r = stack(tensor_list_arg(tensors, "stack"), dim_or_axis(dim, axis, "stack"));
        check_join_out(r, out, "stack");
        return result_or_out(r, out, "stack");
      },
      py::arg("tensors"), py::arg("dim") = py::none(), py::kw_only(), py::arg("axis") = py::none(),
      py::arg("out") = py::none());
  m.def(
      "hstack", [](py::handle t) { return hstack(tensor_list_arg(t, "hstack")); },
      py::arg("tensors"));
  m.def(
      "vstack", [](py::handle t) { return vstack(tensor_list_arg(t, "vstack")); },
      py::arg("tensors"));
  m.def(
      "row_stack", [](py::handle t) { return vstack(tensor_list_arg(t, "row_stack")); },
      py::arg("tensors"));
  m.def(
      "dstack", [](py::handle t) { return dstack(tensor_list_arg(t, "dstack")); },
      py::arg("tensors"));
  m.def(
      "column_stack", [](py::handle t) { return column_stack(tensor_list_arg(t, "column_stack")); },
      py::arg("tensors"));
}

void bind_rearranging(py::module_& m, py::class_<Tensor>& cls) {
  using py::arg;
  const auto none = py::none();
  // ---- rearranging -------------------------------------------------------------------
  m.def(
      "flip",
      [](const Tensor& a, py::handle dims) { return flip(a, shape_arg(dims, "flip", "dims")); },
      py::arg("input"), py::arg("dims"));
  m.def("fliplr", &fliplr, py::arg("input"));
  m.def("flipud", &flipud, py::arg("input"));
  auto roll_py = [](const Tensor& a, py::handle shifts, py::handle dims) {
    Shape d = dims.is_none() ? Shape{} : shape_arg(dims, "roll", "dims");
    return roll(a, shape_arg(shifts, "roll", "shifts"), d);
  };
  m.def("roll", roll_py, py::arg("input"), py::arg("shifts"), py::arg("dims") = py::none());
  m.def(
      "tile",
      [](const Tensor& a, py::handle dims) { return tile(a, shape_arg(dims, "tile", "dims")); },
      py::arg("input"), py::arg("dims"));
  m.def(
      "repeat_interleave",
      [](const Tensor& a, py::handle repeats, py::handle dim, py::handle output_size) {
        return repeat_interleave_py(a, repeats, dim, output_size);
      },
      py::arg("input"), py::arg("repeats") = py::none(), py::arg("dim") = py::none(), py::kw_only(),
      py::arg("output_size") = py::none());

  cls.def("flip",
          [](const Tensor& a, py::args dims) { return flip(a, dims_from_args(dims, "flip")); })
      .def("fliplr", &fliplr)
      .def("flipud", &flipud)
      .def("roll", roll_py, py::arg("shifts"), py::arg("dims") = py::none())
      .def("repeat",
           [](const Tensor& a, py::args sizes) {
             EMBER_CHECK_TYPE(sizes.size() > 0, "repeat(): missing required argument 'repeats'");
             return repeat(a, shape_from_args(sizes, "repeat", "repeats"));
           })
      .def("tile",
           [](const Tensor& a, py::args dims) { return tile(a, dims_from_args(dims, "tile")); })
      .def(
          "repeat_interleave",
          [](const Tensor& a, py::handle repeats, py::handle dim, py::handle output_size) {
            return repeat_interleave_py(a, repeats, dim, output_size);
          },
          py::arg("repeats") = py::none(), py::arg("dim") = py::none(), py::kw_only(),
          py::arg("output_size") = py::none());
}

void bind_sorting_and_searching(py::module_& m, py::class_<Tensor>& cls) {
  using py::arg;
  const auto none = py::none();
  // ---- sorting and searching ----------------------------------------------------------------
  auto sort_py = [](const Tensor& a, int64_t dim, bool descending, bool stable) {
    return values_indices("sort", sort(a, dim, descending, stable), py::none());
  };
  auto argsort_py = [](const Tensor& a, int64_t dim, bool descending, bool stable) {
    return argsort(a, dim, descending, stable);
  };
  auto topk_py = [](const Tensor& a, int64_t k, int64_t dim, bool largest, bool sorted) {
    return values_indices("topk", topk(a, k, dim, largest, sorted), py::none());
  };
  auto kth_py = [](const Tensor& a, int64_t k, int64_t dim, bool keepdim) {
    return values_indices("kthvalue", kthvalue(a, k, dim, keepdim), py::none());
  };
  auto unique_py = [](const Tensor& a, bool sorted, bool inv, bool cnt, py::handle dim) {
    return unique_result(unique(a, sorted, inv, cnt, optional_int(dim, "unique", "dim")), inv, cnt);
  };
  auto unique_consecutive_py = [](const Tensor& a, bool inv, bool cnt, py::handle dim) {
    auto d = optional_int(dim, "unique_consecutive", "dim");
    return unique_result(unique_consecutive(a, inv, cnt, d), inv, cnt);
  };
  for (bool method : {false, true}) {
    auto def = [&](const char* name, auto&& f, auto... extra) {
      if (method)
        cls.def(name, f, extra...);
      else
        m.def(name, f, py::arg("input"), extra...);
    };
    if (method) {
      cls.def("sort", sort_py, py::arg("dim") = -1, py::arg("descending") = false, py::kw_only(),
              py::arg("stable") = false);
      cls.def("topk", topk_py, py::arg("k"), py::arg("dim") = -1, py::arg("largest") = true,
              py::arg("sorted") = true);
      cls.def("kthvalue", kth_py, py::arg("k"), py::arg("dim") = -1, py::arg("keepdim") = false);
    } else {
      m.def(
          "sort",
          [](const Tensor& a, int64_t dim, bool descending, bool stable, py::handle out) {
            return values_indices("sort", sort(a, dim, descending, stable), out);
          },
          py::arg("input"), py::arg("dim") = -1, py::arg("descending") = false, py::kw_only(),
          py::arg("stable") = false, py::arg("out") = none);
      m.def(
          "topk",
          [](const Tensor& a, int64_t k, int64_t dim, bool largest, bool sorted, py::handle out) {
            return values_indices("topk", topk(a, k, dim, largest, sorted), out);
          },
          py::arg("input"), py::arg("k"), py::arg("dim") = -1, py::arg("largest") = true,
          py::arg("sorted") = true, py::kw_only(), py::arg("out") = none);
      m.def(
          "kthvalue",
          [](const Tensor& a, int64_t k, int64_t dim, bool keepdim, py::handle out) {
            return values_indices("kthvalue", kthvalue(a, k, dim, keepdim), out);
          },
          py::arg("input"), py::arg("k"), py::arg("dim") = -1, py::arg("keepdim") = false,
          py::kw_only(), py::arg("out") = none);
    }
    def("argsort", argsort_py, py::arg("dim") = -1, py::arg("descending") = false, py::kw_only(),
        py::arg("stable") = false);
    def("msort", &msort);
    def("unique", unique_py, py::arg("sorted") = true, py::arg("return_inverse") = false,
        py::arg("return_counts") = false, py::arg("dim") = py::none());
    def("unique_consecutive", unique_consecutive_py, py::arg("return_inverse") = false,
        py::arg("return_counts") = false, py::arg("dim") = py::none());
  }

  m.def(
      "searchsorted",
      [](const Tensor& seq, py::handle input, bool out_int32, bool right,
         std::optional<std::string> side, py::handle sorter) {
        Tensor v = tensor_or_scalar(input, "searchsorted", "input");
        return searchsorted(seq, v, out_int32, right, side,
                            optional_tensor(sorter, "searchsorted", "sorter"));
      },
      py::arg("sorted_sequence"), py::arg("input"), py::kw_only(), py::arg("out_int32") = false,
      py::arg("right") = false, py::arg("side") = py::none(), py::arg("sorter") = py::none());
  m.def(
      "bucketize",
      [](py::handle input, const Tensor& boundaries, bool out_int32, bool right) {
        return bucketize(tensor_or_scalar(input, "bucketize", "input"), boundaries, out_int32,
                         right);
      },
      py::arg("input"), py::arg("boundaries"), py::kw_only(), py::arg("out_int32") = false,
      py::arg("right") = false);
}

}  // namespace

void init_join_sort(py::module_& m) {
  py::class_<Tensor> cls = tensor_class(m);
  bind_joining(m, cls);
  bind_rearranging(m, cls);
  bind_sorting_and_searching(m, cls);
}

}  // namespace ember::python
