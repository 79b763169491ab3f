// Linear algebra front-ends (see linalg.h): argument checks with PyTorch's
// messages, result allocation, and the calls into the GEMM / tril-triu / trace
// kernels.
#include "ember/ops/linalg.h"
#include "ember/jit/trace_hook.h"

#include <algorithm>

#include "ember/autograd/derivatives/linalg.h"
#include "ember/autograd/record.h"
#include "ember/ops/autocast.h"
#include "ember/ops/ops.h"
#include "ember/ops/view.h"

#include "ember/ops/sparse.h"

namespace ember {

DispatchStub<GemmKernel> gemm_stub("matmul");
DispatchStub<GemmBiasKernel> gemm_bias_stub("matmul");
DispatchStub<SmallGemmKernel> small_gemm_stub("small_gemm");
DispatchStub<SkinnyGemmKernel> skinny_gemm_stub("skinny_gemm");
DispatchStub<TrilTriuKernel> tril_triu_stub("tril/triu");
DispatchStub<TraceKernel> trace_stub("trace");

namespace {

// "2x3"
std::string mat_str(const Tensor& t) {
  return detail::str(t.sizes()[t.dim() - 2], "x", t.sizes()[t.dim() - 1]);
}

// The operand as-is when its last two dims are BLAS-friendly, else a contiguous copy
// (see Note [Matrix layout]). Call before expanding batch dims, so that a broadcast
// operand is never materialized.
Tensor friendly(const Tensor& t) {
  const int64_t d = t.dim();
  MatrixLayout l =
      matrix_layout(t.sizes()[d - 2], t.sizes()[d - 1], t.strides()[d - 2], t.strides()[d - 1]);
  return l.ok ? t : contiguous(t);
}

bool same_storage_overlap(const Tensor& x, const Tensor& y) {
  if (x.numel() == 0 || y.numel() == 0 || x.storage() != y.storage()) return false;
  auto range = [](const Tensor& t, int64_t& lo, int64_t& hi) {
    lo = hi = t.storage_offset();
    for (int64_t d = 0; d < t.dim(); ++d) hi += (t.sizes()[d] - 1) * t.strides()[d];
  };
  int64_t xl, xh, yl, yh;
  range(x, xl, xh);
  range(y, yl, yh);
  return xl <= yh && yl <= xh;
}

void check_matmul_dtype(const Tensor& a, const Tensor& b) {
  EMBER_CHECK(a.dtype() == b.dtype(),
              "expected m1 and m2 to have the same dtype, but got: ", dtype_name(a.dtype()),
              " != ", dtype_name(b.dtype()));
}

void check_gemm_dtype(DType dt, const char* op) {
  EMBER_CHECK(dt != DType::Bool, '"', op, "\" not implemented for 'bool'");
}

// PyTorch's alpha/beta rules: no float scalars with integer tensors.
void check_scalars(DType dt, Scalar beta, Scalar alpha) {
  if (is_integral(dt, false)) {
    EMBER_CHECK(!beta.is_floating(),
                "For integral input tensors, argument beta must not be a floating point number.");
    EMBER_CHECK(!alpha.is_floating(),
                "For integral input tensors, argument alpha must not be a floating point number.");
  }
}

// Validates an out= tensor against the result's dtype and device and resizes it to the
// result's shape (ops/out.h); the in-place add forms check their shape first.
void check_out(const Tensor& out, DType dt, const Shape& shape, Device dev, const char* op) {
  EMBER_CHECK(out.dtype() == dt, op, ": expected out tensor to have dtype ", dtype_name(dt),
              ", but got ", dtype_name(out.dtype()), " instead");
  EMBER_CHECK(out.device() == dev, op, ": expected out tensor on ", dev.str(), ", but got ",
              out.device().str());
  resize_output(out, shape);
  check_no_internal_overlap(out, op);
}

// Computes dest = beta * input + alpha * (a @ b) (just alpha * (a @ b) without input).
// `dest` has the full batch + [m, n] shape (a view of the caller's result); a and b
// are BLAS-friendly with batch dims already broadcast to dest's. `input` broadcasts
// to dest's shape (or is dest itself, for the in-place forms).
void gemm_into(const Tensor& dest, const Tensor& a0, const Tensor& b0, const Tensor* input,
               Scalar beta, Scalar alpha) {
  if (dest.numel() == 0) return;
  const Tensor a = friendly(a0), b = friendly(b0);  // no-ops when the caller already did it
  const bool use_input = input && beta.to_double() != 0.0;
  const int64_t nd = dest.dim() - 2;
  const int64_t k = a.sizes()[nd + 1];
  MatrixLayout lc = matrix_layout(dest.sizes()[nd], dest.sizes()[nd + 1], dest.strides()[nd],
                                  dest.strides()[nd + 1]);
  const bool direct = lc.ok && !lc.trans && !same_storage_overlap(dest, a) &&
                      !same_storage_overlap(dest, b) &&
                      !(use_input && !input->is_same(dest) && same_storage_overlap(dest, *input) &&
                        !(input->sizes() == dest.sizes() && input->strides() == dest.strides() &&
                          input->storage_offset() == dest.storage_offset()));
  Tensor c = direct ? dest : empty(dest.sizes(), dest.dtype(), dest.device());
  // A Linear's bias (a row vector broadcast over the rows, beta 1) is added in the GEMM's
  // epilogue where the backend can (gemm_bias_stub; cuBLASLt on CUDA).
  if (use_input && nd == 0 && k > 0 && beta.to_double() == 1.0 &&
      gemm_bias_stub.fns[int(dest.device().type)] && input->dim() == 2 &&
      input->strides()[0] == 0 && input->strides()[1] == 1 && !input->is_same(dest) &&
      !same_storage_overlap(c, *input)) {
    Tensor bias;
    {
      autograd::GradModeGuard no_grad(false);  // a view for the kernel, not for the graph
      bias = select(*input, 0, 0);
    }
    if (gemm_bias_stub.fns[int(dest.device().type)](c, a, b, bias, alpha)) {
      if (!direct)
        copy_(dest, c);
      else
        dest.bump_version();
      return;
    }
  }
  if (use_input) {
    const bool already =
        direct &&
        (input->is_same(dest) ||
         (input->storage() == dest.storage() && input->sizes() == dest.sizes() &&
          input->strides() == dest.strides() && input->storage_offset() == dest.storage_offset()));
    if (!already) copy_(c, *input);
  }
  if (k == 0) {  // an empty sum: beta * input, or zeros
    if (use_input)
      binary_(BinaryOp::mul, c, wrap_scalar(beta));
    else
      fill_(c, Scalar(int64_t(0)));
  } else {
    gemm_stub.get(dest.device())(c, a, b, use_input ? beta : Scalar(int64_t(0)), alpha);
  }
  if (!direct)
    copy_(dest, c);
  else
    dest.bump_version();
}

// matmul under autograd (Note [Matmul gradients]): PyTorch's composition of
// recorded primitives, so each case gets the graph PyTorch builds. Called with
// validated operands, at least one of them >= 3-D or (1-D, 2-D).
Tensor matmul_autograd(const Tensor& a, const Tensor& b, const Shape& batch, int64_t m, int64_t k,
                       int64_t n, const Shape& final_shape) {
  const int64_t d1 = a.dim(), d2 = b.dim();
  if (d1 == 1 && d2 == 2) return squeeze(mm(unsqueeze(a, 0), b), Shape{0});
  if (d1 >= 3 && d2 <= 2) {  // fold the batch into the rows: one mm / mv
    const int64_t rows = checked_numel(Shape(a.sizes().begin(), a.sizes().end() - 1));
    Tensor a2 = reshape(a, Shape{rows, k});  // explicit rows: k may be 0
    Tensor r = d2 == 2 ? mm(a2, b) : mv(a2, b);
    return unsafe_view(r, final_shape);
  }
  if (d1 <= 2) {  // (a @ b)^T = b^T @ a^T: fold b's batch into the rows of b^T
    Tensor bt = transpose(b, -1, -2);
    if (d1 == 1) return matmul(bt, a);
    return contiguous(transpose(matmul(bt, t(a)), -1, -2));
  }
  // Both >= 3-D: broadcast the batch dims and run one bmm. ExpandBackward0 sums
  // the gradient of a broadcast operand back over the batch.
  const int64_t nb = checked_numel(batch);
  Shape xs = batch, ys = batch;
  xs.push_back(m);
  xs.push_back(k);
  ys.push_back(k);
  ys.push_back(n);
  Tensor x = reshape(expand(a, xs), Shape{nb, m, k});
  Tensor y = reshape(expand(b, ys), Shape{nb, k, n});
  return unsafe_view(bmm(x, y), final_shape);
}

// The matmul front-end shared by matmul and matmul_out.
Tensor matmul_impl(const Tensor& a, const Tensor& b, const Tensor* out) {
  const int64_t d1 = a.dim(), d2 = b.dim();
  EMBER_CHECK(d1 >= 1 && d2 >= 1, "both arguments to matmul need to be at least 1D, but they are ",
              d1, "D and ", d2, "D");
  check_same_device(a, b, "matmul");
  check_matmul_dtype(a, b);
  check_gemm_dtype(a.dtype(), "matmul");
  const DType dt = a.dtype();
  const Device dev = a.device();

  if (d1 == 1 && d2 == 1) return out ? dot_out(a, b, *out) : dot(a, b);
  if (d1 == 2 && d2 == 1) return out ? mv_out(a, b, *out) : mv(a, b);
  if (d1 == 2 && d2 == 2) return out ? mm_out(a, b, *out) : mm(a, b);

  // Batched: a 1-D operand becomes a row (prepended dim) or column (appended dim).
  Tensor x = d1 == 1 ? unsqueeze(a, 0) : a;
  Tensor y = d2 == 1 ? unsqueeze(b, 1) : b;
  const int64_t m = x.sizes()[x.dim() - 2], k = x.sizes()[x.dim() - 1];
  const int64_t k2 = y.sizes()[y.dim() - 2], n = y.sizes()[y.dim() - 1];
  if (k != k2) {
    if (d1 <= 2 && d2 <= 2)
      EMBER_ERROR("mat1 and mat2 shapes cannot be multiplied (", mat_str(x), " and ", mat_str(y),
                  ")");
    EMBER_ERROR("mat1 and mat2 shapes cannot be multiplied (", mat_str(x), " and ", mat_str(y),
                ") in matmul of shapes ", shape_str(a.sizes()), " and ", shape_str(b.sizes()));
  }
  Shape ba(x.sizes().begin(), x.sizes().end() - 2), bb(y.sizes().begin(), y.sizes().end() - 2);
  Shape batch = broadcast_shapes(ba, bb);
  Shape full = batch;
  full.push_back(m);
  full.push_back(n);
  checked_numel(full);
  Shape final_shape = batch;
  if (d1 > 1) final_shape.push_back(m);
  if (d2 > 1) final_shape.push_back(n);
  if (out) check_out(*out, dt, final_shape, dev, "matmul");
  if (!out && autograd::compute_requires_grad({&a, &b}))
    return matmul_autograd(a, b, batch, m, k, n, final_shape);
  Tensor result = out ? *out : empty(final_shape, dt, dev);

  x = friendly(x);
  y = friendly(y);
  // [batch..., m, k] @ [k, n] with a foldable batch: one big GEMM over batch*m rows.
  if (d2 <= 2 && d1 >= 3 && result.is_contiguous()) {
    Shape xs(x.sizes());
    int64_t rows = checked_numel(Shape(xs.begin(), xs.end() - 1));
    Tensor x2 = reshape(x, Shape{rows, k});
    Tensor r2 = view(result, Shape{rows, n});
    gemm_into(r2, friendly(x2), y, nullptr, Scalar(int64_t(0)), Scalar(int64_t(1)));
    return result;
  }
  Shape xfull = batch, yfull = batch;
  xfull.push_back(m);
  xfull.push_back(k);
  yfull.push_back(k);
  yfull.push_back(n);
  Tensor dest = result;
  if (d1 == 1) dest = unsqueeze(dest, dest.dim() - (d2 > 1 ? 1 : 0));
  if (d2 == 1) dest = unsqueeze(dest, dest.dim());
  gemm_into(dest, expand_to(x, xfull, "matmul"), expand_to(y, yfull, "matmul"), nullptr,
            Scalar(int64_t(0)), Scalar(int64_t(1)));
  return result;
}

void check_mm_args(const Tensor& a, const Tensor& b, const char* op) {
  EMBER_CHECK(a.dim() == 2, "self must be a matrix, got ", a.dim(), "-D tensor (", op, ")");
  EMBER_CHECK(b.dim() == 2, "mat2 must be a matrix, got ", b.dim(), "-D tensor (", op, ")");
  check_same_device(a, b, op);
  check_matmul_dtype(a, b);
  check_gemm_dtype(a.dtype(), op);
  EMBER_CHECK(a.sizes()[1] == b.sizes()[0], "mat1 and mat2 shapes cannot be multiplied (",
              mat_str(a), " and ", mat_str(b), ")");
}

Tensor mm_impl(const Tensor& a, const Tensor& b, const Tensor* out) {
  check_mm_args(a, b, "mm");
  Shape shape{a.sizes()[0], b.sizes()[1]};
  if (out) check_out(*out, a.dtype(), shape, a.device(), "mm");
  Tensor result = out ? *out : empty(shape, a.dtype(), a.device());
  gemm_into(result, friendly(a), friendly(b), nullptr, Scalar(int64_t(0)), Scalar(int64_t(1)));
  return result;
}

void check_bmm_args(const Tensor& a, const Tensor& b, const char* op) {
  EMBER_CHECK(a.dim() == 3, "batch1 must be a 3D tensor");
  EMBER_CHECK(b.dim() == 3, "batch2 must be a 3D tensor");
  check_same_device(a, b, op);
  EMBER_CHECK(a.dtype() == b.dtype(), op,
              ": expected batch1 and batch2 to have the same dtype, "
              "but got: ",
              dtype_name(a.dtype()), " != ", dtype_name(b.dtype()));
  check_gemm_dtype(a.dtype(), op);
  EMBER_CHECK(b.sizes()[0] == a.sizes()[0] && b.sizes()[1] == a.sizes()[2],
              "Expected size for first two dimensions of batch2 tensor to be: [", a.sizes()[0],
              ", ", a.sizes()[2], "] but got: [", b.sizes()[0], ", ", b.sizes()[1], "].");
}

Tensor bmm_impl(const Tensor& a, const Tensor& b, const Tensor* out) {
  check_bmm_args(a, b, "bmm");
  Shape shape{a.sizes()[0], a.sizes()[1], b.sizes()[2]};
  if (out) check_out(*out, a.dtype(), shape, a.device(), "bmm");
  Tensor result = out ? *out : empty(shape, a.dtype(), a.device());
  gemm_into(result, friendly(a), friendly(b), nullptr, Scalar(int64_t(0)), Scalar(int64_t(1)));
  return result;
}

void check_mv_args(const Tensor& mat, const Tensor& vec, const char* op) {
  EMBER_CHECK(mat.dim() == 2 && vec.dim() == 1, "vector + matrix @ vector expected, got 1, ",
              mat.dim(), ", ", vec.dim());
  check_same_device(mat, vec, op);
  check_matmul_dtype(mat, vec);
  check_gemm_dtype(mat.dtype(), op);
  EMBER_CHECK(mat.sizes()[1] == vec.sizes()[0], "size mismatch, got input (", mat.sizes()[0],
              "), mat (", mat_str(mat), "), vec (", vec.sizes()[0], ")");
}

Tensor mv_impl(const Tensor& mat, const Tensor& vec, const Tensor* out) {
  check_mv_args(mat, vec, "mv");
  Shape shape{mat.sizes()[0]};
  if (out) check_out(*out, mat.dtype(), shape, mat.device(), "mv");
  Tensor result = out ? *out : empty(shape, mat.dtype(), mat.device());
  gemm_into(unsqueeze(result, 1), friendly(mat), friendly(unsqueeze(vec, 1)), nullptr,
            Scalar(int64_t(0)), Scalar(int64_t(1)));
  return result;
}

Tensor dot_impl(const Tensor& a, const Tensor& b, const Tensor* out, const char* op) {
  EMBER_CHECK(a.dim() == 1 && b.dim() == 1, "1D tensors expected, but got ", a.dim(), "D and ",
              b.dim(), "D tensors");
  check_same_device(a, b, op);
  EMBER_CHECK(a.dtype() == b.dtype(), op, " : expected both vectors to have same dtype, but found ",
              dtype_name(a.dtype()), " and ", dtype_name(b.dtype()));
  check_gemm_dtype(a.dtype(), op);
  EMBER_CHECK(a.numel() == b.numel(), "inconsistent tensor size, expected tensor [", a.numel(),
              "] and src [", b.numel(), "] to have the same number of elements, but got ",
              a.numel(), " and ", b.numel(), " elements respectively");
  if (out) check_out(*out, a.dtype(), Shape{}, a.device(), op);
  Tensor result = out ? *out : empty(Shape{}, a.dtype(), a.device());
  Tensor dest = unsqueeze(unsqueeze(result, 0), 0);
  gemm_into(dest, friendly(unsqueeze(a, 0)), friendly(unsqueeze(b, 1)), nullptr, Scalar(int64_t(0)),
            Scalar(int64_t(1)));
  return result;
}

// In place, the add forms write their input: it must have the product's shape.
void check_inplace_shape(const Tensor& input, const Shape& shape, const char* op) {
  EMBER_CHECK(input.sizes() == shape, op, ": the input of shape ", shape_str(input.sizes()),
              " is written in place and must have the product's shape ", shape_str(shape));
}

// The add forms: checks and allocates the result of beta * input + alpha * product of
// `shape`. In place, `input` itself is the result and must already have that shape.
Tensor add_result(const Tensor& input, const Tensor& a, Scalar beta, Scalar alpha,
                  const Tensor* out, const Shape& shape, const char* op, bool inplace) {
  check_same_device(input, a, op);
  check_scalars(a.dtype(), beta, alpha);
  if (inplace) {
    check_inplace_shape(input, shape, op);
    check_out(input, a.dtype(), shape, a.device(), op);
    return input;
  }
  expand_to(input, shape, op);  // raises when input does not broadcast to the product
  if (out) {
    check_out(*out, a.dtype(), shape, a.device(), op);
    return *out;
  }
  return empty(shape, a.dtype(), a.device());
}

}  // namespace

// ---- matrix products ---------------------------------------------------------------------

// matmul is a composite (its primitives record; see matmul_autograd).
// A sparse operand (ops/sparse_math.cpp): sparse x strided and strided x sparse products are
// strided, with the sparse input's gradient strided as PyTorch's mm (torch.sparse.mm masks
// it); sparse x sparse is sparse. A 1-d operand multiplies as a column/row.
static Tensor sparse_matmul(const Tensor& a, const Tensor& b) {
  if (a.is_sparse() && b.is_sparse()) return sparse_sparse_mm(a, b);
  if (a.is_sparse()) {
    if (b.dim() == 1) return squeeze(sparse_dense_mm(a, unsqueeze(b, 1), false), Shape{1});
    return sparse_dense_mm(a, b, false);
  }
  if (a.dim() == 1) return squeeze(sparse_matmul(unsqueeze(a, 0), b), Shape{0});
  EMBER_CHECK(a.dim() == 2, "mm: matrices expected, got ", a.dim(), "D tensor");
  return t(sparse_dense_mm(sparse_transpose(b, 0, 1), t(a), false));
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  EMBER_TRACE("aten::matmul(Tensor self, Tensor b) -> Tensor", matmul, a, b);
  if (__builtin_expect(a.is_sparse() || b.is_sparse(), 0)) return sparse_matmul(a, b);
  if (autocast::active()) {  // Note [Autocast policy]
    auto c_ = autocast::autocast_inputs("matmul", {a, b});
    autocast::ExcludeGuard g_;
    return matmul(c_[0], c_[1]);
  }
  return matmul_impl(a, b, nullptr);
}
Tensor& matmul_out(const Tensor& a, const Tensor& b, const Tensor& out) {
  EMBER_TRACE("aten::matmul.out(Tensor self, Tensor b, *, Tensor out) -> Tensor", matmul_out, a, b,
              out);
  autograd::check_out_not_differentiable("matmul", {&a, &b, &out});
  matmul_impl(a, b, &out);
  return const_cast<Tensor&>(out);
}
Tensor mm(const Tensor& a, const Tensor& b) {
  EMBER_TRACE("aten::mm(Tensor self, Tensor b) -> Tensor", mm, a, b);
  if (__builtin_expect(a.is_sparse() || b.is_sparse(), 0)) {
    EMBER_CHECK(a.dim() == 2 && b.dim() == 2, "mm: matrices expected, got ", a.dim(), "D and ",
                b.dim(), "D tensors");
    return sparse_matmul(a, b);
  }
  if (autocast::active()) {  // Note [Autocast policy]
    auto c_ = autocast::autocast_inputs("mm", {a, b});
    autocast::ExcludeGuard g_;
    return mm(c_[0], c_[1]);
  }
  autograd::RecordScope scope({&a, &b});
  Tensor r = mm_impl(a, b, nullptr);
  if (scope.rec) {
    scope.done();
    autograd::record_mm(a, b, r);
  }
  return r;
}
Tensor& mm_out(const Tensor& a, const Tensor& b, const Tensor& out) {
  EMBER_TRACE("aten::mm.out(Tensor self, Tensor b, *, Tensor out) -> Tensor", mm_out, a, b, out);
  autograd::check_out_not_differentiable("mm", {&a, &b, &out});
  mm_impl(a, b, &out);
  return const_cast<Tensor&>(out);
}
Tensor bmm(const Tensor& a, const Tensor& b) {
  EMBER_TRACE("aten::bmm(Tensor self, Tensor b) -> Tensor", bmm, a, b);
  if (autocast::active()) {  // Note [Autocast policy]
    auto c_ = autocast::autocast_inputs("bmm", {a, b});
    autocast::ExcludeGuard g_;
    return bmm(c_[0], c_[1]);
  }
  autograd::RecordScope scope({&a, &b});
  Tensor r = bmm_impl(a, b, nullptr);
  if (scope.rec) {
    scope.done();
    autograd::record_bmm(a, b, r);
  }
  return r;
}
Tensor& bmm_out(const Tensor& a, const Tensor& b, const Tensor& out) {
  EMBER_TRACE("aten::bmm.out(Tensor self, Tensor b, *, Tensor out) -> Tensor", bmm_out, a, b, out);
  autograd::check_out_not_differentiable("bmm", {&a, &b, &out});
  bmm_impl(a, b, &out);
  return const_cast<Tensor&>(out);
}
Tensor mv(const Tensor& mat, const Tensor& vec) {
  EMBER_TRACE("aten::mv(Tensor mat, Tensor vec) -> Tensor", mv, mat, vec);
  if (autocast::active()) {  // Note [Autocast policy]
    auto c_ = autocast::autocast_inputs("mv", {mat, vec});
    autocast::ExcludeGuard g_;
    return mv(c_[0], c_[1]);
  }
  autograd::RecordScope scope({&mat, &vec});
  Tensor r = mv_impl(mat, vec, nullptr);
  if (scope.rec) {
    scope.done();
    autograd::record_mv(mat, vec, r);
  }
  return r;
}
Tensor& mv_out(const Tensor& mat, const Tensor& vec, const Tensor& out) {
  EMBER_TRACE("aten::mv.out(Tensor mat, Tensor vec, *, Tensor out) -> Tensor", mv_out, mat, vec,
              out);
  autograd::check_out_not_differentiable("mv", {&mat, &vec, &out});
  mv_impl(mat, vec, &out);
  return const_cast<Tensor&>(out);
}
static Tensor dot_rec(const Tensor& a, const Tensor& b, bool is_vdot) {
  autograd::RecordScope scope({&a, &b});
  Tensor r = dot_impl(a, b, nullptr, is_vdot ? "vdot" : "dot");
  if (scope.rec) {
    scope.done();
    autograd::record_dot(a, b, r, is_vdot);
  }
  return r;
}
Tensor dot(const Tensor& a, const Tensor& b) {
  EMBER_TRACE("aten::dot(Tensor self, Tensor b) -> Tensor", dot, a, b);
  if (autocast::active()) {  // Note [Autocast policy]
    auto c_ = autocast::autocast_inputs("dot", {a, b});
    autocast::ExcludeGuard g_;
    return dot(c_[0], c_[1]);
  }
  return dot_rec(a, b, false);
}
Tensor& dot_out(const Tensor& a, const Tensor& b, const Tensor& out) {
  EMBER_TRACE("aten::dot.out(Tensor self, Tensor b, *, Tensor out) -> Tensor", dot_out, a, b, out);
  autograd::check_out_not_differentiable("dot", {&a, &b, &out});
  dot_impl(a, b, &out, "dot");
  return const_cast<Tensor&>(out);
}
Tensor vdot(const Tensor& a, const Tensor& b) {
  EMBER_TRACE("aten::vdot(Tensor self, Tensor b) -> Tensor", vdot, a, b);
  return dot_rec(a, b, true);
}

// ---- add forms ----------------------------------------------------------------------------

static Tensor addmm_impl(const Tensor& input, const Tensor& m1, const Tensor& m2, Scalar beta,
                         Scalar alpha, const Tensor* out, bool inplace) {
  const char* op = inplace ? "addmm_" : "addmm";
  EMBER_CHECK(m1.dim() == 2, "mat1 must be a matrix, got ", m1.dim(), "-D tensor");
  EMBER_CHECK(m2.dim() == 2, "mat2 must be a matrix, got ", m2.dim(), "-D tensor");
  EMBER_CHECK(input.dtype() == m2.dtype(), "self and mat2 must have the same dtype, but got ",
              dtype_name(input.dtype()), " and ", dtype_name(m2.dtype()));
  EMBER_CHECK(m1.dtype() == m2.dtype(), "mat1 and mat2 must have the same dtype, but got ",
              dtype_name(m1.dtype()), " and ", dtype_name(m2.dtype()));
  check_same_device(m1, m2, op);
  check_gemm_dtype(m1.dtype(), op);
  EMBER_CHECK(m1.sizes()[1] == m2.sizes()[0], "mat1 and mat2 shapes cannot be multiplied (",
              mat_str(m1), " and ", mat_str(m2), ")");
  Shape shape{m1.sizes()[0], m2.sizes()[1]};
  Tensor result = add_result(input, m1, beta, alpha, out, shape, op, inplace);
  Tensor in = inplace ? input : expand_to(input, shape, op);
  gemm_into(result, friendly(m1), friendly(m2), &in, beta, alpha);
  return result;
}

Tensor addmm(const Tensor& input, const Tensor& m1, const Tensor& m2, Scalar beta, Scalar alpha) {
  EMBER_TRACE(
      "aten::addmm(Tensor input, Tensor mat1, Tensor mat2, Scalar beta=1, Scalar alpha=1) -> "
      "Tensor",
      addmm, input, m1, m2, beta, alpha);
  if (__builtin_expect(input.is_sparse() || m1.is_sparse() || m2.is_sparse(), 0)) {
    if (input.is_sparse()) raise_sparse_unsupported("addmm", input);
    return sparse_dense_addmm(input, m1, m2, beta, alpha, /*masked_grad=*/false);
  }
  if (autocast::active()) {  // Note [Autocast policy]
    auto c_ = autocast::autocast_inputs("addmm", {input, m1, m2});
    autocast::ExcludeGuard g_;
    return addmm(c_[0], c_[1], c_[2], beta, alpha);
  }
  autograd::RecordScope scope({&input, &m1, &m2});
  Tensor r = addmm_impl(input, m1, m2, beta, alpha, nullptr, false);
  if (scope.rec) {
    scope.done();
    autograd::record_addmm(input, m1, m2, beta, alpha, r);
  }
  return r;
}
Tensor& addmm_out(const Tensor& input, const Tensor& m1, const Tensor& m2, Scalar beta,
                  Scalar alpha, const Tensor& out) {
  EMBER_TRACE(
      "aten::addmm.out(Tensor input, Tensor mat1, Tensor mat2, Scalar beta, Scalar alpha, *, "
      "Tensor out) -> Tensor",
      addmm_out, input, m1, m2, beta, alpha, out);
  autograd::check_out_not_differentiable("addmm", {&input, &m1, &m2, &out});
  addmm_impl(input, m1, m2, beta, alpha, &out, false);
  return const_cast<Tensor&>(out);
}
Tensor& addmm_(const Tensor& input, const Tensor& m1, const Tensor& m2, Scalar beta, Scalar alpha) {
  EMBER_TRACE(
      "aten::addmm_(Tensor input, Tensor mat1, Tensor mat2, Scalar beta=1, Scalar alpha=1) -> "
      "Tensor",
      addmm_, input, m1, m2, beta, alpha);
  if (autograd::inplace_records(input, {&m1, &m2})) {
    // Validate the in-place shape first: the out-of-place twin would broadcast.
    if (m1.dim() == 2 && m2.dim() == 2)
      check_inplace_shape(input, Shape{m1.sizes()[0], m2.sizes()[1]}, "addmm_");
    autograd::inplace_with_grad(input, "addmm_", false, [&](const Tensor& self) {
      return addmm(self, m1, m2, beta, alpha);
    });
    return const_cast<Tensor&>(input);
  }
  addmm_impl(input, m1, m2, beta, alpha, nullptr, true);
  return const_cast<Tensor&>(input);
}

static Tensor baddbmm_impl(const Tensor& input, const Tensor& b1, const Tensor& b2, Scalar beta,
                           Scalar alpha, const Tensor* out, bool inplace) {
  const char* op = inplace ? "baddbmm_" : "baddbmm";
  EMBER_CHECK(input.dtype() == b1.dtype() && b1.dtype() == b2.dtype(),
              "Input dtypes must be the same, got: input ", dtype_name(input.dtype()),
              ", batch1: ", dtype_name(b1.dtype()), ", batch2: ", dtype_name(b2.dtype()));
  check_bmm_args(b1, b2, op);
  Shape shape{b1.sizes()[0], b1.sizes()[1], b2.sizes()[2]};
  Tensor result = add_result(input, b1, beta, alpha, out, shape, op, inplace);
  Tensor in = inplace ? input : expand_to(input, shape, op);
  gemm_into(result, friendly(b1), friendly(b2), &in, beta, alpha);
  return result;
}

Tensor baddbmm(const Tensor& input, const Tensor& b1, const Tensor& b2, Scalar beta, Scalar alpha) {
  EMBER_TRACE(
      "aten::baddbmm(Tensor input, Tensor batch1, Tensor batch2, Scalar beta=1, Scalar alpha=1) -> "
      "Tensor",
      baddbmm, input, b1, b2, beta, alpha);
  if (autocast::active()) {  // Note [Autocast policy]
    auto c_ = autocast::autocast_inputs("baddbmm", {input, b1, b2});
    autocast::ExcludeGuard g_;
    return baddbmm(c_[0], c_[1], c_[2], beta, alpha);
  }
  autograd::RecordScope scope({&input, &b1, &b2});
  Tensor r = baddbmm_impl(input, b1, b2, beta, alpha, nullptr, false);
  if (scope.rec) {
    scope.done();
    autograd::record_baddbmm(input, b1, b2, beta, alpha, r);
  }
  return r;
}
Tensor& baddbmm_out(const Tensor& input, const Tensor& b1, const Tensor& b2, Scalar beta,
                    Scalar alpha, const Tensor& out) {
  EMBER_TRACE(
      "aten::baddbmm.out(Tensor input, Tensor batch1, Tensor batch2, Scalar beta, Scalar alpha, *, "
      "Tensor out) -> Tensor",
      baddbmm_out, input, b1, b2, beta, alpha, out);
  autograd::check_out_not_differentiable("baddbmm", {&input, &b1, &b2, &out});
  baddbmm_impl(input, b1, b2, beta, alpha, &out, false);
  return const_cast<Tensor&>(out);
}
Tensor& baddbmm_(const Tensor& input, const Tensor& b1, const Tensor& b2, Scalar beta,
                 Scalar alpha) {
  EMBER_TRACE(
      "aten::baddbmm_(Tensor input, Tensor batch1, Tensor batch2, Scalar beta=1, Scalar alpha=1) "
      "-> Tensor",
      baddbmm_, input, b1, b2, beta, alpha);
  if (autograd::inplace_records(input, {&b1, &b2})) {
    // Validate the in-place shape first: the out-of-place twin would broadcast.
    if (b1.dim() == 3 && b2.dim() == 3)
      check_inplace_shape(input, Shape{b1.sizes()[0], b1.sizes()[1], b2.sizes()[2]}, "baddbmm_");
    autograd::inplace_with_grad(input, "baddbmm_", false, [&](const Tensor& self) {
      return baddbmm(self, b1, b2, beta, alpha);
    });
    return const_cast<Tensor&>(input);
  }
  baddbmm_impl(input, b1, b2, beta, alpha, nullptr, true);
  return const_cast<Tensor&>(input);
}

static Tensor addmv_impl(const Tensor& input, const Tensor& mat, const Tensor& vec, Scalar beta,
                         Scalar alpha, const Tensor* out, bool inplace) {
  const char* op = inplace ? "addmv_" : "addmv";
  EMBER_CHECK(mat.dim() == 2 && vec.dim() == 1 && input.dim() <= 1,
              "vector + matrix @ vector expected, got ", input.dim(), ", ", mat.dim(), ", ",
              vec.dim());
  check_same_device(mat, vec, op);
  EMBER_CHECK(input.dtype() == mat.dtype() && mat.dtype() == vec.dtype(), op,
              ": expected input, mat and vec to have the same dtype, but got ",
              dtype_name(input.dtype()), ", ", dtype_name(mat.dtype()), " and ",
              dtype_name(vec.dtype()));
  check_gemm_dtype(mat.dtype(), op);
  EMBER_CHECK(
      mat.sizes()[1] == vec.sizes()[0] && (input.numel() == mat.sizes()[0] || input.numel() == 1),
      "size mismatch, got input (", input.dim() == 0 ? 1 : input.sizes()[0], "), mat (",
      mat_str(mat), "), vec (", vec.sizes()[0], ")");
  Shape shape{mat.sizes()[0]};
  Tensor result = add_result(input, mat, beta, alpha, out, shape, op, inplace);
  Tensor in = inplace ? input : expand_to(input, shape, op);
  Tensor in2 = unsqueeze(in, 1);
  gemm_into(unsqueeze(result, 1), friendly(mat), friendly(unsqueeze(vec, 1)), &in2, beta, alpha);
  return result;
}

Tensor addmv(const Tensor& input, const Tensor& mat, const Tensor& vec, Scalar beta, Scalar alpha) {
  EMBER_TRACE(
      "aten::addmv(Tensor input, Tensor mat, Tensor vec, Scalar beta=1, Scalar alpha=1) -> Tensor",
      addmv, input, mat, vec, beta, alpha);
  if (autocast::active()) {  // Note [Autocast policy]
    auto c_ = autocast::autocast_inputs("addmv", {input, mat, vec});
    autocast::ExcludeGuard g_;
    return addmv(c_[0], c_[1], c_[2], beta, alpha);
  }
  autograd::RecordScope scope({&input, &mat, &vec});
  Tensor r = addmv_impl(input, mat, vec, beta, alpha, nullptr, false);
  if (scope.rec) {
    scope.done();
    autograd::record_addmv(input, mat, vec, beta, alpha, r);
  }
  return r;
}
Tensor& addmv_out(const Tensor& input, const Tensor& mat, const Tensor& vec, Scalar beta,
                  Scalar alpha, const Tensor& out) {
  EMBER_TRACE(
      "aten::addmv.out(Tensor input, Tensor mat, Tensor vec, Scalar beta, Scalar alpha, *, Tensor "
      "out) -> Tensor",
      addmv_out, input, mat, vec, beta, alpha, out);
  autograd::check_out_not_differentiable("addmv", {&input, &mat, &vec, &out});
  addmv_impl(input, mat, vec, beta, alpha, &out, false);
  return const_cast<Tensor&>(out);
}
Tensor& addmv_(const Tensor& input, const Tensor& mat, const Tensor& vec, Scalar beta,
               Scalar alpha) {
  EMBER_TRACE(
      "aten::addmv_(Tensor input, Tensor mat, Tensor vec, Scalar beta=1, Scalar alpha=1) -> Tensor",
      addmv_, input, mat, vec, beta, alpha);
  if (autograd::inplace_records(input, {&mat, &vec})) {
    // Validate the in-place shape first: the out-of-place twin would broadcast.
    if (mat.dim() == 2 && vec.dim() == 1)
      check_inplace_shape(input, Shape{mat.sizes()[0]}, "addmv_");
    autograd::inplace_with_grad(input, "addmv_", false, [&](const Tensor& self) {
      return addmv(self, mat, vec, beta, alpha);
    });
    return const_cast<Tensor&>(input);
  }
  addmv_impl(input, mat, vec, beta, alpha, nullptr, true);
  return const_cast<Tensor&>(input);
}

// ---- outer ----------------------------------------------------------------------------------

static void check_1d(const Tensor& t, const char* arg, const char* op) {
  EMBER_CHECK(t.dim() == 1, op, ": Expected 1-D argument ", arg, ", but got ", t.dim(), "-D");
}

Tensor outer(const Tensor& a, const Tensor& b) {
  EMBER_TRACE("aten::outer(Tensor self, Tensor b) -> Tensor", outer, a, b);
  check_1d(a, "self", "outer");
  check_1d(b, "vec2", "outer");
  return binary(BinaryOp::mul, unsqueeze(a, 1), b);
}
Tensor& outer_out(const Tensor& a, const Tensor& b, const Tensor& out) {
  EMBER_TRACE("aten::outer.out(Tensor self, Tensor b, *, Tensor out) -> Tensor", outer_out, a, b,
              out);
  autograd::check_out_not_differentiable("outer", {&a, &b, &out});
  check_1d(a, "self", "outer");
  check_1d(b, "vec2", "outer");
  return binary_out(BinaryOp::mul, unsqueeze(a, 1), b, out);
}

// ---- tril / triu ------------------------------------------------------------------------------

static Tensor tril_triu(const Tensor& a, int64_t diagonal, bool upper, const Tensor* out,
                        bool inplace) {
  const char* op = upper ? (inplace ? "triu_" : "triu") : (inplace ? "tril_" : "tril");
  EMBER_CHECK(a.dim() >= 2, op, ": input tensor must have at least 2 dimensions");
  Tensor result;
  if (inplace) {
    check_no_internal_overlap(a, op);
    result = a;
  } else if (out) {
    check_out(*out, a.dtype(), a.sizes(), a.device(), op);
    result = *out;
  } else {
    result = empty(a.sizes(), a.dtype(), a.device());
  }
  if (result.numel() == 0) return result;
  // A partially overlapping out= gets a temporary; exact aliasing is in-place and fine.
  const bool aliased = !inplace && same_storage_overlap(result, a) &&
                       !(result.sizes() == a.sizes() && result.strides() == a.strides() &&
                         result.storage_offset() == a.storage_offset());
  Tensor dst = aliased ? empty(a.sizes(), a.dtype(), a.device()) : result;
  tril_triu_stub.get(a.device())(dst, a, upper, diagonal);
  if (aliased)
    copy_(result, dst);
  else
    result.bump_version();
  return result;
}

static Tensor tril_triu_rec(const Tensor& a, int64_t diagonal, bool upper) {
  autograd::RecordScope scope({&a});
  Tensor r = tril_triu(a, diagonal, upper, nullptr, false);
  if (scope.rec) {
    scope.done();
    autograd::record_tril_triu(a, upper, diagonal, r);
  }
  return r;
}
static Tensor& tril_triu_out(const Tensor& a, int64_t diagonal, bool upper, const Tensor& out) {
  autograd::check_out_not_differentiable(upper ? "triu" : "tril", {&a, &out});
  tril_triu(a, diagonal, upper, &out, false);
  return const_cast<Tensor&>(out);
}
static const Tensor& tril_triu_inplace(const Tensor& a, int64_t diagonal, bool upper) {
  const char* op = upper ? "triu_" : "tril_";
  if (autograd::inplace_records(a, {})) {
    EMBER_CHECK(a.dim() >= 2, op, ": input tensor must have at least 2 dimensions");
    check_no_internal_overlap(a, op);
    return autograd::inplace_with_grad(
        a, op, false, [&](const Tensor& self) { return tril_triu_rec(self, diagonal, upper); });
  }
  tril_triu(a, diagonal, upper, nullptr, true);
  return a;
}

Tensor tril(const Tensor& a, int64_t diagonal) {
  EMBER_TRACE("aten::tril(Tensor self, int diagonal=0) -> Tensor", tril, a, diagonal);
  return tril_triu_rec(a, diagonal, false);
}
Tensor& tril_out(const Tensor& a, int64_t diagonal, const Tensor& out) {
  EMBER_TRACE("aten::tril.out(Tensor self, int diagonal, *, Tensor out) -> Tensor", tril_out, a,
              diagonal, out);
  return tril_triu_out(a, diagonal, false, out);
}
const Tensor& tril_(const Tensor& a, int64_t diagonal) {
  EMBER_TRACE("aten::tril_(Tensor self, int diagonal=0) -> Tensor", tril_, a, diagonal);
  return tril_triu_inplace(a, diagonal, false);
}
Tensor triu(const Tensor& a, int64_t diagonal) {
  EMBER_TRACE("aten::triu(Tensor self, int diagonal=0) -> Tensor", triu, a, diagonal);
  return tril_triu_rec(a, diagonal, true);
}
Tensor& triu_out(const Tensor& a, int64_t diagonal, const Tensor& out) {
  EMBER_TRACE("aten::triu.out(Tensor self, int diagonal, *, Tensor out) -> Tensor", triu_out, a,
              diagonal, out);
  return tril_triu_out(a, diagonal, true, out);
}
const Tensor& triu_(const Tensor& a, int64_t diagonal) {
  EMBER_TRACE("aten::triu_(Tensor self, int diagonal=0) -> Tensor", triu_, a, diagonal);
  return tril_triu_inplace(a, diagonal, true);
}

// ---- trace ------------------------------------------------------------------------------------

Tensor trace(const Tensor& a) {
  EMBER_TRACE("aten::trace(Tensor self) -> Tensor", trace, a);
  EMBER_CHECK(a.dim() == 2, "trace: expected a matrix, but got tensor with dim ", a.dim());
  DType out_dt = is_floating(a.dtype()) ? a.dtype() : DType::Int64;
  autograd::RecordScope scope({&a});
  Tensor result = empty(Shape{}, out_dt, a.device());
  trace_stub.get(a.device())(result, diagonal(a, 0, 0, 1));
  if (scope.rec) {
    scope.done();
    autograd::record_trace(a, result);
  }
  return result;
}

}  // namespace ember
