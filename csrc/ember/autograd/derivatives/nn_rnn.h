// Derivatives of the recurrent layers and attention (one node per fused op).
#pragma once
#include <functional>

#include "ember/autograd/node.h"
#include "ember/ops/nn_rnn.h"

namespace ember::autograd {

/// Records the node of one rnn_layer call (LstmBackward0, GruBackward0, ...).
void record_rnn_layer(RnnMode mode, const Tensor& x, const std::vector<int64_t>& batch_sizes,
                      const Tensor& h0, const Tensor& c0, const RnnWeights& w, bool reverse,
                      const RnnSaved& saved, const std::vector<Tensor>& outs);

// Note [Double backward of fused ops]
// A fused op's backward kernel is not itself differentiable. Under
// create_graph=True its node instead re-runs the op's forward written with
// differentiable ember ops on the saved inputs (which keep their history) and
// takes the vector-Jacobian product of that graph with the engine, with
// create_graph=True: the result is the same gradient, now a differentiable
// function of the inputs and of the incoming gradients.

/// The gradients of `inputs` (where mask is set and the input requires grad) of
/// sum(outs_i * grads_i), outs = forward(inputs), as a differentiable graph.
variable_list composite_vjp(const std::function<variable_list(const variable_list&)>& forward,
                            const variable_list& inputs, const variable_list& grads,
                            const std::vector<bool>& mask);

}  // namespace ember::autograd
