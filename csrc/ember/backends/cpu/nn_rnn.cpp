// CPU kernels of the recurrent layers: the fused elementwise part of one time
// step, forward and backward (kernels/stubs/nn_rnn.h). Rows are independent,
// so a step splits over the thread pool by rows.
// The kernels below compare floats in their vectorized exp/tanh; without
// -fno-trapping-math GCC keeps those loops scalar (a compare "may trap").
// Nothing here reads the floating-point exception flags.
#pragma GCC optimize("no-trapping-math")
#include <algorithm>
#include <cmath>

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
// 64k gate values (a typical batch of 64 x 4*256 gates runs in ~30 us on one core, and a
// fork-join on a busy machine can cost a scheduler time slice).
int64_t row_grain(int64_t cols) { return std::max<int64_t>(1, 65536 / std::max<int64_t>(1, cols)); }

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

struct Registrar {
  Registrar() {
    rnn_step_fwd_stub.fns[int(DeviceType::CPU)] = &step_fwd_kernel;
    rnn_step_bwd_stub.fns[int(DeviceType::CPU)] = &step_bwd_kernel;
    rnn_accumulate_stub.fns[int(DeviceType::CPU)] = &accumulate_kernel;
  }
} g_registrar;

}  // namespace
}  // namespace ember::cpu
