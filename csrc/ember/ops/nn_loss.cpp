// Loss front-ends (see ops/nn_loss.h). nll_loss / cross_entropy canonicalize their
// input to rows (M, C) and call one fused kernel; the backward is recorded by
// derivatives/nn_loss.cpp. The other losses are composites of recorded ops.
#include "ember/ops/nn_loss.h"
#include "ember/autograd/derivatives/formula.h"
#include "ember/jit/trace_hook.h"

#include <cmath>

#include "ember/autograd/derivatives/nn_loss.h"
#include "ember/autograd/record.h"
#include "ember/kernels/stubs/nn_loss.h"
#include "ember/ops/autocast.h"
#include "ember/ops/factory.h"
#include "ember/ops/index.h"
#include "ember/ops/join.h"
#include "ember/ops/nn_activation.h"
#include "ember/ops/ops.h"
#include "ember/ops/reduce.h"
#include "ember/ops/view.h"

namespace ember {

DispatchStub<NllKernel> nll_stub("nll_loss");
DispatchStub<CrossEntropyBackwardKernel> cross_entropy_backward_stub("cross_entropy_backward");
DispatchStub<NllBackwardKernel> nll_backward_stub("nll_loss_backward");
DispatchStub<CtcKernel> ctc_stub("ctc_loss");
DispatchStub<CtcBackwardKernel> ctc_backward_stub("ctc_loss_backward");

namespace {
using B = BinaryOp;
using U = UnaryOp;
using namespace autograd::formula;  // S, plus, minus, mul, div, bin, un

void check_floating(const Tensor& x, const char* op) {
  EMBER_CHECK(is_floating(x.dtype()), op, "(): expected a floating input, got ",
              dtype_name(x.dtype()));
}

/// Checks nll/cross-entropy shapes with PyTorch's messages.
void check_class_target(const Tensor& input, const Tensor& target, const char* op) {
  EMBER_CHECK(target.dtype() == DType::Int64, "expected scalar type Long but found ",
              scalar_type_name(target.dtype()), " (", op,
              "() with class indices needs an int64 target; for class probabilities pass a "
              "floating target of the input's shape ",
              shape_str(input.sizes()), ")");
  check_floating(input, op);
  EMBER_CHECK(input.dim() >= 1, op, "(): Expected 1 or more dimensions (got 0)");
  if (input.dim() == 1) {
    EMBER_CHECK(target.dim() == 0, op, "(): 0D target tensor expected for a 1D input, got ",
                shape_str(target.sizes()));
    return;
  }
  EMBER_CHECK(target.dim() >= 1 && (input.dim() > 2 || target.dim() == 1),
              "0D or 1D target tensor expected, multi-target not supported (", op, ": input ",
              shape_str(input.sizes()), ", target ", shape_str(target.sizes()), ")");
  EMBER_CHECK_VALUE(input.sizes()[0] == target.sizes()[0], "Expected input batch_size (",
                    input.sizes()[0], ") to match target batch_size (", target.sizes()[0], ").");
  if (input.dim() > 2) {
    Shape want{input.sizes()[0]};
    for (int64_t d = 2; d < input.dim(); ++d) want.push_back(input.sizes()[d]);
    EMBER_CHECK(target.sizes() == want, "Expected target size ", shape_str(want), ", got ",
                shape_str(target.sizes()));
  }
}

Tensor class_weight(const std::optional<Tensor>& weight, const Tensor& input, const char* op) {
  if (!weight) return Tensor();
  const int64_t C = input.dim() == 1 ? input.sizes()[0] : input.sizes()[1];
  EMBER_CHECK(
      weight->dim() == 1 && weight->numel() == C, "weight tensor should be defined either for all ",
      C, " classes or no classes but got weight tensor of shape: ", shape_str(weight->sizes()));
  check_same_device_strict(input, *weight, op);
  return contiguous(to_dtype(*weight, input.dtype()));
}

Tensor nll_impl(const Tensor& input, const Tensor& target, const std::optional<Tensor>& weight,
                Reduction red, int64_t ignore_index, bool ce) {
  const char* op = ce ? "cross_entropy" : "nll_loss";
  check_class_target(input, target, op);
  check_same_device_strict(input, target, op);
  Tensor w = class_weight(weight, input, op);
  Tensor w_in = weight ? *weight : Tensor();
  autograd::RecordScope scope({&input, &w_in});
  Tensor xr = contiguous(autograd::nll_rows(input));
  const int64_t M = xr.sizes()[0];
  Tensor tr = contiguous(reshape(target, Shape{M}));
  Tensor loss = empty(Shape{M}, input.dtype(), input.device());
  Tensor wt = empty(Shape{M}, input.dtype(), input.device());
  Tensor lse = ce ? empty(Shape{M}, input.dtype(), input.device()) : Tensor();
  if (M > 0) nll_stub.get(input.device())(loss, wt, lse, xr, tr, w, ignore_index);
  Tensor out, total;
  if (red == Reduction::None) {
    out = reshape(loss, target.sizes());
  } else if (red == Reduction::Sum) {
    out = sum(loss);
  } else {
    total = sum(wt);
    out = div(sum(loss), total);
  }
  if (scope.rec) {
    scope.done();
    autograd::NllSaved s;
    s.target = tr;
    s.wt = wt;
    s.lse = lse;
    s.total = total;
    s.reduction = red;
    s.ignore_index = ignore_index;
    s.cross_entropy = ce;
    autograd::record_nll(input, weight ? *weight : Tensor(), out, std::move(s));
  }
  return out;
}

/// [1, C, 1, ...] view of a (C) weight for an input of rank `nd` (class dim 1, or 0 for 1-D).
Tensor class_view(const Tensor& w, int64_t nd) {
  Shape s(size_t(nd), 1);
  s[nd == 1 ? 0 : 1] = w.numel();
  return reshape(w, s);
}

Tensor cross_entropy_probs(const Tensor& input, const Tensor& target, const Tensor& w,
                           Reduction red, double ls) {
  EMBER_CHECK(input.dim() >= 1, "cross_entropy(): Expected 1 or more dimensions (got 0)");
  const int64_t cdim = input.dim() == 1 ? 0 : 1;
  const int64_t C = input.sizes()[cdim];
  Tensor logp = log_softmax(input, cdim);
  Tensor t = target.dtype() == input.dtype() ? target : to_dtype(target, input.dtype());
  if (ls > 0) t = plus(mul(t, S(1 - ls)), S(ls / double(C)));
  Tensor prod = mul(logp, t);
  if (w.defined()) prod = mul(prod, class_view(w, input.dim()));
  Tensor loss = unary(U::neg, sum(prod, Shape{cdim}));
  if (red == Reduction::Mean) {
    const int64_t n = C ? input.numel() / C : 0;
    return div(sum(loss), S(double(n)));
  }
  return apply_reduction(loss, red);
}

}  // namespace

Tensor apply_reduction(const Tensor& loss, Reduction r) {
  switch (r) {
    case Reduction::None:
      return loss;
    case Reduction::Sum:
      return sum(loss);
    case Reduction::Mean:
      return mean(loss);
  }
  EMBER_ERROR("invalid reduction ", int64_t(r));
}

Tensor nll_loss(const Tensor& input, const Tensor& target, const std::optional<Tensor>& weight,
                Reduction red, int64_t ignore_index) {
  EMBER_TRACE(
      "aten::nll_loss(Tensor input, Tensor target, Tensor? weight, int reduction, int "
      "ignore_index=-100) -> Tensor",
      nll_loss, input, target, weight, red, ignore_index);
  if (autocast::active()) {  // Note [Autocast policy]
    auto c_ = autocast::autocast_inputs("nll_loss", {input, target, autocast::opt(weight)});
    autocast::ExcludeGuard g_;
    return nll_loss(c_[0], c_[1], autocast::to_opt(c_[2]), red, ignore_index);
  }
  return nll_impl(input, target, weight, red, ignore_index, false);
}

Tensor cross_entropy(const Tensor& input, const Tensor& target, const std::optional<Tensor>& weight,
                     Reduction red, int64_t ignore_index, double ls) {
  EMBER_TRACE(
      "aten::cross_entropy(Tensor input, Tensor target, Tensor? weight, int reduction, int "
      "ignore_index=-100, float label_smoothing=0) -> Tensor",
      cross_entropy, input, target, weight, red, ignore_index, ls);
  if (autocast::active()) {  // Note [Autocast policy]
    auto c_ = autocast::autocast_inputs("cross_entropy", {input, target, autocast::opt(weight)});
    autocast::ExcludeGuard g_;
    return cross_entropy(c_[0], c_[1], autocast::to_opt(c_[2]), red, ignore_index, ls);
  }
  EMBER_CHECK(ls >= 0 && ls <= 1, "label_smoothing must be between 0.0 and 1.0. Got: ", ls);
  if (is_floating(target.dtype()) && target.sizes() == input.sizes()) {
    check_floating(input, "cross_entropy");
    return cross_entropy_probs(input, target, class_weight(weight, input, "cross_entropy"), red,
                               ls);
  }
  if (ls == 0) return nll_impl(input, target, weight, red, ignore_index, true);
  // Label smoothing over class indices (PyTorch's cross_entropy_loss_label_smoothing).
  check_class_target(input, target, "cross_entropy");
  Tensor w = class_weight(weight, input, "cross_entropy");
  const int64_t cdim = input.dim() == 1 ? 0 : 1;
  const int64_t C = input.sizes()[cdim];
  Tensor logp = log_softmax(input, cdim);
  Tensor nll = nll_impl(logp, target, weight, red, ignore_index, false);
  Tensor ignored = binary(B::eq, target, wrap_scalar(Scalar(ignore_index)));
  Tensor prod = w.defined() ? mul(logp, class_view(w, input.dim())) : logp;
  Tensor smooth = where(ignored, S(0.0), unary(U::neg, sum(prod, Shape{cdim})));
  Tensor ret;
  if (red == Reduction::Mean) {
    Tensor kept = unary(U::logical_not, ignored);
    Tensor denom;
    if (w.defined()) {
      Tensor safe_t = where(ignored, wrap_scalar(Scalar(int64_t(0))), target);
      Tensor wt =
          reshape(index_select(w, 0, reshape(safe_t, Shape{safe_t.numel()})), target.sizes());
      denom = sum(where(kept, wt, S(0.0)));
    } else {
      denom = to_dtype(sum(kept), input.dtype());
    }
    ret = div(sum(smooth), denom);
  } else {
    ret = apply_reduction(smooth, red);
  }
  return plus(mul(nll, S(1 - ls)), mul(ret, S(ls / double(C))));
}

Tensor mse_loss(const Tensor& x, const Tensor& t, Reduction r) {
  EMBER_TRACE("aten::mse_loss(Tensor self, Tensor t, int reduction) -> Tensor", mse_loss, x, t, r);
  if (autocast::active()) {  // Note [Autocast policy]
    auto c_ = autocast::autocast_inputs("mse_loss", {x, t});
    autocast::ExcludeGuard g_;
    return mse_loss(c_[0], c_[1], r);
  }
  Tensor d = minus(x, t);
  return apply_reduction(mul(d, d), r);
}

Tensor l1_loss(const Tensor& x, const Tensor& t, Reduction r) {
  EMBER_TRACE("aten::l1_loss(Tensor self, Tensor t, int reduction) -> Tensor", l1_loss, x, t, r);
  if (autocast::active()) {  // Note [Autocast policy]
    auto c_ = autocast::autocast_inputs("l1_loss", {x, t});
    autocast::ExcludeGuard g_;
    return l1_loss(c_[0], c_[1], r);
  }
  return apply_reduction(unary(U::abs, minus(x, t)), r);
}

Tensor smooth_l1_loss(const Tensor& x, const Tensor& t, Reduction r, double beta) {
  EMBER_TRACE("aten::smooth_l1_loss(Tensor self, Tensor t, int reduction, float beta) -> Tensor",
              smooth_l1_loss, x, t, r, beta);
  if (autocast::active()) {  // Note [Autocast policy]
    auto c_ = autocast::autocast_inputs("smooth_l1_loss", {x, t});
    autocast::ExcludeGuard g_;
    return smooth_l1_loss(c_[0], c_[1], r, beta);
  }
  EMBER_CHECK(beta >= 0, "smooth_l1_loss does not support negative values for beta.");
  if (beta == 0) return l1_loss(x, t, r);
  Tensor d = unary(U::abs, minus(x, t));
  Tensor quad = div(mul(mul(d, d), S(0.5)), S(beta));
  return apply_reduction(where(binary(B::lt, d, S(beta)), quad, minus(d, S(0.5 * beta))), r);
}

Tensor huber_loss(const Tensor& x, const Tensor& t, Reduction r, double delta) {
  EMBER_TRACE("aten::huber_loss(Tensor self, Tensor t, int reduction, float delta) -> Tensor",
              huber_loss, x, t, r, delta);
  if (autocast::active()) {  // Note [Autocast policy]
    auto c_ = autocast::autocast_inputs("huber_loss", {x, t});
    autocast::ExcludeGuard g_;
    return huber_loss(c_[0], c_[1], r, delta);
  }
  EMBER_CHECK(delta > 0, "huber_loss does not support non-positive values for delta.");
  Tensor d = unary(U::abs, minus(x, t));
  Tensor quad = mul(mul(d, d), S(0.5));
  Tensor lin = mul(minus(d, S(0.5 * delta)), S(delta));
  return apply_reduction(where(binary(B::lt, d, S(delta)), quad, lin), r);
}

Tensor binary_cross_entropy(const Tensor& x, const Tensor& t, const std::optional<Tensor>& weight,
                            Reduction r) {
  EMBER_TRACE(
      "aten::binary_cross_entropy(Tensor self, Tensor t, Tensor? weight, int reduction) -> Tensor",
      binary_cross_entropy, x, t, weight, r);
  if (autocast::active()) {  // Note [Autocast policy]
    auto c_ = autocast::autocast_inputs("binary_cross_entropy", {x, t, autocast::opt(weight)});
    autocast::ExcludeGuard g_;
    return binary_cross_entropy(c_[0], c_[1], autocast::to_opt(c_[2]), r);
  }
  check_floating(x, "binary_cross_entropy");
  EMBER_CHECK_VALUE(t.sizes() == x.sizes(), "Using a target size (", shape_str(t.sizes()),
                    ") that is different to the input size (", shape_str(x.sizes()),
                    ") is deprecated. Please ensure they have the same size.");
  {
    autograd::GradModeGuard no_grad(false);
    Tensor bad = any(binary(B::logical_or, binary(B::lt, x, S(0.0)), binary(B::gt, x, S(1.0))));
    EMBER_CHECK(!*to_device(bad, Device()).data<bool>(),
                "all elements of input should be between 0 and 1");
  }
  // log clamped at -100; the branch a where drops sees 1, so x = 0 or 1 gives no NaN.
  auto clamped_log = [](const Tensor& v) {
    Tensor pos = binary(B::gt, v, S(0.0));
    Tensor l = binary(B::maximum, unary(U::log, where(pos, v, S(1.0))), S(-100.0));
    return where(pos, l, S(-100.0));
  };
  Tensor lx = clamped_log(x), l1x = clamped_log(minus(S(1.0), x));
  Tensor loss = unary(U::neg, plus(mul(t, lx), mul(minus(S(1.0), t), l1x)));
  if (weight) loss = mul(loss, *weight);
  return apply_reduction(loss, r);
}

Tensor binary_cross_entropy_with_logits(const Tensor& x, const Tensor& t,
                                        const std::optional<Tensor>& weight,
                                        const std::optional<Tensor>& pos_weight, Reduction r) {
  EMBER_TRACE(
      "aten::binary_cross_entropy_with_logits(Tensor self, Tensor t, Tensor? weight, Tensor? "
      "pos_weight, int reduction) -> Tensor",
      binary_cross_entropy_with_logits, x, t, weight, pos_weight, r);
  if (autocast::active()) {  // Note [Autocast policy]
    auto c_ = autocast::autocast_inputs("binary_cross_entropy_with_logits",
                                        {x, t, autocast::opt(weight), autocast::opt(pos_weight)});
    autocast::ExcludeGuard g_;
    return binary_cross_entropy_with_logits(c_[0], c_[1], autocast::to_opt(c_[2]),
                                            autocast::to_opt(c_[3]), r);
  }
  check_floating(x, "binary_cross_entropy_with_logits");
  EMBER_CHECK_VALUE(t.sizes() == x.sizes(), "Target size (", shape_str(t.sizes()),
                    ") must be the same as input size (", shape_str(x.sizes()), ")");
  // log(1 + exp(-x)) = max(-x, 0) + log1p(exp(-|x|)): never overflows.
  Tensor sp = plus(binary(B::maximum, unary(U::neg, x), S(0.0)),
                   unary(U::log1p, unary(U::exp, unary(U::neg, unary(U::abs, x)))));
  Tensor one_minus_t = minus(S(1.0), t);
  Tensor loss;
  if (pos_weight) {
    Tensor lw = plus(mul(minus(*pos_weight, S(1.0)), t), S(1.0));
    loss = plus(mul(one_minus_t, x), mul(lw, sp));
  } else {
    loss = plus(mul(one_minus_t, x), sp);
  }
  if (weight) loss = mul(loss, *weight);
  return apply_reduction(loss, r);
}

Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                const Tensor& target_lengths, int64_t blank, Reduction r, bool zero_infinity) {
  EMBER_TRACE(
      "aten::ctc_loss(Tensor log_probs, Tensor targets, Tensor input_lengths, Tensor "
      "target_lengths, int blank, int reduction, bool zero_infinity) -> Tensor",
      ctc_loss, log_probs, targets, input_lengths, target_lengths, blank, r, zero_infinity);
  const char* op = "ctc_loss";
  check_floating(log_probs, op);
  EMBER_CHECK(log_probs.dim() == 3 || log_probs.dim() == 2, op,
              "(): log_probs must be (T, N, C) or (T, C), got ", shape_str(log_probs.sizes()));
  const bool batched = log_probs.dim() == 3;
  Tensor lp3 = batched ? log_probs : unsqueeze(log_probs, 1);
  const int64_t T = lp3.sizes()[0], N = lp3.sizes()[1], C = lp3.sizes()[2];
  EMBER_CHECK(blank >= 0 && blank < C, "blank must be in label range");
  EMBER_CHECK(!is_floating(targets.dtype()) && targets.dtype() != DType::Bool, op,
              "(): targets must hold integer labels, got ", dtype_name(targets.dtype()));
  std::vector<int64_t> in_l = to_int64_vector(reshape(input_lengths, Shape{input_lengths.numel()}));
  std::vector<int64_t> tg_l =
      to_int64_vector(reshape(target_lengths, Shape{target_lengths.numel()}));
  EMBER_CHECK(int64_t(in_l.size()) == N, "input_lengths must be of size batch_size (", N, "), got ",
              in_l.size());
  EMBER_CHECK(int64_t(tg_l.size()) == N, "target_lengths must be of size batch_size (", N,
              "), got ", tg_l.size());
  Tensor tg = contiguous(to_dtype(targets, DType::Int64));
  const bool padded = batched ? tg.dim() == 2 : false;
  std::vector<int64_t> offsets(static_cast<size_t>(N));
  int64_t pos = 0, max_len = 0;
  for (int64_t n = 0; n < N; ++n) {
    EMBER_CHECK(in_l[n] >= 0 && in_l[n] <= T, "Expected input_lengths to have value at most ", T,
                ", but got value ", in_l[n], " (while checking arguments for ctc_loss_cpu)");
    EMBER_CHECK(tg_l[n] >= 0, "ctc_loss(): target_lengths must be non-negative, got ", tg_l[n]);
    max_len = std::max(max_len, tg_l[n]);
    if (padded) {
      EMBER_CHECK(tg.sizes()[0] == N, "ctc_loss(): padded targets must have batch size ", N,
                  ", got ", shape_str(tg.sizes()));
      EMBER_CHECK(tg_l[n] <= tg.sizes()[1], "Expected tensor to have size at least ", tg_l[n],
                  " at dimension 1, but got size ", tg.sizes()[1],
                  " for argument #2 'targets' (while checking arguments for ctc_loss_cpu)");
      offsets[n] = n * tg.sizes()[1];
    } else {
      offsets[n] = pos;
      pos += tg_l[n];
    }
  }
  if (!padded)
    EMBER_CHECK(tg.numel() >= pos, "ctc_loss(): the concatenated targets have ", tg.numel(),
                " labels but target_lengths sum to ", pos);
  {
    std::vector<int64_t> labels = to_int64_vector(reshape(tg, Shape{tg.numel()}));
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < tg_l[n]; ++k) {
        const int64_t c = labels[size_t(offsets[n] + k)];
        EMBER_CHECK_INDEX(c >= 0 && c < C && c != blank, "ctc_loss(): target label ", c,
                          " of sample ", n, " is out of range [0, ", C, ") or is the blank");
      }
  }
  autograd::RecordScope scope({&log_probs});
  Tensor lp = contiguous(lp3);
  // targets may live on another device than log_probs (PyTorch takes CPU targets for CUDA
  // log_probs); the kernels read them on lp's device
  Tensor flat = to_device(reshape(tg, Shape{tg.numel()}), lp.device());
  Tensor off_t = int64_tensor(offsets, lp.device());
  Tensor in_t = int64_tensor(in_l, lp.device()), tg_t = int64_tensor(tg_l, lp.device());
  Tensor nll = empty(Shape{N}, lp.dtype(), lp.device());
  Tensor alpha = empty(Shape{N, T, 2 * max_len + 1}, lp.dtype(), lp.device());
  if (N > 0) ctc_stub.get(lp.device())(nll, alpha, lp, flat, off_t, in_t, tg_t, blank);
  Tensor out = nll;
  if (zero_infinity)
    out = where(unary(U::isinf, nll), S(0.0), nll);
  else
    out = clone(nll);
  if (scope.rec) {
    scope.done();
    autograd::record_ctc(log_probs, lp, out, flat, off_t, in_t, tg_t, nll, alpha, blank,
                         zero_infinity);
  }
  if (!batched) out = reshape(out, Shape{});
  if (r == Reduction::Mean) {
    Tensor lens = binary(B::maximum, to_dtype(tg_t, out.dtype()), S(1.0));
    return mean(div(out, batched ? lens : reshape(lens, Shape{})));
  }
  return apply_reduction(out, r);
}

}  // namespace ember
