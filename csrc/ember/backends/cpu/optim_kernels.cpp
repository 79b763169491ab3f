// CPU loops of the fused multi-tensor optimizer steps (see Note [Fused optimizer steps]).
// Every kernel is one parallel pass over the concatenated elements of all tensors of
// a group; each element is read once, updated in opmath_t and written once.
#include <algorithm>
#include <cmath>
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
/// tensor of `params`, split across the thread pool as one flat range.
template <typename Body>
void for_each_range(const std::vector<Tensor>& params, const Body& body) {
  const size_t n = params.size();
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

template <typename T>
T* ptr(const std::vector<Tensor>& list, size_t i, int64_t lo) {
  return list.empty() ? nullptr : list[i].data<T>() + lo;
}

/// PyTorch's lerp: exact at both ends, symmetric rounding around weight 0.5.
template <typename M>
inline M lerp(M self, M end, M w) {
  return w < M(0.5) ? self + w * (end - self) : end - (end - self) * (M(1) - w);
}
/// max that propagates NaN, as torch.maximum.
template <typename M>
inline M max_nan(M a, M b) {
  return (a != a || a > b) ? a : b;
}
/// Rounds through the storage type T (a no-op when T is the opmath type).
template <typename T, typename M>
inline M store(T* dst, int64_t i, M v) {
  dst[i] = T(v);
  return M(dst[i]);
}

/// The gradient after `maximize` and L2 weight decay; decoupled decay shrinks `p` instead.
template <typename M>
inline M effective_grad(M g, M& p, bool maximize, M wd, bool decoupled, M lr) {
  if (maximize) g = -g;
  if (wd != M(0)) {
    if (decoupled)
      p = p * (M(1) - lr * wd);
    else
      g = g + wd * p;
  }
  return g;
}

// ---- SGD ---------------------------------------------------------------------------------

void sgd_kernel(const OptimTensors& t, const SgdArgs& a) {
  for_each_range(t.params, [&](size_t i, int64_t lo, int64_t hi) {
    dispatch_floating(t.params[i].dtype(), "sgd_step_", [&](auto tag) {
      using T = typename decltype(tag)::type;
      using M = opmath_t<T>;
      T* __restrict p = ptr<T>(t.params, i, lo);
      const T* __restrict g = ptr<T>(t.grads, i, lo);
      T* __restrict buf = ptr<T>(t.state[0], i, lo);
      const M lr = M(a.lr), mom = M(a.momentum), damp = M(1.0 - a.dampening),
              wd = M(a.weight_decay);
      const bool first = buf && a.first[i];
      const int64_t n = hi - lo;
      for (int64_t k = 0; k < n; ++k) {
        M pk = M(p[k]);
        M d = effective_grad(M(g[k]), pk, a.maximize, wd, false, lr);
        if (buf) {
          M b = store(buf, k, first ? d : mom * M(buf[k]) + damp * d);
          d = a.nesterov ? d + mom * b : b;
        }
        p[k] = T(pk - lr * d);
      }
    });
  });
}

// ---- Adam / AdamW --------------------------------------------------------------------------

template <typename T, bool kAmsgrad>
void adam_range(const OptimTensors& t, const AdamArgs& a, size_t i, int64_t lo, int64_t hi) {
  using M = opmath_t<T>;
  T* __restrict p = ptr<T>(t.params, i, lo);
  const T* __restrict g = ptr<T>(t.grads, i, lo);
  T* __restrict m = ptr<T>(t.state[0], i, lo);
  T* __restrict v = ptr<T>(t.state[1], i, lo);
  T* __restrict vmax = ptr<T>(t.state[2], i, lo);
  const M lr = M(a.lr), wd = M(a.weight_decay), w1 = M(1.0 - a.beta1), b2 = M(a.beta2),
          w2 = M(1.0 - a.beta2), eps = M(a.eps);
  const M step_size = M(a.step_size[i]), bc2_sqrt = M(a.bc2_sqrt[i]);
  const int64_t n = hi - lo;
  for (int64_t k = 0; k < n; ++k) {
    M pk = M(p[k]);
    M gk = effective_grad(M(g[k]), pk, a.maximize, wd, a.decoupled, lr);
    M mk = store(m, k, lerp(M(m[k]), gk, w1));
    M vk = store(v, k, b2 * M(v[k]) + w2 * gk * gk);
    if constexpr (kAmsgrad) vk = store(vmax, k, max_nan(M(vmax[k]), vk));
    M denom = std::sqrt(vk) / bc2_sqrt + eps;
    p[k] = T(pk - step_size * (mk / denom));
  }
}

void adam_kernel(const OptimTensors& t, const AdamArgs& a) {
  for_each_range(t.params, [&](size_t i, int64_t lo, int64_t hi) {
    dispatch_floating(t.params[i].dtype(), "adam_step_", [&](auto tag) {
      using T = typename decltype(tag)::type;
      if (a.amsgrad)
        adam_range<T, true>(t, a, i, lo, hi);
      else
        adam_range<T, false>(t, a, i, lo, hi);
    });
  });
}

// ---- Adamax --------------------------------------------------------------------------------

void adamax_kernel(const OptimTensors& t, const AdamaxArgs& a) {
  for_each_range(t.params, [&](size_t i, int64_t lo, int64_t hi) {
    dispatch_floating(t.params[i].dtype(), "adamax_step_", [&](auto tag) {
      using T = typename decltype(tag)::type;
      using M = opmath_t<T>;
      T* __restrict p = ptr<T>(t.params, i, lo);
      const T* __restrict g = ptr<T>(t.grads, i, lo);
      T* __restrict m = ptr<T>(t.state[0], i, lo);
      T* __restrict u = ptr<T>(t.state[1], i, lo);
      const M wd = M(a.weight_decay), w1 = M(1.0 - a.beta1), b2 = M(a.beta2), eps = M(a.eps);
      const M clr = M(a.clr[i]);
      const int64_t n = hi - lo;
      for (int64_t k = 0; k < n; ++k) {
        M pk = M(p[k]);
        M gk = effective_grad(M(g[k]), pk, a.maximize, wd, false, M(0));
        M mk = store(m, k, lerp(M(m[k]), gk, w1));
        M uk = store(u, k, max_nan(M(u[k]) * b2, std::abs(gk) + eps));
        p[k] = T(pk - clr * (mk / uk));
      }
    });
  });
}

// ---- NAdam ---------------------------------------------------------------------------------

void nadam_kernel(const OptimTensors& t, const NAdamArgs& a) {
  for_each_range(t.params, [&](size_t i, int64_t lo, int64_t hi) {
    dispatch_floating(t.params[i].dtype(), "nadam_step_", [&](auto tag) {
      using T = typename decltype(tag)::type;
      using M = opmath_t<T>;
      T* __restrict p = ptr<T>(t.params, i, lo);
      const T* __restrict g = ptr<T>(t.grads, i, lo);
      T* __restrict m = ptr<T>(t.state[0], i, lo);
      T* __restrict v = ptr<T>(t.state[1], i, lo);
      const M lr = M(a.lr), wd = M(a.weight_decay), w1 = M(1.0 - a.beta1), b2 = M(a.beta2),
              w2 = M(1.0 - a.beta2), eps = M(a.eps);
      const M bc2 = M(a.bc2[i]), cg = M(a.coef_grad[i]), cm = M(a.coef_avg[i]);
      const int64_t n = hi - lo;
      for (int64_t k = 0; k < n; ++k) {
        M pk = M(p[k]);
        M gk = effective_grad(M(g[k]), pk, a.maximize, wd, a.decoupled, lr);
        M mk = store(m, k, lerp(M(m[k]), gk, w1));
        M vk = store(v, k, b2 * M(v[k]) + w2 * gk * gk);
        M denom = std::sqrt(vk / bc2) + eps;
        p[k] = T(pk + cg * (gk / denom) + cm * (mk / denom));
      }
    });
  });
}

// ---- RAdam ---------------------------------------------------------------------------------

void radam_kernel(const OptimTensors& t, const RAdamArgs& a) {
  for_each_range(t.params, [&](size_t i, int64_t lo, int64_t hi) {
    dispatch_floating(t.params[i].dtype(), "radam_step_", [&](auto tag) {
      using T = typename decltype(tag)::type;
      using M = opmath_t<T>;
      T* __restrict p = ptr<T>(t.params, i, lo);
      const T* __restrict g = ptr<T>(t.grads, i, lo);
      T* __restrict m = ptr<T>(t.state[0], i, lo);
      T* __restrict v = ptr<T>(t.state[1], i, lo);
      const M lr = M(a.lr), wd = M(a.weight_decay), w1 = M(1.0 - a.beta1), b2 = M(a.beta2),
              w2 = M(1.0 - a.beta2), eps = M(a.eps);
      const M bc1 = M(a.bc1[i]), bc2_sqrt = M(a.bc2_sqrt[i]), rect = M(a.rect[i]);
      const bool rectified = a.rect[i] > 0;
      const int64_t n = hi - lo;
      for (int64_t k = 0; k < n; ++k) {
        M pk = M(p[k]);
        M gk = effective_grad(M(g[k]), pk, a.maximize, wd, a.decoupled, lr);
        M mk = store(m, k, lerp(M(m[k]), gk, w1));
        M vk = store(v, k, b2 * M(v[k]) + w2 * gk * gk);
        M upd = mk / bc1 * lr;
        if (rectified) upd = upd * (bc2_sqrt / (std::sqrt(vk) + eps)) * rect;
        p[k] = T(pk - upd);
      }
    });
  });
}

// ---- RMSprop -------------------------------------------------------------------------------

void rmsprop_kernel(const OptimTensors& t, const RmspropArgs& a) {
  for_each_range(t.params, [&](size_t i, int64_t lo, int64_t hi) {
    dispatch_floating(t.params[i].dtype(), "rmsprop_step_", [&](auto tag) {
      using T = typename decltype(tag)::type;
      using M = opmath_t<T>;
      T* __restrict p = ptr<T>(t.params, i, lo);
      const T* __restrict g = ptr<T>(t.grads, i, lo);
      T* __restrict sq = ptr<T>(t.state[0], i, lo);
      T* __restrict buf = ptr<T>(t.state[1], i, lo);
      T* __restrict ga = ptr<T>(t.state[2], i, lo);
      const M lr = M(a.lr), wd = M(a.weight_decay), al = M(a.alpha), w = M(1.0 - a.alpha),
              eps = M(a.eps), mom = M(a.momentum);
      const int64_t n = hi - lo;
      for (int64_t k = 0; k < n; ++k) {
        M pk = M(p[k]);
        M gk = effective_grad(M(g[k]), pk, a.maximize, wd, false, lr);
        M sk = store(sq, k, al * M(sq[k]) + w * gk * gk);
        M avg;
        if (ga) {
          M ak = store(ga, k, lerp(M(ga[k]), gk, w));
          avg = std::sqrt(sk - ak * ak) + eps;
        } else {
          avg = std::sqrt(sk) + eps;
        }
        if (buf)
          pk = pk - lr * store(buf, k, mom * M(buf[k]) + gk / avg);
        else
          pk = pk - lr * (gk / avg);
        p[k] = T(pk);
      }
    });
  });
}

// ---- Adagrad -------------------------------------------------------------------------------

void adagrad_kernel(const OptimTensors& t, const AdagradArgs& a) {
  for_each_range(t.params, [&](size_t i, int64_t lo, int64_t hi) {
    dispatch_floating(t.params[i].dtype(), "adagrad_step_", [&](auto tag) {
      using T = typename decltype(tag)::type;
      using M = opmath_t<T>;
      T* __restrict p = ptr<T>(t.params, i, lo);
      const T* __restrict g = ptr<T>(t.grads, i, lo);
      T* __restrict s = ptr<T>(t.state[0], i, lo);
      const M wd = M(a.weight_decay), eps = M(a.eps), clr = M(a.clr[i]);
      const int64_t n = hi - lo;
      for (int64_t k = 0; k < n; ++k) {
        M pk = M(p[k]);
        M gk = effective_grad(M(g[k]), pk, a.maximize, wd, false, M(0));
        M sk = store(s, k, M(s[k]) + gk * gk);
        p[k] = T(pk - clr * (gk / (std::sqrt(sk) + eps)));
      }
    });
  });
}

// ---- Adadelta ------------------------------------------------------------------------------

void adadelta_kernel(const OptimTensors& t, const AdadeltaArgs& a) {
  for_each_range(t.params, [&](size_t i, int64_t lo, int64_t hi) {
    dispatch_floating(t.params[i].dtype(), "adadelta_step_", [&](auto tag) {
      using T = typename decltype(tag)::type;
      using M = opmath_t<T>;
      T* __restrict p = ptr<T>(t.params, i, lo);
      const T* __restrict g = ptr<T>(t.grads, i, lo);
      T* __restrict sq = ptr<T>(t.state[0], i, lo);
      T* __restrict acc = ptr<T>(t.state[1], i, lo);
      const M lr = M(a.lr), wd = M(a.weight_decay), rho = M(a.rho), w = M(1.0 - a.rho),
              eps = M(a.eps);
      const int64_t n = hi - lo;
      for (int64_t k = 0; k < n; ++k) {
        M pk = M(p[k]);
        M gk = effective_grad(M(g[k]), pk, a.maximize, wd, false, M(0));
        M sk = store(sq, k, rho * M(sq[k]) + w * gk * gk);
        M delta = std::sqrt(M(acc[k]) + eps) / std::sqrt(sk + eps) * gk;
        store(acc, k, rho * M(acc[k]) + w * delta * delta);
        p[k] = T(pk - lr * delta);
      }
    });
  });
}

struct Register {
  Register() {
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
} g_register;

}  // namespace
}  // namespace ember::cpu
