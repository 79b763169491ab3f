// ember.linalg through LAPACK (ops/linalg_lapack.h). Each front-end validates,
// copies its input into column-major buffers (LAPACK's layout), runs the whole
// batch through the primitive's stub (kernels/stubs/lapack.h: the CPU's LAPACK,
// cuSOLVER on CUDA), raises for a failing matrix from the stub's `info`, and
// records its node; each <op>_backward below is PyTorch's formula written with
// ember ops.
#include "ember/ops/linalg_lapack.h"
#include "ember/jit/trace_hook.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <limits>

#include "ember/autograd/functions.h"
#include "ember/autograd/record.h"
#include "ember/ops/factory.h"
#include "ember/ops/linalg.h"
#include "ember/ops/linalg_lapack_detail.h"
#include "ember/ops/reduce.h"
#include "ember/ops/surface.h"
#include "ember/ops/view.h"

namespace ember {

DispatchStub<GetrfKernel> getrf_stub("getrf");
DispatchStub<GetrsKernel> getrs_stub("getrs");
DispatchStub<TrtrsKernel> trtrs_stub("trtrs");
DispatchStub<LuDetKernel> lu_det_stub("lu_det");

using namespace lapack_detail;

namespace {

// ---- raw kernels (no autograd) ----------------------------------------------------------

// X = A^{-1} B for square A (..., n, n) and B (..., n, k) with equal batch shapes.
Tensor solve_raw(const Tensor& A, const Tensor& Bm, const char* op, const char* singular_msg) {
  autograd::GradModeGuard no_grad(false);
  int64_t n = rows(A), k = cols(Bm), batch = batch_of(A);
  Tensor a = colmajor(A), b = colmajor(Bm);
  if (n == 0 || k == 0 || batch == 0) return mT_(b);
  Tensor ipiv = empty(Shape{batch, n}, DType::Int32, A.device());
  Tensor info = empty(Shape{batch}, DType::Int32, A.device());
  getrf_stub.get(A.device())(a, ipiv, info, batch, n);
  // A singular matrix's solution is garbage (inf / NaN) and is never returned.
  getrs_stub.get(A.device())(a, ipiv, b, batch, n, k, false);
  int code = 0;
  int64_t bad = first_failure(host_info(info), batch, code);
  if (bad >= 0) throw LinAlgError(detail::str(op, ": ", batch_prefix(batch, bad), singular_msg));
  return mT_(b);
}

// LU of each matrix: (sign of det, log|det|, det); a singular matrix has det 0.
void lu_det_raw(const Tensor& A, Tensor& sign, Tensor& logabs, Tensor& det) {
  autograd::GradModeGuard no_grad(false);
  int64_t n = rows(A), batch = batch_of(A);
  Shape bs = batch_shape(A);
  sign = empty(bs, A.dtype(), A.device());
  logabs = empty(bs, A.dtype(), A.device());
  det = empty(bs, A.dtype(), A.device());
  if (batch == 0) return;
  if (n == 0) {  // the empty product
    fill_(sign, Scalar(1.0));
    fill_(logabs, Scalar(0.0));
    fill_(det, Scalar(1.0));
    return;
  }
  Tensor a = colmajor(A);
  Tensor ipiv = empty(Shape{batch, n}, DType::Int32, A.device());
  Tensor info = empty(Shape{batch}, DType::Int32, A.device());
  getrf_stub.get(A.device())(a, ipiv, info, batch, n);
  lu_det_stub.get(A.device())(a, ipiv, info, sign, logabs, det, batch, n);
}

}  // namespace

// ---- solve / inv -----------------------------------------------------------------------

Tensor linalg_solve(const Tensor& A, const Tensor& Bt, bool left) {
  EMBER_TRACE("aten::linalg_solve(Tensor A, Tensor Bt, bool left=True) -> Tensor", linalg_solve, A,
              Bt, left);
  check_input(A, "linalg.solve", true);
  EMBER_CHECK(Bt.dtype() == A.dtype(),
              "linalg.solve: Expected A and B to have the same dtype, but found A of type ",
              scalar_type_name(A.dtype()), " and B of type ", scalar_type_name(Bt.dtype()),
              " instead");
  check_device(A, Bt, "linalg.solve");
  if (!left) return mT_(linalg_solve(mT_(A), mT_(Bt), true));
  int64_t n = rows(A);
  bool vec = Bt.dim() == 1 || (Bt.dim() == A.dim() - 1 && [&] {
               for (int64_t i = 0; i < Bt.dim(); ++i)
                 if (Bt.sizes()[i] != A.sizes()[i]) return false;
               return true;
             }());
  Tensor Bm = vec ? unsqueeze(Bt, -1) : Bt;
  EMBER_CHECK(Bm.dim() >= 2 && rows(Bm) == n,
              "linalg.solve: Incompatible shapes of A and B for the equation AX = B (", n, "x", n,
              " and ", Bm.dim() >= 2 ? rows(Bm) : Bm.numel(), "x", Bm.dim() >= 2 ? cols(Bm) : 1,
              ")");
  Shape bs = broadcast_batch(batch_shape(A), batch_shape(Bm), "linalg.solve");
  autograd::RecordScope rs({&A, &Bt});
  Tensor Ae = expand(A, cat_shape(bs, {n, n})), Be = expand(Bm, cat_shape(bs, {n, cols(Bm)}));
  Tensor X =
      solve_raw(Ae, Be, "linalg.solve", "The solver failed because the input matrix is singular.");
  if (vec) X = squeeze(X, Shape{-1});
  rs.done();
  if (rs.rec) {
    Shape sa = A.sizes(), sb = Bt.sizes();
    auto node = autograd::record(
        "LinalgSolveExBackward0", {&A, &Bt}, X,
        [sa, sb, vec](LambdaNode& n, variable_list&& g) -> variable_list {
          Tensor A_ = n.unpack(0), X_ = n.unpack(1);
          Tensor gX = vec ? unsqueeze(g[0], -1) : g[0];
          Tensor Xm = vec ? unsqueeze(X_, -1) : X_;
          Tensor gB = linalg_solve(mT_(A_), gX, true);
          Tensor gA = n.should_compute_output(0)
                          ? autograd::sum_to_size(negate(matmul(gB, mT_(Xm))), sa)
                          : Tensor();
          Tensor gBo = n.should_compute_output(1)
                           ? autograd::sum_to_size(vec ? squeeze(gB, Shape{-1}) : gB, sb)
                           : Tensor();
          return {gA, gBo};
        });
    node->saved.emplace_back(A, false);
    node->saved.emplace_back(X, true);
  }
  return X;
}

std::pair<Tensor, Tensor> linalg_inv_ex(const Tensor& A, bool check_errors) {
  EMBER_TRACE("aten::linalg_inv_ex(Tensor A, bool check_errors) -> (Tensor, Tensor)", linalg_inv_ex,
              A, check_errors);
  check_input(A, "linalg.inv", true);
  int64_t n = rows(A);
  autograd::RecordScope rs({&A});
  Tensor I = expand(eye(n, std::nullopt, A.dtype(), A.device()), A.sizes());
  Tensor info = zeros(batch_shape(A), DType::Int32, A.device());
  Tensor X;
  try {
    X = solve_raw(A, I, "linalg.inv",
                  "The diagonal element is zero, the inversion could not be completed because "
                  "the input matrix is singular.");
  } catch (const LinAlgError&) {
    if (check_errors) throw;
    X = full(A.sizes(), Scalar(NAN), A.dtype(), A.device());
    fill_(info, Scalar(int64_t(1)));
  }
  rs.done();
  if (rs.rec) {
    auto node = autograd::record("LinalgInvExBackward0", {&A}, X,
                                 [](LambdaNode& n, variable_list&& g) -> variable_list {
                                   Tensor Xi = n.unpack(0);
                                   return {negate(matmul(mT_(Xi), matmul(g[0], mT_(Xi))))};
                                 });
    node->saved.emplace_back(X, true);
  }
  return {X, info};
}

Tensor linalg_inv(const Tensor& A) {
  EMBER_TRACE("aten::linalg_inv(Tensor A) -> Tensor", linalg_inv, A);
  return linalg_inv_ex(A, true).first;
}

// ---- determinants ----------------------------------------------------------------------

Tensor linalg_det(const Tensor& A) {
  EMBER_TRACE("aten::linalg_det(Tensor A) -> Tensor", linalg_det, A);
  check_input(A, "linalg.det", true);
  autograd::RecordScope rs({&A});
  Tensor sign, logabs, det;
  lu_det_raw(A, sign, logabs, det);
  rs.done();
  if (rs.rec) {
    auto node = autograd::record("LinalgDetBackward0", {&A}, det,
                                 [](LambdaNode& n, variable_list&& g) -> variable_list {
                                   Tensor A_ = n.unpack(0), d = n.unpack(1);
                                   // d det / dA = det * A^{-T} (A nonsingular).
                                   Tensor invT = mT_(linalg_inv(A_));
                                   return {tmul(unsqueeze(unsqueeze(tmul(g[0], d), -1), -1), invT)};
                                 });
    node->saved.emplace_back(A, false);
    node->saved.emplace_back(det, true);
  }
  return det;
}

std::pair<Tensor, Tensor> linalg_slogdet(const Tensor& A) {
  EMBER_TRACE("aten::linalg_slogdet(Tensor A) -> (Tensor, Tensor)", linalg_slogdet, A);
  check_input(A, "linalg.slogdet", true);
  autograd::RecordScope rs({&A});
  Tensor sign, logabs, det;
  lu_det_raw(A, sign, logabs, det);
  rs.done();
  if (rs.rec) {
    auto node =
        autograd::record("LinalgSlogdetBackward0", {&A}, logabs,
                         [](LambdaNode& n, variable_list&& g) -> variable_list {
                           Tensor A_ = n.unpack(0);
                           return {tmul(unsqueeze(unsqueeze(g[0], -1), -1), mT_(linalg_inv(A_)))};
                         });
    node->saved.emplace_back(A, false);
  }
  return {sign, logabs};
}

Tensor logdet(const Tensor& A) {
  EMBER_TRACE("aten::logdet(Tensor A) -> Tensor", logdet, A);
  auto [sign, logabs] = linalg_slogdet(A);
  return where(binary(B::lt, sign, S(0.0)), S(NAN), logabs);
}

// ---- triangular solve -----------------------------------------------------------------------

Tensor linalg_solve_triangular(const Tensor& A, const Tensor& Bm, bool upper, bool left,
                               bool unitriangular) {
  EMBER_TRACE(
      "aten::linalg_solve_triangular(Tensor A, Tensor Bm, bool upper, bool left=True, bool "
      "unitriangular=False) -> Tensor",
      linalg_solve_triangular, A, Bm, upper, left, unitriangular);
  check_input(A, "linalg.solve_triangular", true);
  EMBER_CHECK(Bm.dim() >= 2,
              "linalg.solve_triangular: The input tensor B must have at least 2 dimensions.");
  EMBER_CHECK(Bm.dtype() == A.dtype(),
              "linalg.solve_triangular: Expected A and B to have the same dtype");
  check_device(A, Bm, "linalg.solve_triangular");
  if (!left) return mT_(linalg_solve_triangular(mT_(A), mT_(Bm), !upper, true, unitriangular));
  int64_t n = rows(A);
  EMBER_CHECK(rows(Bm) == n,
              "linalg.solve_triangular: Incompatible shapes of A and B for the equation AX = B (",
              n, "x", n, " and ", rows(Bm), "x", cols(Bm), ")");
  Shape bs = broadcast_batch(batch_shape(A), batch_shape(Bm), "linalg.solve_triangular");
  int64_t k = cols(Bm);
  autograd::RecordScope rs({&A, &Bm});
  Tensor X;
  {
    autograd::GradModeGuard no_grad(false);
    Tensor Ae = expand(A, cat_shape(bs, {n, n})), Be = expand(Bm, cat_shape(bs, {n, k}));
    Tensor a = colmajor(Ae), b = colmajor(Be);
    int64_t batch = batch_of(Ae);
    if (n > 0 && k > 0 && batch > 0)
      trtrs_stub.get(A.device())(a, b, batch, n, k, upper, unitriangular);
    X = mT_(b);
  }
  rs.done();
  if (rs.rec) {
    Shape sa = A.sizes(), sb = Bm.sizes();
    auto node = autograd::record(
        "LinalgSolveTriangularBackward0", {&A, &Bm}, X,
        [sa, sb, upper, unitriangular](LambdaNode& n, variable_list&& g) -> variable_list {
          Tensor A_ = n.unpack(0), X_ = n.unpack(1);
          Tensor gB = linalg_solve_triangular(mT_(A_), g[0], !upper, true, unitriangular);
          Tensor gA;
          if (n.should_compute_output(0)) {
            Tensor full_g = negate(matmul(gB, mT_(X_)));
            int64_t off = unitriangular ? 1 : 0;
            gA = autograd::sum_to_size(upper ? triu(full_g, off) : tril(full_g, -off), sa);
          }
          return {gA, n.should_compute_output(1) ? autograd::sum_to_size(gB, sb) : Tensor()};
        });
    node->saved.emplace_back(A, false);
    node->saved.emplace_back(X, true);
  }
  return X;
}

// ---- composites ----------------------------------------------------------------------------

Tensor linalg_pinv(const Tensor& A, double rtol, bool hermitian) {
  EMBER_TRACE("aten::linalg_pinv(Tensor A, float rtol, bool hermitian) -> Tensor", linalg_pinv, A,
              rtol, hermitian);
  check_input(A, "linalg.pinv", false);
  (void)hermitian;  // the SVD serves symmetric inputs too
  auto [Uo, So, Vho] = linalg_svd(A, false);
  if (So.sizes().back() == 0)
    return zeros(cat_shape(batch_shape(A), {cols(A), rows(A)}), A.dtype(), A.device());
  if (rtol < 0)
    rtol = (A.dtype() == DType::Float64 ? 2.220446049250313e-16 : 1.1920928955078125e-07) *
           double(std::max(rows(A), cols(A)));
  Tensor smax;
  {
    autograd::GradModeGuard no_grad(false);
    smax = amax(So, Shape{-1}, true);
  }
  Tensor keep = binary(B::gt, So, tmul(smax, S(rtol)));
  Tensor sinv = where(keep, unary(U::reciprocal, where(keep, So, S(1.0))), S(0.0));
  return matmul(tmul(mT_(Vho), unsqueeze(sinv, -2)), mT_(Uo));
}

Tensor linalg_matrix_rank(const Tensor& A, double rtol, bool hermitian) {
  EMBER_TRACE("aten::linalg_matrix_rank(Tensor A, float rtol, bool hermitian) -> Tensor",
              linalg_matrix_rank, A, rtol, hermitian);
  check_input(A, "linalg.matrix_rank", false);
  (void)hermitian;
  autograd::GradModeGuard no_grad(false);
  Tensor sv = linalg_svdvals(A);
  if (sv.sizes().back() == 0) return zeros(batch_shape(A), DType::Int64, A.device());
  if (rtol < 0)
    rtol = (A.dtype() == DType::Float64 ? 2.220446049250313e-16 : 1.1920928955078125e-07) *
           double(std::max(rows(A), cols(A)));
  Tensor tol = tmul(amax(sv, Shape{-1}, true), S(rtol));
  return sum(binary(B::gt, sv, tol), Shape{-1}, false, DType::Int64);
}

Tensor linalg_matrix_norm(const Tensor& A, const std::string& ord_str, double ord, bool keepdim) {
  EMBER_TRACE("aten::linalg_matrix_norm(Tensor A, str ord_str, float ord, bool keepdim) -> Tensor",
              linalg_matrix_norm, A, ord_str, ord, keepdim);
  check_input(A, "linalg.matrix_norm", false);
  Tensor r;
  auto keep = [&](Tensor t) { return keepdim ? unsqueeze(unsqueeze(t, -1), -1) : t; };
  if (ord_str == "fro") return norm(A, 2, Shape{-2, -1}, keepdim);
  if (ord_str == "nuc") return keep(sum(linalg_svdvals(A), Shape{-1}));
  EMBER_CHECK(ord_str.empty(), "linalg.matrix_norm: Order ", ord_str, " not supported.");
  if (ord == 2 || ord == -2) {
    Tensor sv = linalg_svdvals(A);
    return keep(ord == 2 ? amax(sv, Shape{-1}) : amin(sv, Shape{-1}));
  }
  if (ord == 1 || ord == -1) {
    Tensor cs = sum(unary(U::abs, A), Shape{-2});
    return keep(ord == 1 ? amax(cs, Shape{-1}) : amin(cs, Shape{-1}));
  }
  if (std::isinf(ord)) {
    Tensor rs_ = sum(unary(U::abs, A), Shape{-1});
    return keep(ord > 0 ? amax(rs_, Shape{-1}) : amin(rs_, Shape{-1}));
  }
  raise(ErrorKind::Runtime, "linalg.matrix_norm: Order ", ord, " not supported.");
}

Tensor linalg_cond(const Tensor& A, const std::string& ord_str, double ord) {
  EMBER_TRACE("aten::linalg_cond(Tensor A, str ord_str, float ord) -> Tensor", linalg_cond, A,
              ord_str, ord);
  check_input(A, "linalg.cond", false);
  if (ord_str.empty() && (ord == 2 || ord == -2)) {
    Tensor sv = linalg_svdvals(A);
    Tensor a = amax(sv, Shape{-1}), b = amin(sv, Shape{-1});
    return ord == 2 ? tdiv(a, b) : tdiv(b, a);
  }
  EMBER_CHECK(rows(A) == cols(A),
              "linalg.cond(ord=", ord_str.empty() ? std::to_string(ord) : ord_str,
              "): A must be batches of square matrices, but they are ", rows(A), " by ", cols(A),
              " matrices");
  return tmul(linalg_matrix_norm(A, ord_str, ord, false),
              linalg_matrix_norm(linalg_inv(A), ord_str, ord, false));
}

Tensor linalg_lstsq(const Tensor& A, const Tensor& Bm) {
  EMBER_TRACE("aten::linalg_lstsq(Tensor A, Tensor Bm) -> Tensor", linalg_lstsq, A, Bm);
  check_input(A, "linalg.lstsq", false);
  EMBER_CHECK(Bm.dim() >= 1 && (Bm.dim() == 1 ? Bm.sizes()[0] : rows(Bm)) == rows(A),
              "linalg.lstsq: input.size(-2) should match other.size(-2)");
  Tensor b = Bm.dim() == 1 ? unsqueeze(Bm, -1) : Bm;
  Tensor x = matmul(linalg_pinv(A, -1, false), b);
  return Bm.dim() == 1 ? squeeze(x, Shape{-1}) : x;
}

Tensor linalg_multi_dot(const std::vector<Tensor>& ts) {
  EMBER_TRACE("aten::linalg_multi_dot(Tensor[] tensors) -> Tensor", linalg_multi_dot, ts);
  EMBER_CHECK(ts.size() >= 2, "multi_dot(): expected at least 2 tensors but got ", ts.size());
  for (size_t i = 0; i < ts.size(); ++i) {
    bool edge = i == 0 || i + 1 == ts.size();
    EMBER_CHECK(ts[i].dim() == 2 || (edge && ts[i].dim() == 1), "multi_dot(): the ",
                edge ? "first and last" : "middle", " tensors must be ", edge ? "1D or 2D" : "2D",
                " but tensor ", i, " is ", ts[i].dim(), "D");
  }
  Tensor r = ts[0];
  for (size_t i = 1; i < ts.size(); ++i) r = matmul(r, ts[i]);
  return r;
}

Tensor linalg_vecdot(const Tensor& x, const Tensor& y, int64_t dim) {
  EMBER_TRACE("aten::linalg_vecdot(Tensor self, Tensor y, int dim) -> Tensor", linalg_vecdot, x, y,
              dim);
  return sum(tmul(x, y), Shape{dim});
}

// ---- LU ------------------------------------------------------------------------------------

std::pair<Tensor, Tensor> linalg_lu_factor(const Tensor& A) {
  EMBER_TRACE("aten::linalg_lu_factor(Tensor A) -> (Tensor, Tensor)", linalg_lu_factor, A);
  check_input(A, "linalg.lu_factor", true);
  int64_t n = rows(A), batch = batch_of(A);
  autograd::RecordScope rs({&A});
  Tensor LU, piv = zeros(cat_shape(batch_shape(A), {n}), DType::Int32, A.device());
  {
    autograd::GradModeGuard no_grad(false);
    Tensor a = colmajor(A);
    if (n > 0 && batch > 0) {
      Tensor info = empty(Shape{batch}, DType::Int32, A.device());
      getrf_stub.get(A.device())(a, piv, info, batch, n);
      int code = 0;
      int64_t bad = first_failure(host_info(info), batch, code);
      if (bad >= 0)
        throw LinAlgError(
            detail::str("linalg.lu_factor: ", batch_prefix(batch, bad), "U[", code, ",", code,
                        "] is zero and using it on lu_solve would result in a division by zero. If "
                        "you still want to perform the factorization, consider calling "
                        "linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)"));
    }
    LU = mT_(a);
  }
  rs.done();
  if (rs.rec)
    autograd::record("LinalgLuFactorExBackward0", {&A}, LU,
                     [](LambdaNode&, variable_list&&) -> variable_list {
                       raise(ErrorKind::NotImplemented,
                             "ember: the derivative of linalg.lu_factor is not implemented; "
                             "differentiate through linalg.solve or linalg.inv instead");
                     });
  return {LU, piv};
}

Tensor linalg_lu_solve(const Tensor& LU, const Tensor& pivots, const Tensor& Bm, bool adjoint) {
  EMBER_TRACE("aten::linalg_lu_solve(Tensor LU, Tensor pivots, Tensor Bm, bool adjoint) -> Tensor",
              linalg_lu_solve, LU, pivots, Bm, adjoint);
  check_input(LU, "linalg.lu_solve", true);
  EMBER_CHECK(pivots.dtype() == DType::Int32,
              "linalg.lu_solve: pivots should be a Tensor of scalar type int32");
  check_device(LU, pivots, "linalg.lu_solve");
  check_device(LU, Bm, "linalg.lu_solve");
  EMBER_CHECK(Bm.dtype() == LU.dtype(),
              "linalg.lu_solve: Expected LU and B to have the same dtype, but found LU of type ",
              scalar_type_name(LU.dtype()), " and B of type ", scalar_type_name(Bm.dtype()),
              " instead");
  EMBER_CHECK(Bm.dim() >= 2 && rows(Bm) == rows(LU),
              "linalg.lu_solve: Incompatible shapes of A and B for the equation AX = B");
  EMBER_CHECK(batch_shape(LU) == batch_shape(Bm) &&
                  pivots.sizes() == cat_shape(batch_shape(LU), {rows(LU)}),
              "linalg.lu_solve: LU, pivots and B must have matching batch shapes (ember does not "
              "broadcast them)");
  EMBER_CHECK(!autograd::compute_requires_grad({&LU}),
              "ember: the derivative of linalg.lu_solve with respect to LU "
              "is not implemented; differentiate through linalg.solve instead");
  int64_t n = rows(LU), k = cols(Bm), batch = batch_of(LU);
  autograd::RecordScope rs({&Bm});
  Tensor X;
  {
    autograd::GradModeGuard no_grad(false);
    Tensor a = colmajor(LU), b = colmajor(Bm), p = contiguous(pivots);
    if (n > 0 && k > 0 && batch > 0) getrs_stub.get(LU.device())(a, p, b, batch, n, k, adjoint);
    X = mT_(b);
  }
  rs.done();
  if (rs.rec) {
    auto node =
        autograd::record("LinalgLuSolveBackward0", {&Bm}, X,
                         [adjoint](LambdaNode& n, variable_list&& g) -> variable_list {
                           return {linalg_lu_solve(n.unpack(0), n.unpack(1), g[0], !adjoint)};
                         });
    node->saved.emplace_back(LU, false);
    node->saved.emplace_back(pivots, false);
  }
  return X;
}

}  // namespace ember
