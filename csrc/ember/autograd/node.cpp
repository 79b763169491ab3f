#include "ember/autograd/node.h"
#include "ember/jit/trace_hook.h"

#include <algorithm>

#include "ember/autograd/functions.h"
#include "ember/autograd/grad_mode.h"
#include "ember/ops/factory.h"
#include "ember/ops/index.h"
#include "ember/ops/ops.h"
#include "ember/ops/view.h"

namespace ember::autograd {

namespace {
std::atomic<uint64_t> g_next_sequence_nr{0};
bool g_anomaly = false, g_anomaly_nan = true;
}  // namespace

std::string (*python_location_hook)() = nullptr;
void (*anomaly_record_hook)(Node&) = nullptr;
bool anomaly_enabled() { return g_anomaly; }
bool anomaly_check_nan() { return g_anomaly_nan; }
void set_anomaly_enabled(bool on, bool check_nan) {
  g_anomaly = on;
  g_anomaly_nan = check_nan;
}

Node::Node() : sequence_nr(g_next_sequence_nr++) {
  if (g_anomaly && anomaly_record_hook) anomaly_record_hook(*this);
}

Node::~Node() {
  for (auto& e : next_edges)
    if (e.fn) release_node(std::move(e.fn));
}

uint32_t Node::add_input_meta(const Tensor& t) {
  input_meta.push_back(InputMeta{t.sizes(), t.dtype(), t.device()});
  return uint32_t(input_meta.size() - 1);
}

void release_node(std::shared_ptr<Node>&& n) {
  thread_local std::vector<std::shared_ptr<Node>>* pending = nullptr;
  if (!n) return;
  if (pending) {
    pending->push_back(std::move(n));
    return;
  }
  std::vector<std::shared_ptr<Node>> local;
  pending = &local;
  local.push_back(std::move(n));
  while (!local.empty()) {
    std::shared_ptr<Node> x = std::move(local.back());
    local.pop_back();
    x.reset();  // may push this node's edges onto `local`
  }
  pending = nullptr;
}

AutogradMetaImpl::~AutogradMetaImpl() {
  if (grad_fn) release_node(std::move(grad_fn));
}

AutogradMetaImpl* meta(const Tensor& t) {
  return static_cast<AutogradMetaImpl*>(t.impl()->autograd.get());
}

AutogradMetaImpl* materialize_meta(const Tensor& t) {
  auto& a = t.impl()->autograd;
  if (!a) a = std::make_shared<AutogradMetaImpl>();
  return static_cast<AutogradMetaImpl*>(a.get());
}

bool is_leaf(const Tensor& t) {
  AutogradMetaImpl* m = meta(t);
  return !m || !m->grad_fn;
}

// Note [Views and in-place]
// A view of a tensor that requires grad remembers its base. When an in-place
// op writes through a view, the base gets a CopySlices node (the op's backward
// applied to the view's slice of the base's gradient), and every view of that
// base regenerates its grad_fn from the base (AsStridedBackward0) the next time
// it is used, detected through the base's version counter.
// True unless the geometry provably addresses each storage element at most once
// (dims sorted by stride, each stride past the extent of the smaller ones).
static bool may_overlap(const StridedGeometry& g) {
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size)
  for (size_t i = 0; i < g.sizes.size(); ++i) {
    if (g.sizes[i] == 0) return false;
    if (g.sizes[i] != 1)
      dims.push_back({g.strides[i] < 0 ? -g.strides[i] : g.strides[i], g.sizes[i]});
  }
  std::sort(dims.begin(), dims.end());
  int64_t extent = 1;  // elements spanned by the smaller dims
  for (auto [stride, size] : dims) {
    if (stride < extent) return true;
    extent = stride * (size - 1) + extent;
  }
  return false;
}

// Storage position of each element of a geometry, as an int64 tensor of its shape.
static Tensor storage_positions(const StridedGeometry& g, int64_t storage_elems, Device dev) {
  Tensor all =
      arange(Scalar(int64_t(0)), Scalar(storage_elems), Scalar(int64_t(1)), DType::Int64, dev);
  return as_strided(all, g.sizes, g.strides, g.offset);
}

Tensor as_strided_backward(const Tensor& grad, const StridedGeometry& in,
                           const StridedGeometry& view, int64_t storage_elems) {
  Tensor flat = zeros(Shape{storage_elems}, grad.dtype(), grad.device());
  if (may_overlap(view)) {
    // Several view elements share a storage element: their gradients add up.
    Tensor pos = reshape(storage_positions(view, storage_elems, grad.device()), Shape{-1});
    flat = index_add(flat, 0, pos, reshape(grad, Shape{-1}));
  } else {
    Tensor region = as_strided(flat, view.sizes, view.strides, view.offset);
    copy_(region, binary(BinaryOp::add, region, grad));
  }
  if (may_overlap(in)) {
    // The input reads a storage element several times (an expanded input): split
    // its gradient between the readers, whose backward sums them again.
    Tensor count = zeros(Shape{storage_elems}, grad.dtype(), grad.device());
    Tensor pos = reshape(storage_positions(in, storage_elems, grad.device()), Shape{-1});
    count = index_add(count, 0, pos, ones(Shape{pos.numel()}, grad.dtype(), grad.device()));
    flat = binary(BinaryOp::div, flat,
                  binary(BinaryOp::maximum, count, ones(Shape{}, grad.dtype(), grad.device())));
  }
  return as_strided(flat, in.sizes, in.strides, in.offset);
}

static void regenerate_view_grad_fn(const Tensor& t, AutogradMetaImpl* m) {
  if (!m->is_view || !m->base.defined() || m->view_version == m->base.version()) return;
  if (!requires_grad(m->base)) return;
  Tensor base = m->base;
  StridedGeometry vg = StridedGeometry::of(t), bg = StridedGeometry::of(base);
  int64_t storage_elems = int64_t(base.storage()->nbytes) / base.element_size();
  auto node = std::make_shared<LambdaNode>(
      "AsStridedBackward0", [=](LambdaNode&, variable_list&& g) -> variable_list {
        // Scatter the view's gradient into a zero buffer laid out like the base's storage.
        return {as_strided_backward(g[0], bg, vg, storage_elems)};
      });
  node->next_edges = {gradient_edge(base)};
  node->add_input_meta(t);
  m->grad_fn = node;
  m->output_nr = 0;
  m->view_version = base.version();
}

std::shared_ptr<Node> grad_fn(const Tensor& t) {
  AutogradMetaImpl* m = meta(t);
  if (!m) return nullptr;
  if (m->is_view) regenerate_view_grad_fn(t, m);
  return m->grad_fn;
}

Edge gradient_edge(const Tensor& t) {
  if (!requires_grad(t)) return Edge{};
  AutogradMetaImpl* m = materialize_meta(t);
  if (m->is_view) regenerate_view_grad_fn(t, m);
  if (m->grad_fn) return Edge{m->grad_fn, m->output_nr};
  std::shared_ptr<Node> acc = m->grad_accumulator.lock();
  if (!acc) {
    acc = std::make_shared<AccumulateGrad>(t);
    acc->add_input_meta(t);
    m->grad_accumulator = acc;
  }
  return Edge{acc, 0};
}

void set_requires_grad(const Tensor& t, bool on) {
  if (!is_leaf(t)) {
    EMBER_CHECK(on,
                "you can only change requires_grad flags of leaf variables. If you want to "
                "use a computed variable in a subgraph that doesn't require differentiation "
                "use var_no_grad = var.detach().");
    return;
  }
  if (on) {
    EMBER_CHECK(
        !(t.impl()->inference && !inference_mode()),
        "Setting requires_grad=True on inference tensor outside InferenceMode is not allowed.");
    EMBER_CHECK(is_floating(t.dtype()),
                "only Tensors of floating point dtype can require gradients (got ",
                dtype_name(t.dtype()), ")");
  }
  t.impl()->requires_grad = on;
}

void set_history(const Tensor& out, const std::shared_ptr<Node>& node, uint32_t output_nr) {
  AutogradMetaImpl* m = materialize_meta(out);
  m->grad_fn = node;
  m->output_nr = output_nr;
  if (m->is_view && m->base.defined()) m->view_version = m->base.version();
  out.impl()->requires_grad = true;
}

std::vector<Edge> collect_next_edges(std::initializer_list<const Tensor*> inputs) {
  std::vector<Edge> edges;
  edges.reserve(inputs.size());
  for (const Tensor* t : inputs) edges.push_back(t && t->defined() ? gradient_edge(*t) : Edge{});
  return edges;
}

std::vector<Edge> collect_next_edges(const std::vector<Tensor>& inputs) {
  std::vector<Edge> edges;
  edges.reserve(inputs.size());
  for (const Tensor& t : inputs) edges.push_back(t.defined() ? gradient_edge(t) : Edge{});
  return edges;
}

bool compute_requires_grad(std::initializer_list<const Tensor*> inputs) {
  if (!grad_enabled()) return false;
  for (const Tensor* t : inputs)
    if (t && requires_grad(*t)) return true;
  return false;
}

bool compute_requires_grad(const std::vector<Tensor>& inputs) {
  if (!grad_enabled()) return false;
  for (const Tensor& t : inputs)
    if (requires_grad(t)) return true;
  return false;
}

void check_inplace(const Tensor& self, const char* op) {
  if (!grad_enabled()) return;
  AutogradMetaImpl* m = meta(self);
  if (requires_grad(self) && is_leaf(self) && !(m && m->is_view))
    EMBER_ERROR("a leaf Variable that requires grad is being used in an in-place operation",
                op ? std::string(" (") + op + ")" : std::string(), ".");
  if (m && m->is_view && m->base.defined() && requires_grad(m->base) && is_leaf(m->base))
    EMBER_ERROR(
        "a view of a leaf Variable that requires grad is being used in an in-place "
        "operation",
        op ? std::string(" (") + op + ")" : std::string(), ".");
}

void rebase_history(const Tensor& self, const std::shared_ptr<Node>& node) {
  AutogradMetaImpl* m = materialize_meta(self);
  if (m->is_view && m->base.defined()) {
    Tensor base = m->base;
    auto cs = std::make_shared<CopySlices>(base, self, node);
    set_history(base, cs, 0);
    // The view's own grad_fn regenerates from the base on next use.
    m->grad_fn.reset();
    m->view_version = uint32_t(-1);
    self.impl()->requires_grad = true;
    return;
  }
  set_history(self, node, 0);
}

void set_view_of(const Tensor& out, const Tensor& base) {
  AutogradMetaImpl* bm = meta(base);
  AutogradMetaImpl* m = materialize_meta(out);
  m->is_view = true;
  m->base = (bm && bm->is_view && bm->base.defined()) ? bm->base : base;
  m->view_version = m->base.version();
}

Tensor detach(const Tensor& t) {
  EMBER_TRACE("aten::detach(Tensor self) -> Tensor", detach, t);
  Tensor d = make_view(t, t.sizes(), t.strides(), t.storage_offset());
  d.impl()->autograd.reset();
  d.impl()->requires_grad = false;
  return d;
}

// ---- SavedVariable ----------------------------------------------------------------------

SavedVariable::SavedVariable(const Tensor& t, bool is_output) {
  if (!t.defined()) return;
  // An inference tensor has no version counter to check (PyTorch's rule).
  EMBER_CHECK(!t.impl()->inference,
              "Inference tensors cannot be saved for backward. To work around you can make a "
              "clone to get a normal tensor and use it in autograd.");
  was_defined_ = true;
  saved_version_ = t.version();
  is_output_ = is_output;
  requires_grad_ = requires_grad(t);
  t.impl()->version->watched = true;
  if (is_output && requires_grad_) {
    // Keep the data and the version counter, not the grad_fn (that would be a cycle).
    data_ = make_view(t, t.sizes(), t.strides(), t.storage_offset());
    data_.impl()->version = t.impl()->version;
    AutogradMetaImpl* m = meta(t);
    if (m) {
      weak_grad_fn_ = m->grad_fn;
      output_nr_ = m->output_nr;
    }
  } else {
    data_ = t;
    // Remember whose output it was, for the error message if it is modified.
    if (AutogradMetaImpl* m = meta(t); m && m->grad_fn) {
      weak_grad_fn_ = m->grad_fn;
      output_nr_ = m->output_nr;
    }
  }
}

void SavedVariable::reset() { data_ = Tensor(); }

Tensor SavedVariable::unpack(const std::shared_ptr<Node>& saved_for) const {
  if (!was_defined_) return Tensor();
  EMBER_CHECK(data_.defined(),
              "Trying to backward through the graph a second time (or directly access saved "
              "tensors after they have already been freed). Saved intermediate values of the graph "
              "are freed when you call .backward() or autograd.grad(). Specify retain_graph=True "
              "if you need to backward through the graph a second time or if you need to access "
              "saved tensors after calling backward.");
  const VersionCounter& vc = *data_.impl()->version;
  if (vc.value != saved_version_) {
    std::string which =
        "[" + legacy_type_name(data_.dtype()) + " " + shape_str(data_.sizes()) + "]";
    std::string owner;
    std::shared_ptr<Node> fn = weak_grad_fn_.lock();
    if (!fn && is_output_) fn = saved_for;
    if (fn) owner = ", which is output " + std::to_string(output_nr_) + " of " + fn->name() + ",";
    std::string culprit;
    if (vc.last_op || !vc.last_where.empty()) {
      culprit = " It was last modified in place by " +
                std::string(vc.last_op ? vc.last_op : "an in-place operation") +
                (vc.last_where.empty() ? std::string() : " at " + vc.last_where) + ".";
    }
    EMBER_ERROR(
        "one of the variables needed for gradient computation has been modified by an "
        "inplace operation: ",
        which, owner, " is at version ", vc.value, "; expected version ", saved_version_,
        " instead.", culprit,
        " Hint: enable anomaly detection to find the operation that failed to compute its "
        "gradient, with ember.autograd.set_detect_anomaly(True).");
  }
  if (is_output_ && requires_grad_) {
    Tensor t = make_view(data_, data_.sizes(), data_.strides(), data_.storage_offset());
    t.impl()->version = data_.impl()->version;
    std::shared_ptr<Node> fn = weak_grad_fn_.lock();
    if (!fn) fn = saved_for;
    if (fn) set_history(t, fn, output_nr_);
    return t;
  }
  return data_;
}

// ---- in-place write hook ------------------------------------------------------------------

namespace {
void on_inplace_write(VersionCounter& v, const char* op) {
  v.last_op = op;
  v.last_where = python_location_hook ? python_location_hook() : std::string();
}
struct InstallHook {
  InstallHook() { inplace_write_hook = &on_inplace_write; }
} g_install_hook;
}  // namespace

}  // namespace ember::autograd
