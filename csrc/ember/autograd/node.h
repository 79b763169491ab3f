// The autograd graph: Node (a backward function), Edge, SavedVariable, and the
// per-tensor AutogradMetaImpl. See Note [Autograd graph].
#pragma once
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ember/core/tensor.h"

namespace ember::autograd {

// Note [Autograd graph]
// A tensor produced by a differentiable op holds (grad_fn, output_nr): the Node
// that computes its inputs' gradients and which of that Node's inputs the
// tensor's gradient is. A Node's next_edges point at the Nodes of its forward
// inputs (or at an AccumulateGrad for leaves, or are empty for inputs that do
// not require grad). Nodes are ordered by sequence number (creation order);
// the engine runs a Node once all gradients flowing into it have arrived.
// Graphs are freed iteratively (release_node) so a 100k-op chain never
// recurses through destructors.

struct Node;
using variable_list = std::vector<Tensor>;

struct Edge {
  std::shared_ptr<Node> fn;
  uint32_t input_nr = 0;
  bool valid() const { return bool(fn); }
};

/// What a gradient flowing into a Node's input must look like.
struct InputMeta {
  Shape sizes;
  DType dtype = DType::Float32;
  Device device;
};

using TensorHook = std::function<Tensor(const Tensor&)>;

/// Run by AccumulateGrad with the leaf after its .grad was updated
/// (Tensor.register_post_accumulate_grad_hook, the DDP reducer); `*alive = false` removes it.
struct PostAccumulateGradHook {
  std::function<void(const Tensor&)> fn;
  std::shared_ptr<bool> alive = std::make_shared<bool>(true);
};

/// Sizes, strides and storage offset of a tensor.
struct StridedGeometry {
  Shape sizes, strides;
  int64_t offset = 0;
  static StridedGeometry of(const Tensor& t) {
    return {t.sizes(), t.strides(), t.storage_offset()};
  }
};

/// The gradient of `in` (a geometry over a storage of `storage_elems`) from the
/// gradient of its as_strided view `view`: scatters (adding where the view
/// overlaps itself) and reads back through `in`, written in ember ops.
Tensor as_strided_backward(const Tensor& grad, const StridedGeometry& in,
                           const StridedGeometry& view, int64_t storage_elems);

struct Node : std::enable_shared_from_this<Node> {
  Node();
  virtual ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  /// PyTorch's name: "MulBackward0", "AccumulateGrad", ...
  virtual std::string name() const = 0;
  /// Computes gradients of the forward inputs from gradients of the forward outputs.
  virtual variable_list apply(variable_list&& grads) = 0;
  /// Drops saved tensors (after backward without retain_graph).
  virtual void release_variables() {}
  /// True when the saved tensors were released.
  bool released = false;

  uint64_t sequence_nr;
  std::vector<Edge> next_edges;
  std::vector<InputMeta> input_meta;  // one per forward output
  /// Hooks run on the gradient of forward output i before apply (Tensor.register_hook on
  /// non-leaves).
  std::vector<std::pair<uint32_t, TensorHook>> pre_hooks;
  /// Node.register_prehook: fn(grad_outputs) after the tensor hooks, before apply; a
  /// non-empty result replaces the gradients.
  std::vector<std::function<variable_list(const variable_list&)>> node_pre_hooks;
  /// Node.register_hook: fn(grad_inputs, grad_outputs) after apply; a non-empty result
  /// replaces grad_inputs (what flows to the next nodes).
  std::vector<std::function<variable_list(const variable_list&, const variable_list&)>> post_hooks;
  /// Forward traceback (anomaly mode).
  std::string trace;
  /// Undefined incoming gradients become zeros before apply (custom Functions may opt out).
  bool materialize_grads = true;
  /// The Python object wrapping this node, if one is alive (borrowed; see
  /// Note [Python object identity]): `y.grad_fn is y.grad_fn`.
  void* pyobj = nullptr;

  uint32_t add_input_meta(const Tensor& t);
  bool should_compute_output(size_t i) const {
    return i < next_edges.size() && next_edges[i].valid();
  }
};

/// Drops a reference to a Node without recursing through the graph.
void release_node(std::shared_ptr<Node>&& n);

/// A tensor saved for backward, with the version it had when saved.
class SavedVariable {
 public:
  SavedVariable() = default;
  /// `is_output`: the tensor is an output of the saving node (stored without
  /// its grad_fn to avoid a reference cycle, re-attached on unpack).
  SavedVariable(const Tensor& t, bool is_output);
  /// The saved tensor; raises if it was freed or modified in place since.
  Tensor unpack(const std::shared_ptr<Node>& saved_for = nullptr) const;
  void reset();
  bool defined() const { return data_.defined() || was_defined_; }

 private:
  Tensor data_;
  uint32_t saved_version_ = 0;
  bool is_output_ = false;
  bool was_defined_ = false;
  bool requires_grad_ = false;
  uint32_t output_nr_ = 0;
  std::weak_ptr<Node> weak_grad_fn_;
};

struct AutogradMetaImpl : AutogradMeta {
  Tensor grad;
  std::shared_ptr<Node> grad_fn;
  std::weak_ptr<Node> grad_accumulator;
  uint32_t output_nr = 0;
  bool retains_grad = false;
  // Views (Note [Views and in-place]).
  bool is_view = false;
  Tensor base;
  uint32_t view_version = 0;      // base version when grad_fn was last set
  std::vector<TensorHook> hooks;  // Tensor.register_hook
  std::vector<PostAccumulateGradHook> post_accumulate_hooks;  // leaves only
  ~AutogradMetaImpl() override;
};

/// The autograd state of `t`, or null when it has none yet.
AutogradMetaImpl* meta(const Tensor& t);
/// The autograd state of `t`, created on demand.
AutogradMetaImpl* materialize_meta(const Tensor& t);

/// True when `t` requires grad: a leaf marked so, or a result with a grad_fn.
inline bool requires_grad(const Tensor& t) { return t.defined() && t.impl()->requires_grad; }
bool is_leaf(const Tensor& t);
std::shared_ptr<Node> grad_fn(const Tensor& t);
/// The edge a gradient of `t` flows along (its grad_fn or its AccumulateGrad).
Edge gradient_edge(const Tensor& t);
/// Marks a leaf as requiring grad (or not); raises PyTorch's errors for non-leaves.
void set_requires_grad(const Tensor& t, bool on);
/// Records `node` as the history of `out` (output `output_nr`).
void set_history(const Tensor& out, const std::shared_ptr<Node>& node, uint32_t output_nr = 0);
/// Edges for a node's forward inputs (invalid edges for inputs without grad).
std::vector<Edge> collect_next_edges(std::initializer_list<const Tensor*> inputs);
std::vector<Edge> collect_next_edges(const std::vector<Tensor>& inputs);

/// True when an op should record history for these inputs.
bool compute_requires_grad(std::initializer_list<const Tensor*> inputs);
bool compute_requires_grad(const std::vector<Tensor>& inputs);

/// Raises PyTorch's errors for in-place ops on leaves that require grad (or views of them).
void check_inplace(const Tensor& self, const char* op);
/// After an in-place op on `self` with `node` as its new history: rebases
/// self (and, for views, its base through CopySlices). See Note [Views and in-place].
void rebase_history(const Tensor& self, const std::shared_ptr<Node>& node);
/// Marks `out` as a differentiable view of `base` (tracking the base for CopySlices).
void set_view_of(const Tensor& out, const Tensor& base);

/// A tensor sharing data and version counter but no autograd history.
Tensor detach(const Tensor& t);

/// Hook: current Python source location "file.py:12" for error messages (set by the bindings).
extern std::string (*python_location_hook)();
/// Hook: records the forward traceback of a node (anomaly mode; set by the bindings).
extern void (*anomaly_record_hook)(Node&);
bool anomaly_enabled();
void set_anomaly_enabled(bool on, bool check_nan);
bool anomaly_check_nan();

}  // namespace ember::autograd
