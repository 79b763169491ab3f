// CPU kernels of the losses: nll / fused log_softmax + nll over rows (forward and
// backward) and the CTC forward-backward dynamic program in log space.
// Float compares may be if-converted into SIMD selects: without this the compiler
// keeps the branch-free exp / max loops of nn_vec.h scalar (FP exceptions are never
// inspected in ember).
#pragma GCC optimize("no-trapping-math")
#include "ember/backends/cpu/capability.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "ember/backends/cpu/nn_vec.h"
#include "ember/core/parallel.h"
#include "ember/kernels/functors.h"
#include "ember/kernels/stubs/nn_loss.h"

namespace ember::cpu {
namespace {

template <typename T>
void nll_typed(const Tensor& loss, const Tensor& wt, const Tensor& lse, const Tensor& x,
               const Tensor& target, const Tensor& weight, int64_t ignore) {
  using A = opmath_t<T>;
  const int64_t M = x.sizes()[0], C = x.sizes()[1];
  const T* xp = x.data<T>();
  const int64_t* tp = target.data<int64_t>();
  const T* wp = weight.defined() ? weight.data<T>() : nullptr;
  T* lp = loss.data<T>();
  T* wtp = wt.data<T>();
  T* lsep = lse.defined() ? lse.data<T>() : nullptr;
  // Validate first, in the caller, so the error names the first bad target.
  for (int64_t i = 0; i < M; ++i) {
    const int64_t t = tp[i];
    EMBER_CHECK_INDEX(t == ignore || (t >= 0 && t < C), "Target ", t, " is out of bounds.");
  }
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(lsep ? C : 1, 1));
  parallel_for(0, M, grain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const int64_t t = tp[i];
      const T* row = xp + i * C;
      A l = 0;
      if (lsep) {
        const A m = vec::max_of<A>(C, [&](int64_t j) { return A(row[j]); });
        const A shift = std::isinf(m) && m < 0 ? A(0) : m;
        const A s = vec::sum_of<A>(C, [&](int64_t j) { return vec::exp<A>(A(row[j]) - shift); });
        l = shift + std::log(s);
        lsep[i] = T(l);
      }
      if (t == ignore) {
        wtp[i] = T(0);
        lp[i] = T(0);
        continue;
      }
      const A w = wp ? A(wp[t]) : A(1);
      wtp[i] = T(w);
      lp[i] = T(lsep ? w * (l - A(row[t])) : -w * A(row[t]));
    }
  });
}

template <typename T>
void ce_backward_typed(const Tensor& gx, const Tensor& coef, const Tensor& x, const Tensor& lse,
                       const Tensor& target, int64_t ignore) {
  using A = opmath_t<T>;
  const int64_t M = x.sizes()[0], C = x.sizes()[1];
  const T* xp = x.data<T>();
  const T* cp = coef.data<T>();
  const T* lp = lse.data<T>();
  const int64_t* tp = target.data<int64_t>();
  T* out = gx.data<T>();
  parallel_for(0, M, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(C, 1)),
               [&](int64_t b, int64_t e) {
                 for (int64_t i = b; i < e; ++i) {
                   T* o = out + i * C;
                   const int64_t t = tp[i];
                   if (t == ignore) {
                     std::fill(o, o + C, T(0));
                     continue;
                   }
                   const T* row = xp + i * C;
                   const A c = A(cp[i]), l = A(lp[i]);
                   for (int64_t j = 0; j < C; ++j) o[j] = T(c * vec::exp<A>(A(row[j]) - l));
                   o[t] = T(A(o[t]) - c);
                 }
               });
}

template <typename T>
void nll_backward_typed(const Tensor& gx, const Tensor& coef, const Tensor& target,
                        int64_t ignore) {
  const int64_t M = gx.sizes()[0], C = gx.sizes()[1];
  const T* cp = coef.data<T>();
  const int64_t* tp = target.data<int64_t>();
  T* out = gx.data<T>();
  parallel_for(0, M, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(C, 1)),
               [&](int64_t b, int64_t e) {
                 std::fill(out + b * C, out + e * C, T(0));
                 for (int64_t i = b; i < e; ++i)
                   if (tp[i] != ignore) out[i * C + tp[i]] = T(-opmath_t<T>(cp[i]));
               });
}

void nll_backward_kernel(const Tensor& gx, const Tensor& coef, const Tensor& target,
                         int64_t ignore) {
  dispatch_floating(gx.dtype(), "nll_loss_backward", [&](auto tag) {
    nll_backward_typed<typename decltype(tag)::type>(gx, coef, target, ignore);
  });
}

void nll_kernel(const Tensor& loss, const Tensor& wt, const Tensor& lse, const Tensor& x,
                const Tensor& target, const Tensor& weight, int64_t ignore) {
  dispatch_floating(x.dtype(), lse.defined() ? "cross_entropy" : "nll_loss", [&](auto tag) {
    nll_typed<typename decltype(tag)::type>(loss, wt, lse, x, target, weight, ignore);
  });
}

void ce_backward_kernel(const Tensor& gx, const Tensor& coef, const Tensor& x, const Tensor& lse,
                        const Tensor& target, int64_t ignore) {
  dispatch_floating(x.dtype(), "cross_entropy_backward", [&](auto tag) {
    ce_backward_typed<typename decltype(tag)::type>(gx, coef, x, lse, target, ignore);
  });
}

EMBER_REGISTER_CPU_KERNELS(nn_loss) {
  nll_stub.fns[int(DeviceType::CPU)] = &nll_kernel;
  cross_entropy_backward_stub.fns[int(DeviceType::CPU)] = &ce_backward_kernel;
  nll_backward_stub.fns[int(DeviceType::CPU)] = &nll_backward_kernel;
}

}  // namespace
}  // namespace ember::cpu

// ---- CTC ------------------------------------------------------------------------------
// Note [CTC in log space]
// The extended label sequence l' = (blank, y1, blank, y2, ..., blank) has 2L + 1
// states. alpha[t][s] = lp[t][l'_s] + logsumexp(alpha[t-1][s], alpha[t-1][s-1],
// alpha[t-1][s-2] when l'_s is not blank and differs from l'_{s-2}); beta runs the same
// recursion backwards; nll = -logsumexp(alpha[T-1][S-1], alpha[T-1][S-2]). The gradient
// d nll / d lp[t][c] = -exp(logsumexp_{s: l'_s = c}(alpha[t][s] + beta[t][s]) + nll - lp[t][c]).
namespace ember::cpu {
namespace {

template <typename A>
A log_add(A a, A b) {
  if (a == -std::numeric_limits<A>::infinity()) return b;
  if (b == -std::numeric_limits<A>::infinity()) return a;
  const A m = std::max(a, b);
  return m + std::log1p(std::exp(-std::abs(a - b)));
}

struct CtcSample {
  int64_t Tn, L, S, off;
};

template <typename T>
void ctc_typed(const Tensor& nll, const Tensor& alpha, const Tensor& lp, const Tensor& targets,
               const Tensor& offsets, const Tensor& in_lens, const Tensor& tgt_lens,
               int64_t blank) {
  using A = double;
  const A ninf = -std::numeric_limits<A>::infinity();
  const int64_t Tmax = lp.sizes()[0], N = lp.sizes()[1], C = lp.sizes()[2];
  const int64_t Smax = alpha.sizes()[2];
  const T* lpp = lp.data<T>();
  const int64_t* tg = targets.data<int64_t>();
  T* ap = alpha.data<T>();
  T* np = nll.data<T>();
  parallel_for(0, N, 1, [&](int64_t b, int64_t e) {
    std::vector<A> prev, cur;
    for (int64_t n = b; n < e; ++n) {
      const int64_t Tn = in_lens.data<int64_t>()[n], L = tgt_lens.data<int64_t>()[n];
      const int64_t off = offsets.data<int64_t>()[n], S = 2 * L + 1;
      auto label = [&](int64_t s) { return s % 2 == 0 ? blank : tg[off + s / 2]; };
      auto lpv = [&](int64_t t, int64_t c) { return A(lpp[(t * N + n) * C + c]); };
      T* an = ap + n * Tmax * Smax;
      std::fill(an, an + Tmax * Smax, T(ninf));
      if (Tn == 0) {
        np[n] = T(L == 0 ? 0 : std::numeric_limits<A>::infinity());
        continue;
      }
      prev.assign(size_t(S), ninf);
      cur.assign(size_t(S), ninf);
      prev[0] = lpv(0, blank);
      if (S > 1) prev[1] = lpv(0, label(1));
      for (int64_t s = 0; s < S; ++s) an[s] = T(prev[s]);
      for (int64_t t = 1; t < Tn; ++t) {
        for (int64_t s = 0; s < S; ++s) {
          A v = prev[s];
          if (s >= 1) v = log_add(v, prev[s - 1]);
          if (s >= 2 && label(s) != blank && label(s) != label(s - 2)) v = log_add(v, prev[s - 2]);
          cur[s] = v == ninf ? ninf : v + lpv(t, label(s));
        }
        std::swap(prev, cur);
        for (int64_t s = 0; s < S; ++s) an[t * Smax + s] = T(prev[s]);
      }
      A ll = prev[S - 1];
      if (S > 1) ll = log_add(ll, prev[S - 2]);
      np[n] = T(-ll);
    }
  });
}

template <typename T>
void ctc_backward_typed(const Tensor& grad, const Tensor& lp, const Tensor& targets,
                        const Tensor& offsets, const Tensor& in_lens, const Tensor& tgt_lens,
                        const Tensor& nll, const Tensor& alpha, int64_t blank, bool zero_inf) {
  using A = double;
  const A ninf = -std::numeric_limits<A>::infinity();
  const int64_t Tmax = lp.sizes()[0], N = lp.sizes()[1], C = lp.sizes()[2];
  const int64_t Smax = alpha.sizes()[2];
  const T* lpp = lp.data<T>();
  const int64_t* tg = targets.data<int64_t>();
  const T* ap = alpha.data<T>();
  const T* np = nll.data<T>();
  T* gp = grad.data<T>();
  parallel_for(0, N, 1, [&](int64_t b, int64_t e) {
    std::vector<A> beta, lcab(static_cast<size_t>(C));
    for (int64_t n = b; n < e; ++n) {
      const int64_t Tn = in_lens.data<int64_t>()[n], L = tgt_lens.data<int64_t>()[n];
      const int64_t off = offsets.data<int64_t>()[n], S = 2 * L + 1;
      auto label = [&](int64_t s) { return s % 2 == 0 ? blank : tg[off + s / 2]; };
      auto lpv = [&](int64_t t, int64_t c) { return A(lpp[(t * N + n) * C + c]); };
      auto g = [&](int64_t t, int64_t c) -> T& { return gp[(t * N + n) * C + c]; };
      for (int64_t t = 0; t < Tmax; ++t)
        for (int64_t c = 0; c < C; ++c) g(t, c) = T(0);
      const A nl = A(np[n]);
      if (Tn == 0 || (zero_inf && std::isinf(nl))) continue;
      beta.assign(size_t(Tn * S), ninf);
      beta[(Tn - 1) * S + S - 1] = lpv(Tn - 1, blank);
      if (S > 1) beta[(Tn - 1) * S + S - 2] = lpv(Tn - 1, label(S - 2));
      for (int64_t t = Tn - 2; t >= 0; --t) {
        for (int64_t s = 0; s < S; ++s) {
          A v = beta[(t + 1) * S + s];
          if (s + 1 < S) v = log_add(v, beta[(t + 1) * S + s + 1]);
          if (s + 2 < S && label(s) != blank && label(s) != label(s + 2))
            v = log_add(v, beta[(t + 1) * S + s + 2]);
          beta[t * S + s] = v == ninf ? ninf : v + lpv(t, label(s));
        }
      }
      const T* an = ap + n * Tmax * Smax;
      for (int64_t t = 0; t < Tn; ++t) {
        std::fill(lcab.begin(), lcab.end(), ninf);
        for (int64_t s = 0; s < S; ++s) {
          const int64_t c = label(s);
          lcab[c] = log_add(lcab[c], A(an[t * Smax + s]) + beta[t * S + s]);
        }
        for (int64_t c = 0; c < C; ++c)
          if (lcab[c] != ninf) g(t, c) = T(-std::exp(lcab[c] + nl - lpv(t, c)));
      }
    }
  });
}

void ctc_kernel(const Tensor& nll, const Tensor& alpha, const Tensor& lp, const Tensor& targets,
                const Tensor& offsets, const Tensor& in_lens, const Tensor& tgt_lens,
                int64_t blank) {
  dispatch_floating(lp.dtype(), "ctc_loss", [&](auto tag) {
    ctc_typed<typename decltype(tag)::type>(nll, alpha, lp, targets, offsets, in_lens, tgt_lens,
                                            blank);
  });
}

void ctc_backward_kernel(const Tensor& grad, const Tensor& lp, const Tensor& targets,
                         const Tensor& offsets, const Tensor& in_lens, const Tensor& tgt_lens,
                         const Tensor& nll, const Tensor& alpha, int64_t blank, bool zero_inf) {
  dispatch_floating(lp.dtype(), "ctc_loss_backward", [&](auto tag) {
    ctc_backward_typed<typename decltype(tag)::type>(grad, lp, targets, offsets, in_lens, tgt_lens,
                                                     nll, alpha, blank, zero_inf);
  });
}

EMBER_REGISTER_CPU_KERNELS(nn_loss_ctc) {
  ctc_stub.fns[int(DeviceType::CPU)] = &ctc_kernel;
  ctc_backward_stub.fns[int(DeviceType::CPU)] = &ctc_backward_kernel;
}

}  // namespace
}  // namespace ember::cpu
