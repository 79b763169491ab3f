// Recurrent layers (RNN tanh/relu, LSTM with optional projection, GRU) with
// the time loop in C++. See Note [Recurrent layers] in nn_rnn.cpp.
#pragma once
#include <vector>

#include "ember/core/tensor.h"
#include "ember/kernels/stubs/nn_rnn.h"

namespace ember {

/// The weights of one layer in one direction, PyTorch's layout: w_ih [G*H, I],
/// w_hh [G*H, Hout], b_ih/b_hh [G*H] (optional), w_hr [Hout, H] (LSTM proj_size only).
struct RnnWeights {
  Tensor w_ih, w_hh, b_ih, b_hh, w_hr;
};

/// One layer, one direction, over packed rows: x [N, I] holds the steps one after the
/// other, step t having batch_sizes[t] rows (non-increasing; a padded [T, B, I] input is
/// batch_sizes = {B, ..., B}). h0 [B, Hout], c0 [B, H] (LSTM only, else undefined).
/// Returns {y [N, Hout], h_n [B, Hout], c_n [B, H] (LSTM) or undefined}. Records one node
/// (LstmBackward0, GruBackward0, RnnTanhBackward0, RnnReluBackward0).
std::vector<Tensor> rnn_layer(RnnMode mode, const Tensor& x,
                              const std::vector<int64_t>& batch_sizes, const Tensor& h0,
                              const Tensor& c0, const RnnWeights& w, bool reverse);

/// One step of a cell (torch.lstm_cell and friends): input [B, I], h [B, H], c [B, H]
/// (LSTM only, else undefined); returns {y, h', c'} as rnn_layer over one step.
std::vector<Tensor> rnn_cell(RnnMode mode, const Tensor& input, const Tensor& h, const Tensor& c,
                             const Tensor& w_ih, const Tensor& w_hh, const Tensor& b_ih,
                             const Tensor& b_hh);

/// The whole stack: data [N, I] as in rnn_layer, hx [L*D, B, Hout], cx [L*D, B, H] (LSTM),
/// params in PyTorch's flat order (per layer and direction: w_ih, w_hh, [b_ih, b_hh], [w_hr]).
/// Dropout with probability `dropout` between layers when `train`.
/// Returns {output [N, D*Hout], h_n [L*D, B, Hout], c_n [L*D, B, H] or undefined}.
std::vector<Tensor> rnn_forward(RnnMode mode, const Tensor& data,
                                const std::vector<int64_t>& batch_sizes, const Tensor& hx,
                                const Tensor& cx, const std::vector<Tensor>& params,
                                bool has_biases, int64_t num_layers, double dropout, bool train,
                                bool bidirectional);

// ---- used by the derivative (autograd/derivatives/nn_rnn.cpp) -----------------------------

/// Buffers the forward keeps for BPTT.
struct RnnSaved {
  Tensor gates;   // [N, G*H] activations
  Tensor c_prev;  // LSTM [N, H]
  Tensor h_prev;  // [N, Hout]
  Tensor h_raw;   // LSTM with projection [N, H]
  Tensor hn;      // GRU [N, H]: W_hn h + b_hn
};

/// Gradients {x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr} from those of {y, h_n, c_n}
/// (any may be undefined: zero). `mask` says which to compute.
std::vector<Tensor> rnn_layer_backward(RnnMode mode, const Tensor& x,
                                       const std::vector<int64_t>& batch_sizes, const Tensor& h0,
                                       const Tensor& c0, const RnnWeights& w, bool reverse,
                                       const RnnSaved& saved, const Tensor& dy, const Tensor& dhn,
                                       const Tensor& dcn, const std::vector<bool>& mask);

/// The same layer written with differentiable ember ops, step by step (used for
/// double backward, where the gradient itself must be differentiated).
std::vector<Tensor> rnn_layer_composite(RnnMode mode, const Tensor& x,
                                        const std::vector<int64_t>& batch_sizes, const Tensor& h0,
                                        const Tensor& c0, const RnnWeights& w, bool reverse);

// ---- packed sequences -------------------------------------------------------------------

/// pack_padded_sequence on sorted lengths: input [T, B, *] (or [B, T, *] with batch_first)
/// -> {data [N, *], batch_sizes (int64)}. Differentiable (index_select).
std::vector<Tensor> pack_padded(const Tensor& input, const std::vector<int64_t>& lengths,
                                bool batch_first);
/// pad_packed_sequence: data [N, *] + batch_sizes -> padded [T', B, *] (batch_first:
/// [B, T', *]) with T' = max(total_length, len(batch_sizes)), filled with padding_value.
Tensor pad_packed(const Tensor& data, const std::vector<int64_t>& batch_sizes, bool batch_first,
                  double padding_value, int64_t total_length);

/// pad_sequence: a list of [L_i, *] tensors (equal trailing dims) -> [max L, B, *]
/// (batch_first: [B, max L, *]), padded with padding_value on the right (or the left).
Tensor pad_sequence(const std::vector<Tensor>& seqs, bool batch_first, double padding_value,
                    bool pad_left);

}  // namespace ember
