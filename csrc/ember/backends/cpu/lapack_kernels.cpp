// CPU kernels of the LAPACK stubs (kernels/stubs/lapack.h): each runs the batch through
// the scipy-openblas32 LAPACK (backends/cpu/lapack.h) as Note [Batched LAPACK] in
// ops/linalg_lapack_detail.h describes: the matrices spread over ember's thread pool
// with the LAPACK single-threaded when there are several matrices and threads, one
// workspace per chunk (gesdd queries its size once per batch), each matrix's info kept.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "ember/backends/cpu/blas.h"
#include "ember/backends/cpu/capability.h"
#include "ember/backends/cpu/lapack.h"
#include "ember/core/parallel.h"
#include "ember/kernels/stubs/lapack.h"

namespace ember::cpu {
namespace {

namespace lp = lapack;

// Note [Batched LAPACK] (ops/linalg_lapack_detail.h).
template <typename F>
void for_each_matrix(int64_t batch, int64_t cost_per_matrix, F&& chunk) {
  if (batch > 1 && get_num_threads() > 1 && !in_parallel_region()) {
    blas::SerialScope serial;
    const int64_t grain =
        std::max<int64_t>(1, (int64_t(1) << 16) / std::max<int64_t>(cost_per_matrix, 1));
    parallel_for(0, batch, grain, chunk);
  } else if (batch > 0) {
    chunk(0, batch);
  }
}

template <typename F>
void dispatch_real(DType dt, F f) {
  if (dt == DType::Float64)
    f(double{});
  else
    f(float{});
}

template <typename T>
T* ptr(const Tensor& t) {
  return reinterpret_cast<T*>(t.data_ptr());
}

void getrf_kernel(const Tensor& a, const Tensor& ipiv, const Tensor& info, int64_t batch,
                  int64_t n) {
  dispatch_real(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* pa = ptr<T>(a);
    int32_t* pp = ptr<int32_t>(ipiv);
    int32_t* pi = ptr<int32_t>(info);
    for_each_matrix(batch, n * n * n, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        pi[i] = lp::getrf<T>(int(n), int(n), pa + i * n * n, int(n), pp + i * n);
    });
  });
}

void getrs_kernel(const Tensor& lu, const Tensor& ipiv, const Tensor& b, int64_t batch, int64_t n,
                  int64_t nrhs, bool trans) {
  dispatch_real(lu.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* pa = ptr<T>(lu);
    const int32_t* pp = ptr<int32_t>(ipiv);
    T* pb = ptr<T>(b);
    for_each_matrix(batch, n * n * nrhs, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        lp::getrs<T>(trans ? 'T' : 'N', int(n), int(nrhs), pa + i * n * n, int(n), pp + i * n,
                     pb + i * n * nrhs, int(n));
    });
  });
}

void trtrs_kernel(const Tensor& a, const Tensor& b, int64_t batch, int64_t n, int64_t nrhs,
                  bool upper, bool unit) {
  dispatch_real(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* pa = ptr<T>(a);
    T* pb = ptr<T>(b);
    for_each_matrix(batch, n * n * nrhs, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        lp::trtrs<T>(upper ? 'U' : 'L', 'N', unit ? 'U' : 'N', int(n), int(nrhs), pa + i * n * n,
                     int(n), pb + i * n * nrhs, int(n));
    });
  });
}

void potrf_kernel(const Tensor& a, const Tensor& info, int64_t batch, int64_t n) {
  dispatch_real(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* pa = ptr<T>(a);
    int32_t* pi = ptr<int32_t>(info);
    for_each_matrix(batch, n * n * n, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        pi[i] = lp::potrf<T>('L', int(n), pa + i * n * n, int(n));
    });
  });
}

void gesdd_kernel(const Tensor& a, const Tensor& s, const Tensor& u, const Tensor& vt,
                  const Tensor& info, int64_t batch, int64_t m, int64_t n, char jobz) {
  const int64_t k = std::min(m, n);
  const int64_t ucols = jobz == 'A' ? m : k, vrows = jobz == 'A' ? n : k;
  dispatch_real(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* pa = ptr<T>(a);
    T* ps = ptr<T>(s);
    T* pu = jobz == 'N' ? nullptr : ptr<T>(u);
    T* pv = jobz == 'N' ? nullptr : ptr<T>(vt);
    int32_t* pi = ptr<int32_t>(info);
    const int ldvt = int(std::max<int64_t>(vrows, 1));
    // One workspace query for the whole batch (Note [Batched LAPACK]).
    const int lwork = lp::gesdd_lwork<T>(jobz, int(m), int(n));
    const size_t liwork = size_t(lp::gesdd_liwork(int(m), int(n)));
    for_each_matrix(batch, m * n * k, [&](int64_t begin, int64_t end) {
      std::vector<T> work(static_cast<size_t>(lwork));
      std::vector<int> iwork(liwork);
      T dummy = 0;
      for (int64_t i = begin; i < end; ++i)
        pi[i] =
            lp::gesdd<T>(jobz, int(m), int(n), pa + i * m * n, int(m), ps + i * k,
                         pu ? pu + i * m * ucols : &dummy, int(m), pv ? pv + i * vrows * n : &dummy,
                         ldvt, work.data(), lwork, iwork.data());
    });
  });
}

void syevd_kernel(const Tensor& a, const Tensor& w, const Tensor& info, int64_t batch, int64_t n,
                  bool vectors, char uplo) {
  dispatch_real(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* pa = ptr<T>(a);
    T* pw = ptr<T>(w);
    int32_t* pi = ptr<int32_t>(info);
    for_each_matrix(batch, n * n * n, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        pi[i] = lp::syevd<T>(vectors ? 'V' : 'N', uplo, int(n), pa + i * n * n, int(n), pw + i * n);
    });
  });
}

void geqrf_kernel(const Tensor& a, const Tensor& tau, int64_t batch, int64_t m, int64_t n,
                  int64_t a_stride, int64_t tau_stride) {
  dispatch_real(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* pa = ptr<T>(a);
    T* pt = ptr<T>(tau);
    for_each_matrix(batch, m * n * std::min(m, n), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        lp::geqrf<T>(int(m), int(n), pa + i * a_stride, int(m), pt + i * tau_stride);
    });
  });
}

void orgqr_kernel(const Tensor& a, const Tensor& tau, int64_t batch, int64_t m, int64_t n,
                  int64_t k, int64_t a_stride, int64_t tau_stride) {
  dispatch_real(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* pa = ptr<T>(a);
    const T* pt = ptr<T>(tau);
    for_each_matrix(batch, m * n * k, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        lp::orgqr<T>(int(m), int(n), int(k), pa + i * a_stride, int(m), pt + i * tau_stride);
    });
  });
}

void lu_det_kernel(const Tensor& lu, const Tensor& ipiv, const Tensor& info, const Tensor& sign,
                   const Tensor& logabs, const Tensor& det, int64_t batch, int64_t n) {
  dispatch_real(lu.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* pa = ptr<T>(lu);
    const int32_t* pp = ptr<int32_t>(ipiv);
    const int32_t* pi = ptr<int32_t>(info);
    T *ps = ptr<T>(sign), *pl = ptr<T>(logabs), *pd = ptr<T>(det);
    for (int64_t i = 0; i < batch; ++i) {
      const T* m = pa + i * n * n;
      double s = 1, l = 0;
      if (pi[i] > 0) {
        s = 0;
        l = -std::numeric_limits<double>::infinity();
      } else {
        for (int64_t j = 0; j < n; ++j) {
          double d = double(m[j * n + j]);
          if (pp[i * n + j] != j + 1) s = -s;
          if (d < 0) s = -s;
          l += std::log(std::fabs(d));
        }
      }
      ps[i] = T(s);
      pl[i] = T(l);
      pd[i] = T(s == 0 ? 0.0 : s * std::exp(l));
    }
  });
}

EMBER_REGISTER_CPU_KERNELS(lapack) {
  constexpr int cpu = int(DeviceType::CPU);
  getrf_stub.fns[cpu] = &getrf_kernel;
  getrs_stub.fns[cpu] = &getrs_kernel;
  trtrs_stub.fns[cpu] = &trtrs_kernel;
  potrf_stub.fns[cpu] = &potrf_kernel;
  gesdd_stub.fns[cpu] = &gesdd_kernel;
  syevd_stub.fns[cpu] = &syevd_kernel;
  geqrf_stub.fns[cpu] = &geqrf_kernel;
  orgqr_stub.fns[cpu] = &orgqr_kernel;
  lu_det_stub.fns[cpu] = &lu_det_kernel;
}

}  // namespace
}  // namespace ember::cpu
