// Derivatives of the recurrent layers: one node per layer and direction whose
// backward is BPTT over the saved gate activations (rnn_layer_backward), and
// under create_graph=True the composite of Note [Double backward of fused ops].
#include "ember/autograd/derivatives/nn_rnn.h"

#include "ember/autograd/engine.h"
#include "ember/autograd/functions.h"
#include "ember/autograd/grad_mode.h"

namespace ember::autograd {

variable_list composite_vjp(const std::function<variable_list(const variable_list&)>& forward,
                            const variable_list& inputs, const variable_list& grads,
                            const std::vector<bool>& mask) {
  variable_list result(inputs.size());
  variable_list outs;
  {
    GradModeGuard on(true);
    outs = forward(inputs);
  }
  variable_list roots, seeds;
  for (size_t i = 0; i < outs.size() && i < grads.size(); ++i)
    if (outs[i].defined() && grads[i].defined() && requires_grad(outs[i])) {
      roots.push_back(outs[i]);
      seeds.push_back(grads[i]);
    }
  std::vector<size_t> which;
  BackwardOptions opts;
  opts.create_graph = true;
  opts.keep_graph = true;
  opts.accumulate = false;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (i < mask.size() && mask[i] && inputs[i].defined() && requires_grad(inputs[i])) {
      which.push_back(i);
      opts.inputs.push_back(gradient_edge(inputs[i]));
    }
  if (roots.empty() || which.empty()) return result;
  variable_list g = run_backward(roots, seeds, opts);
  for (size_t j = 0; j < which.size(); ++j) result[which[j]] = g[j];
  return result;
}

namespace {

const char* node_name(RnnMode m) {
  switch (m) {
    case RnnMode::RnnTanh:
      return "RnnTanhBackward0";
    case RnnMode::RnnRelu:
      return "RnnReluBackward0";
    case RnnMode::Lstm:
      return "LstmBackward0";
    case RnnMode::Gru:
      return "GruBackward0";
  }
  return "RnnBackward0";
}

}  // namespace

void record_rnn_layer(RnnMode mode, const Tensor& x, const std::vector<int64_t>& bs,
                      const Tensor& h0, const Tensor& c0, const RnnWeights& w, bool reverse,
                      const RnnSaved& saved, const std::vector<Tensor>& outs) {
  std::vector<Tensor> inputs{x, h0, c0, w.w_ih, w.w_hh, w.b_ih, w.b_hh, w.w_hr};
  std::vector<Tensor> defined_outs{outs[0], outs[1]};
  if (mode == RnnMode::Lstm) defined_outs.push_back(outs[2]);
  const bool gates_is_output = mode == RnnMode::RnnTanh || mode == RnnMode::RnnRelu;
  auto fn = [mode, bs, reverse](LambdaNode& n, variable_list&& g) -> variable_list {
    std::vector<bool> mask(8);
    for (size_t i = 0; i < 8; ++i) mask[i] = n.should_compute_output(i);
    std::vector<Tensor> in(8);
    for (size_t i = 0; i < 8; ++i) in[i] = n.unpack(i);
    RnnWeights w{in[3], in[4], in[5], in[6], in[7]};
    Tensor dy = g.size() > 0 ? g[0] : Tensor(), dhn = g.size() > 1 ? g[1] : Tensor();
    Tensor dcn = g.size() > 2 ? g[2] : Tensor();
    if (grad_enabled()) {  // create_graph: Note [Double backward of fused ops]
      auto fwd = [mode, bs, reverse](const variable_list& v) {
        RnnWeights ww{v[3], v[4], v[5], v[6], v[7]};
        return rnn_layer_composite(mode, v[0], bs, v[1], v[2], ww, reverse);
      };
      return composite_vjp(fwd, in, {dy, dhn, dcn}, mask);
    }
    RnnSaved sv{n.unpack(8), n.unpack(9), n.unpack(10), n.unpack(11), n.unpack(12)};
    return rnn_layer_backward(mode, in[0], bs, in[1], in[2], w, reverse, sv, dy, dhn, dcn, mask);
  };
  auto node = record_multi(node_name(mode), inputs, defined_outs, fn);
  for (const Tensor& t : inputs) node->saved.emplace_back(t, false);
  node->saved.emplace_back(saved.gates, gates_is_output);
  node->saved.emplace_back(saved.c_prev, false);
  node->saved.emplace_back(saved.h_prev, false);
  node->saved.emplace_back(saved.h_raw, false);
  node->saved.emplace_back(saved.hn, false);
}

}  // namespace ember::autograd
