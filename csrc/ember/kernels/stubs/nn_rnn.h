// Kernel stubs of the recurrent layers (ops/nn_rnn.cpp): the fused per-step
// gate kernels. The GEMMs of a step run through ops/linalg.h; these kernels do
// the elementwise work of one time step on the `rows` active batch rows.
#pragma once
#include <cstdint>

#include "ember/core/tensor.h"
#include "ember/kernels/dispatch.h"

namespace ember {

/// The cell of a recurrent layer, in PyTorch's gate order.
enum class RnnMode : int { RnnTanh = 0, RnnRelu = 1, Lstm = 2, Gru = 3 };

/// Number of gate blocks of `mode` (LSTM 4: i,f,g,o; GRU 3: r,z,n; RNN 1).
inline int64_t rnn_gate_count(RnnMode mode) {
  return mode == RnnMode::Lstm ? 4 : mode == RnnMode::Gru ? 3 : 1;
}

// Every tensor argument is a contiguous 2-D block of `rows` rows of one dtype
// (float32 or float64); gate blocks have G*H columns, states H (or Hout) columns.

/// One forward step.
/// LSTM: `gates` holds the pre-activations (x and h projections and both biases) and
///   is overwritten with the activations i,f,g,o; c_prev -> c_new; h_new = o*tanh(c).
/// GRU: `gates` holds x@W_ih^T + b_ih, `hgates` h@W_hh^T + b_hh; `gates` becomes r,z,n,
///   `hn_out` gets the h-side n pre-activation (W_hn h + b_hn); h_new = (1-z)*n + z*h_prev.
/// RNN: `gates` holds the pre-activation and becomes h_new = act(pre) (h_new aliases it).
struct RnnStepFwdArgs {
  RnnMode mode;
  int64_t rows, hidden;
  Tensor gates, hgates, h_prev, c_prev, c_new, h_new, hn_out;
};
using RnnStepFwdKernel = void (*)(const RnnStepFwdArgs&);
extern DispatchStub<RnnStepFwdKernel> rnn_step_fwd_stub;

/// One backward step (BPTT) from the saved activations.
/// In: `dh` (gradient of h_new, H columns), `dc` (LSTM: gradient of c_new, updated in
/// place to the gradient of c_prev). Out: `dgates` (gradient of the x-side
/// pre-activations), `dhgates` (GRU: gradient of the h-side pre-activations),
/// `dh_direct` (GRU: the part of dh_prev that bypasses W_hh, z*dh).
struct RnnStepBwdArgs {
  RnnMode mode;
  int64_t rows, hidden;
  Tensor dh, dc, gates, c_prev, h_prev, hn, h_new, dgates, dhgates, dh_direct;
};
using RnnStepBwdKernel = void (*)(const RnnStepBwdArgs&);
extern DispatchStub<RnnStepBwdKernel> rnn_step_bwd_stub;

/// Note [Packed recurrent weights]
/// Every step of a layer multiplies its few batch rows by the same recurrent weight: a GEMM
/// through the BLAS repacks that weight on every call (for LSTM(128, 256), batch 32, a 1 MiB
/// copy per step, a third of the multiply's time). rnn_pack_stub packs op(w) once per layer
/// call into column panels; rnn_gemm_stub then multiplies a step's rows by it with a register-
/// tiled kernel. A backend without them (no slot filled) runs the steps through addmm.
/// Packs op(w) (k x n: w^T of the n x k `w` when `trans`, else the k x n `w`; contiguous).
using RnnPackKernel = Tensor (*)(const Tensor& w, bool trans);
extern DispatchStub<RnnPackKernel> rnn_pack_stub;
/// c [rows, n] = (accumulate ? c : bias broadcast over rows, or 0) + a [rows, k] @ op(w), with
/// `packed` = rnn_pack_stub(w, ...); c and a contiguous, bias (n) contiguous or undefined.
using RnnGemmKernel = void (*)(const Tensor& c, const Tensor& a, const Tensor& packed,
                               const Tensor& bias, bool accumulate);
extern DispatchStub<RnnGemmKernel> rnn_gemm_stub;

/// a[i] += b[i] over `n` elements of contiguous a and b (same dtype).
using RnnAccumulateKernel = void (*)(const Tensor& a, const Tensor& b);
extern DispatchStub<RnnAccumulateKernel> rnn_accumulate_stub;

}  // namespace ember
