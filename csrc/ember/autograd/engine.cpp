#include "ember/autograd/engine.h"

#include <optional>

#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "ember/autograd/functions.h"
#include "ember/autograd/grad_mode.h"
#include "ember/core/profiler.h"
#include "ember/ops/autocast.h"
#include "ember/ops/ops.h"
#include "ember/ops/reduce.h"

namespace ember::autograd {

void (*anomaly_report_hook)(const Node&) = nullptr;

// Note [Engine]
// 1. Walk the graph from the roots (iteratively) and count, for each Node, the
//    edges that point at it. With `inputs`, keep only Nodes on a path to one.
// 2. Seed the roots' input buffers with the root gradients.
// 3. Repeatedly run the ready Node with the highest sequence number (the most
//    recently created), summing gradients that arrive on several edges into
//    its input buffer, and release its saved tensors unless keep_graph.
// 4. Run the callbacks queued during the pass (queue_callback), on this thread.
// The walk is a loop over explicit stacks: graph depth never touches the C++
// stack. Grad mode during the run is create_graph, so formulas written with
// ember ops build a differentiable graph of the backward pass when asked.
namespace {

struct ReadyOrder {
  bool operator()(Node* a, Node* b) const { return a->sequence_nr < b->sequence_nr; }
};

Tensor zeros_for(const InputMeta& m) { return zeros(m.sizes, m.dtype, m.device); }

// Makes `g` match what the next node expects: sum away broadcasting, fix dtype.
Tensor validate_grad(const Node& fn, size_t i, Tensor g, const InputMeta& m) {
  if (!g.defined()) return g;
  if (g.sizes() != m.sizes) {
    Shape target = m.sizes;
    bool expandable = true;
    try {
      Shape b = broadcast_shapes(target, g.sizes());
      expandable = b == g.sizes();
    } catch (const Error&) {
      expandable = false;
    }
    EMBER_CHECK(expandable, "Function ", fn.name(), " returned an invalid gradient at index ", i,
                " - got ", shape_str(g.sizes()), " but expected shape compatible with ",
                shape_str(m.sizes));
    g = sum_to_size(g, target);
  }
  if (g.dtype() != m.dtype) g = to_dtype(g, m.dtype);
  return g;
}

// The final callbacks of the backward pass running on this thread (Note [Engine], 4.).
thread_local std::vector<std::function<void()>>* t_final_callbacks = nullptr;

struct FinalCallbacksScope {
  std::vector<std::function<void()>> callbacks;
  std::vector<std::function<void()>>* saved;
  FinalCallbacksScope() : saved(t_final_callbacks) { t_final_callbacks = &callbacks; }
  ~FinalCallbacksScope() { t_final_callbacks = saved; }
  void run() {
    for (size_t i = 0; i < callbacks.size(); ++i) {
      std::function<void()> cb = std::move(callbacks[i]);
      cb();
    }
    callbacks.clear();
  }
};

bool has_nan(const Tensor& t) {
  if (!is_floating(t.dtype())) return false;
  Tensor n = any(unary(UnaryOp::isnan, t));
  return *to_device(n, Device()).data<bool>();
}

}  // namespace

void queue_callback(std::function<void()> cb) {
  EMBER_CHECK(t_final_callbacks, "Final callbacks can only be installed during backward pass.");
  t_final_callbacks->push_back(std::move(cb));
}

bool in_backward() { return t_final_callbacks != nullptr; }

variable_list run_backward(const variable_list& roots, const variable_list& grad_roots,
                           const BackwardOptions& opts) {
  GradModeGuard mode(opts.create_graph);
  FinalCallbacksScope final_callbacks;
  std::vector<Edge> root_edges;
  for (size_t i = 0; i < roots.size(); ++i) {
    Edge e = gradient_edge(roots[i]);
    EMBER_CHECK(e.valid(), "element ", i,
                " of tensors does not require grad and does not have a grad_fn");
    root_edges.push_back(e);
  }

  // 1. Discover the graph; post-order gives "needed" when inputs restrict the run.
  std::unordered_map<Node*, int> deps;
  std::unordered_set<Node*> seen;
  std::vector<Node*> order;  // post-order
  {
    std::vector<std::pair<Node*, size_t>> stack;
    for (auto& e : root_edges)
      if (seen.insert(e.fn.get()).second) stack.push_back({e.fn.get(), 0});
    while (!stack.empty()) {
      auto& [n, next] = stack.back();
      if (next < n->next_edges.size()) {
        Node* c = n->next_edges[next++].fn.get();
        if (c && seen.insert(c).second) stack.push_back({c, 0});
      } else {
        order.push_back(n);
        stack.pop_back();
      }
    }
  }
  bool restricted = !opts.inputs.empty();
  std::unordered_set<Node*> needed;
  std::unordered_map<Node*, std::vector<std::pair<uint32_t, size_t>>>
      captures;  // node -> (input_nr, slot)
  if (restricted) {
    for (size_t i = 0; i < opts.inputs.size(); ++i) {
      const Edge& e = opts.inputs[i];
      if (e.fn) {
        captures[e.fn.get()].push_back({e.input_nr, i});
        needed.insert(e.fn.get());
      }
    }
    for (Node* n : order) {  // children come before parents in post-order
      if (needed.count(n)) continue;
      for (auto& e : n->next_edges)
        if (e.fn && needed.count(e.fn.get())) {
          needed.insert(n);
          break;
        }
    }
  }
  auto is_needed = [&](Node* n) { return !restricted || needed.count(n); };
  for (Node* n : order) {
    if (!is_needed(n)) continue;
    for (auto& e : n->next_edges)
      if (e.fn && is_needed(e.fn.get())) ++deps[e.fn.get()];
  }

  // 2. Seed.
  std::unordered_map<Node*, variable_list> buffers;
  auto accumulate_into = [&](const Edge& e, Tensor g) {
    variable_list& buf = buffers[e.fn.get()];
    if (buf.size() < e.fn->input_meta.size())
      buf.resize(std::max<size_t>(e.fn->input_meta.size(), e.input_nr + 1));
    if (buf.size() <= e.input_nr) buf.resize(e.input_nr + 1);
    Tensor& slot = buf[e.input_nr];
    if (!slot.defined())
      slot = g;
    else if (g.defined())
      // strided + sparse, never sparse + strided (which PyTorch's add refuses)
      slot = slot.is_sparse() && !g.is_sparse() ? binary(BinaryOp::add, g, slot)
                                                : binary(BinaryOp::add, slot, g);
  };
  for (size_t i = 0; i < root_edges.size(); ++i) {
    Tensor g = grad_roots[i];
    if (g.defined() && root_edges[i].fn->input_meta.size() > root_edges[i].input_nr)
      g = validate_grad(*root_edges[i].fn, i, g,
                        root_edges[i].fn->input_meta[root_edges[i].input_nr]);
    accumulate_into(root_edges[i], g);
  }

  std::priority_queue<Node*, std::vector<Node*>, ReadyOrder> ready;
  std::unordered_set<Node*> queued;
  for (auto& e : root_edges)
    if (deps[e.fn.get()] == 0 && is_needed(e.fn.get()) && queued.insert(e.fn.get()).second)
      ready.push(e.fn.get());

  variable_list captured(opts.inputs.size());

  // 3. Run.
  while (!ready.empty()) {
    Node* n = ready.top();
    ready.pop();
    variable_list inputs = std::move(buffers[n]);
    buffers.erase(n);
    inputs.resize(std::max(inputs.size(), n->input_meta.size()));
    for (auto& [nr, hook] : n->pre_hooks) {
      if (nr < inputs.size() && inputs[nr].defined()) {
        Tensor r = hook(inputs[nr]);
        if (r.defined()) inputs[nr] = r;
      }
    }
    for (auto& hook : n->node_pre_hooks) {
      variable_list r = hook(inputs);
      if (!r.empty()) inputs = std::move(r);
    }
    if (restricted) {
      auto it = captures.find(n);
      if (it != captures.end()) {
        for (auto& [nr, slot] : it->second)
          if (nr < inputs.size()) captured[slot] = inputs[nr];
        if (!opts.accumulate) {
          // A captured node runs only if something beyond it is needed too.
          bool beyond = false;
          for (auto& e : n->next_edges) beyond |= e.fn && is_needed(e.fn.get());
          if (!beyond) continue;
        }
      }
    }
    bool is_acc = dynamic_cast<AccumulateGrad*>(n) != nullptr;
    if (is_acc && !opts.accumulate) continue;
    bool any_defined = false;
    for (auto& t : inputs) any_defined |= t.defined();
    variable_list outputs;
    if (any_defined) {
      if (!is_acc && n->materialize_grads)
        for (size_t i = 0; i < inputs.size(); ++i)
          if (!inputs[i].defined() && i < n->input_meta.size())
            inputs[i] = zeros_for(n->input_meta[i]);
      // Backward runs outside autocast (Note [Autocast policy]).
      autocast::ExcludeGuard no_autocast;
      std::optional<profiler::RecordScope> prof;  // Note [Profiler recording]
      if (profiler::enabled())
        prof.emplace("autograd::engine::evaluate_function: " + n->name(),
                     profiler::EventKind::Backward);
      variable_list grad_outputs;  // what apply saw, for the post hooks
      if (!n->post_hooks.empty()) grad_outputs = inputs;
      try {
        outputs = n->apply(std::move(inputs));
      } catch (...) {
        if (anomaly_enabled() && anomaly_report_hook) anomaly_report_hook(*n);
        throw;
      }
      for (auto& hook : n->post_hooks) {
        variable_list r = hook(outputs, grad_outputs);
        if (!r.empty()) outputs = std::move(r);
      }
      if (anomaly_enabled() && anomaly_check_nan())
        for (size_t i = 0; i < outputs.size(); ++i)
          EMBER_CHECK(!(outputs[i].defined() && has_nan(outputs[i])), "Function '", n->name(),
                      "' returned nan values in its ", i, "th output.");
    }
    if (!opts.keep_graph) n->release_variables();
    for (size_t i = 0; i < n->next_edges.size(); ++i) {
      const Edge& e = n->next_edges[i];
      if (!e.fn || !is_needed(e.fn.get())) continue;
      Tensor g = i < outputs.size() ? outputs[i] : Tensor();
      if (g.defined() && e.input_nr < e.fn->input_meta.size())
        g = validate_grad(*n, i, g, e.fn->input_meta[e.input_nr]);
      accumulate_into(e, g);
      if (--deps[e.fn.get()] == 0 && queued.insert(e.fn.get()).second) ready.push(e.fn.get());
    }
  }
  final_callbacks.run();
  return captured;
}

}  // namespace ember::autograd
