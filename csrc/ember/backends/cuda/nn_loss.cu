// CUDA kernels of the losses (kernels/stubs/nn_loss.h), following the CPU kernels of
// backends/cpu/nn_loss.cpp:
//  * nll_stub: without lse (nll_loss) one thread per row, loss = -w[t] x[i, t]; with lse
//    (cross entropy, log_softmax fused) a warp per row for C <= 1024, else a block per
//    row: max, sum of exponentials (in opmath), lse = shift + log(sum). A target outside
//    [0, C) other than ignore_index is skipped by the kernel (never read out of bounds)
//    and its row recorded (atomicMin: the first bad row) in a one-element device flag;
//    the flag is copied back after the launch (a stream sync) and the host raises the
//    CPU's IndexError "Target t is out of bounds.".
//  * cross_entropy_backward_stub: one thread per element of gx, grid-stride.
//  * ctc_stub / ctc_backward_stub: one block per sample, the threads across the 2L + 1
//    states of the extended label sequence, one time step per __syncthreads (Note [CTC
//    in log space] of the CPU file). As on the CPU the recursions run in double, in a
//    double-buffered row in shared memory (a global workspace when it does not fit);
//    the forward writes the alphas (N, T, 2 max_L + 1) in the tensor's dtype and the
//    nll, the backward recomputes the betas and, per time step, collects
//    logsumexp(alpha + beta) per class: each non-blank class by the thread of its first
//    target position walking the later positions of the same label in increasing order
//    (the CPU's order), the blank (every even state) by a block reduction of log_add.
#include <cuda_runtime.h>

#include <cstdint>
#include <limits>

#include "ember/backends/cuda/loops.cuh"
#include "ember/backends/cuda/reduce.cuh"
#include "ember/kernels/dispatch.h"
#include "ember/kernels/registration.h"
#include "ember/kernels/stubs/nn_loss.h"

namespace ember::cuda {
namespace {

constexpr unsigned long long kNoError = ~0ull;
constexpr int kWarpRowsMaxC = 1024;  // cross entropy rows up to this width: a warp per row
constexpr int kSmemBytes = 48 * 1024;

__device__ __forceinline__ float exp_(float x) { return expf(x); }
__device__ __forceinline__ double exp_(double x) { return exp(x); }
__device__ __forceinline__ float log_(float x) { return logf(x); }
__device__ __forceinline__ double log_(double x) { return log(x); }

unsigned capped(int64_t blocks) {
  return unsigned(std::max<int64_t>(1, std::min<int64_t>(blocks, int64_t(1) << 20)));
}

void check_contiguous(const Tensor& t, const char* op, const char* what) {
  EMBER_CHECK(!t.defined() || t.is_contiguous(), op, " (CUDA): expected a contiguous ", what);
}

// ---- nll / cross entropy ------------------------------------------------------------

/// Row i's target bookkeeping once its lse `l` is known (lse rows) or not (nll rows):
/// the CPU's per-row tail of nll_typed. Out-of-range targets only set the error flag.
template <typename T, typename A>
__device__ __forceinline__ void nll_row_tail(int64_t i, int64_t C, A l, bool has_lse,
                                             const T* __restrict__ row,
                                             const int64_t* __restrict__ tp,
                                             const T* __restrict__ wp, T* __restrict__ lp,
                                             T* __restrict__ wtp, int64_t ignore,
                                             unsigned long long* err) {
  const int64_t t = tp[i];
  if (t == ignore) {
    wtp[i] = T(0);
    lp[i] = T(0);
    return;
  }
  if (t < 0 || t >= C) {
    atomicMin(err, static_cast<unsigned long long>(i));
    wtp[i] = T(0);
    lp[i] = T(0);
    return;
  }
  const A w = wp ? A(wp[t]) : A(1);
  wtp[i] = T(w);
  lp[i] = T(has_lse ? w * (l - A(row[t])) : -w * A(row[t]));
}

template <typename T>
__global__ void nll_rows_kernel(T* __restrict__ lp, T* __restrict__ wtp, const T* __restrict__ x,
                                const int64_t* __restrict__ tp, const T* __restrict__ wp, int64_t M,
                                int64_t C, int64_t ignore, unsigned long long* err) {
  using A = opmath_t<T>;
  const int64_t step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < M; i += step)
    nll_row_tail<T, A>(i, C, A(0), false, x + i * C, tp, wp, lp, wtp, ignore, err);
}

template <typename A>
__device__ __forceinline__ A max_combine(A a, A b) {
  return a < b ? b : a;  // the CPU's max_of
}

template <typename A>
__device__ __forceinline__ A warp_max(A v) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v = max_combine(v, __shfl_xor_sync(0xffffffffu, v, off));
  return v;
}
template <typename A>
__device__ __forceinline__ A warp_sum(A v) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

// exp(x - m) with m = -inf (an all -inf row, or C == 0) would be NaN: shift by 0.
template <typename A>
__device__ __forceinline__ A shift_of(A m) {
  return (isinf(m) && m < A(0)) ? A(0) : m;
}

/// Cross entropy rows of width C <= kWarpRowsMaxC: a warp per row.
template <typename T>
__global__ void ce_warp_rows_kernel(T* __restrict__ lp, T* __restrict__ wtp, T* __restrict__ lsep,
                                    const T* __restrict__ x, const int64_t* __restrict__ tp,
                                    const T* __restrict__ wp, int64_t M, int64_t C, int64_t ignore,
                                    unsigned long long* err) {
  using A = opmath_t<T>;
  const int lane = int(threadIdx.x) & 31;
  const int64_t warps = int64_t(blockDim.x >> 5);
  const int64_t step = warps * gridDim.x;
  for (int64_t i = int64_t(blockIdx.x) * warps + (threadIdx.x >> 5); i < M; i += step) {
    const T* row = x + i * C;
    A m = -A(INFINITY);
    for (int64_t j = lane; j < C; j += 32) m = max_combine(m, A(row[j]));
    const A shift = shift_of(warp_max(m));
    A s = A(0);
    for (int64_t j = lane; j < C; j += 32) s += exp_(A(row[j]) - shift);
    s = warp_sum(s);
    if (lane == 0) {
      const A l = shift + log_(s);
      lsep[i] = T(l);
      nll_row_tail<T, A>(i, C, l, true, row, tp, wp, lp, wtp, ignore, err);
    }
  }
}

template <typename A>
struct MaxOp {
  using acc_t = A;
  __device__ A init() const { return -A(INFINITY); }
  __device__ A combine(A a, A b) const { return max_combine(a, b); }
};
template <typename A>
struct AddOp {
  using acc_t = A;
  __device__ A init() const { return A(0); }
  __device__ A combine(A a, A b) const { return a + b; }
};

/// The block-wide reduction of v, returned to every thread of the block.
template <typename A, typename Op>
__device__ __forceinline__ A block_all(A v, const Op& op, A* smem, A* result) {
  v = block_reduce(v, op, smem);
  if (threadIdx.x == 0) *result = v;
  __syncthreads();
  v = *result;
  __syncthreads();  // `result` is rewritten by the next call
  return v;
}

/// Cross entropy rows wider than kWarpRowsMaxC: a block per row.
template <typename T>
__global__ void ce_block_rows_kernel(T* __restrict__ lp, T* __restrict__ wtp, T* __restrict__ lsep,
                                     const T* __restrict__ x, const int64_t* __restrict__ tp,
                                     const T* __restrict__ wp, int64_t M, int64_t C, int64_t ignore,
                                     unsigned long long* err) {
  using A = opmath_t<T>;
  __shared__ A smem[32];
  __shared__ A result;
  for (int64_t i = blockIdx.x; i < M; i += gridDim.x) {
    const T* row = x + i * C;
    A m = -A(INFINITY);
    for (int64_t j = threadIdx.x; j < C; j += blockDim.x) m = max_combine(m, A(row[j]));
    const A shift = shift_of(block_all(m, MaxOp<A>{}, smem, &result));
    A s = A(0);
    for (int64_t j = threadIdx.x; j < C; j += blockDim.x) s += exp_(A(row[j]) - shift);
    s = block_reduce(s, AddOp<A>{}, smem);
    if (threadIdx.x == 0) {
      const A l = shift + log_(s);
      lsep[i] = T(l);
      nll_row_tail<T, A>(i, C, l, true, row, tp, wp, lp, wtp, ignore, err);
    }
  }
}

void nll_kernel(const Tensor& loss, const Tensor& wt, const Tensor& lse, const Tensor& x,
                const Tensor& target, const Tensor& weight, int64_t ignore) {
  const char* op = lse.defined() ? "cross_entropy" : "nll_loss";
  EMBER_CHECK(x.dim() == 2 && target.dtype() == DType::Int64, op,
              " (CUDA): expected (M, C) rows and an int64 target");
  for (const Tensor* t : {&loss, &wt, &lse, &x, &target, &weight})
    check_contiguous(*t, op, "operand");
  const int64_t M = x.sizes()[0], C = x.sizes()[1];
  if (M == 0) return;
  cudaStream_t stream = current_stream();
  Tensor flag = empty(Shape{1}, DType::Int64, x.device());
  auto* err = reinterpret_cast<unsigned long long*>(flag.data_ptr());
  EMBER_CUDA_CHECK(cudaMemsetAsync(err, 0xff, sizeof(unsigned long long), stream));
  const auto* tp = reinterpret_cast<const int64_t*>(target.data_ptr());
  dispatch_floating(x.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* lp = reinterpret_cast<T*>(loss.data_ptr());
    T* wtp = reinterpret_cast<T*>(wt.data_ptr());
    const T* xp = reinterpret_cast<const T*>(x.data_ptr());
    const T* wp = weight.defined() ? reinterpret_cast<const T*>(weight.data_ptr()) : nullptr;
    if (!lse.defined()) {
      nll_rows_kernel<T>
          <<<grid_for(M), kThreads, 0, stream>>>(lp, wtp, xp, tp, wp, M, C, ignore, err);
    } else if (C <= kWarpRowsMaxC) {
      T* lsep = reinterpret_cast<T*>(lse.data_ptr());
      constexpr int kRowsPerBlock = kThreads / 32;
      ce_warp_rows_kernel<T>
          <<<capped((M + kRowsPerBlock - 1) / kRowsPerBlock), kThreads, 0, stream>>>(
              lp, wtp, lsep, xp, tp, wp, M, C, ignore, err);
    } else {
      T* lsep = reinterpret_cast<T*>(lse.data_ptr());
      ce_block_rows_kernel<T>
          <<<capped(M), 512, 0, stream>>>(lp, wtp, lsep, xp, tp, wp, M, C, ignore, err);
    }
  });
  EMBER_CUDA_CHECK(cudaGetLastError());
  // The bad-target check: one 8-byte copy back (a stream sync), as the CPU raises here.
  unsigned long long bad = kNoError;
  EMBER_CUDA_CHECK(cudaMemcpyAsync(&bad, err, sizeof(bad), cudaMemcpyDeviceToHost, stream));
  EMBER_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (bad != kNoError) {
    int64_t t = 0;
    EMBER_CUDA_CHECK(cudaMemcpyAsync(&t, tp + bad, sizeof(t), cudaMemcpyDeviceToHost, stream));
    EMBER_CUDA_CHECK(cudaStreamSynchronize(stream));
    EMBER_CHECK_INDEX(false, "Target ", t, " is out of bounds.");
  }
}

/// gx[i, j] = coef[i] * exp(x[i, j] - lse[i]) (minus coef[i] at j == t_i, rounded twice as
/// the CPU does); 0 for ignored rows. I: the index type (32-bit when M * C fits).
template <typename T, typename I>
__global__ void ce_backward_kernel_(T* __restrict__ gx, const T* __restrict__ coef,
                                    const T* __restrict__ x, const T* __restrict__ lse,
                                    const int64_t* __restrict__ tp, I total, I C, int64_t ignore) {
  using A = opmath_t<T>;
  const I step = I(blockDim.x) * gridDim.x;
  for (I k = I(blockIdx.x) * blockDim.x + threadIdx.x; k < total; k += step) {
    const I i = k / C, j = k - i * C;
    const int64_t t = tp[i];
    if (t == ignore) {
      gx[k] = T(0);
      continue;
    }
    const A c = A(coef[i]);
    T v = T(c * exp_(A(x[k]) - A(lse[i])));
    if (int64_t(j) == t) v = T(A(v) - c);
    gx[k] = v;
  }
}

void ce_backward_kernel(const Tensor& gx, const Tensor& coef, const Tensor& x, const Tensor& lse,
                        const Tensor& target, int64_t ignore) {
  const char* op = "cross_entropy_backward";
  for (const Tensor* t : {&gx, &coef, &x, &lse, &target}) check_contiguous(*t, op, "operand");
  const int64_t M = x.sizes()[0], C = x.sizes()[1], total = M * C;
  if (total == 0) return;
  dispatch_floating(x.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* o = reinterpret_cast<T*>(gx.data_ptr());
    const T* cp = reinterpret_cast<const T*>(coef.data_ptr());
    const T* xp = reinterpret_cast<const T*>(x.data_ptr());
    const T* lp = reinterpret_cast<const T*>(lse.data_ptr());
    const auto* tp = reinterpret_cast<const int64_t*>(target.data_ptr());
    if (total <= int64_t(INT32_MAX))
      ce_backward_kernel_<T, uint32_t><<<grid_for(total), kThreads, 0, current_stream()>>>(
          o, cp, xp, lp, tp, uint32_t(total), uint32_t(C), ignore);
    else
      ce_backward_kernel_<T, int64_t>
          <<<grid_for(total), kThreads, 0, current_stream()>>>(o, cp, xp, lp, tp, total, C, ignore);
  });
  EMBER_CUDA_CHECK(cudaGetLastError());
}

// ---- CTC ------------------------------------------------------------------------------

/// log(exp(a) + exp(b)) as the CPU's log_add (same operations, same order), in double.
__device__ __forceinline__ double log_add(double a, double b) {
  if (a == -INFINITY) return b;
  if (b == -INFINITY) return a;
  const double m = a < b ? b : a;  // std::max
  return m + log1p(exp(-fabs(a - b)));
}

struct LogAddOp {
  using acc_t = double;
  __device__ double init() const { return -INFINITY; }
  __device__ double combine(double a, double b) const { return log_add(a, b); }
};

struct CtcArgs {
  const int64_t* tg;  // the flat targets
  const int64_t* offsets;
  const int64_t* in_lens;
  const int64_t* tgt_lens;
  int64_t Tmax, N, C, Smax, blank;
};

__device__ __forceinline__ int64_t ctc_label(const CtcArgs& a, int64_t off, int64_t s) {
  return s % 2 == 0 ? a.blank : a.tg[off + s / 2];
}

/// Double-buffered rows of 2 * Smax doubles per sample: dynamic shared memory, or the
/// sample's slice of a global workspace when `gbuf` is set.
extern __shared__ double2 ctc_smem[];

template <typename T>
__global__ void ctc_alpha_kernel(T* __restrict__ nll, T* __restrict__ alpha,
                                 const T* __restrict__ lp, CtcArgs a, double* gbuf) {
  const double ninf = -INFINITY;
  for (int64_t n = blockIdx.x; n < a.N; n += gridDim.x) {
    double* buf = gbuf ? gbuf + n * 2 * a.Smax : reinterpret_cast<double*>(ctc_smem);
    const int64_t Tn = a.in_lens[n], L = a.tgt_lens[n], off = a.offsets[n], S = 2 * L + 1;
    T* an = alpha + n * a.Tmax * a.Smax;
    auto lpv = [&](int64_t t, int64_t c) { return double(lp[(t * a.N + n) * a.C + c]); };
    // -inf where the recursion writes nothing: t >= Tn, or s >= S
    for (int64_t t = 0; t < a.Tmax; ++t)
      for (int64_t s = (t < Tn ? S : 0) + threadIdx.x; s < a.Smax; s += blockDim.x)
        an[t * a.Smax + s] = T(ninf);
    if (Tn == 0) {
      if (threadIdx.x == 0) nll[n] = T(L == 0 ? 0.0 : double(INFINITY));
      continue;  // uniform across the block
    }
    for (int64_t s = threadIdx.x; s < S; s += blockDim.x) {
      const double v = s == 0 ? lpv(0, a.blank) : (s == 1 ? lpv(0, ctc_label(a, off, 1)) : ninf);
      buf[s] = v;
      an[s] = T(v);
    }
    __syncthreads();
    for (int64_t t = 1; t < Tn; ++t) {
      const double* prev = buf + ((t - 1) & 1) * a.Smax;
      double* cur = buf + (t & 1) * a.Smax;
      for (int64_t s = threadIdx.x; s < S; s += blockDim.x) {
        const int64_t l = ctc_label(a, off, s);
        double v = prev[s];
        if (s >= 1) v = log_add(v, prev[s - 1]);
        if (s >= 2 && l != a.blank && l != ctc_label(a, off, s - 2)) v = log_add(v, prev[s - 2]);
        v = v == ninf ? ninf : v + lpv(t, l);
        cur[s] = v;
        an[t * a.Smax + s] = T(v);
      }
      __syncthreads();
    }
    if (threadIdx.x == 0) {
      const double* last = buf + ((Tn - 1) & 1) * a.Smax;
      double ll = last[S - 1];
      if (S > 1) ll = log_add(ll, last[S - 2]);
      nll[n] = T(-ll);
    }
    __syncthreads();  // buf is reused by the block's next sample
  }
}

/// Writes grad[t, n, c] for every class c of the labels from alpha[t] + beta[t] (`beta`:
/// the row of time t). Called by every thread of the block.
template <typename T>
__device__ void ctc_grad_row(T* __restrict__ grad, const T* __restrict__ lp, const T* an,
                             const double* beta, const int* nxt, const int* first, const CtcArgs& a,
                             int64_t n, int64_t t, int64_t L, int64_t off, double nl,
                             double* smem) {
  const double ninf = -INFINITY;
  const T* arow = an + t * a.Smax;
  const int64_t row = (t * a.N + n) * a.C;
  // non-blank classes: the thread of the label's first position, positions in order
  for (int64_t k = threadIdx.x; k < L; k += blockDim.x) {
    if (!first[k]) continue;
    double v = ninf;
    for (int64_t j = k; j >= 0; j = nxt[j]) {
      const int64_t s = 2 * j + 1;
      v = log_add(v, double(arow[s]) + beta[s]);
    }
    const int64_t c = a.tg[off + k];
    if (v != ninf) grad[row + c] = T(-exp(v + nl - double(lp[row + c])));
  }
  // the blank: every even state, a block reduction of log_add
  double v = ninf;
  for (int64_t s = 2 * int64_t(threadIdx.x); s <= 2 * L; s += 2 * int64_t(blockDim.x))
    v = log_add(v, double(arow[s]) + beta[s]);
  v = block_reduce(v, LogAddOp{}, smem);
  if (threadIdx.x == 0 && v != ninf)
    grad[row + a.blank] = T(-exp(v + nl - double(lp[row + a.blank])));
}

template <typename T>
__global__ void ctc_beta_kernel(T* __restrict__ grad, const T* __restrict__ lp,
                                const T* __restrict__ nll, const T* __restrict__ alpha, CtcArgs a,
                                bool zero_inf, double* gbuf, int* gidx) {
  __shared__ double red[32];
  const double ninf = -INFINITY;
  const int64_t Lmax = (a.Smax - 1) / 2;
  for (int64_t n = blockIdx.x; n < a.N; n += gridDim.x) {
    double* buf = gbuf ? gbuf + n * 2 * a.Smax : reinterpret_cast<double*>(ctc_smem);
    int* nxt = gbuf ? gidx + n * 2 * Lmax : reinterpret_cast<int*>(buf + 2 * a.Smax);
    int* first = nxt + Lmax;
    const int64_t Tn = a.in_lens[n], L = a.tgt_lens[n], off = a.offsets[n], S = 2 * L + 1;
    const double nl = double(nll[n]);
    if (Tn == 0 || (zero_inf && isinf(nl))) continue;  // grad was zeroed; uniform
    auto lpv = [&](int64_t t, int64_t c) { return double(lp[(t * a.N + n) * a.C + c]); };
    const T* an = alpha + n * a.Tmax * a.Smax;
    // the chain of each label's positions: nxt[k] = the next position with its label
    for (int64_t k = threadIdx.x; k < L; k += blockDim.x) {
      const int64_t c = a.tg[off + k];
      int j = -1;
      for (int64_t q = k + 1; q < L; ++q)
        if (a.tg[off + q] == c) {
          j = int(q);
          break;
        }
      nxt[k] = j;
      first[k] = 1;
    }
    __syncthreads();
    for (int64_t k = threadIdx.x; k < L; k += blockDim.x)
      if (nxt[k] >= 0) first[nxt[k]] = 0;
    double* cur = buf + ((Tn - 1) & 1) * a.Smax;
    for (int64_t s = threadIdx.x; s < S; s += blockDim.x)
      cur[s] = s == S - 1 ? lpv(Tn - 1, a.blank)
                          : (s == S - 2 ? lpv(Tn - 1, ctc_label(a, off, S - 2)) : ninf);
    __syncthreads();
    ctc_grad_row(grad, lp, an, cur, nxt, first, a, n, Tn - 1, L, off, nl, red);
    for (int64_t t = Tn - 2; t >= 0; --t) {
      const double* prev = buf + ((t + 1) & 1) * a.Smax;
      cur = buf + (t & 1) * a.Smax;
      for (int64_t s = threadIdx.x; s < S; s += blockDim.x) {
        const int64_t l = ctc_label(a, off, s);
        double v = prev[s];
        if (s + 1 < S) v = log_add(v, prev[s + 1]);
        if (s + 2 < S && l != a.blank && l != ctc_label(a, off, s + 2)) v = log_add(v, prev[s + 2]);
        cur[s] = v == ninf ? ninf : v + lpv(t, l);
      }
      __syncthreads();
      ctc_grad_row(grad, lp, an, cur, nxt, first, a, n, t, L, off, nl, red);
    }
    __syncthreads();  // buf, nxt and first are reused by the block's next sample
  }
}

int ctc_threads(int64_t Smax) {
  return int(std::min<int64_t>(256, std::max<int64_t>(32, (Smax + 31) / 32 * 32)));
}

CtcArgs ctc_args(const Tensor& lp, const Tensor& targets, const Tensor& offsets,
                 const Tensor& in_lens, const Tensor& tgt_lens, int64_t Smax, int64_t blank) {
  const char* op = "ctc_loss";
  for (const Tensor* t : {&lp, &targets, &offsets, &in_lens, &tgt_lens})
    check_contiguous(*t, op, "operand");
  EMBER_CHECK(lp.dim() == 3 && targets.dtype() == DType::Int64 && offsets.dtype() == DType::Int64 &&
                  in_lens.dtype() == DType::Int64 && tgt_lens.dtype() == DType::Int64,
              op, " (CUDA): expected (T, N, C) log_probs and int64 targets / lengths");
  EMBER_CHECK(Smax <= int64_t(INT32_MAX), op, " (CUDA): targets too long");
  CtcArgs a;
  a.tg = reinterpret_cast<const int64_t*>(targets.data_ptr());
  a.offsets = reinterpret_cast<const int64_t*>(offsets.data_ptr());
  a.in_lens = reinterpret_cast<const int64_t*>(in_lens.data_ptr());
  a.tgt_lens = reinterpret_cast<const int64_t*>(tgt_lens.data_ptr());
  a.Tmax = lp.sizes()[0];
  a.N = lp.sizes()[1];
  a.C = lp.sizes()[2];
  a.Smax = Smax;
  a.blank = blank;
  return a;
}

void ctc_kernel(const Tensor& nll, const Tensor& alpha, const Tensor& lp, const Tensor& targets,
                const Tensor& offsets, const Tensor& in_lens, const Tensor& tgt_lens,
                int64_t blank) {
  check_contiguous(nll, "ctc_loss", "nll");
  check_contiguous(alpha, "ctc_loss", "alpha");
  const CtcArgs a = ctc_args(lp, targets, offsets, in_lens, tgt_lens, alpha.sizes()[2], blank);
  if (a.N == 0) return;
  const size_t bytes = size_t(2 * a.Smax) * sizeof(double);
  Tensor work;
  double* gbuf = nullptr;
  if (bytes > size_t(kSmemBytes)) {
    work = empty(Shape{a.N * 2 * a.Smax}, DType::Float64, lp.device());
    gbuf = reinterpret_cast<double*>(work.data_ptr());
  }
  const size_t smem = gbuf ? 0 : bytes;
  dispatch_floating(lp.dtype(), "ctc_loss", [&](auto tag) {
    using T = typename decltype(tag)::type;
    ctc_alpha_kernel<T><<<capped(a.N), ctc_threads(a.Smax), smem, current_stream()>>>(
        reinterpret_cast<T*>(nll.data_ptr()), reinterpret_cast<T*>(alpha.data_ptr()),
        reinterpret_cast<const T*>(lp.data_ptr()), a, gbuf);
  });
  EMBER_CUDA_CHECK(cudaGetLastError());
}

void ctc_backward_kernel(const Tensor& grad, const Tensor& lp, const Tensor& targets,
                         const Tensor& offsets, const Tensor& in_lens, const Tensor& tgt_lens,
                         const Tensor& nll, const Tensor& alpha, int64_t blank, bool zero_inf) {
  check_contiguous(grad, "ctc_loss_backward", "grad");
  check_contiguous(nll, "ctc_loss_backward", "nll");
  check_contiguous(alpha, "ctc_loss_backward", "alpha");
  const CtcArgs a = ctc_args(lp, targets, offsets, in_lens, tgt_lens, alpha.sizes()[2], blank);
  cudaStream_t stream = current_stream();
  // every entry no sample writes (t >= its length, classes off its labels) is 0
  if (grad.numel() > 0)
    EMBER_CUDA_CHECK(cudaMemsetAsync(grad.data_ptr(), 0,
                                     size_t(grad.numel()) * size_t(grad.element_size()), stream));
  if (a.N == 0) return;
  const int64_t Lmax = (a.Smax - 1) / 2;
  const size_t bytes = size_t(2 * a.Smax) * sizeof(double) + size_t(2 * Lmax) * sizeof(int);
  Tensor work, iwork;
  double* gbuf = nullptr;
  int* gidx = nullptr;
  // the kernel's static red[32] counts against the same 48 KiB as the dynamic bytes
  if (bytes + 32 * sizeof(double) > size_t(kSmemBytes)) {
    work = empty(Shape{a.N * 2 * a.Smax}, DType::Float64, lp.device());
    iwork = empty(Shape{std::max<int64_t>(1, a.N * 2 * Lmax)}, DType::Int32, lp.device());
    gbuf = reinterpret_cast<double*>(work.data_ptr());
    gidx = reinterpret_cast<int*>(iwork.data_ptr());
  }
  const size_t smem = gbuf ? 0 : bytes;
  dispatch_floating(lp.dtype(), "ctc_loss_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    ctc_beta_kernel<T><<<capped(a.N), ctc_threads(a.Smax), smem, stream>>>(
        reinterpret_cast<T*>(grad.data_ptr()), reinterpret_cast<const T*>(lp.data_ptr()),
        reinterpret_cast<const T*>(nll.data_ptr()), reinterpret_cast<const T*>(alpha.data_ptr()), a,
        zero_inf, gbuf, gidx);
  });
  EMBER_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

EMBER_REGISTER_KERNELS(CUDA, nn_loss) {
  constexpr int cuda = int(DeviceType::CUDA);
  nll_stub.fns[cuda] = &nll_kernel;
  cross_entropy_backward_stub.fns[cuda] = &ce_backward_kernel;
  ctc_stub.fns[cuda] = &ctc_kernel;
  ctc_backward_stub.fns[cuda] = &ctc_backward_kernel;
}

}  // namespace ember::cuda
