// CPU kernels of the pooling family (Note [Pooling windows]): parallel over
// planes (batch x channels), each plane walked through the window tables.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <vector>

#include "ember/core/parallel.h"
#include "ember/kernels/functors.h"
#include "ember/kernels/stubs/nn_pool.h"

namespace ember::cpu {
namespace {

int64_t plane_grain(int64_t work) {
  return std::max<int64_t>(1, kGrainSize / std::max<int64_t>(work, 1));
}

template <typename T>
void max_pool_impl(const Tensor& out, const Tensor& indices, const Tensor& input,
                   const PoolGeom& g) {
  using A = opmath_t<T>;
  const int64_t oh = g.h.out(), ow = g.w.out(), iw = g.w.in;
  const int64_t pin = g.h.in * iw, pout = oh * ow;
  const int64_t planes = pout ? out.numel() / pout : 0;
  const T* src = input.data<T>();
  T* dst = out.data<T>();
  int64_t* ind = indices.data<int64_t>();
  parallel_for(0, planes, plane_grain(pin), [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      const T* x = src + p * pin;
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          A best = -std::numeric_limits<A>::infinity();
          int64_t bi = -1;
          bool done = false;
          for (int64_t a = g.h.ptr[i]; a < g.h.ptr[i + 1] && !done; ++a) {
            const int64_t row = g.h.idx[a] * iw;
            for (int64_t c = g.w.ptr[j]; c < g.w.ptr[j + 1]; ++c) {
              const int64_t pos = row + g.w.idx[c];
              const A v = A(x[pos]);
              if (bi < 0 || v > best || std::isnan(v)) {
                best = v;
                bi = pos;
                if (std::isnan(v)) {
                  done = true;
                  break;
                }
              }
            }
          }
          dst[p * pout + i * ow + j] = T(best);
          ind[p * pout + i * ow + j] = bi < 0 ? 0 : bi;
        }
    }
  });
}

void max_pool_kernel(const Tensor& out, const Tensor& indices, const Tensor& input,
                     const PoolGeom& g) {
  dispatch_floating(input.dtype(), "max_pool2d", [&](auto tag) {
    using T = typename decltype(tag)::type;
    max_pool_impl<T>(out, indices, input, g);
  });
}

template <typename T>
void max_pool_backward_impl(const Tensor& gi, const Tensor& go, const Tensor& indices) {
  using A = opmath_t<T>;
  const int64_t planes = gi.sizes()[0], pin = gi.sizes()[1], pout = go.sizes()[1];
  const T* g = go.data<T>();
  const int64_t* ind = indices.data<int64_t>();
  T* dst = gi.data<T>();
  std::atomic<int64_t> bad{-1};
  parallel_for(0, planes, plane_grain(pin + pout), [&](int64_t b, int64_t e) {
    std::vector<A> acc(static_cast<size_t>(pin));
    for (int64_t p = b; p < e; ++p) {
      std::fill(acc.begin(), acc.end(), A(0));
      for (int64_t o = 0; o < pout; ++o) {
        const int64_t k = ind[p * pout + o];
        if (k < 0 || k >= pin) {
          bad = k;
          continue;
        }
        acc[size_t(k)] += A(g[p * pout + o]);
      }
      for (int64_t i = 0; i < pin; ++i) dst[p * pin + i] = T(acc[size_t(i)]);
    }
  });
  EMBER_CHECK(bad.load() == -1, "max_pool backward: index ", bad.load(),
              " is out of range for an input plane of ", pin, " elements");
}

void max_pool_backward_kernel(const Tensor& gi, const Tensor& go, const Tensor& indices) {
  dispatch_floating(gi.dtype(), "max_pool2d_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    max_pool_backward_impl<T>(gi, go, indices);
  });
}

template <typename T>
void avg_pool_impl(const Tensor& out, const Tensor& in, const PoolGeom& g, bool backward) {
  using A = opmath_t<T>;
  const int64_t oh = g.h.out(), ow = g.w.out(), iw = g.w.in;
  const int64_t pin = g.h.in * iw, pout = oh * ow;
  const int64_t planes = pout ? (backward ? in.numel() : out.numel()) / pout : 0;
  const T* src = in.data<T>();
  T* dst = out.data<T>();
  parallel_for(0, planes, plane_grain(pin + pout), [&](int64_t b, int64_t e) {
    std::vector<A> acc(backward ? size_t(pin) : 0);
    for (int64_t p = b; p < e; ++p) {
      if (backward) std::fill(acc.begin(), acc.end(), A(0));
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          const A f = A(g.scale * g.h.scale[size_t(i)] * g.w.scale[size_t(j)]);
          if (!backward) {
            const T* x = src + p * pin;
            A s = 0;
            for (int64_t a = g.h.ptr[i]; a < g.h.ptr[i + 1]; ++a) {
              const T* row = x + g.h.idx[a] * iw;
              for (int64_t c = g.w.ptr[j]; c < g.w.ptr[j + 1]; ++c) s += A(row[g.w.idx[c]]);
            }
            dst[p * pout + i * ow + j] = T(s * f);
          } else {
            const A v = A(src[p * pout + i * ow + j]) * f;
            for (int64_t a = g.h.ptr[i]; a < g.h.ptr[i + 1]; ++a) {
              A* row = acc.data() + g.h.idx[a] * iw;
              for (int64_t c = g.w.ptr[j]; c < g.w.ptr[j + 1]; ++c) row[g.w.idx[c]] += v;
            }
          }
        }
      if (backward)
        for (int64_t i = 0; i < pin; ++i) dst[p * pin + i] = T(acc[size_t(i)]);
    }
  });
}

void avg_pool_kernel(const Tensor& out, const Tensor& in, const PoolGeom& g, bool backward) {
  dispatch_floating(in.dtype(), "avg_pool2d", [&](auto tag) {
    using T = typename decltype(tag)::type;
    avg_pool_impl<T>(out, in, g, backward);
  });
}

struct Registrar {
  Registrar() {
    max_pool_stub.fns[int(DeviceType::CPU)] = max_pool_kernel;
    max_pool_backward_stub.fns[int(DeviceType::CPU)] = max_pool_backward_kernel;
    avg_pool_stub.fns[int(DeviceType::CPU)] = avg_pool_kernel;
  }
} registrar;

}  // namespace
}  // namespace ember::cpu
