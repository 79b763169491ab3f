#include "ember/core/tensor.h"

#include <cstring>

#include <sstream>

#include "ember/core/device_guard.h"
#include "ember/core/inference_mode.h"
#include "ember/core/sparse.h"
#include "ember/core/tls.h"
#include "ember/core/trace_state.h"

namespace ember {

namespace {
EMBER_TLS_FAST thread_local bool t_inference_mode = false;
}  // namespace
bool inference_mode_enabled() { return t_inference_mode; }
void set_inference_mode_enabled(bool on) { t_inference_mode = on; }

void (*inplace_write_hook)(VersionCounter& v, const char* op) = nullptr;

const char* layout_name(Layout l) {
  switch (l) {
    case Layout::Strided:
      return "strided";
    case Layout::SparseCoo:
      return "sparse_coo";
  }
  return "?";
}

// Note [Layout errors]
// A sparse tensor carries no strided memory, so every path by which a kernel reads or
// writes tensor memory (data_ptr(), hence TensorIterator and every kernel; make_view)
// raises LayoutError on one. The Python bindings then name the op the user called
// (python/sparse.cpp, install_layout_error_names): "Could not run 'cumsum' with
// arguments from the 'SparseCPU' backend", PyTorch's NotImplementedError. Ops that
// support sparse tensors test layout() first and take their sparse path (ops/sparse.h).
void raise_not_strided(Layout l, const char* what) {
  throw LayoutError(
      l, detail::str(what, ": not supported for a tensor with layout ember.", layout_name(l),
                     " (it has no strided storage); convert it "
                     "with .to_dense() first"));
}

const char* dtype_name(DType t) {
  switch (t) {
#define EMBER_NAME(c, n, p, k) \
  case DType::n:               \
    return #p;
    EMBER_FORALL_DTYPES(EMBER_NAME)
#undef EMBER_NAME
    default:
      return "?";
  }
}

const char* scalar_type_name(DType t) {
  // In EMBER_FORALL_DTYPES order.
  static const char* names[] = {"Bool", "Byte", "Char",     "Short", "Int",
                                "Long", "Half", "BFloat16", "Float", "Double"};
  static_assert(sizeof(names) / sizeof(names[0]) == kNumDTypes, "one name per dtype");
  return int(t) >= 0 && int(t) < kNumDTypes ? names[int(t)] : "?";
}

std::string legacy_type_name(DType t) {
  return std::string("ember.") + scalar_type_name(t) + "Tensor";
}

namespace {
DType g_default_dtype = DType::Float32;
}
DType default_dtype() { return g_default_dtype; }
void set_default_dtype(DType t) {
  EMBER_CHECK_TYPE(
      t == DType::Float32 || t == DType::Float64 || t == DType::Float16 || t == DType::BFloat16,
      "only floating-point types are supported as the default type, got ", dtype_name(t));
  g_default_dtype = t;
}

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::Bool) return b;
  if (b == DType::Bool) return a;
  bool fa = is_floating(a), fb = is_floating(b);
  if (fa && !fb) return a;
  if (fb && !fa) return b;
  if (fa && fb) {
    if ((a == DType::Float16 && b == DType::BFloat16) ||
        (a == DType::BFloat16 && b == DType::Float16))
      return DType::Float32;
    return a > b ? a : b;  // enum order is by width among floats
  }
  // Both integral.
  if (a == DType::UInt8 || b == DType::UInt8) {
    DType o = a == DType::UInt8 ? b : a;
    return o == DType::Int8 ? DType::Int16 : o;
  }
  return a > b ? a : b;
}

Device Device::parse(const std::string& s) {
  if (s == "cpu") return Device(DeviceType::CPU);
  if (s == "cuda") return Device(DeviceType::CUDA);
  if (s.rfind("cuda:", 0) == 0 && s.size() > 5) {
    int idx = 0;
    for (size_t i = 5; i < s.size(); ++i) {
      EMBER_CHECK(s[i] >= '0' && s[i] <= '9' && idx < 10000, "Invalid device string: '", s, "'");
      idx = idx * 10 + (s[i] - '0');
    }
    return Device(DeviceType::CUDA, idx);
  }
  if (s.rfind("cpu:", 0) == 0 && s == "cpu:0") return Device(DeviceType::CPU, 0);
  EMBER_ERROR("Expected one of cpu, cuda device type at start of device string: ", s);
}

std::string Device::str() const {
  std::string s = is_cpu() ? "cpu" : "cuda";
  if (index >= 0) s += ":" + std::to_string(index);
  return s;
}

int64_t checked_mul(int64_t a, int64_t b, const char* what) {
  int64_t r;
  EMBER_CHECK(!__builtin_mul_overflow(a, b, &r), what, ": integer overflow computing ", a, " * ",
              b);
  return r;
}
int64_t checked_add(int64_t a, int64_t b, const char* what) {
  int64_t r;
  EMBER_CHECK(!__builtin_add_overflow(a, b, &r), what, ": integer overflow computing ", a, " + ",
              b);
  return r;
}

Shape contiguous_strides(const Shape& sizes) {
  Shape st(sizes.size());
  int64_t s = 1;
  for (int64_t i = int64_t(sizes.size()) - 1; i >= 0; --i) {
    st[i] = s;
    // An empty tensor's strides can exceed int64 ([0, 2**62, 2**20]): raise as
    // PyTorch does rather than overflow. The product past dim 0 is never used.
    if (i > 0)
      EMBER_CHECK(!__builtin_mul_overflow(s, sizes[i] > 1 ? sizes[i] : 1, &s),
                  "Stride calculation overflowed for a tensor of shape ", shape_str(sizes));
  }
  return st;
}

int64_t checked_numel(const Shape& sizes) {
  check_ndim(int64_t(sizes.size()), "tensor");
  int64_t n = 1;
  for (int64_t s : sizes) {
    EMBER_CHECK(s >= 0, "Trying to create tensor with negative dimension ", s, ": ",
                shape_str(sizes));
    n = checked_mul(n, s, "numel");
  }
  return n;
}

int64_t wrap_dim(int64_t d, int64_t ndim, bool scalar_ok) {
  int64_t n = ndim;
  if (n == 0 && scalar_ok) n = 1;
  EMBER_CHECK_INDEX(n > 0, "Dimension specified as ", d, " but tensor has no dimensions");
  EMBER_CHECK_INDEX(d >= -n && d < n, "Dimension out of range (expected to be in range of [", -n,
                    ", ", n - 1, "], but got ", d, ")");
  return d < 0 ? d + n : d;
}

std::string shape_str(const Shape& s) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << "]";
  return os.str();
}

int64_t Tensor::size(int64_t d) const { return sizes()[wrap_dim(d, dim(), false)]; }
int64_t Tensor::stride(int64_t d) const { return strides()[wrap_dim(d, dim(), false)]; }

bool Tensor::is_contiguous() const {
  if (impl_->layout != Layout::Strided) return false;
  if (numel() == 0) return true;
  int64_t expected = 1;
  const Shape& sz = sizes();
  const Shape& st = strides();
  for (int64_t i = int64_t(sz.size()) - 1; i >= 0; --i) {
    if (sz[i] == 1) continue;
    if (sz[i] == 0) return true;
    if (st[i] != expected) return false;
    expected *= sz[i];
  }
  return true;
}

Storage make_storage(size_t nbytes, Device device) {
  Allocator* alloc = allocator_for(device);  // loads the CUDA backend on first use
  device = resolve_device(device);
  DeviceGuard guard(device);  // the CUDA allocator allocates on the current device
  DataPtr d = alloc->allocate(nbytes);
  return std::make_shared<StorageImpl>(d, nbytes, device);
}

void check_ndim(int64_t ndim, const char* what) {
  EMBER_CHECK(ndim <= kMaxDims, what, ": tensors of more than ", kMaxDims,
              " dimensions are not supported, got ", ndim);
}

static std::shared_ptr<TensorImpl> new_impl(Storage st, DType dtype, Shape sizes, Shape strides,
                                            int64_t offset, int64_t numel) {
  check_ndim(int64_t(sizes.size()), "tensor");
  auto impl = std::make_shared<TensorImpl>();
  impl->version = std::shared_ptr<VersionCounter>(st, &st->version);
  impl->storage = std::move(st);
  impl->sizes = std::move(sizes);
  impl->strides = std::move(strides);
  impl->offset = offset;
  impl->numel = numel;
  impl->dtype = dtype;
  impl->inference = inference_mode_enabled();
  return impl;
}

Tensor empty(const Shape& sizes, DType dtype, Device device) {
  int64_t n = checked_numel(sizes);
  int64_t nbytes = checked_mul(n, element_size(dtype), "empty");
  Tensor t(new_impl(make_storage(size_t(nbytes), device), dtype, sizes, contiguous_strides(sizes),
                    0, n));
  // A byte other than 0 or 1 is not a bool (loading one is UB, as UBSan reports for
  // empty(dtype=bool).tolist()): bool storage on the CPU starts out false.
  if (dtype == DType::Bool && device.is_cpu() && nbytes)
    std::memset(t.data_ptr(), 0, size_t(nbytes));
  return t;
}

// Checks that every element a view can address lies inside its storage.
static void check_view_bounds(const Storage& st, DType dtype, const Shape& sizes,
                              const Shape& strides, int64_t offset, int64_t numel) {
  EMBER_CHECK(sizes.size() == strides.size(),
              "mismatch in length of strides and shape: ", sizes.size(), " sizes vs ",
              strides.size(), " strides");
  EMBER_CHECK(offset >= 0, "Tensor: negative storage offset ", offset);
  for (int64_t s : strides)
    EMBER_CHECK(s >= 0, "as_strided: negative strides are not supported, got ", shape_str(strides));
  if (numel == 0) return;
  int64_t last = offset;
  for (size_t i = 0; i < sizes.size(); ++i)
    last = checked_add(last, checked_mul(sizes[i] - 1, strides[i], "view"), "view");
  int64_t need = checked_mul(checked_add(last, 1, "view"), element_size(dtype), "view");
  EMBER_CHECK(size_t(need) <= st->nbytes, "setStorage: sizes ", shape_str(sizes), ", strides ",
              shape_str(strides), ", storage offset ", offset, ", and itemsize ",
              element_size(dtype), " requiring a storage size of ", need,
              " are out of bounds for storage of size ", st->nbytes);
}

Tensor make_view(const Tensor& base, Shape sizes, Shape strides, int64_t offset) {
  if (trace_state::outermost()) trace_state::untraced("a view");  // Note [Tracing]
  if (base.layout() != Layout::Strided) {
    // An alias of the whole tensor (detach, .data) is a shallow copy; any other view raises.
    if (sizes == base.sizes() && offset == 0) return sparse_shallow_copy(base);
    raise_not_strided(base.layout(), "view");
  }
  int64_t n = checked_numel(sizes);
  check_view_bounds(base.storage(), base.dtype(), sizes, strides, offset, n);
  auto impl =
      new_impl(base.storage(), base.dtype(), std::move(sizes), std::move(strides), offset, n);
  impl->version = base.impl()->version;  // views share the version counter
  return Tensor(std::move(impl));
}

Tensor from_blob(DataPtr data, size_t nbytes, Device device, DType dtype, Shape sizes,
                 Shape strides, int64_t offset) {
  auto st = std::make_shared<StorageImpl>(data, nbytes, resolve_device(device));
  st->resizable = false;  // Note [Resizing a shared storage]
  int64_t n = checked_numel(sizes);
  check_view_bounds(st, dtype, sizes, strides, offset, n);
  return Tensor(new_impl(std::move(st), dtype, std::move(sizes), std::move(strides), offset, n));
}

}  // namespace ember
