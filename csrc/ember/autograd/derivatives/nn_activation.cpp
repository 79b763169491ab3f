// Derivatives of the fused activations: softmax and log_softmax read only their
// output. The backward is the fused kernel, or under create_graph the same formula
// in recorded ops (ops/nn_activation.cpp, softmax_backward_data).
#include "ember/autograd/derivatives/nn_activation.h"

#include "ember/autograd/record.h"
#include "ember/ops/nn_activation.h"

namespace ember::autograd {

void record_softmax(const Tensor& in, const Tensor& out, int64_t dim, bool log) {
  auto node = record(log ? "LogSoftmaxBackward0" : "SoftmaxBackward0", {&in}, out,
                     [dim, log](LambdaNode& n, variable_list&& g) -> variable_list {
                       Tensor y = n.unpack(0);
                       return {log ? log_softmax_backward_data(g[0], y, dim)
                                   : softmax_backward_data(g[0], y, dim)};
                     });
  node->saved.emplace_back(out, true);
}

}  // namespace ember::autograd
