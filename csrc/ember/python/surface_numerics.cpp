// Bindings of the numeric and statistics composites of ops/surface.h, each
// declared once with def_op (function, method, in-place, out=).
#include "ember/ops/surface.h"
#include "ember/ops/surface_scan.h"
#include "ember/python/def_op.h"

namespace ember::python {
namespace {

Tensor other_of(py::handle h, const char* op) { return tensor_or_scalar(h, op, "other"); }

std::optional<Shape> dims_opt(py::handle h, const char* op) {
  if (h.is_none()) return std::nullopt;
  return shape_arg(h, op, "dim");
}

py::object return_pair(const char* name, const Tensor& a, const Tensor& b) {
  return py::module_::import("ember.return_types").attr(name)(wrap(a), wrap(b));
}

void bind_numeric_binary(py::module_& m, py::class_<Tensor>& cls) {
  using py::arg;

  // Binary ops whose other operand may be a tensor or a Python number.
#define EMBER_SURFACE_BINARY(name, forms) \
  def_op(                                 \
      m, cls, #name, forms,               \
      [](const Tensor& a, py::handle b) { return name(a, other_of(b, #name)); }, arg("other"));
  EMBER_SURFACE_BINARY(hypot, kAll)
  EMBER_SURFACE_BINARY(nextafter, kAll)
  EMBER_SURFACE_BINARY(copysign, kAll)
  EMBER_SURFACE_BINARY(xlogy, kAll)
  EMBER_SURFACE_BINARY(float_power, kAll)
  EMBER_SURFACE_BINARY(ldexp, kAll)
  EMBER_SURFACE_BINARY(gcd, kAll)
  EMBER_SURFACE_BINARY(lcm, kAll)
  EMBER_SURFACE_BINARY(bitwise_left_shift, kAll)
  EMBER_SURFACE_BINARY(bitwise_right_shift, kAll)
  EMBER_SURFACE_BINARY(logaddexp, kFnMethod | kOut)
  EMBER_SURFACE_BINARY(logaddexp2, kFnMethod | kOut)
  EMBER_SURFACE_BINARY(fmax, kFnMethod | kOut)
  EMBER_SURFACE_BINARY(fmin, kFnMethod | kOut)
#undef EMBER_SURFACE_BINARY
  def_op(
      m, cls, "heaviside", kAll, [](const Tensor& a, const Tensor& v) { return heaviside(a, v); },
      arg("values"));
  def_op(
      m, cls, "clamp_min", kAll,
      [](const Tensor& a, py::handle v) {
        return clamp_min(a, tensor_or_scalar(v, "clamp_min", "min"));
      },
      arg("min"));
  def_op(
      m, cls, "clamp_max", kAll,
      [](const Tensor& a, py::handle v) {
        return clamp_max(a, tensor_or_scalar(v, "clamp_max", "max"));
      },
      arg("max"));
}

void bind_shift_operators(py::module_& m, py::class_<Tensor>& cls) {
  // Shift operators.
  auto shift_op = [&](const char* py_name, bool left, bool reflected) {
    cls.attr(py_name) = py::cpp_function(
        [left, reflected](const Tensor& a, py::handle b) -> py::object {
          Tensor* t;
          Scalar s;
          Tensor o;
          if (as_tensor(b, t))
            o = *t;
          else if (as_scalar(b, s))
            o = wrap_scalar(s);
          else
            return py::reinterpret_borrow<py::object>(Py_NotImplemented);
          const Tensor& x = reflected ? o : a;
          const Tensor& y = reflected ? a : o;
          return wrap(left ? bitwise_left_shift(x, y) : bitwise_right_shift(x, y));
        },
        py::name(py_name), py::is_method(cls));
  };
  shift_op("__lshift__", true, false);
  shift_op("__rlshift__", true, true);
  shift_op("__rshift__", false, false);
  shift_op("__rrshift__", false, true);
  cls.attr("__ilshift__") = cls.attr("bitwise_left_shift_");
  cls.attr("__irshift__") = cls.attr("bitwise_right_shift_");
}

void bind_numeric_unary(py::module_& m, py::class_<Tensor>& cls) {
  using py::arg;
  auto none = py::none();
  // Unary composites.
#define EMBER_SURFACE_UNARY(name, forms) \
  def_op(m, cls, #name, forms, [](const Tensor& a) { return name(a); });
  EMBER_SURFACE_UNARY(isposinf, kFnMethod | kOut)
  EMBER_SURFACE_UNARY(isneginf, kFnMethod | kOut)
  EMBER_SURFACE_UNARY(isreal, kFnMethod)
  EMBER_SURFACE_UNARY(signbit, kFnMethod | kOut)
  EMBER_SURFACE_UNARY(sgn, kAll)
  EMBER_SURFACE_UNARY(positive, kFnMethod)
  EMBER_SURFACE_UNARY(sinc, kAll)
  EMBER_SURFACE_UNARY(deg2rad, kAll)
  EMBER_SURFACE_UNARY(rad2deg, kAll)
#undef EMBER_SURFACE_UNARY
  def_op(
      m, cls, "logit", kAll,
      [](const Tensor& a, std::optional<double> eps) { return logit(a, eps); }, arg("eps") = none);
  def_op(m, cls, "frexp", kFnMethod, [](const Tensor& a) {
    auto [mant, ex] = frexp(a);
    return return_pair("frexp", mant, ex);
  });
  def_op(
      m, cls, "addcmul", kAll,
      [](const Tensor& a, const Tensor& t1, const Tensor& t2, py::handle v) {
        return addcmul(a, t1, t2, scalar_arg(v, "addcmul", "value"));
      },
      arg("tensor1"), arg("tensor2"), py::kw_only(), arg("value") = 1);
  def_op(
      m, cls, "addcdiv", kAll,
      [](const Tensor& a, const Tensor& t1, const Tensor& t2, py::handle v) {
        return addcdiv(a, t1, t2, scalar_arg(v, "addcdiv", "value"));
      },
      arg("tensor1"), arg("tensor2"), py::kw_only(), arg("value") = 1);

  // Comparisons returning Python bools.
  def_op(
      m, cls, "equal", kFnMethod, [](const Tensor& a, const Tensor& b) { return equal(a, b); },
      arg("other"));
  def_op(
      m, cls, "allclose", kFnMethod,
      [](const Tensor& a, const Tensor& b, double rtol, double atol, bool en) {
        return allclose(a, b, rtol, atol, en);
      },
      arg("other"), arg("rtol") = 1e-5, arg("atol") = 1e-8, arg("equal_nan") = false);
  def_op(
      m, cls, "isclose", kFnMethod,
      [](const Tensor& a, const Tensor& b, double rtol, double atol, bool en) {
        return isclose(a, b, rtol, atol, en);
      },
      arg("other"), arg("rtol") = 1e-5, arg("atol") = 1e-8, arg("equal_nan") = false);

  // Special functions beyond the op table's primitives.
  def_fn(
      m, "polygamma",
      [](int64_t n, const Tensor& a, py::handle out) -> py::object {
        Tensor r = polygamma(n, a);
        return result_or_out(r, out, "polygamma");
      },
      arg("n"), arg("input"), py::kw_only(), arg("out") = none);
  def_op(
      m, cls, "polygamma", kMethod | kInplace,
      [](const Tensor& a, int64_t n) { return polygamma(n, a); }, arg("n"));
  def_op(
      m, cls, "mvlgamma", kAll, [](const Tensor& a, int64_t p) { return mvlgamma(a, p); },
      arg("p"));
}

void bind_indexing_composites(py::module_& m, py::class_<Tensor>& cls) {
  using py::arg;
  auto none = py::none();
  // ---- indexing composites ----
  def_op(
      m, cls, "index_fill", kAll,
      [](const Tensor& a, int64_t dim, const Tensor& index, py::handle v) {
        Tensor* t;
        Tensor val = as_tensor(v, t) ? *t
                                     : scalar_tensor(scalar_arg(v, "index_fill", "value"),
                                                     a.dtype(), a.device());
        return index_fill(a, dim, index, val);
      },
      arg("dim"), arg("index"), arg("value"));
  def_op(
      m, cls, "index_copy", kAll,
      [](const Tensor& a, int64_t dim, const Tensor& index, const Tensor& src) {
        return index_copy(a, dim, index, src);
      },
      arg("dim"), arg("index"), arg("source"));
  def_op(
      m, cls, "masked_scatter", kAll,
      [](const Tensor& a, const Tensor& mask, const Tensor& src) {
        return masked_scatter(a, mask, src);
      },
      arg("mask"), arg("source"));
  def_op(
      m, cls, "put", kAll,
      [](const Tensor& a, const Tensor& index, const Tensor& src, bool acc) {
        return put(a, index, src, acc);
      },
      arg("index"), arg("source"), arg("accumulate") = false);

  def_op(
      m, cls, "scatter_reduce", kAll,
      [](const Tensor& a, int64_t dim, const Tensor& index, const Tensor& src,
         const std::string& reduce,
         bool include_self) { return scatter_reduce(a, dim, index, src, reduce, include_self); },
      arg("dim"), arg("index"), arg("src"), arg("reduce"), py::kw_only(),
      arg("include_self") = true);
  def_op(
      m, cls, "index_reduce", kAll,
      [](const Tensor& a, int64_t dim, const Tensor& index, const Tensor& src,
         const std::string& reduce,
         bool include_self) { return index_reduce(a, dim, index, src, reduce, include_self); },
      arg("dim"), arg("index"), arg("source"), arg("reduce"), py::kw_only(),
      arg("include_self") = true);

  def_op(
      m, cls, "histogram", kFnMethod,
      [](const Tensor& a, py::handle bins, py::handle range, std::optional<Tensor> weight,
         bool density) {
        std::optional<Tensor> edges;
        int64_t nb = 100;
        Tensor* t;
        if (as_tensor(bins, t))
          edges = *t;
        else
          nb = int_arg(bins, "histogram", "bins");
        std::optional<std::pair<double, double>> r;
        if (!range.is_none()) {
          auto seq = range.cast<std::vector<double>>();
          EMBER_CHECK_TYPE(seq.size() == 2, "histogram(): range must be a pair of floats");
          r = std::make_pair(seq[0], seq[1]);
        }
        auto [h, e] = histogram(a, edges, nb, r, weight, density);
        return return_pair("histogram", h, e);
      },
      arg("bins") = 100, py::kw_only(), arg("range") = none, arg("weight") = none,
      arg("density") = false);
  def_op(m, cls, "matrix_exp", kFnMethod, [](const Tensor& a) { return matrix_exp(a); });
}

void bind_cumulative_and_nan_reductions(py::module_& m, py::class_<Tensor>& cls) {
  using py::arg;
  auto none = py::none();
  // ---- reductions and statistics ----
  def_op(
      m, cls, "cummax", kFnMethod,
      [](const Tensor& a, int64_t dim) {
        auto [v, i] = cummax(a, dim);
        return return_pair("cummax", v, i);
      },
      arg("dim"));
  def_op(
      m, cls, "cummin", kFnMethod,
      [](const Tensor& a, int64_t dim) {
        auto [v, i] = cummin(a, dim);
        return return_pair("cummin", v, i);
      },
      arg("dim"));
  def_op(
      m, cls, "mode", kFnMethod,
      [](const Tensor& a, int64_t dim, bool keepdim) {
        auto [v, i] = mode(a, dim, keepdim);
        return return_pair("mode", v, i);
      },
      arg("dim") = -1, arg("keepdim") = false);
  def_op(
      m, cls, "nanmedian", kFnMethod,
      [](const Tensor& a, py::handle dim, bool keepdim) -> py::object {
        if (dim.is_none()) return wrap(nanmedian(a));
        auto [v, i] = nanmedian_dim(a, int_arg(dim, "nanmedian", "dim"), keepdim);
        return return_pair("nanmedian", v, i);
      },
      arg("dim") = none, arg("keepdim") = false);
  def_op(
      m, cls, "nansum", kFnMethod | kOut,
      [](const Tensor& a, py::handle dim, bool keepdim, py::handle dtype) {
        return nansum(a, dims_opt(dim, "nansum"), keepdim, optional_dtype(dtype, "nansum"));
      },
      arg("dim") = none, arg("keepdim") = false, py::kw_only(), arg("dtype") = none);
  def_op(
      m, cls, "nanmean", kFnMethod | kOut,
      [](const Tensor& a, py::handle dim, bool keepdim, py::handle dtype) {
        return nanmean(a, dims_opt(dim, "nanmean"), keepdim, optional_dtype(dtype, "nanmean"));
      },
      arg("dim") = none, arg("keepdim") = false, py::kw_only(), arg("dtype") = none);
}

void bind_statistics(py::module_& m, py::class_<Tensor>& cls) {
  using py::arg;
  auto none = py::none();
  def_op(
      m, cls, "aminmax", kFnMethod,
      [](const Tensor& a, py::handle dim, bool keepdim) {
        std::optional<int64_t> d;
        if (!dim.is_none()) d = int_arg(dim, "aminmax", "dim");
        auto [lo, hi] = aminmax(a, d, keepdim);
        return return_pair("aminmax", lo, hi);
      },
      py::kw_only(), arg("dim") = none, arg("keepdim") = false);
  def_op(
      m, cls, "diff", kFnMethod | kOut,
      [](const Tensor& a, int64_t n, int64_t dim, std::optional<Tensor> pre,
         std::optional<Tensor> app) { return diff(a, n, dim, pre, app); },
      arg("n") = 1, arg("dim") = -1, arg("prepend") = none, arg("append") = none);
  def_op(
      m, cls, "logcumsumexp", kFnMethod | kOut,
      [](const Tensor& a, int64_t dim) { return logcumsumexp(a, dim); }, arg("dim"));
  def_op(
      m, cls, "cov", kFnMethod,
      [](const Tensor& a, int64_t corr, std::optional<Tensor> fw, std::optional<Tensor> aw) {
        return cov(a, corr, fw, aw);
      },
      py::kw_only(), arg("correction") = 1, arg("fweights") = none, arg("aweights") = none);
  def_op(m, cls, "corrcoef", kFnMethod, [](const Tensor& a) { return corrcoef(a); });
  def_op(
      m, cls, "dist", kFnMethod,
      [](const Tensor& a, const Tensor& b, py::handle p) {
        return dist(a, b, scalar_arg(p, "dist", "p").to_double());
      },
      arg("other"), arg("p") = 2);
  def_op(
      m, cls, "renorm", kAll,
      [](const Tensor& a, py::handle p, int64_t dim, py::handle mx) {
        return renorm(a, scalar_arg(p, "renorm", "p").to_double(), dim,
                      scalar_arg(mx, "renorm", "maxnorm").to_double());
      },
      arg("p"), arg("dim"), arg("maxnorm"));
  for (bool nan : {false, true}) {
    const char* n = nan ? "nanquantile" : "quantile";
    def_op(
        m, cls, n, kFnMethod | kOut,
        [nan, n](const Tensor& a, py::handle q, py::handle dim, bool keepdim,
                 const std::string& interp) {
          Tensor* qt;
          Tensor qq =
              as_tensor(q, qt) ? *qt : scalar_tensor(scalar_arg(q, n, "q"), a.dtype(), a.device());
          std::optional<int64_t> d;
          if (!dim.is_none()) d = int_arg(dim, n, "dim");
          return quantile(a, qq, d, keepdim, interp, nan);
        },
        arg("q"), arg("dim") = none, arg("keepdim") = false, py::kw_only(),
        arg("interpolation") = "linear");
  }
  def_op(
      m, cls, "take_along_dim", kFnMethod | kOut,
      [](const Tensor& a, const Tensor& idx, py::handle dim) {
        std::optional<int64_t> d;
        if (!dim.is_none()) d = int_arg(dim, "take_along_dim", "dim");
        return take_along_dim(a, idx, d);
      },
      arg("indices"), arg("dim") = none);
  def_op(
      m, cls, "bincount", kFnMethod,
      [](const Tensor& a, std::optional<Tensor> w, int64_t minlength) {
        return bincount(a, w, minlength);
      },
      arg("weights") = none, arg("minlength") = 0);
  def_op(
      m, cls, "histc", kFnMethod | kOut,
      [](const Tensor& a, int64_t bins, py::handle mn, py::handle mx) {
        return histc(a, bins, scalar_arg(mn, "histc", "min").to_double(),
                     scalar_arg(mx, "histc", "max").to_double());
      },
      arg("bins") = 100, arg("min") = 0, arg("max") = 0);
}

}  // namespace

void bind_surface_numerics(py::module_& m, py::class_<Tensor>& cls) {
  bind_numeric_binary(m, cls);
  bind_shift_operators(m, cls);
  bind_numeric_unary(m, cls);
  bind_indexing_composites(m, cls);
  bind_cumulative_and_nan_reductions(m, cls);
  bind_statistics(m, cls);
}

}  // namespace ember::python
