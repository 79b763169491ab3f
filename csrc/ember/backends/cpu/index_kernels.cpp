// CPU kernels of the indexing ops (see Note [Advanced indexing] in ops/index.h).
#include <cstring>
#include <vector>

#include "ember/backends/cpu/capability.h"
#include "ember/kernels/functors.h"
#include "ember/kernels/stubs/index.h"

namespace ember::cpu {
namespace {

// Gathers and plain scatters only move bytes: dispatch on the element size.
void gather_kernel(TensorIterator& it, int64_t stride) {
  dispatch_by_size(it.tensor(0).element_size(), "indexing", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int64_t step = stride * int64_t(sizeof(T));
    it.for_each([step](char** d, const int64_t* s, int64_t n) {
      char* out = d[0];
      const char* src = d[1];
      const char* idx = d[2];
      if (s[0] == sizeof(T) && s[1] == 0 && s[2] == sizeof(int64_t)) {  // index_select / take
        T* __restrict o = reinterpret_cast<T*>(out);
        const int64_t* __restrict k = reinterpret_cast<const int64_t*>(idx);
        for (int64_t i = 0; i < n; ++i) o[i] = *reinterpret_cast<const T*>(src + k[i] * step);
        return;
      }
      if (s[2] == 0) {  // one index for the whole row (x[idx] on rows): a strided row copy
        const char* row = src + *reinterpret_cast<const int64_t*>(idx) * step;
        if (s[0] == sizeof(T) && s[1] == sizeof(T)) {
          std::memcpy(out, row, size_t(n) * sizeof(T));
        } else {
          for (int64_t i = 0; i < n; ++i)
            *reinterpret_cast<T*>(out + i * s[0]) = *reinterpret_cast<const T*>(row + i * s[1]);
        }
        return;
      }
      for (int64_t i = 0; i < n; ++i) {
        int64_t k = *reinterpret_cast<const int64_t*>(idx + i * s[2]);
        *reinterpret_cast<T*>(out + i * s[0]) =
            *reinterpret_cast<const T*>(src + i * s[1] + k * step);
      }
    });
  });
}

void scatter_kernel(TensorIterator& it, int64_t stride, bool accumulate, Scalar alpha) {
  if (!accumulate) {
    dispatch_by_size(it.tensor(0).element_size(), "indexing", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const int64_t step = stride * int64_t(sizeof(T));
      it.for_each([step](char** d, const int64_t* s, int64_t n) {
        for (int64_t i = 0; i < n; ++i) {
          int64_t k = *reinterpret_cast<const int64_t*>(d[2] + i * s[2]);
          *reinterpret_cast<T*>(d[0] + i * s[0] + k * step) =
              *reinterpret_cast<const T*>(d[1] + i * s[1]);
        }
      });
    });
    return;
  }
  dispatch_all(it.dtype(0), "index_put_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = opmath_t<T>;
    const int64_t step = stride * int64_t(sizeof(T));
    const bool unit = alpha.to_double() == 1.0;
    const M a = alpha.to<M>();
    // Serial: duplicate indices must each add their share.
    it.serial_for_each(
        [&](char** d, const int64_t* s, int64_t n) {
          for (int64_t i = 0; i < n; ++i) {
            int64_t k = *reinterpret_cast<const int64_t*>(d[2] + i * s[2]);
            T* dst = reinterpret_cast<T*>(d[0] + i * s[0] + k * step);
            M v = M(*reinterpret_cast<const T*>(d[1] + i * s[1]));
            if constexpr (std::is_same<T, bool>::value)
              *dst = *dst || (v && a);
            else
              *dst = T(M(*dst) + (unit ? v : M(a * v)));
          }
        },
        0, it.numel());
  });
}

struct BadIndex {
  int64_t value;
};

bool offsets_kernel(TensorIterator& it, int64_t size, int64_t stride, bool allow_negative,
                    int64_t* bad) {
  const bool write = it.noutputs() == 1;
  const int in = write ? 1 : 0;
  const int64_t lo = allow_negative ? -size : 0;
  try {
    it.for_each([&](char** d, const int64_t* s, int64_t n) {
      for (int64_t i = 0; i < n; ++i) {
        int64_t k = *reinterpret_cast<const int64_t*>(d[in] + i * s[in]);
        if (k < lo || k >= size) throw BadIndex{k};
        if (write) {
          if (k < 0) k += size;
          *reinterpret_cast<int64_t*>(d[0] + i * s[0]) += k * stride;
        }
      }
    });
  } catch (const BadIndex& b) {
    *bad = b.value;
    return false;
  }
  return true;
}

// Calls f(ptr) for every element of t in row-major order, tracking coordinates.
template <typename F>
void walk_row_major(const Tensor& t, F&& f) {
  const int64_t nd = t.dim(), es = t.element_size();
  if (t.numel() == 0) return;
  std::vector<int64_t> coord(size_t(nd), 0);
  const char* p = t.data_ptr();
  if (nd == 0) {
    f(p, coord.data());
    return;
  }
  const int64_t inner = t.sizes()[nd - 1], inner_st = t.strides()[nd - 1] * es;
  while (true) {
    for (int64_t i = 0; i < inner; ++i) {
      coord[size_t(nd - 1)] = i;
      f(p + i * inner_st, coord.data());
    }
    int64_t d = nd - 2;
    for (; d >= 0; --d) {
      p += t.strides()[d] * es;
      if (++coord[size_t(d)] < t.sizes()[d]) break;
      p -= t.sizes()[d] * t.strides()[d] * es;
      coord[size_t(d)] = 0;
    }
    if (d < 0) return;
  }
}

Tensor nonzero_kernel(const Tensor& self) {
  return dispatch_all(self.dtype(), "nonzero", [&](auto tag) -> Tensor {
    using T = typename decltype(tag)::type;
    using M = opmath_t<T>;
    auto is_nz = [](const char* p) { return M(*reinterpret_cast<const T*>(p)) != M(0); };
    int64_t n = 0;
    walk_row_major(self, [&](const char* p, const int64_t*) { n += is_nz(p); });
    const int64_t nd = self.dim();
    Tensor out = empty(Shape{n, nd}, DType::Int64, self.device());
    int64_t* o = out.data<int64_t>();
    walk_row_major(self, [&](const char* p, const int64_t* c) {
      if (!is_nz(p)) return;
      for (int64_t d = 0; d < nd; ++d) *o++ = c[d];
    });
    return out;
  });
}

EMBER_REGISTER_CPU_KERNELS(index) {
  constexpr int cpu = int(DeviceType::CPU);
  index_gather_stub.fns[cpu] = &gather_kernel;
  index_scatter_stub.fns[cpu] = &scatter_kernel;
  index_offsets_stub.fns[cpu] = &offsets_kernel;
  nonzero_stub.fns[cpu] = &nonzero_kernel;
}

}  // namespace
}  // namespace ember::cpu
