// CPU loops of the fused multi-tensor optimizer steps (see Note [Fused optimizer steps]).
// Every kernel is one parallel pass over the concatenated elements of all tensors of
// a group; each element is read once, updated in opmath_t and written once.
// Compiled once per CPU capability (Note [CPU capability dispatch]).
#include "ember/backends/cpu/capability.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "ember/core/parallel.h"
#include "ember/kernels/functors.h"
#include "ember/kernels/stubs/optim.h"

namespace ember::cpu {
namespace {

// Elements per parallel task at least: an optimizer update streams 4-7 arrays,
// so a smaller grain than plain elementwise ops already pays for a thread.
constexpr int64_t kOptimGrain = 16384;

/// Calls body(i, begin, end) over [begin, end) of tensor i, for every element of every
/// tensor of `params`, split across the thread pool as one flat range (or tensor by tensor,
/// in order, when `serial`).
template <typename Body>
void for_each_range(const std::vector<Tensor>& params, const Body& body, bool serial) {
  const size_t n = params.size();
  if (serial) {
    for (size_t i = 0; i < n; ++i)
      if (params[i].numel() > 0) body(i, 0, params[i].numel());
    return;
  }
  std::vector<int64_t> offs(n + 1, 0);
  for (size_t i = 0; i < n; ++i)
    offs[i + 1] = checked_add(offs[i], params[i].numel(), "optimizer step: total numel");
  parallel_for(0, offs[n], kOptimGrain, [&](int64_t b, int64_t e) {
    size_t i = size_t(std::upper_bound(offs.begin(), offs.end(), b) - offs.begin()) - 1;
    for (; i < n && offs[i] < e; ++i) {
      int64_t lo = std::max(b, offs[i]) - offs[i];
      int64_t hi = std::min(e, offs[i + 1]) - offs[i];
      if (lo < hi) body(i, lo, hi);
    }
  });
}

template <typename Body>
void for_each_range_t(const OptimTensors& t, const Body& body) {
  for_each_range(t.params, body, t.serial);
}

template <typename T>
T* ptr(const std::vector<Tensor>& list, size_t i, int64_t lo) {
  return list.empty() ? nullptr : list[i].data<T>() + lo;
}

/// PyTorch's lerp (fn::Lerp, shared with torch.lerp and the CUDA optimizers).
template <typename M>
inline M lerp(M self, M end, M w) {
  return fn::Lerp{}(self, end, w);
}
/// max that propagates NaN from either side, as torch.maximum; branch-free so it vectorizes.
template <typename M>
inline M max_nan(M a, M b) {
  M r = a > b ? a : b;
  r = a != a ? a : r;
  return b != b ? b : r;
}
/// Rounds through the storage type T (a no-op when T is the opmath type).
template <typename T, typename M>
inline M store(T* dst, int64_t i, M v) {
  dst[i] = T(v);
  return M(dst[i]);
}

/// Calls f(std::true_type{}) or f(std::false_type{}): loop-invariant options become
/// template parameters, so every inner loop is branch-free and vectorizes.
template <typename F>
inline void with_bool(bool b, F&& f) {
  if (b)
    f(std::true_type{});
  else
    f(std::false_type{});
}

/// The gradient and parameter options common to all kernels: `sign` is -1 for maximize,
/// `l2` the weight decay folded into the gradient (kL2), `p_scale` the decoupled decay
/// factor 1 - lr * weight_decay (exactly 1 when not decoupled).
template <typename M>
struct GradPrep {
  M sign, l2, p_scale;
  GradPrep(bool maximize, double weight_decay, bool decoupled, double lr)
      : sign(maximize ? M(-1) : M(1)),
        l2(decoupled ? M(0) : M(weight_decay)),
        p_scale(decoupled && weight_decay != 0 ? M(1.0 - lr * weight_decay) : M(1)) {}
  static bool use_l2(double weight_decay, bool decoupled) {
    return weight_decay != 0 && !decoupled;
  }
};

/// Element k's gradient as every update reads it: negated for maximize, with the L2
/// weight decay (kL2) folded in.
template <bool kL2, typename T, typename M>
inline M grad_at(const GradPrep<M>& prep, const T* p, const T* g, int64_t k) {
  M gk = prep.sign * M(g[k]);
  if constexpr (kL2) gk = gk + prep.l2 * M(p[k]);
  return gk;
}

/// The kernels' shared driver: calls f(TypeTag<T>, i, lo, hi) over every range of every
/// tensor (for_each_range_t), with T the dtype of tensor i.
template <typename F>
void for_each_typed_range(const OptimTensors& t, const char* name, const F& f) {
  for_each_range_t(t, [&](size_t i, int64_t lo, int64_t hi) {
    dispatch_floating(t.params[i].dtype(), name, [&](auto tag) { f(tag, i, lo, hi); });
  });
}
#define EMBER_OPTIM_T using T = typename decltype(tag)::type

// ---- SGD ---------------------------------------------------------------------------------

template <typename T, bool kL2, bool kBuf, bool kFirst, bool kNesterov>
void sgd_range(const OptimTensors& t, const SgdArgs& a, size_t i, int64_t lo, int64_t hi) {
  using M = opmath_t<T>;
  T* __restrict p = ptr<T>(t.params, i, lo);
  const T* __restrict g = ptr<T>(t.grads, i, lo);
  T* __restrict buf = ptr<T>(t.state[0], i, lo);
  const GradPrep<M> prep(a.maximize, a.weight_decay, false, a.lr);
  const M lr = M(a.lr), mom = M(a.momentum), damp = M(1.0 - a.dampening);
  const int64_t n = hi - lo;
  for (int64_t k = 0; k < n; ++k) {
    M pk = M(p[k]);
    M d = grad_at<kL2>(prep, p, g, k);
    if constexpr (kBuf) {
      M b = store(buf, k, kFirst ? d : mom * M(buf[k]) + damp * d);
      d = kNesterov ? d + mom * b : b;
    }
    p[k] = T(pk - lr * d);
  }
}

void sgd_kernel(const OptimTensors& t, const SgdArgs& a) {
  const bool l2 = a.weight_decay != 0, has_buf = !t.state[0].empty();
  for_each_typed_range(t, "sgd_step_", [&](auto tag, size_t i, int64_t lo, int64_t hi) {
    EMBER_OPTIM_T;
    with_bool(l2, [&](auto L2) {
      if (!has_buf) return sgd_range<T, L2(), false, false, false>(t, a, i, lo, hi);
      with_bool(a.first[i], [&](auto F) {
        with_bool(a.nesterov, [&](auto N) { sgd_range<T, L2(), true, F(), N()>(t, a, i, lo, hi); });
      });
    });
  });
}

// ---- Adam / AdamW --------------------------------------------------------------------------

template <typename T, bool kL2, bool kAmsgrad>
void adam_range(const OptimTensors& t, const AdamArgs& a, size_t i, int64_t lo, int64_t hi) {
  using M = opmath_t<T>;
  T* __restrict p = ptr<T>(t.params, i, lo);
  const T* __restrict g = ptr<T>(t.grads, i, lo);
  T* __restrict m = ptr<T>(t.state[0], i, lo);
  T* __restrict v = ptr<T>(t.state[1], i, lo);
  T* __restrict vmax = ptr<T>(t.state[2], i, lo);
  const GradPrep<M> prep(a.maximize, a.weight_decay, a.decoupled, a.lr);
  const M w1 = M(1.0 - a.beta1), b2 = M(a.beta2), w2 = M(1.0 - a.beta2), eps = M(a.eps);
  // multiplying by 1 / sqrt(1 - beta2^t) instead of dividing keeps one division per element
  const M step_size = M(a.step_size[i]), inv_bc2_sqrt = M(1.0 / a.bc2_sqrt[i]);
  const int64_t n = hi - lo;
  for (int64_t k = 0; k < n; ++k) {
    M pk = M(p[k]) * prep.p_scale;
    M gk = grad_at<kL2>(prep, p, g, k);
    M mk = store(m, k, lerp(M(m[k]), gk, w1));
    M vk = store(v, k, b2 * M(v[k]) + w2 * gk * gk);
    if constexpr (kAmsgrad) vk = store(vmax, k, max_nan(M(vmax[k]), vk));
    M denom = std::sqrt(vk) * inv_bc2_sqrt + eps;
    p[k] = T(pk - step_size * (mk / denom));
  }
}

void adam_kernel(const OptimTensors& t, const AdamArgs& a) {
  const bool l2 = GradPrep<double>::use_l2(a.weight_decay, a.decoupled);
  for_each_typed_range(t, "adam_step_", [&](auto tag, size_t i, int64_t lo, int64_t hi) {
    EMBER_OPTIM_T;
    with_bool(l2, [&](auto L2) {
      with_bool(a.amsgrad, [&](auto A) { adam_range<T, L2(), A()>(t, a, i, lo, hi); });
    });
  });
}

// ---- Adamax --------------------------------------------------------------------------------

template <typename T, bool kL2>
void adamax_range(const OptimTensors& t, const AdamaxArgs& a, size_t i, int64_t lo, int64_t hi) {
  using M = opmath_t<T>;
  T* __restrict p = ptr<T>(t.params, i, lo);
  const T* __restrict g = ptr<T>(t.grads, i, lo);
  T* __restrict m = ptr<T>(t.state[0], i, lo);
  T* __restrict u = ptr<T>(t.state[1], i, lo);
  const GradPrep<M> prep(a.maximize, a.weight_decay, false, 0.0);
  const M w1 = M(1.0 - a.beta1), b2 = M(a.beta2), eps = M(a.eps), clr = M(a.clr[i]);
  const int64_t n = hi - lo;
  for (int64_t k = 0; k < n; ++k) {
    M pk = M(p[k]);
    M gk = grad_at<kL2>(prep, p, g, k);
    M mk = store(m, k, lerp(M(m[k]), gk, w1));
    M uk = store(u, k, max_nan(M(u[k]) * b2, std::abs(gk) + eps));
    p[k] = T(pk - clr * (mk / uk));
  }
}

void adamax_kernel(const OptimTensors& t, const AdamaxArgs& a) {
  for_each_typed_range(t, "adamax_step_", [&](auto tag, size_t i, int64_t lo, int64_t hi) {
    EMBER_OPTIM_T;
    with_bool(a.weight_decay != 0, [&](auto L2) { adamax_range<T, L2()>(t, a, i, lo, hi); });
  });
}

// ---- NAdam ---------------------------------------------------------------------------------

template <typename T, bool kL2>
void nadam_range(const OptimTensors& t, const NAdamArgs& a, size_t i, int64_t lo, int64_t hi) {
  using M = opmath_t<T>;
  T* __restrict p = ptr<T>(t.params, i, lo);
  const T* __restrict g = ptr<T>(t.grads, i, lo);
  T* __restrict m = ptr<T>(t.state[0], i, lo);
  T* __restrict v = ptr<T>(t.state[1], i, lo);
  const GradPrep<M> prep(a.maximize, a.weight_decay, a.decoupled, a.lr);
  const M w1 = M(1.0 - a.beta1), b2 = M(a.beta2), w2 = M(1.0 - a.beta2), eps = M(a.eps);
  const M inv_bc2 = M(1.0 / a.bc2[i]), cg = M(a.coef_grad[i]), cm = M(a.coef_avg[i]);
  const int64_t n = hi - lo;
  for (int64_t k = 0; k < n; ++k) {
    M pk = M(p[k]) * prep.p_scale;
    M gk = grad_at<kL2>(prep, p, g, k);
    M mk = store(m, k, lerp(M(m[k]), gk, w1));
    M vk = store(v, k, b2 * M(v[k]) + w2 * gk * gk);
    M inv_denom = M(1) / (std::sqrt(vk * inv_bc2) + eps);
    p[k] = T(pk + cg * (gk * inv_denom) + cm * (mk * inv_denom));
  }
}

void nadam_kernel(const OptimTensors& t, const NAdamArgs& a) {
  const bool l2 = GradPrep<double>::use_l2(a.weight_decay, a.decoupled);
  for_each_typed_range(t, "nadam_step_", [&](auto tag, size_t i, int64_t lo, int64_t hi) {
    EMBER_OPTIM_T;

    with_bool(l2, [&](auto L2) { nadam_range<T, L2()>(t, a, i, lo, hi); });
  });
}

// ---- RAdam ---------------------------------------------------------------------------------

template <typename T, bool kL2, bool kRect>
void radam_range(const OptimTensors& t, const RAdamArgs& a, size_t i, int64_t lo, int64_t hi) {
  using M = opmath_t<T>;
  T* __restrict p = ptr<T>(t.params, i, lo);
  const T* __restrict g = ptr<T>(t.grads, i, lo);
  T* __restrict m = ptr<T>(t.state[0], i, lo);
  T* __restrict v = ptr<T>(t.state[1], i, lo);
  const GradPrep<M> prep(a.maximize, a.weight_decay, a.decoupled, a.lr);
  const M w1 = M(1.0 - a.beta1), b2 = M(a.beta2), w2 = M(1.0 - a.beta2), eps = M(a.eps);
  // (m / bc1) * lr [* bc2_sqrt / (sqrt(v) + eps) * rect], with the per-tensor factors folded
  const M plain = M(a.lr / a.bc1[i]), rectified = M(a.lr / a.bc1[i] * a.bc2_sqrt[i] * a.rect[i]);
  const int64_t n = hi - lo;
  for (int64_t k = 0; k < n; ++k) {
    M pk = M(p[k]) * prep.p_scale;
    M gk = grad_at<kL2>(prep, p, g, k);
    M mk = store(m, k, lerp(M(m[k]), gk, w1));
    M vk = store(v, k, b2 * M(v[k]) + w2 * gk * gk);
    if constexpr (kRect)
      p[k] = T(pk - rectified * mk / (std::sqrt(vk) + eps));
    else
      p[k] = T(pk - plain * mk);
  }
}

void radam_kernel(const OptimTensors& t, const RAdamArgs& a) {
  const bool l2 = GradPrep<double>::use_l2(a.weight_decay, a.decoupled);
  for_each_typed_range(t, "radam_step_", [&](auto tag, size_t i, int64_t lo, int64_t hi) {
    EMBER_OPTIM_T;
    with_bool(l2, [&](auto L2) {
      with_bool(a.rect[i] > 0, [&](auto R) { radam_range<T, L2(), R()>(t, a, i, lo, hi); });
    });
  });
}

// ---- RMSprop -------------------------------------------------------------------------------

template <typename T, bool kL2, bool kCentered, bool kMomentum>
void rmsprop_range(const OptimTensors& t, const RmspropArgs& a, size_t i, int64_t lo, int64_t hi) {
  using M = opmath_t<T>;
  T* __restrict p = ptr<T>(t.params, i, lo);
  const T* __restrict g = ptr<T>(t.grads, i, lo);
  T* __restrict sq = ptr<T>(t.state[0], i, lo);
  T* __restrict buf = ptr<T>(t.state[1], i, lo);
  T* __restrict ga = ptr<T>(t.state[2], i, lo);
  const GradPrep<M> prep(a.maximize, a.weight_decay, false, a.lr);
  const M lr = M(a.lr), al = M(a.alpha), w = M(1.0 - a.alpha), eps = M(a.eps), mom = M(a.momentum);
  const int64_t n = hi - lo;
  for (int64_t k = 0; k < n; ++k) {
    M pk = M(p[k]);
    M gk = grad_at<kL2>(prep, p, g, k);
    M sk = store(sq, k, al * M(sq[k]) + w * gk * gk);
    M avg;
    if constexpr (kCentered) {
      M ak = store(ga, k, lerp(M(ga[k]), gk, w));
      avg = std::sqrt(sk - ak * ak) + eps;
    } else {
      avg = std::sqrt(sk) + eps;
    }
    if constexpr (kMomentum)
      pk = pk - lr * store(buf, k, mom * M(buf[k]) + gk / avg);
    else
      pk = pk - lr * (gk / avg);
    p[k] = T(pk);
  }
}

void rmsprop_kernel(const OptimTensors& t, const RmspropArgs& a) {
  for_each_typed_range(t, "rmsprop_step_", [&](auto tag, size_t i, int64_t lo, int64_t hi) {
    EMBER_OPTIM_T;
    with_bool(a.weight_decay != 0, [&](auto L2) {
      with_bool(a.centered, [&](auto C) {
        with_bool(a.momentum > 0,
                  [&](auto B) { rmsprop_range<T, L2(), C(), B()>(t, a, i, lo, hi); });
      });
    });
  });
}

// ---- Adagrad -------------------------------------------------------------------------------

template <typename T, bool kL2>
void adagrad_range(const OptimTensors& t, const AdagradArgs& a, size_t i, int64_t lo, int64_t hi) {
  using M = opmath_t<T>;
  T* __restrict p = ptr<T>(t.params, i, lo);
  const T* __restrict g = ptr<T>(t.grads, i, lo);
  T* __restrict s = ptr<T>(t.state[0], i, lo);
  const GradPrep<M> prep(a.maximize, a.weight_decay, false, 0.0);
  const M eps = M(a.eps), clr = M(a.clr[i]);
  const int64_t n = hi - lo;
  for (int64_t k = 0; k < n; ++k) {
    M pk = M(p[k]);
    M gk = grad_at<kL2>(prep, p, g, k);
    M sk = store(s, k, M(s[k]) + gk * gk);
    p[k] = T(pk - clr * (gk / (std::sqrt(sk) + eps)));
  }
}

void adagrad_kernel(const OptimTensors& t, const AdagradArgs& a) {
  for_each_typed_range(t, "adagrad_step_", [&](auto tag, size_t i, int64_t lo, int64_t hi) {
    EMBER_OPTIM_T;
    with_bool(a.weight_decay != 0, [&](auto L2) { adagrad_range<T, L2()>(t, a, i, lo, hi); });
  });
}

// ---- Adadelta ------------------------------------------------------------------------------

template <typename T, bool kL2>
void adadelta_range(const OptimTensors& t, const AdadeltaArgs& a, size_t i, int64_t lo,
                    int64_t hi) {
  using M = opmath_t<T>;
  T* __restrict p = ptr<T>(t.params, i, lo);
  const T* __restrict g = ptr<T>(t.grads, i, lo);
  T* __restrict sq = ptr<T>(t.state[0], i, lo);
  T* __restrict acc = ptr<T>(t.state[1], i, lo);
  const GradPrep<M> prep(a.maximize, a.weight_decay, false, 0.0);
  const M lr = M(a.lr), rho = M(a.rho), w = M(1.0 - a.rho), eps = M(a.eps);
  const int64_t n = hi - lo;
  for (int64_t k = 0; k < n; ++k) {
    M pk = M(p[k]);
    M gk = grad_at<kL2>(prep, p, g, k);
    M sk = store(sq, k, rho * M(sq[k]) + w * gk * gk);
    M delta = std::sqrt(M(acc[k]) + eps) / std::sqrt(sk + eps) * gk;
    store(acc, k, rho * M(acc[k]) + w * delta * delta);
    p[k] = T(pk - lr * delta);
  }
}

void adadelta_kernel(const OptimTensors& t, const AdadeltaArgs& a) {
  for_each_typed_range(t, "adadelta_step_", [&](auto tag, size_t i, int64_t lo, int64_t hi) {
    EMBER_OPTIM_T;
    with_bool(a.weight_decay != 0, [&](auto L2) { adadelta_range<T, L2()>(t, a, i, lo, hi); });
  });
}

#undef EMBER_OPTIM_T

EMBER_REGISTER_CPU_KERNELS(optim) {
  constexpr int cpu = int(DeviceType::CPU);
  sgd_step_stub.fns[cpu] = &sgd_kernel;
  adam_step_stub.fns[cpu] = &adam_kernel;
  adamax_step_stub.fns[cpu] = &adamax_kernel;
  nadam_step_stub.fns[cpu] = &nadam_kernel;
  radam_step_stub.fns[cpu] = &radam_kernel;
  rmsprop_step_stub.fns[cpu] = &rmsprop_kernel;
  adagrad_step_stub.fns[cpu] = &adagrad_kernel;
  adadelta_step_stub.fns[cpu] = &adadelta_kernel;
}

}  // namespace
}  // namespace ember::cpu
