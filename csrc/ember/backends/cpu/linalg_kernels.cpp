// CPU kernels of the linalg front-ends: GEMM (the BLAS for float32/float64,
// a blocked C++ kernel for everything else), tril/triu and trace.
#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "ember/backends/cpu/blas.h"
#include "ember/backends/cpu/capability.h"
#include "ember/core/parallel.h"
#include "ember/kernels/stubs/linalg.h"

namespace ember::cpu {
namespace {

// Element offsets of every matrix of `t` over its leading `nbatch_dims` dims
// (row-major order of the batch index; strides may be 0 for broadcast dims).
std::vector<int64_t> batch_offsets(const Tensor& t, int64_t nbatch_dims) {
  int64_t count = 1;
  for (int64_t d = 0; d < nbatch_dims; ++d) count *= t.sizes()[d];
  std::vector<int64_t> offs(size_t(std::max<int64_t>(count, 0)));
  Shape idx(size_t(nbatch_dims), 0);
  int64_t off = 0;
  for (int64_t i = 0; i < count; ++i) {
    offs[size_t(i)] = off;
    for (int64_t d = nbatch_dims - 1; d >= 0; --d) {
      off += t.strides()[d];
      if (++idx[d] < t.sizes()[d]) break;
      off -= t.strides()[d] * t.sizes()[d];
      idx[d] = 0;
    }
  }
  return offs;
}

// ---- the C++ fallback GEMM ---------------------------------------------------------------
//
// Accumulates in float for 16-bit floats and in uint64_t for every integer type:
// unsigned arithmetic wraps modulo 2^64, which after truncation gives exactly the
// wrap-around result of the narrow type without signed-overflow UB.
template <typename T>
using acc_t = std::conditional_t<
    std::is_integral_v<T>, uint64_t,
    std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float, T>>;

template <typename T>
inline acc_t<T> to_acc(T v) {
  if constexpr (std::is_integral_v<T>)
    return uint64_t(int64_t(v));
  else
    return acc_t<T>(v);
}
template <typename T>
inline T from_acc(acc_t<T> v) {
  if constexpr (std::is_integral_v<T>)
    return T(int64_t(v));
  else
    return T(v);
}
template <typename T>
inline acc_t<T> scalar_acc(Scalar s) {
  if constexpr (std::is_integral_v<T>)
    return uint64_t(s.to_int());
  else
    return acc_t<T>(s.to_double());
}

// Register tile: 4 rows x NR columns (NR = two 256-bit vectors of the accumulator type).
constexpr int64_t MR = 4;
template <typename A>
constexpr int64_t kNR = 64 / int64_t(sizeof(A));

// tile += ap (kb x MR, packed by p) @ bp (kb x NR, packed by p); the tile lives in
// registers for the whole k loop, which is what makes this kernel compute-bound.
template <typename A>
inline void micro_kernel(const A* __restrict ap, const A* __restrict bp, int64_t kb,
                         A* __restrict acc, int64_t ldacc) {
  constexpr int64_t NR = kNR<A>;
  A c0[NR] = {}, c1[NR] = {}, c2[NR] = {}, c3[NR] = {};
  for (int64_t p = 0; p < kb; ++p) {
    const A* b = bp + p * NR;
    const A a0 = ap[p * MR], a1 = ap[p * MR + 1], a2 = ap[p * MR + 2], a3 = ap[p * MR + 3];
    for (int64_t q = 0; q < NR; ++q) {
      c0[q] += a0 * b[q];
      c1[q] += a1 * b[q];
      c2[q] += a2 * b[q];
      c3[q] += a3 * b[q];
    }
  }
  for (int64_t q = 0; q < NR; ++q) {
    acc[q] += c0[q];
    acc[ldacc + q] += c1[q];
    acc[2 * ldacc + q] += c2[q];
    acc[3 * ldacc + q] += c3[q];
  }
}

// Blocked GEMM: tasks are (batch, block of MC rows), run by parallel_for. Each task
// packs (converting to the accumulator type, zero-padding to whole tiles) a KC x NC
// block of B into NR-wide panels and its MC x KC block of A into MR-row panels.
template <typename T>
void gemm_fallback(const Tensor& c, const Tensor& a, const Tensor& b, Scalar beta_s,
                   Scalar alpha_s) {
  using A = acc_t<T>;
  constexpr int64_t NR = kNR<A>;
  constexpr int64_t MC = 64, NC = 256, KC = 256;
  const int64_t nd = c.dim() - 2;
  const int64_t m = c.sizes()[nd], n = c.sizes()[nd + 1], k = a.sizes()[nd + 1];
  const int64_t asr = a.strides()[nd], asc = a.strides()[nd + 1];
  const int64_t bsr = b.strides()[nd], bsc = b.strides()[nd + 1];
  const int64_t csr = c.strides()[nd], csc = c.strides()[nd + 1];
  const std::vector<int64_t> oa = batch_offsets(a, nd), ob = batch_offsets(b, nd),
                             oc = batch_offsets(c, nd);
  const A alpha = scalar_acc<T>(alpha_s), beta = scalar_acc<T>(beta_s);
  const bool beta_zero = beta_s.to_double() == 0.0;
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  T* pc = c.data<T>();
  const int64_t row_blocks = (m + MC - 1) / MC;
  const int64_t ntasks = int64_t(oc.size()) * row_blocks;
  // ~256K multiply-adds per chunk at least (computed in double: n * k * 64 may overflow).
  const double work = std::max(1.0, double(std::min(m, MC)) * double(n) * double(k));
  const int64_t grain = std::max<int64_t>(1, int64_t(double(int64_t(1) << 18) / work));
  auto round_up = [](int64_t v, int64_t r) { return (v + r - 1) / r * r; };
  const int64_t nc_max = round_up(std::min(n, NC), NR), kc_max = std::min(k, KC);
  const int64_t mc_max = round_up(std::min(m, MC), MR);

  parallel_for(0, ntasks, grain, [&](int64_t t0, int64_t t1) {
    std::vector<A> acc(size_t(mc_max * nc_max)), bp(size_t(kc_max * nc_max)),
        ap(size_t(mc_max * kc_max));
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t bi = t / row_blocks, i0 = (t % row_blocks) * MC, mb = std::min(MC, m - i0);
      const int64_t mbp = round_up(mb, MR);
      const T* A0 = pa + oa[size_t(bi)] + i0 * asr;
      const T* B0 = pb + ob[size_t(bi)];
      T* C0 = pc + oc[size_t(bi)] + i0 * csr;
      for (int64_t j0 = 0; j0 < n; j0 += NC) {
        const int64_t nb = std::min(NC, n - j0), nbp = round_up(nb, NR);
        std::fill(acc.begin(), acc.begin() + mbp * nbp, A(0));
        for (int64_t p0 = 0; p0 < k; p0 += KC) {
          const int64_t kb = std::min(KC, k - p0);
          for (int64_t jp = 0; jp < nbp; jp += NR)  // B panels: [jp / NR][p][q]
            for (int64_t p = 0; p < kb; ++p) {
              A* dst = bp.data() + jp * kb + p * NR;
              const T* src = B0 + (p0 + p) * bsr + (j0 + jp) * bsc;
              const int64_t w = std::min(NR, nb - jp);
              for (int64_t q = 0; q < w; ++q) dst[q] = to_acc(src[q * bsc]);
              for (int64_t q = w; q < NR; ++q) dst[q] = A(0);
            }
          for (int64_t ip = 0; ip < mbp; ip += MR)  // A panels: [ip / MR][p][r]
            for (int64_t r = 0; r < MR; ++r) {
              A* dst = ap.data() + ip * kb + r;
              if (ip + r < mb) {
                const T* src = A0 + (ip + r) * asr + p0 * asc;
                for (int64_t p = 0; p < kb; ++p) dst[p * MR] = to_acc(src[p * asc]);
              } else {
                for (int64_t p = 0; p < kb; ++p) dst[p * MR] = A(0);
              }
            }
          for (int64_t ip = 0; ip < mbp; ip += MR)
            for (int64_t jp = 0; jp < nbp; jp += NR)
              micro_kernel(ap.data() + ip * kb, bp.data() + jp * kb, kb, acc.data() + ip * nbp + jp,
                           nbp);
        }
        for (int64_t i = 0; i < mb; ++i) {
          T* dst = C0 + i * csr + j0 * csc;
          const A* r = acc.data() + i * nbp;
          if (beta_zero) {
            for (int64_t j = 0; j < nb; ++j) dst[j * csc] = from_acc<T>(A(alpha * r[j]));
          } else {
            for (int64_t j = 0; j < nb; ++j)
              dst[j * csc] = from_acc<T>(A(alpha * r[j] + beta * to_acc(dst[j * csc])));
          }
        }
      }
    }
  });
}

// ---- the BLAS path (float32 / float64) ------------------------------------------------------

template <typename T>
bool blas_fits(const Tensor& c, const Tensor& a, const Tensor& b) {
  const int64_t nd = c.dim() - 2;
  const int64_t m = c.sizes()[nd], n = c.sizes()[nd + 1], k = a.sizes()[nd + 1];
  if (m > blas::kMaxDim || n > blas::kMaxDim || k > blas::kMaxDim) return false;
  MatrixLayout la = matrix_layout(m, k, a.strides()[nd], a.strides()[nd + 1]);
  MatrixLayout lb = matrix_layout(k, n, b.strides()[nd], b.strides()[nd + 1]);
  MatrixLayout lc = matrix_layout(m, n, c.strides()[nd], c.strides()[nd + 1]);
  return la.ok && lb.ok && lc.ok && !lc.trans && la.ld <= blas::kMaxDim && lb.ld <= blas::kMaxDim &&
         lc.ld <= blas::kMaxDim;
}

// One call per batch matrix, from this thread: the BLAS threads each call itself
// (see Note [BLAS loading]). Vector shapes (n == 1 or m == 1) go to GEMV.
template <typename T>
void gemm_blas(const Tensor& c, const Tensor& a, const Tensor& b, Scalar beta_s, Scalar alpha_s) {
  const int64_t nd = c.dim() - 2;
  const int64_t m = c.sizes()[nd], n = c.sizes()[nd + 1], k = a.sizes()[nd + 1];
  const MatrixLayout la = matrix_layout(m, k, a.strides()[nd], a.strides()[nd + 1]);
  const MatrixLayout lb = matrix_layout(k, n, b.strides()[nd], b.strides()[nd + 1]);
  const MatrixLayout lc = matrix_layout(m, n, c.strides()[nd], c.strides()[nd + 1]);
  const std::vector<int64_t> oa = batch_offsets(a, nd), ob = batch_offsets(b, nd),
                             oc = batch_offsets(c, nd);
  const T alpha = T(alpha_s.to_double()), beta = T(beta_s.to_double());
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  T* pc = c.data<T>();
  // Note [Small GEMM]: small matrices skip the BLAS's fixed cost per call.
  const SmallGemmKernel small =
      m > 1 && n > 1 && m <= kSmallGemmMax && n <= kSmallGemmMax && k <= kSmallGemmMax
          ? small_gemm_stub.fns[int(DeviceType::CPU)]
          : nullptr;
  // Note [Skinny GEMM]: a few rows of a against Linear's weight (b stored n x k) as dot
  // products of contiguous rows, without the BLAS's packing.
  const SkinnyGemmKernel skinny = !small && n > 1 && !la.trans && lb.trans && skinny_gemm_pays(m, k)
                                      ? skinny_gemm_stub.fns[int(DeviceType::CPU)]
                                      : nullptr;
  // Note [GEMM over the pool]: with several threads, a GEMM big enough for the BLAS to
  // thread is split into column (or row) panels of C, one single-threaded BLAS call per
  // panel on ember's pool (blas::SerialScope). The BLAS's own threads wait for each
  // other in spin/yield loops that lose whole scheduler slices on a loaded machine
  // (a 64x784x512 sgemm took 60 ms on 2 busy cores instead of 0.7 ms); the pool's
  // one fork/join per call does not.
  // A batch of matrices too small for panels (bmm of 64 32x32 matrices) is spread over
  // the pool a matrix per task: one call per matrix from one thread left the other
  // threads idle (64x32x32 on 2 threads: 108 us, PyTorch 37 us).
  const int nt = get_num_threads();
  const double mnk = double(m) * double(n) * double(k);
  const bool panels = !small && mnk >= 262144.0,
             batched = oc.size() > 1 && mnk * double(oc.size()) >= 65536.0;
  if (nt > 1 && n > 1 && m > 1 && (panels || batched) && !in_parallel_region()) {
    const bool by_cols = n >= m;
    const int64_t len = by_cols ? n : m;
    const int64_t unit = 16;  // panel edges on the micro-kernel's multiples
    const int64_t per =
        panels ? std::max<int64_t>(unit, (len + nt - 1) / nt + unit - 1) / unit * unit : len;
    const int64_t npanel = (len + per - 1) / per;
    const int64_t ntask = static_cast<int64_t>(oc.size()) * npanel;
    blas::SerialScope serial;
    parallel_for(0, ntask, 1, [&](int64_t t0, int64_t t1) {
      for (int64_t task = t0; task < t1; ++task) {
        const size_t bi = size_t(task / npanel);
        const int64_t p0 = (task % npanel) * per, pl = std::min(per, len - p0);
        const T* A0 = pa + oa[bi];
        const T* B0 = pb + ob[bi];
        T* C0 = pc + oc[bi];
        if (small) {  // a whole matrix: small ones are never split into panels
          small(c.dtype(), la.trans, lb.trans, m, n, k, alpha, A0, la.ld, B0, lb.ld, beta, C0,
                lc.ld);
        } else if (by_cols) {  // C[:, p0:p0+pl] = op(A) op(B)[:, p0:p0+pl]
          B0 += lb.trans ? p0 * lb.ld : p0;
          if (skinny) {
            skinny(c.dtype(), m, pl, k, alpha, A0, la.ld, B0, lb.ld, beta, C0 + p0, lc.ld);
            continue;
          }
          blas::gemm_serial(la.trans, lb.trans, m, pl, k, alpha, A0, la.ld, B0, lb.ld, beta,
                            C0 + p0, lc.ld);
        } else {  // C[p0:p0+pl, :] = op(A)[p0:p0+pl, :] op(B)
          A0 += la.trans ? p0 : p0 * la.ld;
          if (skinny) {
            skinny(c.dtype(), pl, n, k, alpha, A0, la.ld, B0, lb.ld, beta, C0 + p0 * lc.ld, lc.ld);
            continue;
          }
          blas::gemm_serial(la.trans, lb.trans, pl, n, k, alpha, A0, la.ld, B0, lb.ld, beta,
                            C0 + p0 * lc.ld, lc.ld);
        }
      }
    });
    return;
  }
  for (size_t bi = 0; bi < oc.size(); ++bi) {
    const T* A0 = pa + oa[bi];
    const T* B0 = pb + ob[bi];
    T* C0 = pc + oc[bi];
    if (n == 1 || m == 1) {
      // GEMV reads y when beta == 0 in some builds: clear it so no NaN leaks in.
      const int64_t len = n == 1 ? m : n, incy = n == 1 ? lc.ld : 1;
      if (beta == T(0))
        for (int64_t i = 0; i < len; ++i) C0[i * incy] = T(0);
      if (n == 1) {  // y(m) = op(A)(m x k) x(k), x = column of B
        const int64_t incx = lb.trans ? 1 : lb.ld;
        if (la.trans)
          blas::gemv(true, k, m, alpha, A0, la.ld, B0, incx, beta, C0, incy);
        else
          blas::gemv(false, m, k, alpha, A0, la.ld, B0, incx, beta, C0, incy);
      } else {  // y(n) = op(B)^T x(k), x = row of A
        const int64_t incx = la.trans ? la.ld : 1;
        if (lb.trans)
          blas::gemv(false, n, k, alpha, B0, lb.ld, A0, incx, beta, C0, incy);
        else
          blas::gemv(true, k, n, alpha, B0, lb.ld, A0, incx, beta, C0, incy);
      }
    } else if (small) {
      small(c.dtype(), la.trans, lb.trans, m, n, k, alpha, A0, la.ld, B0, lb.ld, beta, C0, lc.ld);
    } else if (skinny) {
      skinny(c.dtype(), m, n, k, alpha, A0, la.ld, B0, lb.ld, beta, C0, lc.ld);
    } else {
      blas::gemm(la.trans, lb.trans, m, n, k, alpha, A0, la.ld, B0, lb.ld, beta, C0, lc.ld);
    }
  }
}

void gemm_kernel(const Tensor& c, const Tensor& a, const Tensor& b, Scalar beta, Scalar alpha) {
  DType dt = c.dtype();
  if (dt == DType::Float32 && blas::enabled() && blas_fits<float>(c, a, b))
    return gemm_blas<float>(c, a, b, beta, alpha);
  if (dt == DType::Float64 && blas::enabled() && blas_fits<double>(c, a, b))
    return gemm_blas<double>(c, a, b, beta, alpha);
  dispatch_numeric(dt, "matmul", [&](auto tag) {
    using T = typename decltype(tag)::type;
    gemm_fallback<T>(c, a, b, beta, alpha);
  });
}

// ---- tril / triu ------------------------------------------------------------------------------

// Works on raw bits: every dtype's zero is all-zero bytes.
template <typename U>
void tril_triu_impl(const Tensor& out, const Tensor& in, bool upper, int64_t diag) {
  const int64_t nd = out.dim() - 2;
  const int64_t m = out.sizes()[nd], n = out.sizes()[nd + 1];
  const std::vector<int64_t> oo = batch_offsets(out, nd), oi = batch_offsets(in, nd);
  const int64_t osr = out.strides()[nd], osc = out.strides()[nd + 1];
  const int64_t isr = in.strides()[nd], isc = in.strides()[nd + 1];
  U* po = reinterpret_cast<U*>(out.data_ptr());
  const U* pi = reinterpret_cast<const U*>(in.data_ptr());
  const int64_t rows = int64_t(oo.size()) * m;
  parallel_for(0, rows, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(n, 1)),
               [&](int64_t r0, int64_t r1) {
                 for (int64_t r = r0; r < r1; ++r) {
                   const int64_t bi = r / m, i = r % m;
                   U* dst = po + oo[size_t(bi)] + i * osr;
                   const U* src = pi + oi[size_t(bi)] + i * isr;
                   // Kept columns: j <= i + diag (tril) or j >= i + diag (triu), clamped.
                   const int64_t edge = std::clamp<int64_t>(i + diag + (upper ? 0 : 1), 0, n);
                   const int64_t keep0 = upper ? edge : 0, keep1 = upper ? n : edge;
                   for (int64_t j = 0; j < n; ++j)
                     dst[j * osc] = (j >= keep0 && j < keep1) ? src[j * isc] : U(0);
                 }
               });
}

void tril_triu_kernel(const Tensor& out, const Tensor& in, bool upper, int64_t diagonal) {
  switch (out.element_size()) {
    case 1:
      return tril_triu_impl<uint8_t>(out, in, upper, diagonal);
    case 2:
      return tril_triu_impl<uint16_t>(out, in, upper, diagonal);
    case 4:
      return tril_triu_impl<uint32_t>(out, in, upper, diagonal);
    case 8:
      return tril_triu_impl<uint64_t>(out, in, upper, diagonal);
    default:
      EMBER_ERROR("tril/triu: unsupported element size ", out.element_size());
  }
}

// ---- trace ------------------------------------------------------------------------------------

void trace_kernel(const Tensor& out, const Tensor& diag) {
  const int64_t n = diag.sizes()[0], s = diag.strides()[0];
  dispatch_all(diag.dtype(), "trace", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = diag.data<T>();
    if constexpr (std::is_integral_v<T>) {  // bool and integers -> int64, wrapping
      uint64_t acc = 0;
      for (int64_t i = 0; i < n; ++i) acc += uint64_t(int64_t(p[i * s]));
      *out.data<int64_t>() = int64_t(acc);
    } else {
      double acc = 0;
      for (int64_t i = 0; i < n; ++i) acc += double(p[i * s]);
      *out.data<T>() = T(acc);
    }
  });
}

EMBER_REGISTER_CPU_KERNELS(linalg) {
  gemm_stub.fns[int(DeviceType::CPU)] = &gemm_kernel;
  tril_triu_stub.fns[int(DeviceType::CPU)] = &tril_triu_kernel;
  trace_stub.fns[int(DeviceType::CPU)] = &trace_kernel;
}

}  // namespace
}  // namespace ember::cpu
