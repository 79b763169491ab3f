// nn front-ends without a family of their own (see ops/nn_misc.h). All are
// composites of recorded ops except embedding, which records EmbeddingBackward0
// for PyTorch's padding_idx / scale_grad_by_freq gradient.
#include "ember/ops/nn_misc.h"
#include "ember/autograd/derivatives/formula.h"
#include "ember/jit/trace_hook.h"

#include <cmath>

#include "ember/autograd/derivatives/distance.h"
#include "ember/autograd/record.h"
#include "ember/kernels/stubs/distance.h"
#include "ember/kernels/tensor_iterator.h"
#include "ember/ops/autocast.h"
#include "ember/ops/factory.h"
#include "ember/ops/index.h"
#include "ember/ops/join.h"
#include "ember/ops/linalg.h"
#include "ember/ops/ops.h"
#include "ember/ops/reduce.h"
#include "ember/ops/sparse.h"
#include "ember/ops/view.h"

namespace ember {
namespace {
using B = BinaryOp;
using U = UnaryOp;
using namespace autograd::formula;  // S, plus, minus, mul, div, bin, un

/// Product of the sizes before the last dim.
int64_t leading(const Tensor& x, const char* op) {
  int64_t m = 1;
  for (int64_t d = 0; d + 1 < x.dim(); ++d) m = checked_mul(m, x.sizes()[d], op);
  return m;
}

Tensor flat_indices(const Tensor& indices, int64_t n, const char* op) {
  EMBER_CHECK(indices.dtype() == DType::Int64 || indices.dtype() == DType::Int32,
              "Expected tensor for argument #1 'indices' to have one of the following scalar "
              "types: Long, Int; but got ember.",
              scalar_type_name(indices.dtype()), "Tensor instead (while checking arguments for ",
              op, ")");
  Tensor flat = reshape(indices, Shape{indices.numel()});
  if (flat.dtype() != DType::Int64) flat = to_dtype(flat, DType::Int64);
  if (flat.numel() > 0) {
    autograd::GradModeGuard no_grad(false);
    Tensor bad = any(binary(B::logical_or, binary(B::lt, flat, wrap_scalar(Scalar(int64_t(0)))),
                            binary(B::ge, flat, wrap_scalar(Scalar(n)))));
    EMBER_CHECK_INDEX(!*to_device(bad, Device()).data<bool>(), "index out of range in self");
  }
  return flat;
}

// PyTorch's embedding_sparse_backward: one entry per looked-up index (padding_idx dropped),
// uncoalesced: repeated indices are separate entries that sum.
Tensor embedding_sparse_grad(Tensor g2, Tensor flat, const Shape& wsizes, int64_t padding_idx,
                             bool scale_grad_by_freq) {
  const int64_t n = flat.numel(), V = wsizes[0];
  if (scale_grad_by_freq) {
    Tensor ones_n = ones(Shape{n}, g2.dtype(), g2.device());
    Tensor counts = index_add(zeros(Shape{V}, g2.dtype(), g2.device()), 0, flat, ones_n);
    g2 = div(g2, unsqueeze(index_select(counts, 0, flat), 1));
  }
  if (padding_idx >= 0) {
    Tensor keep =
        reshape(nonzero(binary(B::ne, flat, wrap_scalar(Scalar(padding_idx)))), Shape{-1});
    if (keep.numel() != n) {
      flat = index_select(flat, 0, keep);
      g2 = index_select(g2, 0, keep);
    }
  }
  return sparse_from_parts(reshape(flat, Shape{1, flat.numel()}), g2, wsizes, false);
}

}  // namespace

Tensor linear(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias) {
  EMBER_TRACE("aten::linear(Tensor self, Tensor weight, Tensor? bias) -> Tensor", linear, x, w,
              bias);
  if (autocast::active()) {  // Note [Autocast policy]
    auto c_ = autocast::autocast_inputs("linear", {x, w, autocast::opt(bias)});
    autocast::ExcludeGuard g_;
    return linear(c_[0], c_[1], autocast::to_opt(c_[2]));
  }
  EMBER_CHECK(x.dtype() == w.dtype(), "mat1 and mat2 must have the same dtype, but got ",
              scalar_type_name(x.dtype()), " and ", scalar_type_name(w.dtype()));
  if (bias)
    EMBER_CHECK(bias->dtype() == x.dtype(), "linear(): bias must have the input's dtype ",
                scalar_type_name(x.dtype()), ", got ", scalar_type_name(bias->dtype()));
  if (w.dim() != 2 || x.dim() < 2) {
    EMBER_CHECK(x.dim() >= 1, "linear(): input must have at least 1 dimension, got a 0-d tensor");
    Tensor r = matmul(x, w.dim() == 2 ? t(w) : w);
    return bias ? plus(r, *bias) : r;
  }
  const int64_t in = x.sizes()[x.dim() - 1], M = leading(x, "linear");
  Tensor b = bias ? *bias : Tensor();
  autograd::RecordScope scope({&x, &w, &b});
  Tensor x2 = x.dim() == 2 ? x : reshape(x, Shape{M, in});
  Tensor r = bias ? addmm(*bias, x2, t(w)) : mm(x2, t(w));
  Shape os = x.sizes();
  os.back() = w.sizes()[0];
  Tensor out = x.dim() == 2 ? r : reshape(r, os);
  if (scope.rec && is_floating(out.dtype())) {
    scope.done();
    // One node for the whole layer: the weight gradient g^T @ x comes out in the
    // weight's own (out, in) layout, with no transposed view to copy later.
    const Shape x_sizes = x.sizes();
    auto node =
        autograd::record("LinearBackward0", {&x, &w, &b}, out,
                         [x_sizes, M, in](autograd::LambdaNode& n,
                                          autograd::variable_list&& g) -> autograd::variable_list {
                           Tensor g2 = reshape(g[0], Shape{M, g[0].sizes().back()});
                           Tensor gx, gw, gb;
                           if (n.should_compute_output(0))
                             gx = reshape(mm(g2, n.unpack(1)), x_sizes);
                           if (n.should_compute_output(1))
                             gw = mm(t(g2), reshape(n.unpack(0), Shape{M, in}));
                           if (n.should_compute_output(2)) gb = sum(g2, Shape{0});
                           return {gx, gw, gb};
                         });
    node->saved.emplace_back(node->should_compute_output(1) ? x : Tensor(), false);
    node->saved.emplace_back(node->should_compute_output(0) ? w : Tensor(), false);
  }
  return out;
}

Tensor bilinear(const Tensor& x1, const Tensor& x2, const Tensor& w,
                const std::optional<Tensor>& bias) {
  EMBER_TRACE("aten::bilinear(Tensor x1, Tensor x2, Tensor weight, Tensor? bias) -> Tensor",
              bilinear, x1, x2, w, bias);
  EMBER_CHECK(w.dim() == 3, "bilinear(): weight must be 3-D (out, in1, in2), got ",
              shape_str(w.sizes()));
  EMBER_CHECK(x1.dim() >= 1 && x1.dim() == x2.dim(),
              "bilinear(): input dimensions do not match: got ", x1.dim(), " and ", x2.dim());
  for (int64_t d = 0; d + 1 < x1.dim(); ++d)
    EMBER_CHECK(x1.sizes()[d] == x2.sizes()[d],
                "bilinear(): input batch dimensions do not match: got ", shape_str(x1.sizes()),
                " and ", shape_str(x2.sizes()));
  const int64_t out = w.sizes()[0], in1 = w.sizes()[1], in2 = w.sizes()[2];
  EMBER_CHECK(x1.sizes().back() == in1, "bilinear(): input1 size does not match weight size: got ",
              x1.sizes().back(), " but expected ", in1);
  EMBER_CHECK(x2.sizes().back() == in2, "bilinear(): input2 size does not match weight size: got ",
              x2.sizes().back(), " but expected ", in2);
  if (bias)
    EMBER_CHECK(bias->dim() == 1 && bias->numel() == out,
                "bilinear(): bias size does not match weight size: got ", bias->numel(),
                " but expected ", out);
  const int64_t M = leading(x1, "bilinear");
  Tensor a = reshape(x1, Shape{M, in1}), b = reshape(x2, Shape{M, in2});
  // (M, in1) @ (in1, out * in2) -> (M, out, in2), then contract in2 with x2.
  Tensor wt = reshape(permute(w, Shape{1, 0, 2}), Shape{in1, checked_mul(out, in2, "bilinear")});
  Tensor tmp = reshape(mm(a, wt), Shape{M, out, in2});
  Tensor y = sum(mul(tmp, unsqueeze(b, 1)), Shape{2});
  if (bias) y = plus(y, *bias);
  Shape os = x1.sizes();
  os.back() = out;
  return reshape(y, os);
}

Tensor dropout(const Tensor& x, double p, bool train, bool feature, bool alpha,
               const Generator& gen) {
  EMBER_TRACE_RANDOM(
      "aten::dropout(Tensor self, float p, bool train, bool feature=False, bool alpha=False, "
      "Generator? generator=None) -> Tensor",
      dropout, x, p, train, feature, alpha, gen);
  EMBER_CHECK_VALUE(p >= 0 && p <= 1, "dropout probability has to be between 0 and 1, but got ", p);
  EMBER_CHECK(is_floating(x.dtype()), "dropout(): expected a floating input, got ",
              dtype_name(x.dtype()));
  if (!train || p == 0 || x.numel() == 0) return x;
  if (p == 1) return mul(x, zeros(Shape{}, x.dtype(), x.device()));
  Shape ns = x.sizes();
  if (feature) {
    EMBER_CHECK(x.dim() >= 2, "Feature dropout requires at least 2 dimensions in the input");
    for (int64_t d = 2; d < x.dim(); ++d) ns[d] = 1;
  }
  Tensor noise = empty(ns, x.dtype(), x.device());
  {
    autograd::GradModeGuard no_grad(false);
    bernoulli_(noise, 1 - p, gen);
  }
  if (!alpha) return mul(x, div(noise, S(1 - p)));
  const double a_ = 1.7580993408473766;
  const double a = 1 / std::sqrt((a_ * a_ * p + 1) * (1 - p));
  Tensor b = plus(mul(minus(noise, S(1.0)), S(a_ * a)), S(a_ * a * p));
  return plus(mul(x, mul(noise, S(a))), b);
}

Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t padding_idx,
                 bool scale_grad_by_freq, bool sparse) {
  EMBER_TRACE(
      "aten::embedding(Tensor weight, Tensor indices, int padding_idx=-1, bool "
      "scale_grad_by_freq=False, bool sparse=False) -> Tensor",
      embedding, weight, indices, padding_idx, scale_grad_by_freq, sparse);
  EMBER_CHECK(weight.dim() == 2, "'weight' must be 2-D, got ", shape_str(weight.sizes()));
  const int64_t V = weight.sizes()[0], D = weight.sizes()[1];
  Tensor flat = flat_indices(indices, V, "embedding");
  autograd::RecordScope scope({&weight});
  Shape os = indices.sizes();
  os.push_back(D);
  Tensor out = reshape(index_select(weight, 0, flat), os);
  if (scope.rec && is_floating(weight.dtype())) {
    scope.done();
    const Shape wsizes = weight.sizes();
    autograd::record(
        "EmbeddingBackward0", {&weight}, out,
        [flat, wsizes, padding_idx, scale_grad_by_freq, sparse](
            autograd::LambdaNode&, autograd::variable_list&& g) -> autograd::variable_list {
          const int64_t n = flat.numel(), V = wsizes[0];
          Tensor g2 = reshape(g[0], Shape{n, wsizes[1]});
          if (sparse)
            return {embedding_sparse_grad(g2, flat, wsizes, padding_idx, scale_grad_by_freq)};
          Tensor keep;
          if (padding_idx >= 0) keep = binary(B::ne, flat, wrap_scalar(Scalar(padding_idx)));
          if (scale_grad_by_freq) {
            Tensor ones_n = ones(Shape{n}, g2.dtype(), g2.device());
            Tensor counts = index_add(zeros(Shape{V}, g2.dtype(), g2.device()), 0, flat, ones_n);
            g2 = div(g2, unsqueeze(index_select(counts, 0, flat), 1));
          }
          if (keep.defined()) g2 = where(unsqueeze(keep, 1), g2, S(0.0));
          return {index_add(zeros(wsizes, g2.dtype(), g2.device()), 0, flat, g2)};
        });
  }
  return out;
}

const Tensor& embedding_renorm_(const Tensor& weight, const Tensor& indices, double max_norm,
                                double norm_type) {
  EMBER_TRACE_MUTATES(
      "aten::embedding_renorm_(Tensor weight, Tensor indices, float max_norm, float norm_type) -> "
      "Tensor",
      embedding_renorm_, weight, indices, max_norm, norm_type);
  EMBER_CHECK(weight.dim() == 2, "'weight' must be 2-D, got ", shape_str(weight.sizes()));
  Tensor flat = flat_indices(indices, weight.sizes()[0], "embedding_renorm_");
  autograd::GradModeGuard no_grad(false);
  if (flat.numel() == 0) return weight;
  Tensor rows = index_select(weight, 0, flat);
  Tensor norms = norm(rows, norm_type, Shape{1}, true);
  Tensor scale =
      where(binary(B::gt, norms, S(max_norm)), div(S(max_norm), plus(norms, S(1e-7))), S(1.0));
  index_put_(weight, {flat}, mul(rows, scale));
  return weight;
}

Tensor one_hot(const Tensor& t, int64_t num_classes) {
  EMBER_TRACE("aten::one_hot(Tensor self, int num_classes=-1) -> Tensor", one_hot, t, num_classes);
  EMBER_CHECK(t.dtype() == DType::Int64,
              "one_hot is only applicable to index tensor of type "
              "LongTensor, got ",
              scalar_type_name(t.dtype()));
  int64_t C = num_classes;
  if (t.numel() == 0) {
    EMBER_CHECK(C > 0, "Can not infer total number of classes from empty tensor.");
  } else {
    const int64_t lo = *to_device(amin(t), Device()).data<int64_t>();
    const int64_t hi = *to_device(amax(t), Device()).data<int64_t>();
    EMBER_CHECK(lo >= 0, "Class values must be non-negative.");
    if (C == -1) C = hi + 1;
    EMBER_CHECK(C > hi, "Class values must be smaller than num_classes.");
  }
  Tensor cls = arange(Scalar(int64_t(0)), Scalar(C), Scalar(int64_t(1)), DType::Int64, t.device());
  return to_dtype(binary(B::eq, unsqueeze(t, -1), cls), DType::Int64);
}

Tensor pdist(const Tensor& x, double p) {
  EMBER_TRACE("aten::pdist(Tensor self, float p=2) -> Tensor", pdist, x, p);
  EMBER_CHECK(x.dim() == 2, "pdist only supports 2D tensors, got: ", x.dim(), "D");
  EMBER_CHECK(is_floating(x.dtype()), "pdist only supports floating-point dtypes");
  EMBER_CHECK(p >= 0, "pdist only supports non-negative p values");
  const int64_t N = x.sizes()[0];
  std::vector<int64_t> I, J;
  for (int64_t i = 0; i < N; ++i)
    for (int64_t j = i + 1; j < N; ++j) {
      I.push_back(i);
      J.push_back(j);
    }
  if (I.empty()) return empty(Shape{0}, x.dtype(), x.device());
  Tensor diff = minus(index_select(x, 0, int64_tensor(I, x.device())),
                      index_select(x, 0, int64_tensor(J, x.device())));
  return norm(diff, p, Shape{1}, false);
}

DispatchStub<CdistFn> cdist_stub("cdist");
DispatchStub<EuclideanFinishFn> euclidean_finish_stub("cdist");

namespace {

/// x (batch..., n, M) broadcast to `batch` and flattened to (B, n, M) in `dt`, contiguous.
Tensor batched_rows(const Tensor& x, const Shape& batch, int64_t B, DType dt) {
  const int64_t n = x.sizes()[x.dim() - 2], M = x.sizes()[x.dim() - 1];
  Shape full = batch;
  full.push_back(n);
  full.push_back(M);
  Tensor r = contiguous(reshape(expand(x, full), Shape{B, n, M}));
  return r.dtype() == dt ? r : to_dtype(r, dt);
}

}  // namespace

// PyTorch's cdist (ATen/native/Distance.cpp): p = 2 goes through the matrix product
// ||x1||^2 + ||x2||^2 - 2 x1 x2^T (one GEMM, then one fused clamp + sqrt pass) when
// compute_mode asks for it or, by default, when P > 25 or R > 25; every other p (and
// p = 2 otherwise) runs the direct kernel. The batch dims broadcast. Half and bfloat16
// compute in float32.
Tensor cdist(const Tensor& x1, const Tensor& x2, double p, const std::string& mode) {
  EMBER_TRACE(
      "aten::cdist(Tensor x1, Tensor x2, float p=2, str "
      "mode='use_mm_for_euclid_dist_if_necessary') -> Tensor",
      cdist, x1, x2, p, mode);
  EMBER_CHECK(x1.dim() >= 2, "cdist only supports at least 2D tensors, X1 got: ", x1.dim(), "D");
  EMBER_CHECK(x2.dim() >= 2, "cdist only supports at least 2D tensors, X2 got: ", x2.dim(), "D");
  EMBER_CHECK(x1.sizes().back() == x2.sizes().back(),
              "X1 and X2 must have the same number of columns. X1: ", x1.sizes().back(),
              " X2: ", x2.sizes().back());
  EMBER_CHECK_VALUE(mode == "use_mm_for_euclid_dist_if_necessary" ||
                        mode == "use_mm_for_euclid_dist" || mode == "donot_use_mm_for_euclid_dist",
                    mode, " is not a valid value for compute_mode");
  EMBER_CHECK(is_floating(x1.dtype()),
              "cdist only supports floating-point dtypes, X1 got: ", scalar_type_name(x1.dtype()));
  EMBER_CHECK(is_floating(x2.dtype()),
              "cdist only supports floating-point dtypes, X2 got: ", scalar_type_name(x2.dtype()));
  EMBER_CHECK(p >= 0, "cdist only supports non-negative p values");
  EMBER_CHECK(x1.device() == x2.device(),
              "X1 and X2 must have the same device type. X1: ", x1.device().str(),
              " X2: ", x2.device().str());
  // PyTorch's message for mixed dtypes (its kernels' scalar-type check).
  EMBER_CHECK(x1.dtype() == x2.dtype(), "cdist: expected scalar type ",
              scalar_type_name(x1.dtype()), " but found ", scalar_type_name(x2.dtype()));
  const int64_t P = x1.sizes()[x1.dim() - 2], R = x2.sizes()[x2.dim() - 2];
  const int64_t M = x1.sizes().back();
  const bool use_mm =
      p == 2 && (mode == "use_mm_for_euclid_dist" ||
                 (mode == "use_mm_for_euclid_dist_if_necessary" && (P > 25 || R > 25)));

  Shape b1(x1.sizes().begin(), x1.sizes().end() - 2), b2(x2.sizes().begin(), x2.sizes().end() - 2);
  const Shape batch = broadcast_shapes(b1, b2);
  int64_t B = 1;
  for (int64_t s : batch) B = checked_mul(B, s, "cdist");
  Shape os = batch;
  os.push_back(P);
  os.push_back(R);
  // Any empty input: PyTorch's _cdist_forward (CdistBackward0), whatever p and mode.
  const bool empty_in = x1.numel() == 0 || x2.numel() == 0;

  autograd::RecordScope scope({&x1, &x2});
  Tensor out;
  if (P == 0 || R == 0 || B == 0) {
    out = empty(os, x1.dtype(), x1.device());
  } else if (M == 0) {
    out = zeros(os, x1.dtype(), x1.device());
  } else {
    const DType ct = x1.dtype() == DType::Float64 ? DType::Float64 : DType::Float32;
    Tensor a = batched_rows(x1, batch, B, ct), b = batched_rows(x2, batch, B, ct);
    if (use_mm) {
      Tensor g = contiguous(matmul(a, transpose(b, 1, 2)));  // (B, P, R) = x1 x2^T
      euclidean_finish_stub.get(x1.device())(g, a, b);
      out = reshape(g, os);
    } else {
      out = empty(os, ct, x1.device());
      cdist_stub.get(x1.device())(reshape(out, Shape{B, P, R}), a, contiguous(transpose(b, 1, 2)),
                                  p);
    }
    if (ct != x1.dtype()) out = to_dtype(out, x1.dtype());
  }
  if (scope.rec) {
    scope.done();
    if (use_mm && !empty_in) {
      // PyTorch views _euclidean_dist's result to the output shape: the graph is
      // ViewBackward0 -> EuclideanDistBackward0.
      autograd::record_euclidean_dist(x1, x2, out);
      out = view(out, os);
    } else {
      autograd::record_cdist(x1, x2, out, p);
    }
  }
  return out;
}

}  // namespace ember
