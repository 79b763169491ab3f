// Bindings of the reductions and scans (ops/reduce.h), as ember functions and
// Tensor methods with PyTorch's signatures. max/min/median with a dim return
// the named tuples of ember.return_types.
#include <cmath>

#include "ember/autograd/record.h"
#include "ember/ops/ops.h"
#include "ember/ops/reduce.h"
#include "ember/python/bind.h"

namespace ember::python {
namespace {

/// dim=None | int | tuple/list of ints.
OptDims dims_arg(py::handle h, const char* op) {
  if (h.is_none()) return std::nullopt;
  if (py::isinstance<py::tuple>(h) || py::isinstance<py::list>(h)) {
    Shape s;
    for (py::handle item : h) s.push_back(int_arg(item, op, "dim"));
    return s;
  }
  Tensor* t;
  if (as_tensor(h, t))
    raise(ErrorKind::Type, op, "(): argument 'dim' must be int or tuple of ints, not Tensor");
  return Shape{int_arg(h, op, "dim")};
}

std::optional<int64_t> opt_int(py::handle h, const char* op, const char* arg) {
  if (h.is_none()) return std::nullopt;
  return int_arg(h, op, arg);
}

/// ember.return_types.<name>(values, indices).
py::object named_pair(const char* name, const Tensor& a, const Tensor& b) {
  return py::module_::import("ember.return_types").attr(name)(wrap(a), wrap(b));
}

py::object named_pair(const char* name, const std::pair<Tensor, Tensor>& r) {
  return named_pair(name, r.first, r.second);
}

/// out=(values, indices) for the (values, indices) overloads.
py::object pair_result(const char* name, const std::pair<Tensor, Tensor>& r, py::handle out) {
  auto [v, i] = out_pair_arg(out, name);
  if (i)
    EMBER_CHECK(i->dtype() == DType::Int64, name, "(): expected out indices of dtype int64, got ",
                dtype_name(i->dtype()));
  return pair_or_out(name, r.first, r.second, out);
}

py::object tensor_result(const Tensor& r, py::handle out, const char* op) {
  return result_or_out(r, out, op);
}

/// var/std argument forms: (dim, unbiased, keepdim), (unbiased), correction=.
struct VarArgs {
  OptDims dims;
  double correction = 1;
};
VarArgs var_args(py::handle dim, py::handle unbiased, py::handle correction, const char* op) {
  VarArgs r;
  if (py::isinstance<py::bool_>(dim)) {  // x.var(False): the legacy `unbiased` overload
    EMBER_CHECK_TYPE(unbiased.is_none(), op, "(): got `unbiased` twice");
    unbiased = dim;
    dim = py::none();
  }
  r.dims = dims_arg(dim, op);
  EMBER_CHECK(unbiased.is_none() || correction.is_none(), op,
              "(): cannot specify both unbiased and correction");
  if (!unbiased.is_none()) {
    EMBER_CHECK_TYPE(py::isinstance<py::bool_>(unbiased), op,
                     "(): argument 'unbiased' must be bool, not ", type_name(unbiased));
    r.correction = unbiased.cast<bool>() ? 1 : 0;
  } else if (!correction.is_none()) {
    r.correction = scalar_arg(correction, op, "correction").to_double();
  }
  return r;
}

/// norm's p: None / 'fro' -> 2, numbers as given.
double norm_p(py::handle p) {
  if (p.is_none()) return 2;
  if (py::isinstance<py::str>(p)) {
    std::string s = p.cast<std::string>();
    if (s == "fro") return 2;
    EMBER_CHECK_VALUE(s != "nuc", "norm(): p='nuc' (the nuclear norm) is not supported");
    raise(ErrorKind::Runtime, "only valid string values are 'fro' and 'nuc', found ", s);
  }
  return scalar_arg(p, "norm", "p").to_double();
}

}  // namespace

namespace {

// sum, mean and prod.
void bind_sum_mean_prod(py::module_& m) {
  py::class_<Tensor> cls = tensor_class(m);
  using py::arg;
  const auto none = py::none();

  // ---- sum / mean / prod ----
  m.def(
      "sum",
      [](const Tensor& a, py::handle dim, bool keepdim, py::handle dtype,
         py::handle out) -> py::object {
        auto dims = dims_arg(dim, "sum");
        auto dt = optional_dtype(dtype, "sum");
        if (const Tensor* o = out_arg(out, "sum")) {
          sum_out(a, dims, keepdim, dt, *o);
          return py::reinterpret_borrow<py::object>(out);
        }
        return wrap(sum(a, dims, keepdim, dt));
      },
      arg("input"), arg("dim") = none, arg("keepdim") = false, py::kw_only(), arg("dtype") = none,
      arg("out") = none);
  cls.def(
      "sum",
      [](const Tensor& a, py::handle dim, bool keepdim, py::handle dtype) {
        return sum(a, dims_arg(dim, "sum"), keepdim, optional_dtype(dtype, "sum"));
      },
      arg("dim") = none, arg("keepdim") = false, py::kw_only(), arg("dtype") = none);

  m.def(
      "mean",
      [](const Tensor& a, py::handle dim, bool keepdim, py::handle dtype,
         py::handle out) -> py::object {
        auto dims = dims_arg(dim, "mean");
        auto dt = optional_dtype(dtype, "mean");
        if (const Tensor* o = out_arg(out, "mean")) {
          mean_out(a, dims, keepdim, dt, *o);
          return py::reinterpret_borrow<py::object>(out);
        }
        return wrap(mean(a, dims, keepdim, dt));
      },
      arg("input"), arg("dim") = none, arg("keepdim") = false, py::kw_only(), arg("dtype") = none,
      arg("out") = none);
  cls.def(
      "mean",
      [](const Tensor& a, py::handle dim, bool keepdim, py::handle dtype) {
        return mean(a, dims_arg(dim, "mean"), keepdim, optional_dtype(dtype, "mean"));
      },
      arg("dim") = none, arg("keepdim") = false, py::kw_only(), arg("dtype") = none);

  m.def(
      "prod",
      [](const Tensor& a, py::handle dim, bool keepdim, py::handle dtype,
         py::handle out) -> py::object {
        auto d = opt_int(dim, "prod", "dim");
        auto dt = optional_dtype(dtype, "prod");
        if (const Tensor* o = out_arg(out, "prod")) {
          prod_out(a, d, keepdim, dt, *o);
          return py::reinterpret_borrow<py::object>(out);
        }
        return wrap(prod(a, d, keepdim, dt));
      },
      arg("input"), arg("dim") = none, arg("keepdim") = false, py::kw_only(), arg("dtype") = none,
      arg("out") = none);
  cls.def(
      "prod",
      [](const Tensor& a, py::handle dim, bool keepdim, py::handle dtype) {
        return prod(a, opt_int(dim, "prod", "dim"), keepdim, optional_dtype(dtype, "prod"));
      },
      arg("dim") = none, arg("keepdim") = false, py::kw_only(), arg("dtype") = none);
}

// amax, amin, max, min, argmax and argmin.
void bind_extremes(py::module_& m) {
  py::class_<Tensor> cls = tensor_class(m);
  using py::arg;
  const auto none = py::none();

  // ---- amax / amin / max / min / argmax / argmin ----
#define EMBER_BIND_EXTREME(name)                                                        \
  m.def(                                                                                \
      #name,                                                                            \
      [](const Tensor& a, py::handle dim, bool keepdim, py::handle out) -> py::object { \
        auto dims = dims_arg(dim, #name);                                               \
        if (const Tensor* o = out_arg(out, #name)) {                                    \
          name##_out(a, dims, keepdim, *o);                                             \
          return py::reinterpret_borrow<py::object>(out);                               \
        }                                                                               \
        return wrap(name(a, dims, keepdim));                                            \
      },                                                                                \
      arg("input"), arg("dim") = py::tuple(), arg("keepdim") = false, py::kw_only(),    \
      arg("out") = none);                                                               \
  cls.def(                                                                              \
      #name,                                                                            \
      [](const Tensor& a, py::handle dim, bool keepdim) {                               \
        return name(a, dims_arg(dim, #name), keepdim);                                  \
      },                                                                                \
      arg("dim") = py::tuple(), arg("keepdim") = false);
  EMBER_BIND_EXTREME(amax)
  EMBER_BIND_EXTREME(amin)
#undef EMBER_BIND_EXTREME

  // max(input) | max(input, dim, keepdim=False) | max(input, other)
#define EMBER_BIND_MAXMIN(name, binop)                                                      \
  {                                                                                         \
    auto f = [](const Tensor& a, py::handle dim, bool keepdim, py::handle other,            \
                py::handle out) -> py::object {                                             \
      Tensor* t = nullptr;                                                                  \
      if (!other.is_none() || (!dim.is_none() && as_tensor(dim, t))) {                      \
        Tensor b = other.is_none() ? *t : tensor_or_scalar(other, #name, "other");          \
        return tensor_result(binary(binop, a, b), out, #name);                              \
      }                                                                                     \
      if (dim.is_none()) return tensor_result(name(a), out, #name);                         \
      return pair_result(#name, name##_dim(a, int_arg(dim, #name, "dim"), keepdim), out);   \
    };                                                                                      \
    m.def(#name, f, arg("input"), arg("dim") = none, arg("keepdim") = false, py::kw_only(), \
          arg("other") = none, arg("out") = none);                                          \
    cls.def(                                                                                \
        #name,                                                                              \
        [f](const Tensor& a, py::handle dim, bool keepdim, py::handle other) {              \
          return f(a, dim, keepdim, other, py::none());                                     \
        },                                                                                  \
        arg("dim") = none, arg("keepdim") = false, py::kw_only(), arg("other") = none);     \
  }
  EMBER_BIND_MAXMIN(max, BinaryOp::maximum)
  EMBER_BIND_MAXMIN(min, BinaryOp::minimum)
#undef EMBER_BIND_MAXMIN

  for (const char* name : {"argmax", "argmin"}) {
    const bool is_max = name[3] == 'm' && name[4] == 'a';
    auto f = [is_max](const Tensor& a, py::handle dim, bool keepdim) {
      auto d = opt_int(dim, is_max ? "argmax" : "argmin", "dim");
      return is_max ? argmax(a, d, keepdim) : argmin(a, d, keepdim);
    };
    m.def(name, f, arg("input"), arg("dim") = none, arg("keepdim") = false);
    cls.def(name, f, arg("dim") = none, arg("keepdim") = false);
  }
}

// all, any, count_nonzero, var, std, var_mean and std_mean.
void bind_logical_and_moments(py::module_& m) {
  py::class_<Tensor> cls = tensor_class(m);
  using py::arg;
  const auto none = py::none();

  // ---- all / any / count_nonzero ----
  for (const char* name : {"all", "any"}) {
    const bool is_all = name[1] == 'l';
    auto f = [is_all](const Tensor& a, py::handle dim, bool keepdim) {
      auto dims = dims_arg(dim, is_all ? "all" : "any");
      return is_all ? all(a, dims, keepdim) : any(a, dims, keepdim);
    };
    m.def(
        name,
        [f, is_all](const Tensor& a, py::handle dim, bool keepdim, py::handle out) {
          return tensor_result(f(a, dim, keepdim), out, is_all ? "all" : "any");
        },
        arg("input"), arg("dim") = none, arg("keepdim") = false, py::kw_only(), arg("out") = none);
    cls.def(name, f, arg("dim") = none, arg("keepdim") = false);
  }
  auto count_nz = [](const Tensor& a, py::handle dim) {
    return count_nonzero(a, dims_arg(dim, "count_nonzero"));
  };
  m.def("count_nonzero", count_nz, arg("input"), arg("dim") = none);
  cls.def("count_nonzero", count_nz, arg("dim") = none);

  // ---- var / std (+ _mean) ----
  for (const char* name : {"var", "std"}) {
    const bool is_std = name[0] == 's';
    auto f = [is_std](const Tensor& a, py::handle dim, py::handle unbiased, bool keepdim,
                      py::handle correction) {
      VarArgs v = var_args(dim, unbiased, correction, is_std ? "std" : "var");
      return is_std ? std(a, v.dims, v.correction, keepdim) : var(a, v.dims, v.correction, keepdim);
    };
    m.def(
        name,
        [f, is_std](const Tensor& a, py::handle dim, py::handle unbiased, bool keepdim,
                    py::handle correction, py::handle out) {
          return tensor_result(f(a, dim, unbiased, keepdim, correction), out,
                               is_std ? "std" : "var");
        },
        arg("input"), arg("dim") = none, arg("unbiased") = none, arg("keepdim") = false,
        py::kw_only(), arg("correction") = none, arg("out") = none);
    cls.def(name, f, arg("dim") = none, arg("unbiased") = none, arg("keepdim") = false,
            py::kw_only(), arg("correction") = none);
  }
  for (const char* name : {"var_mean", "std_mean"}) {
    const bool is_std = name[0] == 's';
    m.def(
        name,
        [is_std](const Tensor& a, py::handle dim, py::handle unbiased, bool keepdim,
                 py::handle correction) {
          const char* op = is_std ? "std_mean" : "var_mean";
          VarArgs v = var_args(dim, unbiased, correction, op);
          auto r = is_std ? std_mean(a, v.dims, v.correction, keepdim)
                          : var_mean(a, v.dims, v.correction, keepdim);
          return py::make_tuple(wrap(r.first), wrap(r.second));
        },
        arg("input"), arg("dim") = none, arg("unbiased") = none, arg("keepdim") = false,
        py::kw_only(), arg("correction") = none);
  }
}

// norm, logsumexp, median, cumsum and cumprod.
void bind_norms_and_scans(py::module_& m) {
  py::class_<Tensor> cls = tensor_class(m);
  using py::arg;
  const auto none = py::none();

  // ---- norm / logsumexp ----
  auto norm_f = [](const Tensor& a, py::handle p, py::handle dim, bool keepdim, py::handle dtype) {
    return norm(a, norm_p(p), dims_arg(dim, "norm"), keepdim, optional_dtype(dtype, "norm"));
  };
  m.def(
      "norm",
      [norm_f](const Tensor& a, py::handle p, py::handle dim, bool keepdim, py::handle out,
               py::handle dtype) {
        return tensor_result(norm_f(a, p, dim, keepdim, dtype), out, "norm");
      },
      arg("input"), arg("p") = "fro", arg("dim") = none, arg("keepdim") = false, arg("out") = none,
      arg("dtype") = none);
  cls.def("norm", norm_f, arg("p") = "fro", arg("dim") = none, arg("keepdim") = false,
          arg("dtype") = none);

  auto lse = [](const Tensor& a, py::handle dim, bool keepdim) {
    return logsumexp(a, dims_arg(dim, "logsumexp"), keepdim);
  };
  m.def(
      "logsumexp",
      [lse](const Tensor& a, py::handle dim, bool keepdim, py::handle out) {
        return tensor_result(lse(a, dim, keepdim), out, "logsumexp");
      },
      arg("input"), arg("dim"), arg("keepdim") = false, py::kw_only(), arg("out") = none);
  cls.def("logsumexp", lse, arg("dim"), arg("keepdim") = false);

  // ---- median ----
  auto median_f = [](const Tensor& a, py::handle dim, bool keepdim) -> py::object {
    if (dim.is_none()) return wrap(median(a));
    return named_pair("median", median_dim(a, int_arg(dim, "median", "dim"), keepdim));
  };
  m.def("median", median_f, arg("input"), arg("dim") = none, arg("keepdim") = false);
  cls.def("median", median_f, arg("dim") = none, arg("keepdim") = false);

  // ---- cumsum / cumprod ----
  for (const char* name : {"cumsum", "cumprod"}) {
    const bool is_sum = name[3] == 's';
    m.def(
        name,
        [is_sum](const Tensor& a, py::handle dim, py::handle dtype, py::handle out) -> py::object {
          const char* op = is_sum ? "cumsum" : "cumprod";
          const int64_t d = int_arg(dim, op, "dim");
          auto dt = optional_dtype(dtype, op);
          if (const Tensor* o = out_arg(out, op)) {
            is_sum ? cumsum_out(a, d, dt, *o) : cumprod_out(a, d, dt, *o);
            return py::reinterpret_borrow<py::object>(out);
          }
          return wrap(is_sum ? cumsum(a, d, dt) : cumprod(a, d, dt));
        },
        arg("input"), arg("dim"), py::kw_only(), arg("dtype") = none, arg("out") = none);
    cls.def(
        name,
        [is_sum](const Tensor& a, py::handle dim, py::handle dtype) {
          const char* op = is_sum ? "cumsum" : "cumprod";
          const int64_t d = int_arg(dim, op, "dim");
          return is_sum ? cumsum(a, d, optional_dtype(dtype, op))
                        : cumprod(a, d, optional_dtype(dtype, op));
        },
        arg("dim"), py::kw_only(), arg("dtype") = none);
    cls.def((std::string(name) + "_").c_str(),
            [is_sum](py::handle self, py::handle dim, py::handle dtype) {
              const char* op = is_sum ? "cumsum_" : "cumprod_";
              const Tensor& a = self.cast<const Tensor&>();
              const int64_t d = int_arg(dim, op, "dim");
              is_sum ? cumsum_(a, d, optional_dtype(dtype, op))
                     : cumprod_(a, d, optional_dtype(dtype, op));
              return py::reinterpret_borrow<py::object>(self);
            },
            arg("dim"), py::kw_only(), arg("dtype") = none);
  }

  // Make ember.return_types importable as an attribute early (it only needs collections).
  try {
    py::module_::import("ember.return_types");
  } catch (py::error_already_set&) {
  }
}

}  // namespace

void init_reduce(py::module_& m) {
  bind_sum_mean_prod(m);
  bind_extremes(m);
  bind_logical_and_moments(m);
  bind_norms_and_scans(m);
}

}  // namespace ember::python
