// Bindings of ember.linalg through LAPACK (ops/linalg_lapack.h) and the
// top-level torch names built on it (inverse, det, svd, qr, ...).
#include "ember/ops/linalg_lapack.h"
#include "ember/ops/view.h"
#include "ember/python/def_op.h"

namespace ember::python {
namespace {

py::object named(const char* type, std::initializer_list<Tensor> ts) {
  py::tuple args(ts.size());
  size_t i = 0;
  for (const Tensor& t : ts) args[i++] = wrap(t);
  return py::module_::import("ember.return_types").attr(type)(*args);
}

// ord as PyTorch takes it: None, a number (inf included) or 'fro'/'nuc'.
void ord_arg(py::handle ord, std::string& s, double& d, const char* dflt) {
  if (ord.is_none()) {
    s = dflt;
    d = 0;
  } else if (py::isinstance<py::str>(ord)) {
    s = ord.cast<std::string>();
  } else {
    d = ord.cast<double>();
  }
}

double rtol_arg(py::handle rtol, py::handle tol) {
  if (!rtol.is_none()) return rtol.cast<double>();
  if (!tol.is_none()) return tol.cast<double>();
  return -1;
}

void bind_linalg_solvers(py::module_& m, py::module_& L, py::class_<Tensor>& cls) {
  using py::arg;
  const auto none = py::none();
  // ---- solvers, inverses and determinants ----
  def_fn(
      L, "solve",
      [](const Tensor& A, const Tensor& B, bool left, py::handle out) {
        return result_or_out(linalg_solve(A, B, left), out, "linalg.solve");
      },
      arg("A"), arg("B"), py::kw_only(), arg("left") = true, arg("out") = none);
  def_fn(
      L, "solve_triangular",
      [](const Tensor& A, const Tensor& B, bool upper, bool left, bool unit, py::handle out) {
        return result_or_out(linalg_solve_triangular(A, B, upper, left, unit), out,
                             "linalg.solve_triangular");
      },
      arg("A"), arg("B"), py::kw_only(), arg("upper"), arg("left") = true,
      arg("unitriangular") = false, arg("out") = none);
  def_fn(
      L, "inv",
      [](const Tensor& A, py::handle out) {
        return result_or_out(linalg_inv(A), out, "linalg.inv");
      },
      arg("A"), py::kw_only(), arg("out") = none);
  def_fn(
      L, "inv_ex",
      [](const Tensor& A, bool check) {
        auto [x, info] = linalg_inv_ex(A, check);
        return named("linalg_inv_ex", {x, info});
      },
      arg("A"), py::kw_only(), arg("check_errors") = false);
  def_fn(
      L, "det",
      [](const Tensor& A, py::handle out) {
        return result_or_out(linalg_det(A), out, "linalg.det");
      },
      arg("A"), py::kw_only(), arg("out") = none);
  def_fn(
      L, "slogdet",
      [](const Tensor& A) {
        auto [s, l] = linalg_slogdet(A);
        return named("linalg_slogdet", {s, l});
      },
      arg("A"));
}

void bind_linalg_decompositions(py::module_& m, py::module_& L, py::class_<Tensor>& cls) {
  using py::arg;
  const auto none = py::none();
  // ---- decompositions ----
  def_fn(
      L, "cholesky",
      [](const Tensor& A, bool upper, py::handle out) {
        return result_or_out(linalg_cholesky(A, upper), out, "linalg.cholesky");
      },
      arg("A"), py::kw_only(), arg("upper") = false, arg("out") = none);
  def_fn(
      L, "cholesky_ex",
      [](const Tensor& A, bool upper, bool check) {
        auto [l, info] = linalg_cholesky_ex(A, upper, check);
        return named("linalg_cholesky_ex", {l, info});
      },
      arg("A"), py::kw_only(), arg("upper") = false, arg("check_errors") = false);
  def_fn(
      L, "svd",
      [](const Tensor& A, bool full, py::handle driver) {
        (void)driver;
        auto [u, s, vh] = linalg_svd(A, full);
        return named("linalg_svd", {u, s, vh});
      },
      arg("A"), arg("full_matrices") = true, py::kw_only(), arg("driver") = none);
  def_fn(
      L, "svdvals",
      [](const Tensor& A, py::handle driver, py::handle out) {
        (void)driver;
        return result_or_out(linalg_svdvals(A), out, "linalg.svdvals");
      },
      arg("A"), py::kw_only(), arg("driver") = none, arg("out") = none);
  def_fn(
      L, "eigh",
      [](const Tensor& A, const std::string& uplo) {
        auto [w, v] = linalg_eigh(A, uplo);
        return named("linalg_eigh", {w, v});
      },
      arg("A"), arg("UPLO") = "L");
  def_fn(
      L, "eigvalsh",
      [](const Tensor& A, const std::string& uplo, py::handle out) {
        return result_or_out(linalg_eigvalsh(A, uplo), out, "linalg.eigvalsh");
      },
      arg("A"), arg("UPLO") = "L", py::kw_only(), arg("out") = none);
  def_fn(
      L, "lu_factor",
      [](const Tensor& A, bool pivot) {
        EMBER_CHECK(pivot, "linalg.lu_factor: LU without pivoting is not implemented on the CPU");
        auto [lu, piv] = linalg_lu_factor(A);
        return named("linalg_lu_factor", {lu, piv});
      },
      arg("A"), py::kw_only(), arg("pivot") = true);
  def_fn(
      L, "lu_solve",
      [](const Tensor& LU, const Tensor& piv, const Tensor& B, bool left, bool adjoint) {
        if (left) return linalg_lu_solve(LU, piv, B, adjoint);
        // X A = B  <=>  A^T X^T = B^T
        return transpose(linalg_lu_solve(LU, piv, transpose(B, -2, -1), !adjoint), -2, -1);
      },
      arg("LU"), arg("pivots"), arg("B"), py::kw_only(), arg("left") = true,
      arg("adjoint") = false);
  def_fn(
      L, "qr",
      [](const Tensor& A, const std::string& mode) {
        auto [q, r] = linalg_qr(A, mode);
        return named("linalg_qr", {q, r});
      },
      arg("A"), arg("mode") = "reduced");
  // LAPACK's packed QR, for nn.utils.parametrizations.orthogonal's right_inverse.
  m.def(
      "_geqrf",
      [](const Tensor& A) {
        auto [a, tau] = geqrf(A);
        return py::make_tuple(a, tau);
      },
      arg("input"));
}

void bind_linalg_norms_and_products(py::module_& m, py::module_& L, py::class_<Tensor>& cls) {
  using py::arg;
  const auto none = py::none();
  // ---- rank, norms, least squares, products ----
  def_fn(
      L, "pinv",
      [](const Tensor& A, py::handle atol, py::handle rtol, bool herm, py::handle rcond) {
        (void)atol;
        return linalg_pinv(A, rtol_arg(rtol, rcond), herm);
      },
      arg("A"), py::kw_only(), arg("atol") = none, arg("rtol") = none, arg("hermitian") = false,
      arg("rcond") = none);
  def_fn(
      L, "matrix_rank",
      [](const Tensor& A, py::handle atol, py::handle rtol, bool herm, py::handle tol) {
        (void)atol;
        return linalg_matrix_rank(A, rtol_arg(rtol, tol), herm);
      },
      arg("A"), py::kw_only(), arg("atol") = none, arg("rtol") = none, arg("hermitian") = false,
      arg("tol") = none);
  def_fn(
      L, "matrix_norm",
      [](const Tensor& A, py::handle ord, py::handle dim, bool keepdim, py::handle dtype) {
        std::string s;
        double d = 0;
        ord_arg(ord, s, d, "fro");
        Tensor a = dtype.is_none()                 ? A
                   : A.dtype() == dtype_arg(dtype) ? A
                                                   : to_dtype(A, dtype_arg(dtype));
        if (!dim.is_none()) {
          Shape dims = shape_arg(dim, "linalg.matrix_norm", "dim");
          EMBER_CHECK(dims.size() == 2, "linalg.matrix_norm: dim must be a 2-tuple. Got ",
                      shape_str(dims));
          int64_t d0 = wrap_dim(dims[0], a.dim()), d1 = wrap_dim(dims[1], a.dim());
          Tensor moved = movedim(a, Shape{d0, d1}, Shape{-2, -1});
          Tensor r = linalg_matrix_norm(moved, s, d, false);
          if (keepdim) {
            Shape ks = a.sizes();
            ks[d0] = 1;
            ks[d1] = 1;
            r = reshape(r, ks);
          }
          return r;
        }
        return linalg_matrix_norm(a, s, d, keepdim);
      },
      arg("A"), arg("ord") = "fro", arg("dim") = py::make_tuple(-2, -1), arg("keepdim") = false,
      py::kw_only(), arg("dtype") = none);
  def_fn(
      L, "cond",
      [](const Tensor& A, py::handle p) {
        std::string s;
        double d = 2;
        if (!p.is_none()) ord_arg(p, s, d, "");
        return linalg_cond(A, s, d);
      },
      arg("A"), arg("p") = none);
  def_fn(
      L, "lstsq",
      [](const Tensor& A, const Tensor& B, py::handle rcond, py::handle driver) {
        (void)rcond;
        (void)driver;
        Tensor x = linalg_lstsq(A, B);
        Tensor e = empty(Shape{0}, A.dtype(), A.device());
        return named("linalg_lstsq", {x, e, linalg_matrix_rank(A, -1, false), e});
      },
      arg("A"), arg("B"), arg("rcond") = none, py::kw_only(), arg("driver") = none);
  def_fn(
      L, "multi_dot",
      [](py::handle ts) {
        std::vector<Tensor> v;
        for (py::handle h : py::reinterpret_borrow<py::sequence>(ts)) v.push_back(h.cast<Tensor>());
        return linalg_multi_dot(v);
      },
      arg("tensors"));
  def_fn(
      L, "vecdot",
      [](const Tensor& x, const Tensor& y, int64_t dim) { return linalg_vecdot(x, y, dim); },
      arg("x"), arg("y"), py::kw_only(), arg("dim") = -1);
}

void bind_linalg_toplevel(py::module_& m, py::module_& L, py::class_<Tensor>& cls) {
  using py::arg;
  // Top-level names.
  def_op(m, cls, "inverse", kFnMethod | kOut, [](const Tensor& a) { return linalg_inv(a); });
  def_op(m, cls, "det", kFnMethod, [](const Tensor& a) { return linalg_det(a); });
  def_op(m, cls, "logdet", kFnMethod, [](const Tensor& a) { return logdet(a); });
  def_op(m, cls, "slogdet", kFnMethod, [](const Tensor& a) {
    auto [s, l] = linalg_slogdet(a);
    return named("slogdet", {s, l});
  });
  def_op(
      m, cls, "cholesky", kFnMethod,
      [](const Tensor& a, bool upper) { return linalg_cholesky(a, upper); }, arg("upper") = false);
  def_op(
      m, cls, "pinverse", kFnMethod,
      [](const Tensor& a, double rcond) { return linalg_pinv(a, rcond, false); },
      arg("rcond") = 1e-15);
  // torch.svd: (U, S, V) with V (not V^H); some=True gives the reduced factors.
  def_op(
      m, cls, "svd", kFnMethod,
      [](const Tensor& a, bool some, bool compute_uv) {
        auto [u, s, vh] = linalg_svd(a, !some);
        (void)compute_uv;
        return named("svd", {u, s, transpose(vh, -2, -1)});
      },
      arg("some") = true, arg("compute_uv") = true);
  def_op(
      m, cls, "qr", kFnMethod,
      [](const Tensor& a, bool some) {
        auto [q, r] = linalg_qr(a, some ? "reduced" : "complete");
        return named("qr", {q, r});
      },
      arg("some") = true);
}

}  // namespace

void init_lapack(py::module_& m) {
  py::class_<Tensor> cls = tensor_class(m);
  py::module_ L = m.def_submodule("_linalg", "ember.linalg's LAPACK-backed functions");
  // torch.linalg.LinAlgError, a RuntimeError subclass.
  py::register_exception<LinAlgError>(L, "LinAlgError", PyExc_RuntimeError);
  bind_linalg_solvers(m, L, cls);
  bind_linalg_decompositions(m, L, cls);
  bind_linalg_norms_and_products(m, L, cls);
  bind_linalg_toplevel(m, L, cls);
}

}  // namespace ember::python
