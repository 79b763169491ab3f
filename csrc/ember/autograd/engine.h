// The backward engine. See Note [Engine].
#pragma once
#include <functional>

#include "ember/autograd/node.h"

namespace ember::autograd {

struct BackwardOptions {
  bool keep_graph = false;
  bool create_graph = false;
  /// Restrict the run to these edges: gradients arriving there are returned
  /// (autograd.grad) or, with accumulate, accumulated only there (backward(inputs=)).
  std::vector<Edge> inputs;
  bool accumulate = true;
  bool allow_unreachable = true;
};

/// Runs backward from `roots` seeded with `grad_roots`. Returns the gradients
/// captured at `opts.inputs` (undefined where none arrived) when !accumulate.
variable_list run_backward(const variable_list& roots, const variable_list& grad_roots,
                           const BackwardOptions& opts);

/// Queues `cb` to run on this thread once the backward pass now running has run every
/// node, before it returns (PyTorch's Engine::queue_callback; the DDP reducer finishes its
/// gradient reduction there). Callbacks run in order, including ones queued by a callback;
/// they do not run when the pass fails. Raises outside a backward pass.
void queue_callback(std::function<void()> cb);
/// True while a backward pass runs on this thread.
bool in_backward();

/// Called with the failing node when a backward step throws in anomaly mode.
extern void (*anomaly_report_hook)(const Node&);

}  // namespace ember::autograd
