// ember.linalg's decompositions through LAPACK (ops/linalg_lapack.h): Cholesky, SVD,
// the symmetric eigendecomposition and QR, each with its PyTorch backward formula.
// Solvers, determinants, LU and the composites are in ops/linalg_lapack.cpp.
#include "ember/jit/trace_hook.h"
#include "ember/ops/linalg_lapack.h"

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

DispatchStub<PotrfKernel> potrf_stub("potrf");
DispatchStub<GesddKernel> gesdd_stub("gesdd");
DispatchStub<SyevdKernel> syevd_stub("syevd");
DispatchStub<GeqrfKernel> geqrf_stub("geqrf");
DispatchStub<OrgqrKernel> orgqr_stub("orgqr");

using namespace lapack_detail;

// ---- Cholesky ---------------------------------------------------------------------------

std::pair<Tensor, Tensor> linalg_cholesky_ex(const Tensor& A, bool upper, bool check_errors) {
  EMBER_TRACE(
      "aten::linalg_cholesky_ex(Tensor A, bool upper, bool check_errors) -> (Tensor, Tensor)",
      linalg_cholesky_ex, A, upper, check_errors);
  check_input(A, "linalg.cholesky", true);
  int64_t n = rows(A), batch = batch_of(A);
  autograd::RecordScope rs({&A});
  Tensor L, info = zeros(batch_shape(A), DType::Int32, A.device());
  {
    autograd::GradModeGuard no_grad(false);
    Tensor a = colmajor(A);
    if (n > 0 && batch > 0) {
      potrf_stub.get(A.device())(a, info, batch, n);
      int code = 0;
      int64_t bad = check_errors ? first_failure(host_info(info), batch, code) : -1;
      if (bad >= 0)
        throw LinAlgError(detail::str("linalg.cholesky: ", batch_prefix(batch, bad),
                                      "The factorization could not be completed because the input "
                                      "is not positive-definite (the leading minor of order ",
                                      code, " is not positive-definite)."));
    }
    L = tril(mT_(a), 0);
  }
  rs.done();
  if (rs.rec) {
    auto node = autograd::record(
        "LinalgCholeskyExBackward0", {&A}, L,
        [](LambdaNode& n, variable_list&& g) -> variable_list {
          Tensor L_ = n.unpack(0), gL = g[0];
          // gA = sym(L^{-T} Phi(L^T gL) L^{-1}), Phi: the lower triangle with the diagonal halved.
          Tensor P = matmul(mT_(L_), gL);
          P = tsub(tril(P, 0), tmul(diag_embed(diagonal(P, 0, -2, -1), 0, -2, -1), S(0.5)));
          Tensor PLinv =
              mT_(linalg_solve_triangular(mT_(L_), mT_(P), true, true, false));  // P L^{-1}
          Tensor gA =
              linalg_solve_triangular(mT_(L_), PLinv, true, true, false);  // L^{-T} P L^{-1}
          return {tmul(tadd(gA, mT_(gA)), S(0.5))};
        });
    node->saved.emplace_back(L, true);
  }
  return {upper ? mT_(L) : L, info};
}

Tensor linalg_cholesky(const Tensor& A, bool upper) {
  EMBER_TRACE("aten::linalg_cholesky(Tensor A, bool upper=False) -> Tensor", linalg_cholesky, A,
              upper);
  return linalg_cholesky_ex(A, upper, true).first;
}

// ---- SVD -----------------------------------------------------------------------------------

namespace {

// U, S, Vh of each matrix; jobz 'S' (reduced), 'A' (full) or 'N' (values only).
void svd_raw(const Tensor& A, char jobz, Tensor& Uo, Tensor& So, Tensor& Vho) {
  autograd::GradModeGuard no_grad(false);
  int64_t m = rows(A), n = cols(A), k = std::min(m, n), batch = batch_of(A);
  Shape bs = batch_shape(A);
  int64_t ucols = jobz == 'A' ? m : k, vrows = jobz == 'A' ? n : k;
  So = empty(cat_shape(bs, {k}), A.dtype(), A.device());
  if (k == 0) {
    Tensor ub = jobz == 'N' ? Tensor() : zeros(cat_shape(bs, {ucols, m}), A.dtype(), A.device());
    Tensor vb = jobz == 'N' ? Tensor() : zeros(cat_shape(bs, {n, vrows}), A.dtype(), A.device());
    if (jobz == 'A') {
      ub = contiguous(expand(eye(m, std::nullopt, A.dtype(), A.device()), cat_shape(bs, {m, m})));
      vb = contiguous(expand(eye(n, std::nullopt, A.dtype(), A.device()), cat_shape(bs, {n, n})));
    }
    if (jobz != 'N') {
      Uo = mT_(ub);
      Vho = mT_(vb);
    }
    return;
  }
  // gesdd writes every element of U (m x ucols) and Vt (vrows x n): no zero fill.
  Tensor ub = jobz == 'N' ? Tensor() : empty(cat_shape(bs, {ucols, m}), A.dtype(), A.device());
  Tensor vb = jobz == 'N' ? Tensor() : empty(cat_shape(bs, {n, vrows}), A.dtype(), A.device());
  if (batch > 0) {
    // LAPACK's gesdd returns NaN factors for a non-finite input without an error (PyTorch
    // raises): one reduction finds the first matrix with a NaN or an infinity.
    Tensor finite = host_info(to_dtype(
        all(unary(UnaryOp::isfinite, reshape(A, Shape{batch, m * n})), Shape{1}), DType::Int32));
    const int32_t* ok = finite.data<int32_t>();
    for (int64_t b = 0; b < batch; ++b)
      if (!ok[b])
        throw LinAlgError(detail::str("linalg.svd: ", batch_prefix(batch, b),
                                      "The algorithm failed to converge because the input matrix "
                                      "contained non-finite values."));
    Tensor a = colmajor(A);
    Tensor info = empty(Shape{batch}, DType::Int32, A.device());
    gesdd_stub.get(A.device())(a, So, ub, vb, info, batch, m, n, jobz);
    int code = 0;
    int64_t bad = first_failure(host_info(info), batch, code);
    if (bad >= 0)
      throw LinAlgError(
          detail::str("linalg.svd: ", batch_prefix(batch, bad),
                      "The algorithm failed to converge because the input matrix is "
                      "ill-conditioned or has too many repeated singular values (error code: ",
                      code, ")."));
  }
  if (jobz != 'N') {
    Uo = mT_(ub);
    Vho = mT_(vb);
  }
}

// PyTorch's svd_backward for real inputs (reduced factors; full ones are narrowed first).
Tensor svd_backward(const Tensor& gU_in, const Tensor& gS, const Tensor& gVh_in, const Tensor& U_in,
                    const Tensor& Sv, const Tensor& Vh_in) {
  int64_t m = rows(U_in), n = cols(Vh_in), k = Sv.sizes().back();
  Tensor U = cols(U_in) > k ? narrow(U_in, -1, 0, k) : U_in;
  Tensor Vh = rows(Vh_in) > k ? narrow(Vh_in, -2, 0, k) : Vh_in;
  Tensor gU = gU_in.defined() && cols(gU_in) > k ? narrow(gU_in, -1, 0, k) : gU_in;
  Tensor gVh = gVh_in.defined() && rows(gVh_in) > k ? narrow(gVh_in, -2, 0, k) : gVh_in;
  if (!gU.defined() && !gVh.defined()) return matmul(tmul(U, unsqueeze(gS, -2)), Vh);
  Tensor S2 = tmul(Sv, Sv);
  Tensor E = tsub(unsqueeze(S2, -2), unsqueeze(S2, -1));  // E_ij = S_j^2 - S_i^2
  E = tadd(E, diag_embed(full(Sv.sizes(), Scalar(1.0), Sv.dtype(), Sv.device()), 0, -2, -1));
  auto skew = [](const Tensor& X) { return tsub(X, mT_(X)); };
  Tensor ret;
  if (gU.defined() && gVh.defined()) {
    Tensor UhgU = matmul(mT_(U), gU), VhgV = matmul(Vh, mT_(gVh));
    ret = tdiv(tadd(tmul(skew(UhgU), unsqueeze(Sv, -2)), tmul(unsqueeze(Sv, -1), skew(VhgV))), E);
  } else if (gU.defined()) {
    ret = tmul(tdiv(skew(matmul(mT_(U), gU)), E), unsqueeze(Sv, -2));
  } else {
    ret = tmul(unsqueeze(Sv, -1), tdiv(skew(matmul(Vh, mT_(gVh))), E));
  }
  if (gS.defined()) ret = tadd(ret, diag_embed(gS, 0, -2, -1));
  Tensor gA;
  if (m > n && gU.defined()) {
    gA = matmul(U, ret);
    Tensor gUSinv = tdiv(gU, unsqueeze(Sv, -2));
    gA = tsub(tadd(gA, gUSinv), matmul(U, matmul(mT_(U), gUSinv)));
    gA = matmul(gA, Vh);
  } else if (m < n && gVh.defined()) {
    gA = matmul(ret, Vh);
    Tensor SinvgVh = tdiv(gVh, unsqueeze(Sv, -1));
    gA = tsub(tadd(gA, SinvgVh), matmul(matmul(SinvgVh, mT_(Vh)), Vh));
    gA = matmul(U, gA);
  } else {
    gA = matmul(U, matmul(ret, Vh));
  }
  return gA;
}

}  // namespace

std::tuple<Tensor, Tensor, Tensor> linalg_svd(const Tensor& A, bool full_matrices) {
  EMBER_TRACE("aten::linalg_svd(Tensor A, bool full_matrices) -> (Tensor, Tensor, Tensor)",
              linalg_svd, A, full_matrices);
  check_input(A, "linalg.svd", false);
  autograd::RecordScope rs({&A});
  Tensor Uo, So, Vho;
  svd_raw(A, full_matrices ? 'A' : 'S', Uo, So, Vho);
  rs.done();
  if (rs.rec) {
    auto node = autograd::record_multi(
        "LinalgSvdBackward0", {A}, {Uo, So, Vho},
        [](LambdaNode& n, variable_list&& g) -> variable_list {
          return {svd_backward(g[0], g[1], g[2], n.unpack(0), n.unpack(1), n.unpack(2))};
        });
    node->saved.emplace_back(Uo, true);
    node->saved.emplace_back(So, true);
    node->saved.emplace_back(Vho, true);
  }
  return {Uo, So, Vho};
}

Tensor linalg_svdvals(const Tensor& A) {
  EMBER_TRACE("aten::linalg_svdvals(Tensor A) -> Tensor", linalg_svdvals, A);
  check_input(A, "linalg.svdvals", false);
  if (autograd::compute_requires_grad({&A})) return std::get<1>(linalg_svd(A, false));
  Tensor Uo, So, Vho;
  svd_raw(A, 'N', Uo, So, Vho);
  return So;
}

// ---- symmetric eigendecomposition -------------------------------------------------------------

namespace {

void eigh_raw(const Tensor& A, bool vectors, char uplo, Tensor& L, Tensor& V) {
  autograd::GradModeGuard no_grad(false);
  int64_t n = rows(A), batch = batch_of(A);
  Tensor a = colmajor(A);
  L = empty(cat_shape(batch_shape(A), {n}), A.dtype(), A.device());
  if (n > 0 && batch > 0) {
    Tensor info = empty(Shape{batch}, DType::Int32, A.device());
    syevd_stub.get(A.device())(a, L, info, batch, n, vectors, uplo);
    int code = 0;
    int64_t bad = first_failure(host_info(info), batch, code);
    if (bad >= 0)
      throw LinAlgError(detail::str("linalg.eigh: ", batch_prefix(batch, bad),
                                    "The algorithm failed to converge "
                                    "because the input matrix is ill-conditioned or has too many "
                                    "repeated eigenvalues (error code: ",
                                    code, ")."));
  }
  if (vectors) V = mT_(a);
}

char uplo_arg(const std::string& uplo, const char* op) {
  EMBER_CHECK(uplo == "L" || uplo == "U" || uplo == "l" || uplo == "u", op,
              ": Expected UPLO argument to be 'L' or 'U', but got ", uplo);
  return char(std::toupper(static_cast<unsigned char>(uplo[0])));
}

}  // namespace

std::pair<Tensor, Tensor> linalg_eigh(const Tensor& A, const std::string& uplo) {
  EMBER_TRACE("aten::linalg_eigh(Tensor A, str uplo) -> (Tensor, Tensor)", linalg_eigh, A, uplo);
  check_input(A, "linalg.eigh", true);
  char ul = uplo_arg(uplo, "linalg.eigh");
  autograd::RecordScope rs({&A});
  Tensor L, V;
  eigh_raw(A, true, ul, L, V);
  rs.done();
  if (rs.rec) {
    auto node = autograd::record_multi(
        "LinalgEighBackward0", {A}, {L, V}, [](LambdaNode& n, variable_list&& g) -> variable_list {
          Tensor L_ = n.unpack(0), V_ = n.unpack(1);
          const Tensor &gL = g[0], &gV = g[1];
          // gA = V (diag(gL) + skew(V^T gV) / 2 / E) V^T with E_ij = L_j - L_i (1 on the diagonal).
          Tensor inner;
          if (gV.defined()) {
            Tensor K = matmul(mT_(V_), gV);
            Tensor Sk = tmul(tsub(K, mT_(K)), S(0.5));
            Tensor E = tsub(unsqueeze(L_, -2), unsqueeze(L_, -1));
            E = tadd(E,
                     diag_embed(full(L_.sizes(), Scalar(1.0), L_.dtype(), L_.device()), 0, -2, -1));
            inner = tdiv(Sk, E);
          }
          if (gL.defined())
            inner = inner.defined() ? tadd(inner, diag_embed(gL, 0, -2, -1))
                                    : diag_embed(gL, 0, -2, -1);
          return {matmul(V_, matmul(inner, mT_(V_)))};
        });
    node->saved.emplace_back(L, true);
    node->saved.emplace_back(V, true);
  }
  return {L, V};
}

Tensor linalg_eigvalsh(const Tensor& A, const std::string& uplo) {
  EMBER_TRACE("aten::linalg_eigvalsh(Tensor A, str uplo) -> Tensor", linalg_eigvalsh, A, uplo);
  check_input(A, "linalg.eigvalsh", true);
  if (autograd::compute_requires_grad({&A})) return linalg_eigh(A, uplo).first;
  Tensor L, V;
  eigh_raw(A, false, uplo_arg(uplo, "linalg.eigvalsh"), L, V);
  return L;
}

// ---- QR --------------------------------------------------------------------------------------

std::pair<Tensor, Tensor> geqrf(const Tensor& A) {
  check_input(A, "geqrf", false);
  EMBER_CHECK(!autograd::compute_requires_grad({&A}),
              "the derivative for 'geqrf' is not implemented.");
  const int64_t m = rows(A), n = cols(A), k = std::min(m, n), batch = batch_of(A);
  Tensor a = colmajor(A);
  Tensor tau = zeros(cat_shape(batch_shape(A), {k}), A.dtype(), A.device());
  if (k > 0 && batch > 0) {
    // geqrf writes at least one tau per matrix: a scratch of max(k, 1) when k is 0.
    geqrf_stub.get(A.device())(a, tau, batch, m, n, n * m, k);
  }
  return {mT_(a), tau};
}

std::pair<Tensor, Tensor> linalg_qr(const Tensor& A, const std::string& mode) {
  EMBER_TRACE("aten::linalg_qr(Tensor A, str mode) -> (Tensor, Tensor)", linalg_qr, A, mode);
  check_input(A, "linalg.qr", false);
  EMBER_CHECK(mode == "reduced" || mode == "complete" || mode == "r",
              "qr received unrecognized mode '", mode,
              "' but expected one of 'reduced' (default), 'r', or 'complete'");
  int64_t m = rows(A), n = cols(A), k = std::min(m, n), batch = batch_of(A);
  Shape bs = batch_shape(A);
  bool complete = mode == "complete";
  int64_t qc = complete ? m : k;  // columns of Q
  autograd::RecordScope rs({&A});
  Tensor Q, R;
  {
    autograd::GradModeGuard no_grad(false);
    // Work in an m x max(n, qc) column-major buffer so orgqr can build qc columns.
    int64_t w = std::max(n, qc);
    Tensor a = colmajor(A);
    Tensor buf = zeros(cat_shape(bs, {w, m}), A.dtype(), A.device());
    if (w == n)
      buf = a;
    else
      copy_(narrow(buf, -2, 0, n), a);
    Tensor tau = zeros(cat_shape(bs, {std::max<int64_t>(k, 1)}), A.dtype(), A.device());
    const int64_t tk = std::max<int64_t>(k, 1);
    if (k > 0 && batch > 0) geqrf_stub.get(A.device())(buf, tau, batch, m, n, w * m, tk);
    Tensor full_r = mT_(buf);  // (..., m, w): R in the upper triangle of the first n columns
    R = triu(contiguous(narrow(narrow(full_r, -1, 0, n), -2, 0, complete ? m : k)), 0);
    if (mode != "r") {
      if (k > 0) {
        if (batch > 0) orgqr_stub.get(A.device())(buf, tau, batch, m, qc, k, w * m, tk);
        Q = narrow(mT_(buf), -1, 0, qc);
      } else {
        Q = complete ? contiguous(expand(eye(m, std::nullopt, A.dtype(), A.device()),
                                         cat_shape(bs, {m, m})))
                     : zeros(cat_shape(bs, {m, 0}), A.dtype(), A.device());
      }
    } else {
      Q = empty(Shape{0}, A.dtype(), A.device());
    }
  }
  rs.done();
  if (rs.rec) {
    bool r_only = mode == "r";
    auto node = autograd::record_multi(
        "LinalgQrBackward0", {A}, {Q, R},
        [m, n, r_only, complete](LambdaNode& nd, variable_list&& g) -> variable_list {
          EMBER_CHECK(
              !r_only,
              "The derivative of linalg.qr depends on Q, which is not computed when mode='r'. "
              "Please use "
              "linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr.");
          EMBER_CHECK(
              !(complete && m > n),
              "The QR decomposition is not differentiable when mode='complete' and nrows > ncols.");
          EMBER_CHECK_KIND(ErrorKind::NotImplemented, m >= n,
                           "linalg.qr: the derivative for wide matrices (nrows < ncols) is not "
                           "implemented in ember");
          Tensor Q_ = nd.unpack(0), R_ = nd.unpack(1);
          const Tensor &gQ = g[0], &gR = g[1];
          // gA = (gQ + Q copyltu(M)) R^{-T}, M = R gR^T - gQ^T Q, copyltu(M) = tril(M) + tril(M,
          // -1)^T.
          Tensor M;
          if (gR.defined()) M = matmul(R_, mT_(gR));
          if (gQ.defined())
            M = M.defined() ? tsub(M, matmul(mT_(gQ), Q_)) : negate(matmul(mT_(gQ), Q_));
          Tensor C = matmul(Q_, tadd(tril(M, 0), mT_(tril(M, -1))));
          if (gQ.defined()) C = tadd(C, gQ);
          // X R^T = C  <=>  R X^T = C^T
          return {mT_(linalg_solve_triangular(R_, mT_(C), true, true, false))};
        });
    node->saved.emplace_back(Q, true);
    node->saved.emplace_back(R, true);
  }
  return {Q, R};
}

}  // namespace ember
