// scaled_dot_product_attention front-ends: the fused flash path (kernels in
// backends/cpu/nn_attention.cpp, Note [Flash attention on the CPU]) and the
// composite math path.
#include "ember/ops/nn_attention.h"
#include "ember/jit/trace_hook.h"

#include <cmath>
#include <limits>

#include "ember/autograd/derivatives/nn_rnn.h"
#include "ember/autograd/functions.h"
#include "ember/autograd/record.h"
#include "ember/ops/autocast.h"
#include "ember/ops/factory.h"
#include "ember/ops/index.h"
#include "ember/ops/join.h"
#include "ember/ops/linalg.h"
#include "ember/ops/ops.h"
#include "ember/ops/random.h"
#include "ember/ops/reduce.h"
#include "ember/ops/view.h"

namespace ember {

DispatchStub<SdpaFwdKernel> sdpa_fwd_stub("scaled_dot_product_attention");
DispatchStub<SdpaBwdKernel> sdpa_bwd_stub("scaled_dot_product_attention_backward");

namespace {

constexpr const char* kOp = "scaled_dot_product_attention";

void check_args(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                bool is_causal) {
  EMBER_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4, kOp,
              ": expected 4-D query, key and value, got ", shape_str(q.sizes()), ", ",
              shape_str(k.sizes()), ", ", shape_str(v.sizes()));
  EMBER_CHECK(q.dtype() == k.dtype() && q.dtype() == v.dtype(), kOp,
              ": Expected query, key, and value to have the same dtype, but got query.dtype: ",
              dtype_name(q.dtype()), " key.dtype: ", dtype_name(k.dtype()),
              " and value.dtype: ", dtype_name(v.dtype()), " instead.");
  EMBER_CHECK(q.dtype() == DType::Float32 || q.dtype() == DType::Float64, kOp,
              ": expected floating inputs (float16, bfloat16, float32 or float64), got ",
              dtype_name(q.dtype()));
  EMBER_CHECK(q.size(0) == k.size(0) && k.size(0) == v.size(0) && k.size(1) == v.size(1) &&
                  k.size(2) == v.size(2) && q.size(3) == k.size(3),
              kOp, ": shapes of query ", shape_str(q.sizes()), ", key ", shape_str(k.sizes()),
              " and value ", shape_str(v.sizes()), " do not match");
  EMBER_CHECK(k.size(1) > 0 && q.size(1) % k.size(1) == 0, kOp, ": number of heads in key/value (",
              k.size(1), ") must divide the number of heads in query (", q.size(1), ")");
  EMBER_CHECK(!(is_causal && mask.defined()),
              "_scaled_dot_product_attention: Explicit attn_mask "
              "should not be set when is_causal=True");
  EMBER_CHECK(q.device() == k.device() && q.device() == v.device(), kOp,
              ": expected query, key and value on the same device");
  EMBER_CHECK(!mask.defined() || mask.device() == q.device(), kOp,
              ": Expected attn_mask to be on the same device as query (", q.device().str(),
              "), but got ", mask.device().str());
}

// Half or bfloat16 query, key and value (all three the same): computed in float.
bool reduced_float(const Tensor& q, const Tensor& k, const Tensor& v) {
  const DType d = q.dtype();
  return (d == DType::Float16 || d == DType::BFloat16) && k.dtype() == d && v.dtype() == d;
}

Tensor expanded_mask(const Tensor& mask, const Tensor& q, const Tensor& k) {
  if (!mask.defined()) return Tensor();
  Tensor m = sdpa_float_mask(mask, q.dtype());
  EMBER_CHECK(m.dim() <= 4, kOp, ": attn_mask must have at most 4 dims, got ", m.dim());
  return expand(m, Shape{q.size(0), q.size(1), q.size(2), k.size(2)});
}

Tensor flash_forward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& m,
                     bool is_causal, double scale, const SdpaDropout& drop, Tensor* lse_out) {
  autograd::GradModeGuard no_grad(false);
  Tensor out = empty({q.size(0), q.size(1), q.size(2), v.size(3)}, q.dtype(), q.device());
  Tensor lse = empty({q.size(0), q.size(1), q.size(2)}, q.dtype(), q.device());
  if (out.numel() > 0) {
    if (k.size(2) == 0) {
      fill_(out, 0);
      fill_(lse, -INFINITY);
    } else {
      sdpa_fwd_stub.get(q.device())(SdpaFwdArgs{q, k, v, m, out, lse, is_causal, scale, drop});
    }
  }
  if (lse_out) *lse_out = lse;
  return out;
}

// softmax(q k^T * scale + mask) v, with the attention weights multiplied by `keep` (the
// scaled dropout mask) when it is defined.
Tensor sdpa_math_keep(const Tensor& q, const Tensor& k_in, const Tensor& v_in, const Tensor& mask,
                      bool is_causal, double scale, const Tensor& keep);

}  // namespace

SdpaDropout sdpa_reserve_dropout(double p) {
  auto [seed, offset] = default_generator()->reserve(1);
  return SdpaDropout(p, seed, offset);
}

Tensor sdpa_dropout_mask(const SdpaDropout& d, int64_t B, int64_t H, int64_t L, int64_t S,
                         DType dtype) {
  Tensor z = empty({B, H, L, S}, DType::Float64, Device());
  double* zp = z.data<double>();
  const double sc = 1.0 / (1.0 - d.p);
  for (int64_t bh = 0; bh < B * H; ++bh)
    for (int64_t i = 0; i < L; ++i) {
      const uint32_t rk = d.row(bh, i);
      double* row = zp + (bh * L + i) * S;
      for (int64_t j = 0; j < S; ++j) row[j] = SdpaDropout::keep(rk, j, d.threshold) ? sc : 0.0;
    }
  return to_dtype(z, dtype);
}

Tensor sdpa_float_mask(const Tensor& mask, DType dtype) {
  if (mask.dtype() == DType::Bool) {
    Tensor z = zeros(mask.sizes(), dtype, mask.device());
    return masked_fill(z, unary(UnaryOp::logical_not, mask), Scalar(-INFINITY));
  }
  EMBER_CHECK(is_floating(mask.dtype()), kOp,
              ": Expected attn_mask dtype to be bool or float or "
              "to match query dtype, but got attn_mask.dtype: ",
              dtype_name(mask.dtype()));
  return mask.dtype() == dtype ? mask : to_dtype(mask, dtype);
}

Tensor sdpa_flash(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                  bool is_causal, double scale, double dropout_p) {
  EMBER_TRACE_RANDOM(
      "aten::_sdpa_flash(Tensor q, Tensor k, Tensor v, Tensor mask, bool is_causal, float scale, "
      "float dropout_p=0.0) -> Tensor",
      sdpa_flash, q, k, v, mask, is_causal, scale, dropout_p);
  if (autocast::active()) {  // Note [Autocast policy]
    auto c_ = autocast::autocast_inputs("scaled_dot_product_attention", {q, k, v, mask});
    autocast::ExcludeGuard g_;
    return sdpa_flash(c_[0], c_[1], c_[2], c_[3], is_causal, scale, dropout_p);
  }
  if (reduced_float(q, k, v)) {  // Note [16-bit recurrent and attention math]
    auto up = [](const Tensor& t) { return to_dtype(t, DType::Float32); };
    return to_dtype(sdpa_flash(up(q), up(k), up(v), mask, is_causal, scale, dropout_p), q.dtype());
  }
  check_args(q, k, v, mask, is_causal);
  EMBER_CHECK(dropout_p >= 0 && dropout_p < 1, kOp,
              ": the fused kernel takes 0 <= dropout_p < 1, got ", dropout_p);
  Tensor m = expanded_mask(mask, q, k);
  const SdpaDropout drop = dropout_p > 0 ? sdpa_reserve_dropout(dropout_p) : SdpaDropout();
  autograd::RecordScope scope({&q, &k, &v});
  Tensor lse;
  Tensor out = flash_forward(q, k, v, m, is_causal, scale, drop, &lse);
  if (!scope.rec) return out;
  scope.done();
  auto fn = [is_causal, scale, drop](autograd::LambdaNode& n,
                                     autograd::variable_list&& g) -> autograd::variable_list {
    Tensor q = n.unpack(0), k = n.unpack(1), v = n.unpack(2), m = n.unpack(3);
    std::vector<bool> mask{n.should_compute_output(0), n.should_compute_output(1),
                           n.should_compute_output(2)};
    if (autograd::grad_enabled()) {  // Note [Double backward of fused ops]
      Tensor keep;
      if (drop.on())  // the same Z as the forward's (Note [Fused attention dropout])
        keep = to_device(
            sdpa_dropout_mask(drop, q.size(0), q.size(1), q.size(2), k.size(2), q.dtype()),
            q.device());  // made on the host: the hash, not a kernel
      auto fwd = [is_causal, scale, m,
                  keep](const autograd::variable_list& in) -> autograd::variable_list {
        return {sdpa_math_keep(in[0], in[1], in[2], m, is_causal, scale, keep)};
      };
      return autograd::composite_vjp(fwd, {q, k, v}, {g[0]}, mask);
    }
    autograd::GradModeGuard no_grad(false);
    Tensor out = n.unpack(4), lse = n.unpack(5);
    Tensor dq = empty(q.sizes(), q.dtype(), q.device());
    Tensor dk = empty(k.sizes(), k.dtype(), k.device());
    Tensor dv = empty(v.sizes(), v.dtype(), v.device());
    if (q.numel() == 0 || k.size(2) == 0) {
      fill_(dq, 0), fill_(dk, 0), fill_(dv, 0);
    } else {
      sdpa_bwd_stub.get(q.device())(
          SdpaBwdArgs{q, k, v, m, out, lse, contiguous(g[0]), dq, dk, dv, is_causal, scale, drop});
    }
    return {mask[0] ? dq : Tensor(), mask[1] ? dk : Tensor(), mask[2] ? dv : Tensor()};
  };
  auto node =
      autograd::record("ScaledDotProductFlashAttentionForCpuBackward0", {&q, &k, &v}, out, fn);
  node->saved.emplace_back(q, false);
  node->saved.emplace_back(k, false);
  node->saved.emplace_back(v, false);
  node->saved.emplace_back(m, false);
  node->saved.emplace_back(out, true);
  node->saved.emplace_back(lse, false);
  return out;
}

Tensor sdpa_math(const Tensor& q, const Tensor& k_in, const Tensor& v_in, const Tensor& mask,
                 bool is_causal, double scale, double dropout_p) {
  EMBER_TRACE_RANDOM(
      "aten::_sdpa_math(Tensor q, Tensor k_in, Tensor v_in, Tensor mask, bool is_causal, float "
      "scale, float dropout_p) -> Tensor",
      sdpa_math, q, k_in, v_in, mask, is_causal, scale, dropout_p);
  if (autocast::active()) {  // Note [Autocast policy]
    auto c_ = autocast::autocast_inputs("scaled_dot_product_attention", {q, k_in, v_in, mask});
    autocast::ExcludeGuard g_;
    return sdpa_math(c_[0], c_[1], c_[2], c_[3], is_causal, scale, dropout_p);
  }
  if (reduced_float(q, k_in, v_in)) {  // Note [16-bit recurrent and attention math]
    auto up = [](const Tensor& t) { return to_dtype(t, DType::Float32); };
    return to_dtype(sdpa_math(up(q), up(k_in), up(v_in), mask, is_causal, scale, dropout_p),
                    q.dtype());
  }
  check_args(q, k_in, v_in, mask, is_causal);
  Tensor keep;
  if (dropout_p > 0) {
    keep = empty({q.size(0), q.size(1), q.size(2), k_in.size(2)}, q.dtype(), q.device());
    bernoulli_(keep, 1 - dropout_p);
    if (dropout_p < 1) keep = binary(BinaryOp::mul, keep, wrap_scalar(Scalar(1 / (1 - dropout_p))));
  }
  return sdpa_math_keep(q, k_in, v_in, mask, is_causal, scale, keep);
}

namespace {
Tensor sdpa_math_keep(const Tensor& q, const Tensor& k_in, const Tensor& v_in, const Tensor& mask,
                      bool is_causal, double scale, const Tensor& keep) {
  Tensor k = k_in, v = v_in;
  if (q.size(1) != k.size(1)) {
    const int64_t rep = q.size(1) / k.size(1);
    k = repeat_interleave(k, rep, 1);
    v = repeat_interleave(v, rep, 1);
  }
  Tensor s = binary(BinaryOp::mul, matmul(q, transpose(k, -2, -1)), wrap_scalar(Scalar(scale)));
  if (mask.defined()) s = binary(BinaryOp::add, s, sdpa_float_mask(mask, q.dtype()));
  if (is_causal) {
    Tensor upper = triu(ones({q.size(2), k.size(2)}, DType::Bool, q.device()), 1);
    s = masked_fill(s, upper, Scalar(-INFINITY));
  }
  // softmax that gives 0 on rows with no finite score (PyTorch's _safe_softmax)
  Tensor mx;
  {
    autograd::GradModeGuard no_grad(false);  // a shift: softmax does not depend on it
    mx = amax(s, Shape{-1}, true);
    mx = masked_fill(mx, binary(BinaryOp::eq, mx, wrap_scalar(Scalar(-INFINITY))), Scalar(0.0));
  }
  Tensor e = unary(UnaryOp::exp, binary(BinaryOp::sub, s, mx));
  Tensor den = sum(e, Shape{-1}, true);
  Tensor safe;
  {
    autograd::GradModeGuard no_grad(false);
    safe = binary(BinaryOp::eq, den, wrap_scalar(Scalar(0.0)));
  }
  Tensor p = binary(BinaryOp::div, e, masked_fill(den, safe, Scalar(1.0)));
  if (keep.defined()) p = binary(BinaryOp::mul, p, keep);
  return matmul(p, v);
}
}  // namespace

}  // namespace ember
