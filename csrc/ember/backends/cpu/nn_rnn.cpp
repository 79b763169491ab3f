// CPU kernels of the recurrent layers: the fused elementwise part of one time
// step, forward and backward (kernels/stubs/nn_rnn.h). Rows are independent,
// so a step splits over the thread pool by rows.
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

int64_t row_grain(int64_t cols) { return std::max<int64_t>(1, 16384 / std::max<int64_t>(1, cols)); }

template <typename T>
void step_fwd(const RnnStepFwdArgs& a) {
  const int64_t H = a.hidden, G = rnn_gate_count(a.mode);
  T* gates = a.gates.data<T>();
  parallel_for(0, a.rows, row_grain(G * H), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      T* g = gates + r * G * H;
      switch (a.mode) {
        case RnnMode::RnnTanh:
          for (int64_t j = 0; j < H; ++j) g[j] = tanh_(g[j]);
          break;
        case RnnMode::RnnRelu:
          for (int64_t j = 0; j < H; ++j) g[j] = g[j] > T(0) ? g[j] : T(0);
          break;
        case RnnMode::Lstm: {
          const T* cp = a.c_prev.data<T>() + r * H;
          T* cn = a.c_new.data<T>() + r * H;
          T* hn = a.h_new.data<T>() + r * H;
          T *gi = g, *gf = g + H, *gg = g + 2 * H, *go = g + 3 * H;
          for (int64_t j = 0; j < H; ++j) {
            T i = sigm(gi[j]), f = sigm(gf[j]), c = tanh_(gg[j]), o = sigm(go[j]);
            gi[j] = i, gf[j] = f, gg[j] = c, go[j] = o;
            T cc = f * cp[j] + i * c;
            cn[j] = cc;
            hn[j] = o * tanh_(cc);
          }
          break;
        }
        case RnnMode::Gru: {
          const T* hg = a.hgates.data<T>() + r * 3 * H;
          const T* hp = a.h_prev.data<T>() + r * H;
          T* hnout = a.hn_out.data<T>() + r * H;
          T* hnew = a.h_new.data<T>() + r * H;
          for (int64_t j = 0; j < H; ++j) {
            T rr = sigm(g[j] + hg[j]), z = sigm(g[H + j] + hg[H + j]);
            T hnj = hg[2 * H + j];
            T n = tanh_(g[2 * H + j] + rr * hnj);
            g[j] = rr, g[H + j] = z, g[2 * H + j] = n;
            hnout[j] = hnj;
            hnew[j] = (T(1) - z) * n + z * hp[j];
          }
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
      const T* g = a.gates.data<T>() + r * G * H;
      const T* dh = a.dh.data<T>() + r * H;
      T* dg = a.dgates.data<T>() + r * G * H;
      switch (a.mode) {
        case RnnMode::RnnTanh:
          for (int64_t j = 0; j < H; ++j) dg[j] = dh[j] * (T(1) - g[j] * g[j]);
          break;
        case RnnMode::RnnRelu:
          for (int64_t j = 0; j < H; ++j) dg[j] = g[j] > T(0) ? dh[j] : T(0);
          break;
        case RnnMode::Lstm: {
          const T* cp = a.c_prev.data<T>() + r * H;
          T* dc = a.dc.data<T>() + r * H;
          for (int64_t j = 0; j < H; ++j) {
            T i = g[j], f = g[H + j], c = g[2 * H + j], o = g[3 * H + j];
            T cc = f * cp[j] + i * c;
            T tc = tanh_(cc);
            T dcc = dc[j] + dh[j] * o * (T(1) - tc * tc);
            dg[j] = dcc * c * i * (T(1) - i);
            dg[H + j] = dcc * cp[j] * f * (T(1) - f);
            dg[2 * H + j] = dcc * i * (T(1) - c * c);
            dg[3 * H + j] = dh[j] * tc * o * (T(1) - o);
            dc[j] = dcc * f;
          }
          break;
        }
        case RnnMode::Gru: {
          const T* hp = a.h_prev.data<T>() + r * H;
          const T* hnv = a.hn.data<T>() + r * H;
          T* dhg = a.dhgates.data<T>() + r * 3 * H;
          T* dd = a.dh_direct.data<T>() + r * H;
          for (int64_t j = 0; j < H; ++j) {
            T rr = g[j], z = g[H + j], n = g[2 * H + j];
            T dn = dh[j] * (T(1) - z) * (T(1) - n * n);
            T dz = dh[j] * (hp[j] - n) * z * (T(1) - z);
            T dr = dn * hnv[j] * rr * (T(1) - rr);
            dg[j] = dr, dg[H + j] = dz, dg[2 * H + j] = dn;
            dhg[j] = dr, dhg[H + j] = dz, dhg[2 * H + j] = dn * rr;
            dd[j] = dh[j] * z;
          }
          break;
        }
      }
    }
  });
}

template <typename T>
void accumulate(const Tensor& a, const Tensor& b) {
  T* pa = a.data<T>();
  const T* pb = b.data<T>();
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
