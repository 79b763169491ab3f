// ember.linalg through LAPACK (ops/linalg_lapack.h). Each front-end validates,
// copies its input into column-major buffers (LAPACK's layout), runs the
// routine once per matrix of the batch, and records its node; each
// <op>_backward below is PyTorch's formula written with ember ops.
#include "ember/ops/linalg_lapack.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <limits>

#include "ember/autograd/functions.h"
#include "ember/autograd/record.h"
#include "ember/backends/cpu/lapack.h"
#include "ember/ops/factory.h"
#include "ember/ops/linalg.h"
#include "ember/ops/reduce.h"
#include "ember/ops/surface.h"
#include "ember/ops/view.h"

namespace ember {
namespace {

using B = BinaryOp;
using U = UnaryOp;
namespace lp = cpu::lapack;
using autograd::LambdaNode;
using autograd::variable_list;

Tensor S(double v) { return wrap_scalar(Scalar(v)); }
Tensor tmul(const Tensor& a, const Tensor& b) { return binary(B::mul, a, b); }
Tensor tsub(const Tensor& a, const Tensor& b) { return binary(B::sub, a, b); }
Tensor tadd(const Tensor& a, const Tensor& b) { return binary(B::add, a, b); }
Tensor tdiv(const Tensor& a, const Tensor& b) { return binary(B::div, a, b); }
Tensor mT_(const Tensor& a) { return transpose(a, -2, -1); }
Tensor negate(const Tensor& a) { return unary(U::neg, a); }

const char* torch_name(DType t) {
  switch (t) {
    case DType::Bool:
      return "Bool";
    case DType::UInt8:
      return "Byte";
    case DType::Int8:
      return "Char";
    case DType::Int16:
      return "Short";
    case DType::Int32:
      return "Int";
    case DType::Int64:
      return "Long";
    case DType::Float16:
      return "Half";
    case DType::BFloat16:
      return "BFloat16";
    case DType::Float32:
      return "Float";
    default:
      return "Double";
  }
}

int64_t rows(const Tensor& a) { return a.sizes()[a.dim() - 2]; }
int64_t cols(const Tensor& a) { return a.sizes()[a.dim() - 1]; }

void check_input(const Tensor& A, const char* op, bool square) {
  EMBER_CHECK(A.dim() >= 2, op, ": The input tensor A must have at least 2 dimensions.");
  EMBER_CHECK(A.dtype() == DType::Float32 || A.dtype() == DType::Float64, op,
              ": Expected a floating point or complex tensor as input. Got ",
              torch_name(A.dtype()));
  EMBER_CHECK_KIND(ErrorKind::NotImplemented, A.device().is_cpu(), op,
                   ": not implemented for 'CUDA' (ember runs linalg through LAPACK on the CPU)");
  if (square)
    EMBER_CHECK(rows(A) == cols(A), op, ": A must be batches of square matrices, but they are ",
                rows(A), " by ", cols(A), " matrices");
  EMBER_CHECK(rows(A) < INT_MAX && cols(A) < INT_MAX, op,
              ": matrix dimensions exceed LAPACK's 32-bit sizes");
}

int64_t batch_of(const Tensor& a) {
  int64_t b = 1;
  for (int64_t i = 0; i + 2 < a.dim(); ++i) b = checked_mul(b, a.sizes()[i], "linalg batch");
  return b;
}

Shape batch_shape(const Tensor& a) {
  Shape s;
  for (int64_t i = 0; i + 2 < a.dim(); ++i) s.push_back(a.sizes()[i]);
  return s;
}

Shape cat_shape(Shape s, std::initializer_list<int64_t> tail) {
  for (int64_t v : tail) s.push_back(v);
  return s;
}

// A column-major copy: shape (..., cols, rows), contiguous; matrix i starts at i * rows * cols.
Tensor colmajor(const Tensor& a) { return clone(contiguous(mT_(a))); }

template <typename F>
void dispatch_real(DType dt, F f) {
  if (dt == DType::Float64)
    f(double{});
  else
    f(float{});
}

std::string batch_prefix(int64_t batch, int64_t i) {
  return batch > 1 ? "(Batch element " + std::to_string(i) + "): " : "";
}

Shape broadcast_batch(const Shape& a, const Shape& b, const char* op) {
  size_t nd = std::max(a.size(), b.size());
  Shape r(nd);
  for (size_t i = 0; i < nd; ++i) {
    int64_t x = i + a.size() >= nd ? a[i + a.size() - nd] : 1;
    int64_t y = i + b.size() >= nd ? b[i + b.size() - nd] : 1;
    EMBER_CHECK(x == y || x == 1 || y == 1, op,
                ": the batch dimensions of A and B do not broadcast: ", shape_str(a), " and ",
                shape_str(b));
    r[i] = x == 1 ? y : x;
  }
  return r;
}

// ---- raw kernels (no autograd) ----------------------------------------------------------

// X = A^{-1} B for square A (..., n, n) and B (..., n, k) with equal batch shapes.
Tensor solve_raw(const Tensor& A, const Tensor& Bm, const char* op, const char* singular_msg) {
  autograd::GradModeGuard no_grad(false);
  int64_t n = rows(A), k = cols(Bm), batch = batch_of(A);
  Tensor a = colmajor(A), b = colmajor(Bm);
  if (n == 0 || k == 0) return mT_(b);
  std::vector<int> ipiv(static_cast<size_t>(n));
  dispatch_real(A.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* pa = reinterpret_cast<T*>(a.data_ptr());
    T* pb = reinterpret_cast<T*>(b.data_ptr());
    for (int64_t i = 0; i < batch; ++i) {
      int info = lp::getrf<T>(int(n), int(n), pa + i * n * n, int(n), ipiv.data());
      if (info > 0) throw LinAlgError(detail::str(op, ": ", batch_prefix(batch, i), singular_msg));
      lp::getrs<T>('N', int(n), int(k), pa + i * n * n, int(n), ipiv.data(), pb + i * n * k,
                   int(n));
    }
  });
  return mT_(b);
}

// LU of each matrix: (sign of det, log|det|, det); a singular matrix has det 0.
void lu_det_raw(const Tensor& A, Tensor& sign, Tensor& logabs, Tensor& det) {
  autograd::GradModeGuard no_grad(false);
  int64_t n = rows(A), batch = batch_of(A);
  Tensor a = colmajor(A);
  Shape bs = batch_shape(A);
  sign = empty(bs, A.dtype(), A.device());
  logabs = empty(bs, A.dtype(), A.device());
  det = empty(bs, A.dtype(), A.device());
  std::vector<int> ipiv(static_cast<size_t>(std::max<int64_t>(n, 1)));
  dispatch_real(A.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* pa = reinterpret_cast<T*>(a.data_ptr());
    T *ps = reinterpret_cast<T*>(sign.data_ptr()), *pl = reinterpret_cast<T*>(logabs.data_ptr()),
      *pd = reinterpret_cast<T*>(det.data_ptr());
    for (int64_t i = 0; i < batch; ++i) {
      T* m = pa + i * n * n;
      int info = n ? lp::getrf<T>(int(n), int(n), m, int(n), ipiv.data()) : 0;
      double s = 1, l = 0;
      if (info > 0) {
        s = 0;
        l = -std::numeric_limits<double>::infinity();
      } else {
        for (int64_t j = 0; j < n; ++j) {
          double d = double(m[j * n + j]);
          if (ipiv[j] != j + 1) s = -s;
          if (d < 0) s = -s;
          l += std::log(std::fabs(d));
        }
      }
      ps[i] = T(s);
      pl[i] = T(l);
      pd[i] = T(s == 0 ? 0.0 : s * std::exp(l));
    }
  });
}

}  // namespace

// ---- solve / inv -----------------------------------------------------------------------

Tensor linalg_solve(const Tensor& A, const Tensor& Bt, bool left) {
  check_input(A, "linalg.solve", true);
  EMBER_CHECK(Bt.dtype() == A.dtype(),
              "linalg.solve: Expected A and B to have the same dtype, but found A of type ",
              torch_name(A.dtype()), " and B of type ", torch_name(Bt.dtype()), " instead");
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

Tensor linalg_inv(const Tensor& A) { return linalg_inv_ex(A, true).first; }

// ---- determinants ----------------------------------------------------------------------

Tensor linalg_det(const Tensor& A) {
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
  auto [sign, logabs] = linalg_slogdet(A);
  return where(binary(B::lt, sign, S(0.0)), S(NAN), logabs);
}

// ---- Cholesky ---------------------------------------------------------------------------

std::pair<Tensor, Tensor> linalg_cholesky_ex(const Tensor& A, bool upper, bool check_errors) {
  check_input(A, "linalg.cholesky", true);
  int64_t n = rows(A), batch = batch_of(A);
  autograd::RecordScope rs({&A});
  Tensor L, info = zeros(batch_shape(A), DType::Int32, A.device());
  {
    autograd::GradModeGuard no_grad(false);
    Tensor a = colmajor(A);
    dispatch_real(A.dtype(), [&](auto tag) {
      using T = decltype(tag);
      T* pa = reinterpret_cast<T*>(a.data_ptr());
      int32_t* pi = reinterpret_cast<int32_t*>(info.data_ptr());
      for (int64_t i = 0; i < batch && n > 0; ++i) {
        int r = lp::potrf<T>('L', int(n), pa + i * n * n, int(n));
        pi[i] = r;
        if (r > 0 && check_errors)
          throw LinAlgError(
              detail::str("linalg.cholesky: ", batch_prefix(batch, i),
                          "The factorization could not be completed because the input is not "
                          "positive-definite (the leading minor of order ",
                          r, " is not positive-definite)."));
      }
    });
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
  return linalg_cholesky_ex(A, upper, true).first;
}

// ---- triangular solve -----------------------------------------------------------------------

Tensor linalg_solve_triangular(const Tensor& A, const Tensor& Bm, bool upper, bool left,
                               bool unitriangular) {
  check_input(A, "linalg.solve_triangular", true);
  EMBER_CHECK(Bm.dim() >= 2,
              "linalg.solve_triangular: The input tensor B must have at least 2 dimensions.");
  EMBER_CHECK(Bm.dtype() == A.dtype(),
              "linalg.solve_triangular: Expected A and B to have the same dtype");
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
    if (n > 0 && k > 0)
      dispatch_real(A.dtype(), [&](auto tag) {
        using T = decltype(tag);
        T* pa = reinterpret_cast<T*>(a.data_ptr());
        T* pb = reinterpret_cast<T*>(b.data_ptr());
        for (int64_t i = 0; i < batch; ++i)
          lp::trtrs<T>(upper ? 'U' : 'L', 'N', unitriangular ? 'U' : 'N', int(n), int(k),
                       pa + i * n * n, int(n), pb + i * n * k, int(n));
      });
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

// ---- SVD -----------------------------------------------------------------------------------

namespace {

// U, S, Vh of each matrix; jobz 'S' (reduced), 'A' (full) or 'N' (values only).
void svd_raw(const Tensor& A, char jobz, Tensor& Uo, Tensor& So, Tensor& Vho) {
  autograd::GradModeGuard no_grad(false);
  int64_t m = rows(A), n = cols(A), k = std::min(m, n), batch = batch_of(A);
  Shape bs = batch_shape(A);
  int64_t ucols = jobz == 'A' ? m : k, vrows = jobz == 'A' ? n : k;
  So = empty(cat_shape(bs, {k}), A.dtype(), A.device());
  Tensor ub = jobz == 'N' ? Tensor() : zeros(cat_shape(bs, {ucols, m}), A.dtype(), A.device());
  Tensor vb = jobz == 'N' ? Tensor() : zeros(cat_shape(bs, {n, vrows}), A.dtype(), A.device());
  if (k == 0) {
    if (jobz == 'A') {
      ub = contiguous(expand(eye(m, std::nullopt, A.dtype(), A.device()), cat_shape(bs, {m, m})));
      vb = contiguous(expand(eye(n, std::nullopt, A.dtype(), A.device()), cat_shape(bs, {n, n})));
    }
  } else {
    Tensor a = colmajor(A);
    dispatch_real(A.dtype(), [&](auto tag) {
      using T = decltype(tag);
      T* pa = reinterpret_cast<T*>(a.data_ptr());
      T* ps = reinterpret_cast<T*>(So.data_ptr());
      T* pu = jobz == 'N' ? nullptr : reinterpret_cast<T*>(ub.data_ptr());
      T* pv = jobz == 'N' ? nullptr : reinterpret_cast<T*>(vb.data_ptr());
      T dummy = 0;
      for (int64_t i = 0; i < batch; ++i) {
        int info = lp::gesdd<T>(jobz, int(m), int(n), pa + i * m * n, int(m), ps + i * k,
                                pu ? pu + i * m * ucols : &dummy, int(m),
                                pv ? pv + i * vrows * n : &dummy, int(std::max<int64_t>(vrows, 1)));
        if (info > 0)
          throw LinAlgError(
              detail::str("linalg.svd: ", batch_prefix(batch, i),
                          "The algorithm failed to converge because the input matrix is "
                          "ill-conditioned or has too many repeated singular values (error code: ",
                          info, ")."));
      }
    });
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
  if (n > 0)
    dispatch_real(A.dtype(), [&](auto tag) {
      using T = decltype(tag);
      T* pa = reinterpret_cast<T*>(a.data_ptr());
      T* pl = reinterpret_cast<T*>(L.data_ptr());
      for (int64_t i = 0; i < batch; ++i) {
        int info =
            lp::syevd<T>(vectors ? 'V' : 'N', uplo, int(n), pa + i * n * n, int(n), pl + i * n);
        if (info > 0)
          throw LinAlgError(
              detail::str("linalg.eigh: ", batch_prefix(batch, i),
                          "The algorithm failed to converge "
                          "because the input matrix is ill-conditioned or has too many repeated "
                          "eigenvalues (error code: ",
                          info, ")."));
      }
    });
  if (vectors) V = mT_(a);
}

char uplo_arg(const std::string& uplo, const char* op) {
  EMBER_CHECK(uplo == "L" || uplo == "U" || uplo == "l" || uplo == "u", op,
              ": Expected UPLO argument to be 'L' or 'U', but got ", uplo);
  return char(std::toupper(static_cast<unsigned char>(uplo[0])));
}

}  // namespace

std::pair<Tensor, Tensor> linalg_eigh(const Tensor& A, const std::string& uplo) {
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
  check_input(A, "linalg.eigvalsh", true);
  if (autograd::compute_requires_grad({&A})) return linalg_eigh(A, uplo).first;
  Tensor L, V;
  eigh_raw(A, false, uplo_arg(uplo, "linalg.eigvalsh"), L, V);
  return L;
}

// ---- QR --------------------------------------------------------------------------------------

std::pair<Tensor, Tensor> linalg_qr(const Tensor& A, const std::string& mode) {
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
    if (k > 0)
      dispatch_real(A.dtype(), [&](auto tag) {
        using T = decltype(tag);
        T* pb = reinterpret_cast<T*>(buf.data_ptr());
        T* pt = reinterpret_cast<T*>(tau.data_ptr());
        int64_t tk = std::max<int64_t>(k, 1);
        for (int64_t i = 0; i < batch; ++i)
          lp::geqrf<T>(int(m), int(n), pb + i * w * m, int(m), pt + i * tk);
      });
    Tensor full_r = mT_(buf);  // (..., m, w): R in the upper triangle of the first n columns
    R = triu(contiguous(narrow(narrow(full_r, -1, 0, n), -2, 0, complete ? m : k)), 0);
    if (mode != "r") {
      if (k > 0) {
        dispatch_real(A.dtype(), [&](auto tag) {
          using T = decltype(tag);
          T* pb = reinterpret_cast<T*>(buf.data_ptr());
          T* pt = reinterpret_cast<T*>(tau.data_ptr());
          int64_t tk = std::max<int64_t>(k, 1);
          for (int64_t i = 0; i < batch; ++i)
            lp::orgqr<T>(int(m), int(qc), int(k), pb + i * w * m, int(m), pt + i * tk);
        });
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

// ---- composites ----------------------------------------------------------------------------

Tensor linalg_pinv(const Tensor& A, double rtol, bool hermitian) {
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
  check_input(A, "linalg.lstsq", false);
  EMBER_CHECK(Bm.dim() >= 1 && (Bm.dim() == 1 ? Bm.sizes()[0] : rows(Bm)) == rows(A),
              "linalg.lstsq: input.size(-2) should match other.size(-2)");
  Tensor b = Bm.dim() == 1 ? unsqueeze(Bm, -1) : Bm;
  Tensor x = matmul(linalg_pinv(A, -1, false), b);
  return Bm.dim() == 1 ? squeeze(x, Shape{-1}) : x;
}

Tensor linalg_multi_dot(const std::vector<Tensor>& ts) {
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
  return sum(tmul(x, y), Shape{dim});
}

// ---- LU ------------------------------------------------------------------------------------

std::pair<Tensor, Tensor> linalg_lu_factor(const Tensor& A) {
  check_input(A, "linalg.lu_factor", true);
  int64_t n = rows(A), batch = batch_of(A);
  autograd::RecordScope rs({&A});
  Tensor LU, piv = zeros(cat_shape(batch_shape(A), {n}), DType::Int32, A.device());
  {
    autograd::GradModeGuard no_grad(false);
    Tensor a = colmajor(A);
    dispatch_real(A.dtype(), [&](auto tag) {
      using T = decltype(tag);
      T* pa = reinterpret_cast<T*>(a.data_ptr());
      int32_t* pp = reinterpret_cast<int32_t*>(piv.data_ptr());
      for (int64_t i = 0; i < batch && n > 0; ++i) {
        int info = lp::getrf<T>(int(n), int(n), pa + i * n * n, int(n), pp + i * n);
        if (info > 0)
          throw LinAlgError(detail::str(
              "linalg.lu_factor: ", batch_prefix(batch, i), "U[", info, ",", info,
              "] is zero and using it on lu_solve would result in a division by zero. If "
              "you still want to perform the factorization, consider calling "
              "linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)"));
      }
    });
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
  check_input(LU, "linalg.lu_solve", true);
  EMBER_CHECK(pivots.dtype() == DType::Int32,
              "linalg.lu_solve: pivots should be a Tensor of scalar type int32");
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
    if (n > 0 && k > 0)
      dispatch_real(LU.dtype(), [&](auto tag) {
        using T = decltype(tag);
        T* pa = reinterpret_cast<T*>(a.data_ptr());
        T* pb = reinterpret_cast<T*>(b.data_ptr());
        const int32_t* pp = reinterpret_cast<const int32_t*>(p.data_ptr());
        for (int64_t i = 0; i < batch; ++i)
          lp::getrs<T>(adjoint ? 'T' : 'N', int(n), int(k), pa + i * n * n, int(n), pp + i * n,
                       pb + i * n * k, int(n));
      });
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
