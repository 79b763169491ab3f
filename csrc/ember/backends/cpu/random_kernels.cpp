// CPU kernels of the random ops. Each fills a contiguous output from the
// Philox stream; element i reads block offset + i / PER (Note [Philox streams]),
// so the result does not depend on how parallel_for splits the work.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "ember/backends/cpu/capability.h"
#include "ember/core/parallel.h"
#include "ember/kernels/stubs/random.h"

namespace ember::cpu {
namespace {

constexpr double kTwoPi = 6.283185307179586476925286766559;

// Runs f(block, vals) for every Philox block of the output; f writes PER values.
template <typename T, int PER, typename F>
void fill_blocks(const Tensor& out, const RandomArgs& a, F f) {
  T* o = out.data<T>();
  const int64_t n = out.numel();
  const int64_t nb = (n + PER - 1) / PER;
  parallel_for(0, nb, std::max<int64_t>(1, kGrainSize / PER), [&](int64_t b0, int64_t b1) {
    T vals[PER];
    for (int64_t b = b0; b < b1; ++b) {
      philox::Block blk = philox::block(a.seed, a.offset + uint64_t(b));
      f(blk, vals);
      int64_t i0 = b * PER;
      int cnt = int(std::min<int64_t>(PER, n - i0));
      for (int l = 0; l < cnt; ++l) o[i0 + l] = vals[l];
    }
  });
}

void uniform_kernel(const Tensor& out, const RandomArgs& a) {
  const double lo = a.a, hi = a.b, w = a.b - a.a;
  if (out.dtype() == DType::Float64) {
    fill_blocks<double, 2>(out, a, [&](const philox::Block& k, double* v) {
      for (int l = 0; l < 2; ++l) {
        double x = lo + philox::to_unit_double(k.w[2 * l], k.w[2 * l + 1]) * w;
        v[l] = (x >= hi && hi > lo) ? lo : x;
      }
    });
    return;
  }
  dispatch_floating(out.dtype(), "uniform_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same<T, double>::value) {
      constexpr int bits = philox::mantissa_bits<T>();
      fill_blocks<T, 4>(out, a, [&](const philox::Block& k, T* v) {
        for (int l = 0; l < 4; ++l) {
          double x = lo + double(philox::to_unit_float(k.w[l], bits)) * w;
          T t = T(float(x));
          if (double(float(t)) >= hi && hi > lo) t = T(float(lo));
          v[l] = t;
        }
      });
    }
  });
}

// Box-Muller: two uniforms (u1 in (0, 1]) give two independent standard normals.
void normal_kernel(const Tensor& out, const RandomArgs& a) {
  const double mean = a.a, sd = a.b;
  if (out.dtype() == DType::Float64) {
    fill_blocks<double, 2>(out, a, [&](const philox::Block& k, double* v) {
      double u1 = 1.0 - philox::to_unit_double(k.w[0], k.w[1]);
      double u2 = philox::to_unit_double(k.w[2], k.w[3]);
      double r = std::sqrt(-2.0 * std::log(u1));
      v[0] = mean + sd * r * std::cos(kTwoPi * u2);
      v[1] = mean + sd * r * std::sin(kTwoPi * u2);
    });
    return;
  }
  dispatch_floating(out.dtype(), "normal_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same<T, double>::value) {
      fill_blocks<T, 4>(out, a, [&](const philox::Block& k, T* v) {
        for (int p = 0; p < 2; ++p) {
          // Single precision is plenty for a float (or narrower) result.
          float u1 = 1.0f - philox::to_unit_float(k.w[2 * p]);
          float u2 = philox::to_unit_float(k.w[2 * p + 1]);
          float r = std::sqrt(-2.0f * std::log(u1));
          float th = float(kTwoPi) * u2;
          v[2 * p] = T(float(mean + sd * double(r * std::cos(th))));
          v[2 * p + 1] = T(float(mean + sd * double(r * std::sin(th))));
        }
      });
    }
  });
}

void exponential_kernel(const Tensor& out, const RandomArgs& a) {
  const double lambd = a.a;
  if (out.dtype() == DType::Float64) {
    fill_blocks<double, 2>(out, a, [&](const philox::Block& k, double* v) {
      for (int l = 0; l < 2; ++l)
        v[l] = -std::log1p(-philox::to_unit_double(k.w[2 * l], k.w[2 * l + 1])) / lambd;
    });
    return;
  }
  dispatch_floating(out.dtype(), "exponential_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same<T, double>::value) {
      fill_blocks<T, 4>(out, a, [&](const philox::Block& k, T* v) {
        for (int l = 0; l < 4; ++l)
          v[l] = T(float(-std::log1p(-double(philox::to_unit_float(k.w[l]))) / lambd));
      });
    }
  });
}

template <typename T>
T from_int64(int64_t x) {
  if constexpr (std::is_same<T, bool>::value)
    return x != 0;
  else if constexpr (std::is_same<T, Half>::value || std::is_same<T, BFloat16>::value)
    return T(float(x));
  else
    return static_cast<T>(x);
}

// Integers from + (x mod range); range 0 stands for 2^64 (every int64).
void random_kernel(const Tensor& out, const RandomArgs& a) {
  const uint64_t range = a.range, from = uint64_t(a.from);
  dispatch_all(out.dtype(), "random_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (range != 0 && range <= (uint64_t(1) << 32)) {
      fill_blocks<T, 4>(out, a, [&](const philox::Block& k, T* v) {
        for (int l = 0; l < 4; ++l) v[l] = from_int64<T>(int64_t(from + uint64_t(k.w[l]) % range));
      });
    } else {
      fill_blocks<T, 2>(out, a, [&](const philox::Block& k, T* v) {
        for (int l = 0; l < 2; ++l) {
          uint64_t x = (uint64_t(k.w[2 * l + 1]) << 32) | k.w[2 * l];
          v[l] = from_int64<T>(int64_t(from + (range ? x % range : x)));
        }
      });
    }
  });
}

// bernoulli_ with a scalar p runs on vectors of blocks: random_vec.cpp.
void bernoulli_tensor_kernel(const Tensor& out, const Tensor& p, const RandomArgs& a) {
  const double* pp = p.data<double>();
  dispatch_all(out.dtype(), "bernoulli_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* o = out.data<T>();
    const int64_t n = out.numel(), nb = (n + 1) / 2;
    parallel_for(0, nb, kGrainSize / 2, [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) {
        philox::Block k = philox::block(a.seed, a.offset + uint64_t(b));
        for (int l = 0; l < 2 && 2 * b + l < n; ++l) {
          int64_t i = 2 * b + l;
          o[i] = from_int64<T>(philox::to_unit_double(k.w[2 * l], k.w[2 * l + 1]) < pp[i]);
        }
      }
    });
  });
}

// Row r uses blocks offset + r * ceil(per_row / 2) ...; one double per draw.
void multinomial_kernel(const Tensor& out, const Tensor& probs, bool replacement,
                        const RandomArgs& a) {
  const int64_t k = probs.size(-1);
  const int64_t rows = probs.numel() / std::max<int64_t>(k, 1);
  const int64_t n = out.size(-1);
  const int64_t per_row = replacement ? n : k;
  const uint64_t row_blocks = uint64_t((per_row + 1) / 2);
  const double* P = probs.data<double>();
  int64_t* O = out.data<int64_t>();
  auto unit = [&](int64_t r, int64_t j) {
    philox::Block b = philox::block(a.seed, a.offset + uint64_t(r) * row_blocks + uint64_t(j / 2));
    int l = int(j % 2);
    return philox::to_unit_double(b.w[2 * l], b.w[2 * l + 1]);
  };
  int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(per_row, 1));
  parallel_for(0, rows, grain, [&](int64_t r0, int64_t r1) {
    std::vector<double> work(static_cast<size_t>(k));
    std::vector<int64_t> idx(static_cast<size_t>(k));
    for (int64_t r = r0; r < r1; ++r) {
      const double* p = P + r * k;
      int64_t* o = O + r * n;
      if (replacement) {
        double total = 0;
        int64_t last_pos = 0;
        for (int64_t j = 0; j < k; ++j) {
          total += p[j];
          work[j] = total;
          if (p[j] > 0) last_pos = j;
        }
        for (int64_t s = 0; s < n; ++s) {
          double x = unit(r, s) * total;
          int64_t c = std::upper_bound(work.begin(), work.end(), x) - work.begin();
          o[s] = c >= k ? last_pos : c;
        }
      } else {
        // Exponential race: category j wins in order of p_j / E_j, E_j ~ Exp(1),
        // which is sampling without replacement proportional to p.
        for (int64_t j = 0; j < k; ++j) {
          double e = -std::log1p(-unit(r, j));
          work[j] = p[j] > 0 ? (e > 0 ? p[j] / e : INFINITY) : -1.0;
          idx[j] = j;
        }
        std::partial_sort(idx.begin(), idx.begin() + n, idx.end(), [&](int64_t x, int64_t y) {
          return work[x] > work[y] || (work[x] == work[y] && x < y);
        });
        std::copy(idx.begin(), idx.begin() + n, o);
      }
    }
  });
}

// Fisher-Yates; step i uses block offset + i. Serial by nature.
void randperm_kernel(const Tensor& out, const RandomArgs& a) {
  int64_t* o = out.data<int64_t>();
  const int64_t n = out.numel();
  std::iota(o, o + n, int64_t(0));
  for (int64_t i = n - 1; i > 0; --i) {
    philox::Block b = philox::block(a.seed, a.offset + uint64_t(i));
    uint64_t x = (uint64_t(b.w[1]) << 32) | b.w[0];
    int64_t j = int64_t(x % uint64_t(i + 1));
    std::swap(o[i], o[j]);
  }
}

EMBER_REGISTER_CPU_KERNELS(random) {
  constexpr int cpu = int(DeviceType::CPU);
  random_stubs[int(Dist::Uniform)].fns[cpu] = &uniform_kernel;
  random_stubs[int(Dist::Normal)].fns[cpu] = &normal_kernel;
  random_stubs[int(Dist::Random)].fns[cpu] = &random_kernel;
  random_stubs[int(Dist::Exponential)].fns[cpu] = &exponential_kernel;
  bernoulli_tensor_stub.fns[cpu] = &bernoulli_tensor_kernel;
  multinomial_stub.fns[cpu] = &multinomial_kernel;
  randperm_stub.fns[cpu] = &randperm_kernel;
}

}  // namespace
}  // namespace ember::cpu
