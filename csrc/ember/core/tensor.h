// Tensor: a handle to a TensorImpl, a strided view of a refcounted Storage.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "ember/core/allocator.h"
#include "ember/core/device.h"
#include "ember/core/dtype.h"
#include "ember/core/error.h"
#include "ember/core/small_vec.h"

namespace ember {

class Scalar;

/// The version counter of Note [Version counter].
struct VersionCounter {
  uint32_t value = 0;
  bool watched = false;           // an autograd node saved a tensor on this counter
  const char* last_op = nullptr;  // the last in-place op, recorded while watched
  std::string last_where;         // its Python source location, recorded while watched
  VersionCounter& operator=(uint32_t v) {
    value = v;
    return *this;
  }
  operator uint32_t() const { return value; }
};
/// Called on an in-place write to a watched counter (autograd sets it).
extern void (*inplace_write_hook)(VersionCounter& v, const char* op);

/// The most dimensions a tensor may have (PyTorch's CUDA kernels take 25, its Python
/// parser 128): every shape ember builds is checked against it (check_ndim), so no
/// recursion over dims (printing, nested-list parsing, tolist) can exhaust the stack.
constexpr int64_t kMaxDims = 64;
/// Raises RuntimeError when `ndim` exceeds kMaxDims; `what` names the op.
void check_ndim(int64_t ndim, const char* what);

/// A block of memory on one device, shared by every view of it.
/// Note [Resizing a shared storage]: resize_ that needs more bytes swaps a larger block
/// into this StorageImpl, so every tensor and storage object on it sees the new memory
/// (PyTorch's storage.resize_). Memory ember does not own (NumPy arrays, DLPack
/// producers) is not `resizable`, and growing it raises as PyTorch does.
struct StorageImpl {
  DataPtr data;
  size_t nbytes = 0;
  Device device;
  bool resizable = true;
  /// Version counter shared by all views of this storage (see Note [Version counter]).
  VersionCounter version;

  StorageImpl(DataPtr d, size_t n, Device dev) : data(d), nbytes(n), device(dev) {}
  StorageImpl(const StorageImpl&) = delete;
  StorageImpl& operator=(const StorageImpl&) = delete;
  ~StorageImpl() {
    if (data.deleter) data.deleter(data.ctx);
  }
};
using Storage = std::shared_ptr<StorageImpl>;

/// Allocates `nbytes` on `device` through its allocator.
Storage make_storage(size_t nbytes, Device device);

/// How a tensor's elements are stored: a strided view of a Storage, or sparse COO
/// (indices + values, Note [Sparse COO tensors] in core/sparse.h).
enum class Layout : uint8_t { Strided = 0, SparseCoo = 1 };
/// "strided", "sparse_coo"
const char* layout_name(Layout l);
/// The indices/values/flags of a sparse COO tensor (core/sparse.h).
struct SparseCooParts;

/// Raised when code that reads strided memory meets a tensor without it (a sparse
/// tensor reaching an op that supports only strided tensors); see Note [Layout errors].
class LayoutError : public Error {
 public:
  LayoutError(Layout l, const std::string& msg)
      : Error(ErrorKind::NotImplemented, msg), layout(l) {}
  Layout layout;
};
/// Raises LayoutError for `what` (e.g. "data_ptr") on a tensor of layout `l`.
[[noreturn]] void raise_not_strided(Layout l, const char* what);

/// Autograd's per-tensor state lives behind this base (filled in by autograd/).
struct AutogradMeta {
  virtual ~AutogradMeta() = default;
};

// Note [Version counter]
// Every in-place write bumps a counter that all views of the written memory
// share, so that autograd can tell a saved tensor was modified after it was
// saved. By default a tensor points at the counter inside its StorageImpl (no
// extra allocation); `.data`-style aliases get a fresh counter of their own.
struct TensorImpl {
  Storage storage;
  Shape sizes, strides;
  int64_t offset = 0;  // in elements
  int64_t numel = 1;
  DType dtype = DType::Float32;
  bool requires_grad = false;   // leaf flag; autograd refines it
  bool wrapped_number = false;  // a Python scalar turned tensor: weaker in type promotion
  bool inference = false;       // made under inference_mode: can never require grad
  // Note [Python object identity]: the Python object currently wrapping this
  // impl (borrowed; cleared when it dies), so that converting the same tensor
  // to Python twice gives the same object (`x.add_(1) is x`, `p.grad is p.grad`).
  void* pyobj = nullptr;
  const void* py_owner = nullptr;  // the Tensor handle inside that Python object
  std::shared_ptr<VersionCounter> version;
  std::shared_ptr<AutogradMeta> autograd;
  // A sparse COO tensor has layout SparseCoo, an empty storage on its device (for
  // device() and the version counter), contiguous strides of its sizes (never used:
  // data_ptr() raises) and its indices and values in `sparse` (core/sparse.h).
  Layout layout = Layout::Strided;
  std::shared_ptr<SparseCooParts> sparse;

  Device device() const { return storage->device; }
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return bool(impl_); }
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }

  int64_t dim() const { return int64_t(impl_->sizes.size()); }
  const Shape& sizes() const { return impl_->sizes; }
  const Shape& strides() const { return impl_->strides; }
  int64_t size(int64_t d) const;    // wraps negative d, raises IndexError
  int64_t stride(int64_t d) const;  // wraps negative d, raises IndexError
  int64_t numel() const { return impl_->numel; }
  int64_t storage_offset() const { return impl_->offset; }
  DType dtype() const { return impl_->dtype; }
  Device device() const { return impl_->storage->device; }
  int64_t element_size() const { return ::ember::element_size(impl_->dtype); }
  const Storage& storage() const { return impl_->storage; }
  Layout layout() const { return impl_->layout; }
  bool is_sparse() const { return impl_->layout == Layout::SparseCoo; }
  /// Address of element [0, ..., 0]. Raises LayoutError for a tensor without strided
  /// memory (Note [Layout errors]): no kernel ever reads a sparse tensor as if it were dense.
  /// An empty tensor's offset is unchecked (as_strided((0,), (1,), 2**63 - 1)), so its
  /// address is computed in wrapping integer arithmetic: never dereferenced, never UB.
  char* data_ptr() const {
    if (__builtin_expect(impl_->layout != Layout::Strided, 0))
      raise_not_strided(impl_->layout, "data_ptr");
    char* base = static_cast<char*>(impl_->storage->data.ptr);
    if (impl_->numel == 0)
      return reinterpret_cast<char*>(reinterpret_cast<uintptr_t>(base) +
                                     uint64_t(impl_->offset) * uint64_t(element_size()));
    return base + impl_->offset * element_size();
  }
  template <typename T>
  T* data() const {
    return reinterpret_cast<T*>(data_ptr());
  }
  bool is_contiguous() const;
  bool is_same(const Tensor& o) const { return impl_ == o.impl_; }

  uint32_t version() const { return impl_->version->value; }
  // ---- Methods of the C++ API (<ember/script.h>), PyTorch's names; defined with the
  // front-ends they call in api/tensor_methods.cpp. Python binds the front-ends instead.
  /// a[start:end:step] along `dim`, clamped as a Python slice.
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1) const;
  Tensor select(int64_t dim, int64_t index) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor view(const Shape& shape) const;
  Tensor reshape(const Shape& shape) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor contiguous() const;
  Tensor clone() const;
  Tensor detach() const;
  Tensor to(Device device) const;
  Tensor to(DType dtype) const;
  Tensor sum() const;
  Tensor mean() const;
  Tensor argmax(int64_t dim, bool keepdim = false) const;
  Tensor softmax(int64_t dim) const;
  /// The one element as a number (RuntimeError unless numel() == 1).
  Scalar item() const;
  bool requires_grad() const;
  /// The accumulated gradient (undefined before a backward).
  Tensor grad() const;
  /// Backpropagates from this one-element tensor (gradient 1).
  void backward() const;
  /// Python's repr: "tensor([[1., 2.]], grad_fn=<AddBackward0>)".
  std::string str() const;

  /// Records an in-place write; `op` names it in autograd's error messages.
  void bump_version(const char* op = nullptr) const {
    VersionCounter& v = *impl_->version;
    ++v.value;
    if (v.watched && inplace_write_hook) inplace_write_hook(v, op);
  }

 private:
  std::shared_ptr<TensorImpl> impl_;
};

/// Contiguous strides for `sizes`.
Shape contiguous_strides(const Shape& sizes);
/// Product of sizes, raising RuntimeError on overflow.
int64_t checked_numel(const Shape& sizes);
/// Wraps a possibly negative dim into [0, ndim); raises IndexError naming the valid range.
int64_t wrap_dim(int64_t d, int64_t ndim, bool scalar_ok = true);
/// "[2, 3]"
std::string shape_str(const Shape& s);

/// A new contiguous, uninitialized tensor.
Tensor empty(const Shape& sizes, DType dtype, Device device = Device());
/// A view of `base`'s storage with the given geometry; checked against the storage bounds.
Tensor make_view(const Tensor& base, Shape sizes, Shape strides, int64_t offset);
/// Wraps external memory (NumPy, DLPack) without copying.
Tensor from_blob(DataPtr data, size_t nbytes, Device device, DType dtype, Shape sizes,
                 Shape strides, int64_t offset);

/// Checked arithmetic for sizes, strides and offsets.
int64_t checked_mul(int64_t a, int64_t b, const char* what);
int64_t checked_add(int64_t a, int64_t b, const char* what);

}  // namespace ember
