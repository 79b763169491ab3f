// Bindings of the everyday torch.* functions beyond the core families. Every op
// is declared once with def_op (python/def_op.h), which makes the function, the
// method, the in-place form and out= from one lambda.
#include "ember/ops/surface.h"
#include "ember/ops/index.h"
#include "ember/ops/join.h"
#include "ember/ops/ops.h"
#include "ember/ops/reduce.h"
#include "ember/ops/surface_random.h"
#include "ember/ops/view.h"
#include "ember/python/def_op.h"
#include "ember/python/factory_args.h"

namespace ember::python {
namespace {

struct PyMemoryFormat {
  MemoryFormat fmt;
  const char* name;
};

MemoryFormat memory_format_arg(py::handle h, const char* op) {
  if (h.is_none()) return MemoryFormat::Preserve;
  if (!py::isinstance<PyMemoryFormat>(h))
    raise(ErrorKind::Type, op, "(): argument 'memory_format' must be ember.memory_format, not ",
          type_name(h));
  return h.cast<PyMemoryFormat&>().fmt;
}

// Tensors from f(a, b, c) or f([a, b, c]).
std::vector<Tensor> tensors_from(const py::args& args, const char* op) {
  py::handle seq = args;
  if (args.size() == 1 && !py::isinstance<Tensor>(args[0])) seq = args[0];
  std::vector<Tensor> out;
  if (!py::isinstance<py::sequence>(seq))
    raise(ErrorKind::Type, op, "(): expected Tensors or a sequence of Tensors, got ",
          type_name(seq));
  for (py::handle h : py::reinterpret_borrow<py::sequence>(seq)) {
    Tensor* t;
    if (!as_tensor(h, t))
      raise(ErrorKind::Type, op, "(): expected Tensor as element ", out.size(), ", but got ",
            type_name(h));
    out.push_back(*t);
  }
  return out;
}

py::tuple as_tuple(const std::vector<Tensor>& v) {
  py::tuple t(v.size());
  for (size_t i = 0; i < v.size(); ++i) t[i] = wrap(v[i]);
  return t;
}

std::vector<int64_t> int_list(py::handle h, const char* op, const char* arg) {
  Shape s = shape_arg(h, op, arg);
  return std::vector<int64_t>(s.begin(), s.end());
}

// A one-tensor-or-many op (atleast_*): one tensor in, one out; several in, a tuple out.
template <typename F>
py::object one_or_many(const py::args& args, const char* op, F f) {
  if (args.size() == 1 && py::isinstance<Tensor>(args[0])) return wrap(f(args[0].cast<Tensor>()));
  std::vector<Tensor> ts = tensors_from(args, op), out;
  for (const Tensor& t : ts) out.push_back(f(t));
  return as_tuple(out);
}

Tensor cross_py(const Tensor& a, const Tensor& b, py::handle dim) {
  std::optional<int64_t> d;
  if (!dim.is_none()) d = int_arg(dim, "cross", "dim");
  return cross(a, b, d);
}

}  // namespace

void bind_surface_numerics(py::module_& m, py::class_<Tensor>& cls);

namespace {

// The memory_format objects.
void bind_memory_formats(py::module_& m) {
  using py::arg;

  // memory formats
  py::class_<PyMemoryFormat>(m, "memory_format").def("__repr__", [](const PyMemoryFormat& f) {
    return std::string("ember.") + f.name;
  });
  m.attr("preserve_format") = py::cast(PyMemoryFormat{MemoryFormat::Preserve, "preserve_format"});
  m.attr("contiguous_format") =
      py::cast(PyMemoryFormat{MemoryFormat::Contiguous, "contiguous_format"});
  m.attr("channels_last") = py::cast(PyMemoryFormat{MemoryFormat::ChannelsLast, "channels_last"});
  m.attr("channels_last_3d") =
      py::cast(PyMemoryFormat{MemoryFormat::ChannelsLast3d, "channels_last_3d"});
}

// The view and shape ops: reshape, permute, transpose, movedim, squeeze, unsqueeze, t, ravel,
// flatten and the splits.
void bind_shape_views(py::module_& m) {
  py::class_<Tensor> cls = tensor_class(m);
  auto none = py::none();
  using py::arg;

  // ---- views and shapes ----
  def_op(m, cls, "reshape", kFnMethod, [](const Tensor& a, py::args s) {
    return reshape(a, shape_from_args(s, "reshape", "shape"));
  });
  def_op(m, cls, "permute", kFnMethod, [](const Tensor& a, py::args s) {
    return permute(a, shape_from_args(s, "permute", "dims"));
  });
  auto transpose_py = [](const Tensor& a, py::handle d0, py::handle d1) {
    return transpose(a, int_arg(d0, "transpose", "dim0"), int_arg(d1, "transpose", "dim1"));
  };
  for (const char* n : {"transpose", "swapaxes", "swapdims"}) {
    def_op(m, cls, n, kFnMethod, transpose_py, arg("dim0"), arg("dim1"));
    std::string in = std::string(n) + "_";
    cls.attr(in.c_str()) = py::cpp_function(
        [transpose_py, in](const Tensor& a, py::handle d0, py::handle d1) {
          return set_geometry_(a, transpose_py(a, d0, d1), in.c_str());
        },
        py::name(in.c_str()), py::is_method(cls), arg("dim0"), arg("dim1"));
  }
  auto movedim_py = [](const Tensor& a, py::handle s, py::handle d) {
    return movedim(a, shape_arg(s, "movedim", "source"), shape_arg(d, "movedim", "destination"));
  };
  def_op(m, cls, "movedim", kFnMethod, movedim_py, arg("source"), arg("destination"));
  def_op(m, cls, "moveaxis", kFnMethod, movedim_py, arg("source"), arg("destination"));
  auto squeeze_py = [](const Tensor& a, py::handle dim) {
    if (dim.is_none()) return squeeze(a);
    return squeeze(a, shape_arg(dim, "squeeze", "dim"));
  };
  def_op(m, cls, "squeeze", kFnMethod, squeeze_py, arg("dim") = none);
  cls.attr("squeeze_") = py::cpp_function(
      [squeeze_py](const Tensor& a, py::handle dim) {
        return set_geometry_(a, squeeze_py(a, dim), "squeeze_");
      },
      py::name("squeeze_"), py::is_method(cls), arg("dim") = none);
  auto unsqueeze_py = [](const Tensor& a, py::handle d) {
    return unsqueeze(a, int_arg(d, "unsqueeze", "dim"));
  };
  def_op(m, cls, "unsqueeze", kFnMethod, unsqueeze_py, arg("dim"));
  cls.attr("unsqueeze_") = py::cpp_function(
      [unsqueeze_py](const Tensor& a, py::handle d) {
        return set_geometry_(a, unsqueeze_py(a, d), "unsqueeze_");
      },
      py::name("unsqueeze_"), py::is_method(cls), arg("dim"));
  def_op(m, cls, "t", kFnMethod, [](const Tensor& a) { return t(a); });
  cls.attr("t_") = py::cpp_function([](const Tensor& a) { return set_geometry_(a, t(a), "t_"); },
                                    py::name("t_"), py::is_method(cls));
  def_op(
      m, cls, "flatten", kFnMethod,
      [](const Tensor& a, int64_t s, int64_t e) { return flatten(a, s, e); }, arg("start_dim") = 0,
      arg("end_dim") = -1);
  def_op(m, cls, "ravel", kFnMethod, [](const Tensor& a) { return ravel(a); });
  def_op(m, cls, "adjoint", kFnMethod, [](const Tensor& a) { return adjoint(a); });
  def_op(
      m, cls, "chunk", kFnMethod,
      [](const Tensor& a, int64_t c, int64_t dim) { return as_tuple(chunk(a, c, dim)); },
      arg("chunks"), arg("dim") = 0);
  def_op(
      m, cls, "split", kFnMethod,
      [](const Tensor& a, py::handle s, int64_t dim) {
        if (PyLong_Check(s.ptr())) return as_tuple(split(a, s.cast<int64_t>(), dim));
        return as_tuple(split_with_sizes(a, shape_arg(s, "split", "split_size_or_sections"), dim));
      },
      arg("split_size_or_sections"), arg("dim") = 0);
  def_op(
      m, cls, "tensor_split", kFnMethod,
      [](const Tensor& a, py::handle s, int64_t dim) {
        Tensor* t;
        if (as_tensor(s, t)) {
          EMBER_CHECK(!is_floating(t->dtype()) && t->dim() <= 1,
                      "tensor_split expected tensor_indices_or_sections to have integer dtype and "
                      "be 0-D or 1-D, but got ",
                      dtype_name(t->dtype()), " with ", t->dim(), " dims");
          if (t->dim() == 0)
            return as_tuple(
                tensor_split(a, scalar_arg(s, "tensor_split", "sections").to_int(), dim));
          return as_tuple(tensor_split(a, to_int64_vector(*t), dim));
        }
        if (PyLong_Check(s.ptr())) return as_tuple(tensor_split(a, s.cast<int64_t>(), dim));
        return as_tuple(tensor_split(a, int_list(s, "tensor_split", "indices"), dim));
      },
      arg("indices_or_sections"), arg("dim") = 0);
  for (char w : {'h', 'v', 'd'}) {
    std::string n = std::string(1, w) + "split";
    def_op(
        m, cls, n.c_str(), kFnMethod,
        [w, n](const Tensor& a, py::handle s) {
          if (PyLong_Check(s.ptr())) return as_tuple(hvd_split(a, w, s.cast<int64_t>()));
          return as_tuple(hvd_split(a, w, int_list(s, n.c_str(), "indices")));
        },
        arg("indices_or_sections"));
  }
  def_op(
      m, cls, "unbind", kFnMethod,
      [](const Tensor& a, int64_t dim) { return as_tuple(unbind(a, dim)); }, arg("dim") = 0);
}

// narrow, narrow_copy, select, clone, diagonal, as_strided and broadcast_to.
void bind_slicing_views(py::module_& m) {
  py::class_<Tensor> cls = tensor_class(m);
  auto none = py::none();
  using py::arg;

  auto narrow_py = [](const Tensor& a, int64_t dim, py::handle start, int64_t len) {
    return narrow(a, dim, int_arg(start, "narrow", "start"), len);
  };
  def_op(m, cls, "narrow", kFnMethod, narrow_py, arg("dim"), arg("start"), arg("length"));
  def_op(
      m, cls, "narrow_copy", kFnMethod | kOut,
      [](const Tensor& a, int64_t dim, py::handle start, int64_t len) {
        return narrow_copy(a, dim, int_arg(start, "narrow_copy", "start"), len);
      },
      arg("dim"), arg("start"), arg("length"));
  def_op(
      m, cls, "select", kFnMethod,
      [](const Tensor& a, int64_t dim, py::handle i) {
        return select(a, dim, int_arg(i, "select", "index"));
      },
      arg("dim"), arg("index"));
  def_op(
      m, cls, "clone", kFnMethod,
      [](const Tensor& a, py::handle fmt) { return clone(a, memory_format_arg(fmt, "clone")); },
      py::kw_only(), arg("memory_format") = none);
  auto as_strided_py = [](const Tensor& a, py::handle size, py::handle stride, py::handle off) {
    std::optional<int64_t> o;
    if (!off.is_none()) o = int_arg(off, "as_strided", "storage_offset");
    return as_strided(a, shape_arg(size, "as_strided", "size"),
                      shape_arg(stride, "as_strided", "stride"), o);
  };
  def_op(m, cls, "as_strided", kFnMethod, as_strided_py, arg("size"), arg("stride"),
         arg("storage_offset") = none);
  cls.attr("as_strided_") = py::cpp_function(
      [as_strided_py](const Tensor& a, py::handle size, py::handle stride, py::handle off) {
        return set_geometry_(a, as_strided_py(a, size, stride, off), "as_strided_");
      },
      py::name("as_strided_"), py::is_method(cls), arg("size"), arg("stride"),
      arg("storage_offset") = none);
  def_op(
      m, cls, "diagonal", kFnMethod,
      [](const Tensor& a, int64_t off, int64_t d1, int64_t d2) { return diagonal(a, off, d1, d2); },
      arg("offset") = 0, arg("dim1") = 0, arg("dim2") = 1);
  def_op(
      m, cls, "broadcast_to", kFnMethod,
      [](const Tensor& a, py::handle s) {
        return broadcast_to(a, shape_arg(s, "broadcast_to", "size"));
      },
      arg("size"));
}

// broadcast_tensors, atleast_Nd, block_diag, cartesian_prod, meshgrid, combinations, rot90, the
// diag family and vander.
void bind_multi_tensor_shape_ops(py::module_& m) {
  py::class_<Tensor> cls = tensor_class(m);
  auto none = py::none();
  using py::arg;

  def_fn(m, "broadcast_tensors", [](py::args ts) {
    return as_tuple(broadcast_tensors(tensors_from(ts, "broadcast_tensors")));
  });
  def_fn(
      m, "meshgrid",
      [](py::args ts, py::handle indexing) {
        std::string ix = indexing.is_none() ? "ij" : indexing.cast<std::string>();
        return as_tuple(meshgrid(tensors_from(ts, "meshgrid"), ix));
      },
      py::kw_only(), arg("indexing") = none);
  def_fn(m, "atleast_1d", [](py::args ts) { return one_or_many(ts, "atleast_1d", atleast_1d); });
  def_fn(m, "atleast_2d", [](py::args ts) { return one_or_many(ts, "atleast_2d", atleast_2d); });
  def_fn(m, "atleast_3d", [](py::args ts) { return one_or_many(ts, "atleast_3d", atleast_3d); });
  def_fn(m, "block_diag", [](py::args ts) { return block_diag(tensors_from(ts, "block_diag")); });
  def_fn(m, "cartesian_prod",
         [](py::args ts) { return cartesian_prod(tensors_from(ts, "cartesian_prod")); });
  def_fn(
      m, "combinations",
      [](const Tensor& a, int64_t r, bool rep) { return combinations(a, r, rep); }, arg("input"),
      arg("r") = 2, arg("with_replacement") = false);
  def_op(
      m, cls, "rot90", kFnMethod,
      [](const Tensor& a, int64_t k, py::handle dims) {
        return rot90(a, k, shape_arg(dims, "rot90", "dims"));
      },
      arg("k") = 1, arg("dims") = py::make_tuple(0, 1));
  for (bool lower : {true, false}) {
    const char* n = lower ? "tril_indices" : "triu_indices";
    def_fn(
        m, n,
        [lower](int64_t r, int64_t c, int64_t off, py::handle dtype, py::handle device,
                py::handle) {
          DType dt = dtype.is_none() ? DType::Int64 : dtype_arg(dtype);
          Device dev = device.is_none() ? Device() : device_arg(device);
          return lower ? tril_indices(r, c, off, dt, dev) : triu_indices(r, c, off, dt, dev);
        },
        arg("row"), arg("col"), arg("offset") = 0, py::kw_only(), arg("dtype") = none,
        arg("device") = none, arg("layout") = none);
  }
  def_op(
      m, cls, "diag", kFnMethod | kOut, [](const Tensor& a, int64_t k) { return diag(a, k); },
      arg("diagonal") = 0);
  def_op(
      m, cls, "diag_embed", kFnMethod,
      [](const Tensor& a, int64_t off, int64_t d1, int64_t d2) {
        return diag_embed(a, off, d1, d2);
      },
      arg("offset") = 0, arg("dim1") = -2, arg("dim2") = -1);
  def_op(
      m, cls, "diagflat", kFnMethod, [](const Tensor& a, int64_t off) { return diagflat(a, off); },
      arg("offset") = 0);
  def_fn(
      m, "vander",
      [](const Tensor& x, py::handle n, bool inc) {
        std::optional<int64_t> N;
        if (!n.is_none()) N = int_arg(n, "vander", "N");
        return vander(x, N, inc);
      },
      arg("x"), arg("N") = none, arg("increasing") = false);
}

// Tensor-only shape helpers: resize_, sum_to_size, H/mT/mH/T, dim_order, ...
void bind_tensor_shape_helpers(py::module_& m) {
  py::class_<Tensor> cls = tensor_class(m);
  auto none = py::none();
  using py::arg;

  // Tensor-only shape helpers
  cls.def(
      "unfold",
      [](const Tensor& a, int64_t dim, int64_t size, int64_t step) {
        return unfold(a, dim, size, step);
      },
      arg("dimension"), arg("size"), arg("step"));
  cls.def("resize_", [](const Tensor& a, py::args s, py::kwargs) {
    return resize_(a, shape_from_args(s, "resize_", "size"));
  });
  cls.def("resize_as_",
          [](const Tensor& a, const Tensor& o, py::kwargs) { return resize_(a, o.sizes()); });
  cls.def("sum_to_size", [](const Tensor& a, py::args s) {
    return sum_to_size_checked(a, shape_from_args(s, "sum_to_size", "size"));
  });
  cls.def("is_same_size", [](const Tensor& a, const Tensor& b) { return a.sizes() == b.sizes(); });
  cls.def("is_nonzero", [](const Tensor& a) { return is_nonzero(a); });
  cls.def(
      "fill_diagonal_",
      [](const Tensor& a, py::handle v, bool wrap) {
        return fill_diagonal_(a, scalar_arg(v, "fill_diagonal_", "fill_value"), wrap);
      },
      arg("fill_value"), arg("wrap") = false);
  cls.def_property_readonly("H", [](const Tensor& a) {
    EMBER_CHECK(a.dim() == 2 || a.dim() == 0,
                "tensor.H is only supported on matrices (2-D tensors). Got ", a.dim(),
                "-D tensor.");
    return a.dim() == 0 ? a : t(a);
  });
  cls.def_property_readonly("mT", [](const Tensor& a) { return mT(a); });
  cls.def_property_readonly("mH", [](const Tensor& a) { return mT(a); });
  cls.def_property_readonly("T", [](const Tensor& a) { return numpy_T(a); });
  cls.def("dim_order", [](const Tensor& a) {
    std::vector<int64_t> perm(a.dim());
    for (int64_t i = 0; i < a.dim(); ++i) perm[i] = i;
    std::stable_sort(perm.begin(), perm.end(),
                     [&](int64_t x, int64_t y) { return a.strides()[x] > a.strides()[y]; });
    return py::tuple(py::cast(perm));
  });
  cls.def("get_device", [](const Tensor& a) {
    return a.device().is_cpu() ? int64_t(-1) : int64_t(a.device().index);
  });
  cls.def(
      "where",
      [](const Tensor& a, const Tensor& cond, py::handle y) {
        return where(cond, a, tensor_or_scalar(y, "where", "other"));
      },
      arg("condition"), arg("other"));
  def_fn(
      m, "empty_strided",
      [](py::handle size, py::handle stride, py::handle dtype, py::handle device, bool rg,
         py::kwargs) {
        DType dt = dtype.is_none() ? default_dtype() : dtype_arg(dtype);
        Tensor r = empty_strided(shape_arg(size, "empty_strided", "size"),
                                 shape_arg(stride, "empty_strided", "stride"), dt,
                                 device_or_default(device));
        if (rg) autograd::set_requires_grad(r, true);
        return r;
      },
      arg("size"), arg("stride"), py::kw_only(), arg("dtype") = none, arg("device") = none,
      arg("requires_grad") = false);
  cls.def(
      "new_empty_strided",
      [](const Tensor& a, py::handle size, py::handle stride, py::handle dtype, py::handle device,
         bool rg, py::kwargs) {
        DType dt = dtype.is_none() ? a.dtype() : dtype_arg(dtype);
        Tensor r = empty_strided(shape_arg(size, "new_empty_strided", "size"),
                                 shape_arg(stride, "new_empty_strided", "stride"), dt,
                                 device.is_none() ? a.device() : device_arg(device));
        if (rg) autograd::set_requires_grad(r, true);
        return r;
      },
      arg("size"), arg("stride"), py::kw_only(), arg("dtype") = none, arg("device") = none,
      arg("requires_grad") = false);
}

// Contractions (einsum, tensordot, kron, inner, matrix_power, cross), the remaining random fills
// and poisson, and the numerics family.
void bind_contractions_and_fills(py::module_& m) {
  py::class_<Tensor> cls = tensor_class(m);
  auto none = py::none();
  using py::arg;

  // ---- contractions ----
  def_fn(
      m, "einsum",
      [](const std::string& eq, py::args ops) { return einsum(eq, tensors_from(ops, "einsum")); },
      arg("equation"));
  def_fn(
      m, "tensordot",
      [](const Tensor& a, const Tensor& b, py::handle dims, py::handle out) -> py::object {
        Tensor r;
        if (PyLong_Check(dims.ptr())) {
          r = tensordot(a, b, dims.cast<int64_t>());
        } else {
          py::sequence s = py::reinterpret_borrow<py::sequence>(dims);
          EMBER_CHECK_TYPE(py::len(s) == 2,
                           "tensordot expects dims to be an int or a pair of dim lists");
          Shape da, db;
          if (PyLong_Check(py::object(s[0]).ptr())) {
            da = {s[0].cast<int64_t>()};
            db = {s[1].cast<int64_t>()};
          } else {
            da = shape_arg(s[0], "tensordot", "dims");
            db = shape_arg(s[1], "tensordot", "dims");
          }
          r = tensordot(a, b, da, db);
        }
        return result_or_out(r, out, "tensordot");
      },
      arg("a"), arg("b"), arg("dims") = 2, py::kw_only(), arg("out") = none);
  def_op(
      m, cls, "kron", kFnMethod | kOut, [](const Tensor& a, const Tensor& b) { return kron(a, b); },
      arg("other"));
  def_op(
      m, cls, "inner", kFnMethod | kOut,
      [](const Tensor& a, const Tensor& b) { return inner(a, b); }, arg("other"));
  def_op(m, cls, "cross", kFnMethod | kOut, cross_py, arg("other"), arg("dim") = none);
  def_op(
      m, cls, "matrix_power", kFnMethod | kOut,
      [](const Tensor& a, int64_t n) { return matrix_power(a, n); }, arg("n"));

  // ---- random fills ----
  cls.def(
      "geometric_",
      [](const Tensor& t, double p, py::object gen) {
        return geometric_(t, p, generator_arg(gen));
      },
      arg("p"), py::kw_only(), arg("generator") = none);
  cls.def(
      "log_normal_",
      [](const Tensor& t, double mean, double std, py::object gen) {
        return log_normal_(t, mean, std, generator_arg(gen));
      },
      arg("mean") = 1.0, arg("std") = 2.0, py::kw_only(), arg("generator") = none);
  cls.def(
      "cauchy_",
      [](const Tensor& t, double median, double sigma, py::object gen) {
        return cauchy_(t, median, sigma, generator_arg(gen));
      },
      arg("median") = 0.0, arg("sigma") = 1.0, py::kw_only(), arg("generator") = none);
  def_fn(
      m, "poisson", [](const Tensor& t, py::object gen) { return poisson(t, generator_arg(gen)); },
      arg("input"), arg("generator") = none);

  bind_surface_numerics(m, cls);
}

}  // namespace

void init_surface(py::module_& m) {
  bind_memory_formats(m);
  bind_shape_views(m);
  bind_slicing_views(m);
  bind_multi_tensor_shape_ops(m);
  bind_tensor_shape_helpers(m);
  bind_contractions_and_fills(m);
}

}  // namespace ember::python
