// Nodes shared by every op family: AccumulateGrad, CopySlices, and helpers
// for writing derivative formulas (sum_to_size for broadcasting).
#pragma once
#include "ember/autograd/node.h"

namespace ember::autograd {

/// Accumulates gradients into a leaf's .grad.
struct AccumulateGrad : Node {
  explicit AccumulateGrad(const Tensor& leaf);
  std::string name() const override { return "AccumulateGrad"; }
  variable_list apply(variable_list&& grads) override;
  /// The leaf, held weakly: a graph must not keep parameters alive.
  std::weak_ptr<TensorImpl> leaf;
  Tensor variable() const;
};

/// Runs the leaf's post-accumulate-grad hooks (dead ones are dropped).
void run_post_accumulate_hooks(const Tensor& var, AutogradMetaImpl& m);

/// A node whose apply is a lambda: used by simple derivative formulas.
struct LambdaNode : Node {
  using Fn = std::function<variable_list(LambdaNode&, variable_list&&)>;
  LambdaNode(std::string name, Fn fn) : name_(std::move(name)), fn_(std::move(fn)) {}
  std::string name() const override { return name_; }
  variable_list apply(variable_list&& grads) override { return fn_(*this, std::move(grads)); }
  void release_variables() override {
    for (auto& s : saved) s.reset();
    released = true;
  }
  Tensor unpack(size_t i) { return saved[i].unpack(shared_from_this()); }
  std::vector<SavedVariable> saved;
  // Non-tensor state a formula needs (shapes, dims, scalars).
  Shape shape_a, shape_b, shape_c;
  std::vector<int64_t> ints;
  std::vector<double> doubles;
  DType dtype_a = DType::Float32, dtype_b = DType::Float32;
  Device device_b;

 private:
  std::string name_;
  Fn fn_;
};

/// Note [Views and in-place]: the node an in-place op on a view puts on the
/// view's base. It applies the op's backward to the slice of the base's
/// gradient that the view covers.
struct CopySlices : Node {
  CopySlices(const Tensor& base, const Tensor& view, std::shared_ptr<Node> fn);
  std::string name() const override { return "CopySlices"; }
  variable_list apply(variable_list&& grads) override;
  void release_variables() override {
    fn->release_variables();
    released = true;
  }
  Shape base_sizes, base_strides, view_sizes, view_strides;
  int64_t base_offset, view_offset;
  DType dtype;
  Device device;
  std::shared_ptr<Node> fn;

 private:
  int64_t storage_elems_ = 0;
};

/// Sums `grad` down to `sizes` (the reverse of broadcasting).
Tensor sum_to_size(const Tensor& grad, const Shape& sizes);
/// The gradient cast back to the input's dtype when the forward promoted it.
Tensor cast_grad(const Tensor& grad, DType dtype);
/// Creates a LambdaNode with next edges for `inputs` and records it on `out`.
std::shared_ptr<LambdaNode> record(const char* name, std::initializer_list<const Tensor*> inputs,
                                   const Tensor& out, LambdaNode::Fn fn);
std::shared_ptr<LambdaNode> record_multi(const char* name, const std::vector<Tensor>& inputs,
                                         const std::vector<Tensor>& outs, LambdaNode::Fn fn);

}  // namespace ember::autograd
