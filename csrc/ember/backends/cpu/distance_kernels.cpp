// CPU kernels of cdist (kernels/stubs/distance.h). Compiled once per CPU capability
// (Note [CPU capability dispatch] in CMakeLists.txt).
//
// The direct kernel walks one row of x1 against a block of x2's rows at a time: for
// each feature k it updates kBlock running sums acc[j] from x1[i, k] - x2t[k, j],
// so the innermost loop runs over contiguous output columns with independent
// accumulators and vectorizes without reassociating any sum (the feature order of
// each sum is the sequential one). Rows of x1 run in parallel on the thread pool.
#pragma GCC optimize("no-trapping-math")
#include <algorithm>
#include <cmath>
#include <vector>

#include "ember/backends/cpu/capability.h"
#include "ember/core/parallel.h"
#include "ember/kernels/distance_math.h"
#include "ember/kernels/stubs/distance.h"

namespace ember::cpu {
namespace {

constexpr int64_t kBlock = 64;  // output columns accumulated together

// acc[0, n) over all M features; N > 0 fixes the block width at compile time.
template <typename Op, int64_t N, typename T>
inline void block(T* __restrict acc, int64_t n, const T* __restrict xi, const T* __restrict col,
                  int64_t M, int64_t R, T p) {
  const int64_t w = N > 0 ? N : n;
  for (int64_t j = 0; j < w; ++j) acc[j] = T(0);
  for (int64_t k = 0; k < M; ++k) {
    const T a = xi[k];
    const T* c = col + k * R;
    for (int64_t j = 0; j < w; ++j) acc[j] = Op::step(acc[j], a - c[j], p);
  }
}

template <typename Op, typename T>
void cdist_typed(const Tensor& out, const Tensor& x1, const Tensor& x2t, T p) {
  const int64_t B = x1.sizes()[0], P = x1.sizes()[1], M = x1.sizes()[2], R = x2t.sizes()[2];
  const T* a = x1.data<T>();
  const T* bt = x2t.data<T>();
  T* o = out.data<T>();
  const int64_t per_row = std::max<int64_t>(1, R * M);
  const int64_t grain = std::max<int64_t>(1, kGrainSize / per_row);
  parallel_for(0, B * P, grain, [&](int64_t begin, int64_t end) {
    T acc[kBlock];
    for (int64_t r = begin; r < end; ++r) {
      const int64_t b = r / P;
      const T* xi = a + r * M;
      const T* xt = bt + b * M * R;
      T* orow = o + r * R;
      for (int64_t j0 = 0; j0 < R; j0 += kBlock) {
        const int64_t n = std::min(kBlock, R - j0);
        if (n == kBlock)
          block<Op, kBlock>(acc, n, xi, xt + j0, M, R, p);
        else
          block<Op, 0>(acc, n, xi, xt + j0, M, R, p);
        for (int64_t j = 0; j < n; ++j) orow[j0 + j] = Op::finish(acc[j], p);
      }
    }
  });
}

void cdist_kernel(const Tensor& out, const Tensor& x1, const Tensor& x2t, double p) {
  distance_math::with_rule(p, out.dtype() == DType::Float64, [&](auto rule, auto t) {
    using T = decltype(t);
    cdist_typed<decltype(rule), T>(out, x1, x2t, T(p));
  });
}

// Squared row norms of a (rows, M) contiguous matrix, summed in double.
template <typename T>
void row_norms(T* dst, const T* x, int64_t rows, int64_t M) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* row = x + r * M;
    double s = 0;
    for (int64_t k = 0; k < M; ++k) s += double(row[k]) * double(row[k]);
    dst[r] = T(s);
  }
}

template <typename T>
void euclidean_typed(const Tensor& out, const Tensor& x1, const Tensor& x2) {
  const int64_t B = x1.sizes()[0], P = x1.sizes()[1], M = x1.sizes()[2], R = x2.sizes()[1];
  std::vector<T> n1(static_cast<size_t>(B * P)), n2(static_cast<size_t>(B * R));
  row_norms(n1.data(), x1.data<T>(), B * P, M);
  row_norms(n2.data(), x2.data<T>(), B * R, M);
  T* o = out.data<T>();
  const T* pn1 = n1.data();
  const T* pn2 = n2.data();
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(R, 1));
  parallel_for(0, B * P, grain, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const T a = pn1[r];
      const T* nb = pn2 + (r / P) * R;
      T* orow = o + r * R;
      for (int64_t j = 0; j < R; ++j) {
        const T d2 = a + nb[j] - T(2) * orow[j];
        orow[j] = std::sqrt(std::max(d2, T(0)));
      }
    }
  });
}

void euclidean_finish_kernel(const Tensor& out, const Tensor& x1, const Tensor& x2) {
  if (out.dtype() == DType::Float64)
    euclidean_typed<double>(out, x1, x2);
  else
    euclidean_typed<float>(out, x1, x2);
}

EMBER_REGISTER_CPU_KERNELS(distance) {
  constexpr int cpu = int(DeviceType::CPU);
  cdist_stub.fns[cpu] = &cdist_kernel;
  euclidean_finish_stub.fns[cpu] = &euclidean_finish_kernel;
}

}  // namespace
}  // namespace ember::cpu
