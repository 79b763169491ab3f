// Normalization front-ends (see ops/nn_norm.h). The row normalizations share one
// path: reshape to rows, the fused row kernel, then the affine as broadcast ops.
// batch_norm folds the statistics and the affine into one per-channel scale and
// shift applied by a single kernel pass.
#include "ember/ops/nn_norm.h"
#include "ember/autograd/derivatives/formula.h"
#include "ember/jit/trace_hook.h"

#include <cmath>

#include "ember/autograd/derivatives/nn_norm.h"
#include "ember/autograd/record.h"
#include "ember/kernels/stubs/nn_norm.h"
#include "ember/ops/autocast.h"
#include "ember/ops/ops.h"
#include "ember/ops/reduce.h"
#include "ember/ops/view.h"

namespace ember {

DispatchStub<RowNormKernel> row_norm_stub("layer_norm");
DispatchStub<RowNormBackwardKernel> row_norm_backward_stub("layer_norm_backward");
DispatchStub<ChannelStatsKernel> channel_stats_stub("batch_norm");
DispatchStub<ChannelGradSumsKernel> channel_grad_sums_stub("batch_norm_backward");
DispatchStub<ChannelAffineKernel> channel_affine_stub("batch_norm_elemt");

namespace {
using B = BinaryOp;
using U = UnaryOp;
using namespace autograd::formula;  // S, plus, minus, mul, div, bin, un

int64_t spatial(const Tensor& x) {
  int64_t s = 1;
  for (int64_t d = 2; d < x.dim(); ++d) s = checked_mul(s, x.sizes()[d], "normalization");
  return s;
}

/// A parameter as x's dtype; checks its element count.
Tensor param(const OptTensor& t, const Tensor& x, int64_t n, const char* what, const char* op) {
  if (!t) return Tensor();
  EMBER_CHECK(t->numel() == n, op, ": ", what, " should contain ", n, " elements not ", t->numel());
  check_same_device_strict(x, *t, op);
  return t->dtype() == x.dtype() ? *t : to_dtype(*t, x.dtype());
}

void check_floating_norm(const Tensor& x, const char* op) {
  EMBER_CHECK(is_floating(x.dtype()), op, "(): expected a floating input, got ",
              dtype_name(x.dtype()));
}

Tensor row_norm(const char* name, const Tensor& x, const Tensor& w, const Tensor& b,
                const autograd::RowNormLayout& layout) {
  autograd::RecordScope scope({&x, &w, &b});
  Tensor xr = contiguous(reshape(x, layout.rows));
  const int64_t R = layout.rows[0];
  // Layer norm (per-column parameters) fuses the affine into the kernel; group and
  // instance norm apply their per-channel affine as broadcast ops.
  const bool fused = layout.affine == layout.rows;
  Tensor wk = fused && w.defined() ? contiguous(reshape(w, Shape{layout.rows[1]})) : Tensor();
  Tensor bk = fused && b.defined() ? contiguous(reshape(b, Shape{layout.rows[1]})) : Tensor();
  Tensor yr = empty(layout.rows, x.dtype(), x.device());
  Tensor mean = empty(Shape{R}, x.dtype(), x.device());
  Tensor rstd = empty(Shape{R}, x.dtype(), x.device());
  if (x.numel() > 0) row_norm_stub.get(x.device())(yr, mean, rstd, xr, wk, bk, layout.eps);
  Tensor y = reshape(yr, layout.affine);
  if (!fused && w.defined()) y = mul(y, reshape(w, layout.param_view));
  if (!fused && b.defined()) y = plus(y, reshape(b, layout.param_view));
  Tensor out = reshape(y, x.sizes());
  if (scope.rec) {
    scope.done();
    autograd::record_row_norm(name, x, w, b, out, mean, rstd, layout);
  }
  return out;
}

}  // namespace

Tensor batch_norm(const Tensor& x, const OptTensor& running_mean, const OptTensor& running_var,
                  const OptTensor& weight, const OptTensor& bias, bool training, double momentum,
                  double eps) {
  EMBER_TRACE_MUTATES(
      "aten::batch_norm(Tensor self, Tensor? running_mean, Tensor? running_var, Tensor? weight, "
      "Tensor? bias, bool training, float momentum, float eps) -> Tensor",
      batch_norm, x, running_mean, running_var, weight, bias, training, momentum, eps);
  if (autocast::active()) {  // Note [Autocast policy]
    // The running statistics are updated in place: never cast (PyTorch keeps them too).
    auto c_ =
        autocast::autocast_inputs("batch_norm", {x, autocast::opt(weight), autocast::opt(bias)});
    autocast::ExcludeGuard g_;
    return batch_norm(c_[0], running_mean, running_var, autocast::to_opt(c_[1]),
                      autocast::to_opt(c_[2]), training, momentum, eps);
  }
  const char* op = "batch_norm";
  check_floating_norm(x, op);
  EMBER_CHECK(x.dim() >= 2, "batch_norm: expected an input of at least 2 dims (N, C, ...), got ",
              shape_str(x.sizes()));
  const int64_t N = x.sizes()[0], C = x.sizes()[1], Sp = spatial(x);
  Tensor w = param(weight, x, C, "weight", op), b = param(bias, x, C, "bias", op);
  if (running_mean) param(running_mean, x, C, "running_mean", op);
  if (running_var) param(running_var, x, C, "running_var", op);
  EMBER_CHECK(training || (running_mean && running_var),
              "batch_norm: running_mean and running_var must be defined in evaluation mode");
  autograd::RecordScope scope({&x, &w, &b});
  Tensor x3 = contiguous(reshape(x, Shape{N, C, Sp}));
  Tensor mean, invstd;
  if (training) {
    mean = empty(Shape{C}, x.dtype(), x.device());
    Tensor var = empty(Shape{C}, x.dtype(), x.device());
    if (x.numel() > 0) {
      channel_stats_stub.get(x.device())(mean, var, x3);
    } else {
      fill_(mean, Scalar(std::nan("")));
      fill_(var, Scalar(std::nan("")));
    }
    invstd = unary(U::rsqrt, plus(var, S(eps)));
    autograd::GradModeGuard no_grad(false);
    const double count = double(N) * double(Sp);
    if (running_mean)
      copy_(*running_mean, plus(mul(*running_mean, S(1 - momentum)), mul(mean, S(momentum))));
    if (running_var) {
      Tensor unbiased = mul(var, S(count > 1 ? count / (count - 1) : INFINITY));
      copy_(*running_var, plus(mul(*running_var, S(1 - momentum)), mul(unbiased, S(momentum))));
    }
  } else {
    autograd::GradModeGuard no_grad(false);
    mean = contiguous(to_dtype(*running_mean, x.dtype()));
    invstd = unary(U::rsqrt, plus(to_dtype(*running_var, x.dtype()), S(eps)));
  }
  Tensor scale = contiguous(w.defined() ? mul(invstd, w) : invstd);
  Tensor shift = unary(U::neg, mul(mean, scale));
  if (b.defined()) shift = plus(shift, b);
  shift = contiguous(shift);
  Tensor out3 = empty(x3.sizes(), x.dtype(), x.device());
  if (x.numel() > 0)
    channel_affine_stub.get(x.device())(out3, x3, scale, Tensor(), Tensor(), shift);
  Tensor out = reshape(out3, x.sizes());
  if (scope.rec) {
    scope.done();
    autograd::record_batch_norm(x, w, b, out, mean, invstd, training, eps);
  }
  return out;
}

Tensor layer_norm(const Tensor& x, const Shape& ns, const OptTensor& weight, const OptTensor& bias,
                  double eps) {
  EMBER_TRACE(
      "aten::layer_norm(Tensor self, int[] normalized_shape, Tensor? weight, Tensor? bias, float "
      "eps) -> Tensor",
      layer_norm, x, ns, weight, bias, eps);
  if (autocast::active()) {  // Note [Autocast policy]
    auto c_ =
        autocast::autocast_inputs("layer_norm", {x, autocast::opt(weight), autocast::opt(bias)});
    autocast::ExcludeGuard g_;
    return layer_norm(c_[0], ns, autocast::to_opt(c_[1]), autocast::to_opt(c_[2]), eps);
  }
  check_floating_norm(x, "layer_norm");
  const int64_t k = int64_t(ns.size());
  EMBER_CHECK(k >= 1,
              "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least "
              "one element, but got normalized_shape = ",
              shape_str(ns));
  bool ok = x.dim() >= k;
  for (int64_t i = 0; ok && i < k; ++i) ok = x.sizes()[x.dim() - k + i] == ns[i];
  if (!ok) {
    std::string want = "[*";
    for (int64_t v : ns) want += ", " + std::to_string(v);
    raise(ErrorKind::Runtime, "Given normalized_shape=", shape_str(ns),
          ", expected input with shape ", want, "], but got input of size", shape_str(x.sizes()));
  }
  EMBER_CHECK(!weight || weight->sizes() == ns,
              "Expected weight to be of same shape as normalized_shape, but got weight of shape ",
              shape_str(weight->sizes()), " and normalized_shape = ", shape_str(ns));
  EMBER_CHECK(!bias || bias->sizes() == ns,
              "Expected bias to be of same shape as normalized_shape, but got bias of shape ",
              shape_str(bias->sizes()), " and normalized_shape = ", shape_str(ns));
  int64_t L = 1, R = 1;
  for (int64_t v : ns) L = checked_mul(L, v, "layer_norm");
  for (int64_t d = 0; d < x.dim() - k; ++d) R = checked_mul(R, x.sizes()[d], "layer_norm");
  Tensor w = param(weight, x, L, "weight", "layer_norm");
  Tensor b = param(bias, x, L, "bias", "layer_norm");
  autograd::RowNormLayout layout;
  layout.rows = layout.affine = Shape{R, L};
  layout.param_view = Shape{L};
  layout.param_dims = Shape{0};
  layout.eps = eps;
  return row_norm("NativeLayerNormBackward0", x, w, b, layout);
}

Tensor group_norm(const Tensor& x, int64_t G, const OptTensor& weight, const OptTensor& bias,
                  double eps) {
  EMBER_TRACE(
      "aten::group_norm(Tensor self, int num_groups, Tensor? weight, Tensor? bias, float eps) -> "
      "Tensor",
      group_norm, x, G, weight, bias, eps);
  if (autocast::active()) {  // Note [Autocast policy]
    auto c_ =
        autocast::autocast_inputs("group_norm", {x, autocast::opt(weight), autocast::opt(bias)});
    autocast::ExcludeGuard g_;
    return group_norm(c_[0], G, autocast::to_opt(c_[1]), autocast::to_opt(c_[2]), eps);
  }
  check_floating_norm(x, "group_norm");
  EMBER_CHECK(x.dim() >= 2, "Expected at least 2 dimensions for input tensor but received ",
              x.dim());
  const int64_t N = x.sizes()[0], C = x.sizes()[1], Sp = spatial(x);
  EMBER_CHECK(G > 0 && C % G == 0,
              "Expected number of channels in input to be divisible by num_groups, but got input "
              "of shape ",
              shape_str(x.sizes()), " and num_groups=", G);
  EMBER_CHECK(!weight || (weight->dim() == 1 && weight->numel() == C),
              "Expected weight to be a vector of size equal to the number of channels in input, "
              "but got weight of shape ",
              shape_str(weight->sizes()), " and input of shape ", shape_str(x.sizes()));
  EMBER_CHECK(!bias || (bias->dim() == 1 && bias->numel() == C),
              "Expected bias to be a vector of size equal to the number of channels in input, but "
              "got bias of shape ",
              shape_str(bias->sizes()), " and input of shape ", shape_str(x.sizes()));
  Tensor w = param(weight, x, C, "weight", "group_norm");
  Tensor b = param(bias, x, C, "bias", "group_norm");
  autograd::RowNormLayout layout;
  layout.rows = Shape{checked_mul(N, G, "group_norm"), checked_mul(C / G, Sp, "group_norm")};
  layout.affine = Shape{N, C, Sp};
  layout.param_view = Shape{C, 1};
  layout.param_dims = Shape{0, 2};
  layout.eps = eps;
  return row_norm("NativeGroupNormBackward0", x, w, b, layout);
}

Tensor instance_norm(const Tensor& x, const OptTensor& running_mean, const OptTensor& running_var,
                     const OptTensor& weight, const OptTensor& bias, bool use_input_stats,
                     double momentum, double eps) {
  EMBER_TRACE_MUTATES(
      "aten::instance_norm(Tensor self, Tensor? running_mean, Tensor? running_var, Tensor? weight, "
      "Tensor? bias, bool use_input_stats, float momentum, float eps) -> Tensor",
      instance_norm, x, running_mean, running_var, weight, bias, use_input_stats, momentum, eps);
  check_floating_norm(x, "instance_norm");
  EMBER_CHECK(x.dim() >= 2, "instance_norm: expected an input of at least 2 dims (N, C, ...), got ",
              shape_str(x.sizes()));
  if (!use_input_stats) {
    EMBER_CHECK(running_mean && running_var,
                "Expected running_mean and running_var to be defined when use_input_stats is "
                "false");
    return batch_norm(x, running_mean, running_var, weight, bias, false, momentum, eps);
  }
  const int64_t N = x.sizes()[0], C = x.sizes()[1], Sp = spatial(x);
  Tensor w = param(weight, x, C, "weight", "instance_norm");
  Tensor b = param(bias, x, C, "bias", "instance_norm");
  if (running_mean) param(running_mean, x, C, "running_mean", "instance_norm");
  if (running_var) param(running_var, x, C, "running_var", "instance_norm");
  autograd::RowNormLayout layout;
  layout.rows = Shape{checked_mul(N, C, "instance_norm"), Sp};
  layout.affine = Shape{N, C, Sp};
  layout.param_view = Shape{C, 1};
  layout.param_dims = Shape{0, 2};
  layout.eps = eps;
  Tensor out = row_norm("NativeGroupNormBackward0", x, w, b, layout);
  if (running_mean || running_var) {
    // Running statistics: the per-instance ones averaged over the batch.
    autograd::GradModeGuard no_grad(false);
    Tensor x3 = reshape(x, Shape{N, C, Sp});
    if (running_mean) {
      Tensor m = mean(mean(x3, Shape{2}), Shape{0});
      copy_(*running_mean, plus(mul(*running_mean, S(1 - momentum)), mul(m, S(momentum))));
    }
    if (running_var) {
      Tensor v = mean(var(x3, Shape{2}, 1), Shape{0});
      copy_(*running_var, plus(mul(*running_var, S(1 - momentum)), mul(v, S(momentum))));
    }
  }
  return out;
}

}  // namespace ember
