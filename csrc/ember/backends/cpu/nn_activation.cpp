// CPU kernels of the fused softmax / log_softmax (forward and backward): one pass
// for the max, one for the sum of exponentials, one to write, all in opmath.
// A reduction over the last dim works on rows; over another dim it walks blocks
// of the contiguous inner dim so the loops stay unit-stride.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "ember/core/parallel.h"
#include "ember/kernels/functors.h"
#include "ember/kernels/stubs/nn_activation.h"

namespace ember::cpu {
namespace {

constexpr int64_t kBlock = 256;  // inner columns per task for a non-last dim

template <typename T>
void softmax_typed(const Tensor& out, const Tensor& in, SoftmaxShape s, bool log) {
  using A = opmath_t<T>;
  const T* x = in.data<T>();
  T* y = out.data<T>();
  const int64_t n = s.dim, inner = s.inner;
  if (inner == 1) {
    const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(n, 1));
    parallel_for(0, s.outer, grain, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const T* xr = x + r * n;
        T* yr = y + r * n;
        A m = -std::numeric_limits<A>::infinity();
        for (int64_t j = 0; j < n; ++j) m = std::max(m, A(xr[j]));
        A sum = 0;
        if (log) {
          for (int64_t j = 0; j < n; ++j) sum += std::exp(A(xr[j]) - m);
          const A shift = m + std::log(sum);
          for (int64_t j = 0; j < n; ++j) yr[j] = T(A(xr[j]) - shift);
        } else if constexpr (std::is_same<T, A>::value) {
          for (int64_t j = 0; j < n; ++j) {
            const A v = std::exp(xr[j] - m);
            yr[j] = v;
            sum += v;
          }
          const A inv = A(1) / sum;
          for (int64_t j = 0; j < n; ++j) yr[j] *= inv;
        } else {
          for (int64_t j = 0; j < n; ++j) sum += std::exp(A(xr[j]) - m);
          const A inv = A(1) / sum;
          for (int64_t j = 0; j < n; ++j) yr[j] = T(std::exp(A(xr[j]) - m) * inv);
        }
      }
    });
    return;
  }
  const int64_t blocks = (inner + kBlock - 1) / kBlock;
  const int64_t tasks = s.outer * blocks;
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(n * kBlock, 1));
  parallel_for(0, tasks, grain, [&](int64_t b, int64_t e) {
    std::vector<A> mx(kBlock), sm(kBlock);
    for (int64_t t = b; t < e; ++t) {
      const int64_t o = t / blocks, j0 = (t % blocks) * kBlock;
      const int64_t w = std::min(kBlock, inner - j0);
      const T* xo = x + o * n * inner + j0;
      T* yo = y + o * n * inner + j0;
      std::fill(mx.begin(), mx.begin() + w, -std::numeric_limits<A>::infinity());
      std::fill(sm.begin(), sm.begin() + w, A(0));
      for (int64_t d = 0; d < n; ++d)
        for (int64_t j = 0; j < w; ++j) mx[j] = std::max(mx[j], A(xo[d * inner + j]));
      for (int64_t d = 0; d < n; ++d)
        for (int64_t j = 0; j < w; ++j) sm[j] += std::exp(A(xo[d * inner + j]) - mx[j]);
      if (log) {
        for (int64_t j = 0; j < w; ++j) mx[j] += std::log(sm[j]);
        for (int64_t d = 0; d < n; ++d)
          for (int64_t j = 0; j < w; ++j) yo[d * inner + j] = T(A(xo[d * inner + j]) - mx[j]);
      } else {
        for (int64_t j = 0; j < w; ++j) sm[j] = A(1) / sm[j];
        for (int64_t d = 0; d < n; ++d)
          for (int64_t j = 0; j < w; ++j)
            yo[d * inner + j] = T(std::exp(A(xo[d * inner + j]) - mx[j]) * sm[j]);
      }
    }
  });
}

template <typename T>
void softmax_backward_typed(const Tensor& gx, const Tensor& g, const Tensor& y, SoftmaxShape s,
                            bool log) {
  using A = opmath_t<T>;
  const T* gp = g.data<T>();
  const T* yp = y.data<T>();
  T* out = gx.data<T>();
  const int64_t n = s.dim, inner = s.inner;
  const int64_t blocks = (inner + kBlock - 1) / kBlock;
  const int64_t tasks = s.outer * blocks;
  const int64_t grain =
      std::max<int64_t>(1, kGrainSize / std::max<int64_t>(n * std::min(inner, kBlock), 1));
  parallel_for(0, tasks, grain, [&](int64_t b, int64_t e) {
    std::vector<A> acc(size_t(std::min(inner, kBlock)));
    for (int64_t t = b; t < e; ++t) {
      const int64_t o = t / blocks, j0 = (t % blocks) * kBlock;
      const int64_t w = std::min(kBlock, inner - j0);
      const int64_t base = o * n * inner + j0;
      std::fill(acc.begin(), acc.begin() + w, A(0));
      for (int64_t d = 0; d < n; ++d) {
        const int64_t k = base + d * inner;
        for (int64_t j = 0; j < w; ++j) acc[j] += log ? A(gp[k + j]) : A(gp[k + j]) * A(yp[k + j]);
      }
      for (int64_t d = 0; d < n; ++d) {
        const int64_t k = base + d * inner;
        if (log) {
          for (int64_t j = 0; j < w; ++j)
            out[k + j] = T(A(gp[k + j]) - std::exp(A(yp[k + j])) * acc[j]);
        } else {
          for (int64_t j = 0; j < w; ++j) out[k + j] = T(A(yp[k + j]) * (A(gp[k + j]) - acc[j]));
        }
      }
    }
  });
}

void softmax_kernel(const Tensor& out, const Tensor& in, SoftmaxShape s, bool log) {
  dispatch_floating(in.dtype(), log ? "log_softmax" : "softmax", [&](auto tag) {
    softmax_typed<typename decltype(tag)::type>(out, in, s, log);
  });
}

void softmax_backward_kernel(const Tensor& gx, const Tensor& g, const Tensor& y, SoftmaxShape s,
                             bool log) {
  dispatch_floating(y.dtype(), log ? "log_softmax_backward" : "softmax_backward", [&](auto tag) {
    softmax_backward_typed<typename decltype(tag)::type>(gx, g, y, s, log);
  });
}

struct Registrar {
  Registrar() {
    softmax_stub.fns[int(DeviceType::CPU)] = &softmax_kernel;
    softmax_backward_stub.fns[int(DeviceType::CPU)] = &softmax_backward_kernel;
  }
} registrar;

}  // namespace
}  // namespace ember::cpu
