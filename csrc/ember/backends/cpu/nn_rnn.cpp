// CPU kernels of the recurrent layers: the fused elementwise part of one time
// step, forward and backward (kernels/stubs/nn_rnn.h). Rows are independent,
// so a step splits over the thread pool by rows.
// The kernels below compare floats in their vectorized exp/tanh; without
// -fno-trapping-math GCC keeps those loops scalar (a compare "may trap").
// Nothing here reads the floating-point exception flags.
// Compiled once per CPU capability (Note [CPU capability dispatch]).
#pragma GCC optimize("no-trapping-math")
#include "ember/backends/cpu/capability.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "ember/backends/cpu/gemm_tile.h"
#include "ember/backends/cpu/nn_rnn_math.h"
#include "ember/core/parallel.h"
#include "ember/kernels/stubs/nn_rnn.h"

namespace ember::cpu {
namespace {

using nnmath::sigmoid;
using nnmath::tanh_;
template <typename T>
inline T sigm(T x) {
  return sigmoid(x);
}

// A step is one fork-join per time step: split only when each thread gets at least
// 16k gate values (about 8 us of LSTM gate math on one core; a batch of 64 x 4*256 gates
// runs in ~30 us). With 64k, batch 32 x 4*256 never split and the 2-thread LSTM step ran
// its gates on one core (LSTM(128, 256) B32 T50 fwd+bwd at 2 threads: 24.8 -> 23.3 ms).
int64_t row_grain(int64_t cols) { return std::max<int64_t>(1, 16384 / std::max<int64_t>(1, cols)); }

// One row of each cell, with restrict parameters so the loops vectorize.
template <typename T>
void lstm_fwd_row(T* __restrict__ gi, T* __restrict__ gf, T* __restrict__ gg, T* __restrict__ go,
                  const T* __restrict__ cp, T* __restrict__ cn, T* __restrict__ hn, int64_t H) {
  for (int64_t j = 0; j < H; ++j) {
    const T i = sigm(gi[j]), f = sigm(gf[j]), c = tanh_(gg[j]), o = sigm(go[j]);
    gi[j] = i;
    gf[j] = f;
    gg[j] = c;
    go[j] = o;
    const T cc = f * cp[j] + i * c;
    cn[j] = cc;
    hn[j] = o * tanh_(cc);
  }
}

template <typename T>
void gru_fwd_row(T* __restrict__ gr, T* __restrict__ gz, T* __restrict__ gn,
                 const T* __restrict__ hr, const T* __restrict__ hz, const T* __restrict__ hnn,
                 const T* __restrict__ hp, T* __restrict__ hnout, T* __restrict__ hnew, int64_t H) {
  for (int64_t j = 0; j < H; ++j) {
    const T rr = sigm(gr[j] + hr[j]), z = sigm(gz[j] + hz[j]);
    const T hnj = hnn[j];
    const T n = tanh_(gn[j] + rr * hnj);
    gr[j] = rr;
    gz[j] = z;
    gn[j] = n;
    hnout[j] = hnj;
    hnew[j] = (T(1) - z) * n + z * hp[j];
  }
}

template <typename T>
void lstm_bwd_row(const T* __restrict__ gi, const T* __restrict__ gf, const T* __restrict__ gg,
                  const T* __restrict__ go, const T* __restrict__ cp, const T* __restrict__ dh,
                  T* __restrict__ dc, T* __restrict__ di, T* __restrict__ df, T* __restrict__ dgg,
                  T* __restrict__ dgo, int64_t H) {
  for (int64_t j = 0; j < H; ++j) {
    const T i = gi[j], f = gf[j], c = gg[j], o = go[j];
    const T cc = f * cp[j] + i * c;
    const T tc = tanh_(cc);
    const T dcc = dc[j] + dh[j] * o * (T(1) - tc * tc);
    di[j] = dcc * c * i * (T(1) - i);
    df[j] = dcc * cp[j] * f * (T(1) - f);
    dgg[j] = dcc * i * (T(1) - c * c);
    dgo[j] = dh[j] * tc * o * (T(1) - o);
    dc[j] = dcc * f;
  }
}

template <typename T>
void gru_bwd_row(const T* __restrict__ gr, const T* __restrict__ gz, const T* __restrict__ gn,
                 const T* __restrict__ hp, const T* __restrict__ hnv, const T* __restrict__ dh,
                 T* __restrict__ dr_x, T* __restrict__ dz_x, T* __restrict__ dn_x,
                 T* __restrict__ dr_h, T* __restrict__ dz_h, T* __restrict__ dn_h,
                 T* __restrict__ dd, int64_t H) {
  for (int64_t j = 0; j < H; ++j) {
    const T rr = gr[j], z = gz[j], n = gn[j];
    const T dn = dh[j] * (T(1) - z) * (T(1) - n * n);
    const T dz = dh[j] * (hp[j] - n) * z * (T(1) - z);
    const T dr = dn * hnv[j] * rr * (T(1) - rr);
    dr_x[j] = dr;
    dz_x[j] = dz;
    dn_x[j] = dn;
    dr_h[j] = dr;
    dz_h[j] = dz;
    dn_h[j] = dn * rr;
    dd[j] = dh[j] * z;
  }
}

template <typename T>
void step_fwd(const RnnStepFwdArgs& a) {
  const int64_t H = a.hidden, G = rnn_gate_count(a.mode);
  T* gates = a.gates.data<T>();
  parallel_for(0, a.rows, row_grain(G * H), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      T* __restrict__ g = gates + r * G * H;
      switch (a.mode) {
        case RnnMode::RnnTanh:
          for (int64_t j = 0; j < H; ++j) g[j] = tanh_(g[j]);
          break;
        case RnnMode::RnnRelu:
          for (int64_t j = 0; j < H; ++j) g[j] = g[j] > T(0) ? g[j] : T(0);
          break;
        case RnnMode::Lstm:
          lstm_fwd_row(g, g + H, g + 2 * H, g + 3 * H, a.c_prev.data<T>() + r * H,
                       a.c_new.data<T>() + r * H, a.h_new.data<T>() + r * H, H);
          break;
        case RnnMode::Gru: {
          const T* hg = a.hgates.data<T>() + r * 3 * H;
          gru_fwd_row(g, g + H, g + 2 * H, hg, hg + H, hg + 2 * H, a.h_prev.data<T>() + r * H,
                      a.hn_out.data<T>() + r * H, a.h_new.data<T>() + r * H, H);
          break;
        }
      }
    }
  });
}

template <typename T>
void step_bwd(const RnnStepBwdArgs& a) {
  const int64_t H = a.hidden, G = rnn_gate_count(a.mode);
  parallel_for(0, a.rows, row_grain(G * H), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* __restrict__ g = a.gates.data<T>() + r * G * H;
      const T* __restrict__ dh = a.dh.data<T>() + r * H;
      T* __restrict__ dg = a.dgates.data<T>() + r * G * H;
      switch (a.mode) {
        case RnnMode::RnnTanh:
          for (int64_t j = 0; j < H; ++j) dg[j] = dh[j] * (T(1) - g[j] * g[j]);
          break;
        case RnnMode::RnnRelu:
          for (int64_t j = 0; j < H; ++j) dg[j] = g[j] > T(0) ? dh[j] : T(0);
          break;
        case RnnMode::Lstm:
          lstm_bwd_row(g, g + H, g + 2 * H, g + 3 * H, a.c_prev.data<T>() + r * H, dh,
                       a.dc.data<T>() + r * H, dg, dg + H, dg + 2 * H, dg + 3 * H, H);
          break;
        case RnnMode::Gru: {
          T* dhg = a.dhgates.data<T>() + r * 3 * H;
          gru_bwd_row(g, g + H, g + 2 * H, a.h_prev.data<T>() + r * H, a.hn.data<T>() + r * H, dh,
                      dg, dg + H, dg + 2 * H, dhg, dhg + H, dhg + 2 * H,
                      a.dh_direct.data<T>() + r * H, H);
          break;
        }
      }
    }
  });
}

template <typename T>
void accumulate(const Tensor& a, const Tensor& b) {
  T* __restrict__ pa = a.data<T>();
  const T* __restrict__ pb = b.data<T>();
  const int64_t n = a.numel();
  for (int64_t i = 0; i < n; ++i) pa[i] += pb[i];
}

void step_fwd_kernel(const RnnStepFwdArgs& a) {
  if (a.gates.dtype() == DType::Float64) return step_fwd<double>(a);
  EMBER_CHECK(a.gates.dtype() == DType::Float32, "rnn: unsupported dtype ",
              dtype_name(a.gates.dtype()));
  step_fwd<float>(a);
}
void step_bwd_kernel(const RnnStepBwdArgs& a) {
  if (a.gates.dtype() == DType::Float64) return step_bwd<double>(a);
  EMBER_CHECK(a.gates.dtype() == DType::Float32, "rnn: unsupported dtype ",
              dtype_name(a.gates.dtype()));
  step_bwd<float>(a);
}
void accumulate_kernel(const Tensor& a, const Tensor& b) {
  if (a.dtype() == DType::Float64) return accumulate<double>(a, b);
  accumulate<float>(a, b);
}

// ---- the recurrent GEMM on packed weights (Note [Packed recurrent weights]) -------------
// op(w) (k x n) is stored as ceil(n / NR) panels of k rows by NR columns (zero columns past
// n), so a panel is one contiguous block the micro-kernel (gemm_tile.h) streams through, kKC
// rows at a time; a step's rows are read in place. Each panel block is reused across all of a
// step's row tiles while it sits in L1. Panels split over the thread pool.
//
// Note [Recurrent GEMM tile]
// Two FMA units with a latency of 4 cycles need 8 independent accumulators to stay busy. The
// tile was 6 rows by one cache line, which with AVX-512 is one register per row: 6
// accumulators. Two vectors per row, and 8 rows with AVX-512 (16 of its 32 registers) or 6
// with AVX2 and SSE (12 of 16, beside the two B vectors and a broadcast): a step of
// LSTM(128, 256) at batch 32 (32 x 256 x 1024) went from 95.9 to 106-112 GFLOP/s on one core
// of this Zen 5 (a standalone copy of the loop; OpenBLAS 61, PyTorch's MKL 81 on that shape).
constexpr int kTileV = 2;
#if defined(__AVX512F__)
constexpr int64_t kMR = 8;
#else
constexpr int64_t kMR = 6;
#endif
template <typename T>
constexpr int64_t kNR = gemm_tile::kCols<T, kTileV>;
// Depth of one pass over a panel: kKC rows of NR columns (16 KiB) stay in L1 beside the row
// tile's A rows while every row tile of the step reads them.
template <typename T>
constexpr int64_t kKC = 16384 / (kNR<T> * int64_t(sizeof(T)));

template <typename T>
Tensor pack_typed(const Tensor& w, bool trans) {
  constexpr int64_t NR = kNR<T>;
  const int64_t k = trans ? w.size(1) : w.size(0), n = trans ? w.size(0) : w.size(1);
  const int64_t panels = (n + NR - 1) / NR;
  Tensor packed = empty(Shape{panels, k, NR}, w.dtype(), w.device());
  const T* src = w.data<T>();
  T* dst = packed.data<T>();
  const int64_t ld = w.size(1);
  parallel_for(0, panels, 1, [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      const int64_t j0 = p * NR, nc = std::min(NR, n - j0);
      T* d = dst + p * k * NR;
      for (int64_t kk = 0; kk < k; ++kk) {
        T* row = d + kk * NR;
        if (trans)
          for (int64_t j = 0; j < nc; ++j) row[j] = src[(j0 + j) * ld + kk];
        else
          for (int64_t j = 0; j < nc; ++j) row[j] = src[kk * ld + j0 + j];
        for (int64_t j = nc; j < NR; ++j) row[j] = T(0);
      }
    }
  });
  return packed;
}

template <typename T>
void gemm_typed(const Tensor& c, const Tensor& a, const Tensor& packed, const Tensor& bias,
                bool accumulate) {
  constexpr int64_t NR = kNR<T>;
  const int64_t m = c.size(0), n = c.size(1), k = a.size(1);
  const int64_t panels = packed.size(0);
  const T* ap = a.data<T>();
  const T* bp = packed.data<T>();
  const T* bias_p = bias.defined() ? bias.data<T>() : nullptr;
  T* cp = c.data<T>();
  // A panel costs m * k * NR multiply-adds; split when a thread gets some 64k of them.
  const int64_t grain = std::max<int64_t>(1, 65536 / std::max<int64_t>(1, m * k * NR));
  parallel_for(0, panels, grain, [&](int64_t pb, int64_t pe) {
    for (int64_t p = pb; p < pe; ++p) {
      const int64_t j0 = p * NR, nc = std::min(NR, n - j0);
      for (int64_t k0 = 0; k0 < k; k0 += kKC<T>) {
        const int64_t kc = std::min(kKC<T>, k - k0);
        const bool first = k0 == 0 && !accumulate;
        const T* b = bp + (p * k + k0) * NR;
        for (int64_t i0 = 0; i0 < m; i0 += kMR) {
          const T* rows[kMR];
          for (int64_t r = 0; r < kMR; ++r) rows[r] = ap + std::min(i0 + r, m - 1) * k + k0;
          alignas(64) T acc[kMR][NR];
          gemm_tile::micro<T, kMR, kTileV>(rows, 1, kc, b, NR, acc);
          const int64_t nr = std::min(kMR, m - i0);
          for (int64_t r = 0; r < nr; ++r) {
            T* dst = cp + (i0 + r) * n + j0;
            if (!first)
              for (int64_t j = 0; j < nc; ++j) dst[j] += acc[r][j];
            else if (bias_p)
              for (int64_t j = 0; j < nc; ++j) dst[j] = bias_p[j0 + j] + acc[r][j];
            else
              for (int64_t j = 0; j < nc; ++j) dst[j] = acc[r][j];
          }
        }
      }
    }
  });
}

Tensor pack_kernel(const Tensor& w, bool trans) {
  if (w.dtype() == DType::Float64) return pack_typed<double>(w, trans);
  EMBER_CHECK(w.dtype() == DType::Float32, "rnn: unsupported dtype ", dtype_name(w.dtype()));
  return pack_typed<float>(w, trans);
}

void gemm_kernel(const Tensor& c, const Tensor& a, const Tensor& packed, const Tensor& bias,
                 bool accumulate) {
  if (c.numel() == 0) return;
  if (a.size(1) == 0) {  // an empty sum
    if (!accumulate) {
      for (int64_t i = 0; i < c.size(0); ++i)
        if (c.dtype() == DType::Float64)
          for (int64_t j = 0; j < c.size(1); ++j)
            c.data<double>()[i * c.size(1) + j] = bias.defined() ? bias.data<double>()[j] : 0.0;
        else
          for (int64_t j = 0; j < c.size(1); ++j)
            c.data<float>()[i * c.size(1) + j] = bias.defined() ? bias.data<float>()[j] : 0.0f;
    }
    return;
  }
  if (c.dtype() == DType::Float64) return gemm_typed<double>(c, a, packed, bias, accumulate);
  gemm_typed<float>(c, a, packed, bias, accumulate);
}

EMBER_REGISTER_CPU_KERNELS(nn_rnn) {
  rnn_step_fwd_stub.fns[int(DeviceType::CPU)] = &step_fwd_kernel;
  rnn_step_bwd_stub.fns[int(DeviceType::CPU)] = &step_bwd_kernel;
  rnn_accumulate_stub.fns[int(DeviceType::CPU)] = &accumulate_kernel;
  rnn_pack_stub.fns[int(DeviceType::CPU)] = &pack_kernel;
  rnn_gemm_stub.fns[int(DeviceType::CPU)] = &gemm_kernel;
}

}  // namespace
}  // namespace ember::cpu
