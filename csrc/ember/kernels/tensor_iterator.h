// TensorIterator: the one loop driver for elementwise kernels on any strides.
#pragma once
#include <functional>
#include <initializer_list>

#include "ember/core/small_vec.h"
#include "ember/core/tensor.h"

namespace ember {

// Note [TensorIterator]
// Operands are outputs first, then inputs, all already of the sizes they are
// iterated at (inputs are broadcast by giving them stride 0). The iterator
//  1. orders dimensions so the innermost loop walks the smallest strides,
//  2. coalesces dimensions that are contiguous with each other in every
//     operand (a contiguous tensor becomes one flat loop),
//  3. hands a kernel's inner loop `(char** data, const int64_t* strides, n)`
//     rows of n elements, splitting the work over the thread pool.
// Inner loops test for the all-contiguous and stride-0 cases so the compiler
// can vectorize them. The same geometry drives the CUDA kernels.
class TensorIterator {
 public:
  static constexpr int kMaxOperands = 8;
  using Loop = std::function<void(char** data, const int64_t* strides, int64_t n)>;

  /// Builds an iterator over `operands` (outputs first), all broadcast to `shape`.
  TensorIterator(std::initializer_list<Tensor> operands, int noutputs, const Shape& shape);

  int ntensors() const { return ntensors_; }
  int noutputs() const { return noutputs_; }
  int64_t numel() const { return numel_; }
  int ndim() const { return int(shape_.size()); }
  /// Loop shape after reordering and coalescing, innermost dimension first.
  const Shape& shape() const { return shape_; }
  /// Byte strides of operand `i` in the loop shape's order.
  const Shape& strides(int i) const { return strides_[i]; }
  char* data(int i) const { return data_[i]; }
  const Tensor& tensor(int i) const { return operands_[i]; }
  DType dtype(int i) const { return operands_[i].dtype(); }
  bool is_contiguous() const;

  /// Runs `loop` over every element, in parallel when the tensor is large.
  void for_each(const Loop& loop, int64_t grain = kGrainSizeDefault) const;
  /// Runs `loop` over the linear index range [begin, end) on this thread.
  void serial_for_each(const Loop& loop, int64_t begin, int64_t end) const;

  static constexpr int64_t kGrainSizeDefault = 32768;

 private:
  void reorder_and_coalesce();

  Tensor operands_[kMaxOperands];
  int ntensors_, noutputs_;
  Shape shape_;
  Shape strides_[kMaxOperands];
  char* data_[kMaxOperands];
  int64_t numel_;
};

/// Broadcasts two shapes; raises PyTorch's "The size of tensor a (2) must match..." error.
Shape broadcast_shapes(const Shape& a, const Shape& b);
/// A stride-0 view of `t` at `shape` (no copy). Raises if `t` cannot broadcast to it.
Tensor expand_to(const Tensor& t, const Shape& shape, const char* op = "expand");

}  // namespace ember
