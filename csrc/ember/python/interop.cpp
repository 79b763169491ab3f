// Bindings: DLPack 1.x exchange (Tensor.__dlpack__, __dlpack_device__,
// ember.from_dlpack). NumPy's array protocols live in python/ember/_tensor.py.
//
// The DLPack ABI structs are written here from the specification
// (https://dmlc.github.io/dlpack/latest/c_api.html); no header is vendored.
#include <cstring>
#include <vector>

#include "ember/ops/ops.h"
#include "ember/python/bind.h"

namespace ember::python {

Tensor from_numpy(py::handle obj);  // python/tensor.cpp

namespace dl {

// ---- the DLPack ABI (v1.0) ------------------------------------------------------------
struct DLPackVersion {
  uint32_t major, minor;
};
enum DLDeviceType : int32_t {
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3,
  kDLCUDAManaged = 13,
};
struct DLDevice {
  int32_t device_type;  // a DLDeviceType; a C enum is int-sized
  int32_t device_id;
};
enum DLDataTypeCode : uint8_t {
  kDLInt = 0,
  kDLUInt = 1,
  kDLFloat = 2,
  kDLOpaqueHandle = 3,
  kDLBfloat = 4,
  kDLComplex = 5,
  kDLBool = 6,
};
struct DLDataType {
  uint8_t code, bits;
  uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;  // in elements; NULL means compact row-major
  uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);
};
constexpr uint64_t kFlagReadOnly = 1ull << 0;
constexpr uint64_t kFlagIsCopied = 1ull << 1;
struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(DLManagedTensorVersioned* self);
  uint64_t flags;
  DLTensor dl_tensor;
};
static_assert(sizeof(DLDevice) == 8 && sizeof(DLDataType) == 4, "DLPack ABI layout");
static_assert(sizeof(DLTensor) == 48, "DLPack ABI layout");

constexpr uint32_t kMajor = 1, kMinor = 0;
constexpr const char* kLegacyName = "dltensor";
constexpr const char* kVersionedName = "dltensor_versioned";
constexpr const char* kUsedLegacyName = "used_dltensor";
constexpr const char* kUsedVersionedName = "used_dltensor_versioned";

}  // namespace dl

namespace {

// ---- export -----------------------------------------------------------------------------

dl::DLDataType to_dl_dtype(DType t) {
  uint8_t bits = uint8_t(element_size(t) * 8);
  switch (t) {
    case DType::Bool:
      return {dl::kDLBool, 8, 1};
    case DType::UInt8:
      return {dl::kDLUInt, bits, 1};
    case DType::Int8:
    case DType::Int16:
    case DType::Int32:
    case DType::Int64:
      return {dl::kDLInt, bits, 1};
    case DType::BFloat16:
      return {dl::kDLBfloat, 16, 1};
    default:
      return {dl::kDLFloat, bits, 1};
  }
}

dl::DLDevice to_dl_device(Device d) {
  if (d.is_cpu()) return {dl::kDLCPU, 0};
  return {dl::kDLCUDA, d.index < 0 ? 0 : d.index};
}

// What a capsule owns: a reference to the tensor plus the shape/stride arrays
// the DLTensor points into. One struct serves both ABI versions.
template <typename Managed>
struct ExportCtx {
  Tensor tensor;
  std::vector<int64_t> shape, strides;
  Managed managed{};
};

template <typename Managed>
Managed* make_managed(const Tensor& t) {
  auto* ctx = new ExportCtx<Managed>();
  ctx->tensor = t;
  ctx->shape.assign(t.sizes().begin(), t.sizes().end());
  ctx->strides.assign(t.strides().begin(), t.strides().end());
  dl::DLTensor& d = ctx->managed.dl_tensor;
  d.data = t.numel() == 0 ? t.storage()->data.ptr : t.data_ptr();
  d.device = to_dl_device(t.device());
  d.ndim = int32_t(t.dim());
  d.dtype = to_dl_dtype(t.dtype());
  d.shape = ctx->shape.data();
  d.strides = ctx->strides.data();
  d.byte_offset = 0;
  ctx->managed.manager_ctx = ctx;
  // Dropping the tensor may release NumPy-owned memory, which takes the GIL itself
  // (see release_pyobject in tensor.cpp); nothing here needs Python.
  ctx->managed.deleter = [](Managed* self) {
    if (self) delete static_cast<ExportCtx<Managed>*>(self->manager_ctx);
  };
  return &ctx->managed;
}

// Runs when an exported capsule is garbage collected: only a capsule nobody
// consumed (still carrying its original name) still owns the tensor.
void legacy_capsule_destructor(PyObject* cap) {
  if (!PyCapsule_IsValid(cap, dl::kLegacyName)) return;  // consumed, renamed "used_dltensor"
  auto* m = static_cast<dl::DLManagedTensor*>(PyCapsule_GetPointer(cap, dl::kLegacyName));
  if (m && m->deleter) m->deleter(m);
}
void versioned_capsule_destructor(PyObject* cap) {
  if (!PyCapsule_IsValid(cap, dl::kVersionedName)) return;
  auto* m =
      static_cast<dl::DLManagedTensorVersioned*>(PyCapsule_GetPointer(cap, dl::kVersionedName));
  if (m && m->deleter) m->deleter(m);
}

// Tensor.__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None)
py::object dlpack_export(const Tensor& self, py::object stream, py::object max_version,
                         py::object dl_device, py::object copy) {
  if (self.is_sparse())
    throw py::buffer_error("Can't export tensors with layout other than ember.strided");
  // stream: CPU data needs no synchronization, and the spec reserves the argument for
  // device arrays. ember's CUDA streams arrive with the CUDA backend.
  if (self.device().is_cpu() && !stream.is_none())
    throw py::buffer_error("__dlpack__: stream must be None for a CPU tensor, got " +
                           std::string(py::repr(stream)));
  bool versioned = false;
  if (!max_version.is_none()) {
    py::tuple mv = py::reinterpret_borrow<py::object>(max_version).cast<py::tuple>();
    EMBER_CHECK_TYPE(mv.size() == 2, "__dlpack__: max_version must be a (major, minor) tuple, got ",
                     std::string(py::repr(max_version)));
    versioned = mv[0].cast<int64_t>() >= 1;
  }
  std::optional<bool> want_copy;
  if (!copy.is_none()) want_copy = copy.cast<bool>();

  Tensor t = self;
  bool copied = false;
  if (!dl_device.is_none()) {
    py::tuple dd = dl_device.cast<py::tuple>();
    EMBER_CHECK_TYPE(dd.size() == 2,
                     "__dlpack__: dl_device must be a (device_type, device_id) tuple");
    int64_t type = dd[0].cast<int64_t>(), id = dd[1].cast<int64_t>();
    dl::DLDevice mine = to_dl_device(t.device());
    if (type != mine.device_type || id != mine.device_id) {
      if (type == dl::kDLCPU && id == 0 && want_copy.value_or(true)) {
        t = to_device(t, Device(), /*copy=*/true);
        copied = true;
      } else if (type == dl::kDLCPU && id == 0) {
        throw py::buffer_error("__dlpack__: exporting a " + t.device().str() +
                               " tensor to the CPU needs a copy, but copy=False was passed");
      } else {
        throw py::buffer_error("__dlpack__: cannot export a " + t.device().str() +
                               " tensor to DLPack device (" + std::to_string(type) + ", " +
                               std::to_string(id) +
                               "); only the tensor's own device or the CPU "
                               "(with a copy) is supported");
      }
    }
  }
  if (want_copy.value_or(false) && !copied) {
    t = clone(t);
    copied = true;
  }
  if (versioned) {
    auto* m = make_managed<dl::DLManagedTensorVersioned>(t);
    m->version = {dl::kMajor, dl::kMinor};
    m->flags = copied ? dl::kFlagIsCopied : 0;
    PyObject* cap = PyCapsule_New(m, dl::kVersionedName, versioned_capsule_destructor);
    if (!cap) {
      m->deleter(m);
      throw py::error_already_set();
    }
    return py::reinterpret_steal<py::object>(cap);
  }
  auto* m = make_managed<dl::DLManagedTensor>(t);
  PyObject* cap = PyCapsule_New(m, dl::kLegacyName, legacy_capsule_destructor);
  if (!cap) {
    m->deleter(m);
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::object>(cap);
}

py::tuple dlpack_device(const Tensor& self) {
  dl::DLDevice d = to_dl_device(self.device());
  return py::make_tuple(d.device_type, d.device_id);
}

// ---- import -----------------------------------------------------------------------------

DType from_dl_dtype(dl::DLDataType t) {
  EMBER_CHECK_TYPE(t.lanes == 1, "from_dlpack: vector dtypes (lanes=", t.lanes,
                   ") are not supported");
  switch (t.code) {
    case dl::kDLBool:
      if (t.bits == 8) return DType::Bool;
      break;
    case dl::kDLUInt:
      if (t.bits == 8) return DType::UInt8;
      break;
    case dl::kDLInt:
      switch (t.bits) {
        case 8:
          return DType::Int8;
        case 16:
          return DType::Int16;
        case 32:
          return DType::Int32;
        case 64:
          return DType::Int64;
      }
      break;
    case dl::kDLFloat:
      switch (t.bits) {
        case 16:
          return DType::Float16;
        case 32:
          return DType::Float32;
        case 64:
          return DType::Float64;
      }
      break;
    case dl::kDLBfloat:
      if (t.bits == 16) return DType::BFloat16;
      break;
  }
  static const char* names[] = {"int", "uint", "float", "opaque", "bfloat", "complex", "bool"};
  std::string code = t.code < 7 ? names[t.code] : "code " + std::to_string(t.code);
  raise(ErrorKind::Type, "from_dlpack: unsupported DLPack dtype ", code, int(t.bits),
        "; ember supports bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32 and "
        "float64");
}

Device from_dl_device(dl::DLDevice d) {
  switch (d.device_type) {
    case dl::kDLCPU:
    case dl::kDLCUDAHost:  // pinned host memory is ordinary CPU memory to ember
      return Device();
    case dl::kDLCUDA:
    case dl::kDLCUDAManaged:
      EMBER_CHECK(d.device_id >= 0 && d.device_id < 32768, "from_dlpack: invalid CUDA device id ",
                  d.device_id);
      return Device(DeviceType::CUDA, d.device_id);
  }
  raise(ErrorKind::Runtime, "from_dlpack: unsupported DLPack device type ", d.device_type,
        " (ember supports kDLCPU=1, kDLCUDA=2, kDLCUDAHost=3, kDLCUDAManaged=13)");
}

// Deleter context of an imported tensor: the producer's managed tensor.
struct ImportCtx {
  void* managed;
  bool versioned;
};

// Note [DLPack deleters and the GIL]
// An imported storage may die on any thread, with or without the GIL, even
// during interpreter shutdown. The producer's deleter may touch Python objects
// (NumPy's does), so we hold the GIL around it whenever Python is still alive;
// after finalization we call it bare (a C producer still frees its memory).
void release_dlpack(void* p) {
  auto* ctx = static_cast<ImportCtx*>(p);
  auto run = [ctx] {
    if (ctx->versioned) {
      auto* m = static_cast<dl::DLManagedTensorVersioned*>(ctx->managed);
      if (m->deleter) m->deleter(m);
    } else {
      auto* m = static_cast<dl::DLManagedTensor*>(ctx->managed);
      if (m->deleter) m->deleter(m);
    }
  };
  if (Py_IsInitialized()) {
    PyGILState_STATE st = PyGILState_Ensure();
    run();
    PyGILState_Release(st);
  } else {
    run();
  }
  delete ctx;
}

// Builds a tensor over the memory a capsule describes and takes its ownership.
Tensor import_capsule(py::handle cap) {
  const char* name = PyCapsule_GetName(cap.ptr());
  if (!name) throw py::error_already_set();
  std::string n(name);
  EMBER_CHECK(
      n != dl::kUsedLegacyName && n != dl::kUsedVersionedName,
      "from_dlpack received an invalid capsule. Note that DLTensor capsules can be consumed "
      "only once, so you might have already constructed a tensor from it once.");
  bool versioned = n == dl::kVersionedName;
  EMBER_CHECK_TYPE(versioned || n == dl::kLegacyName, "from_dlpack: expected a capsule named '",
                   dl::kLegacyName, "' or '", dl::kVersionedName, "', got '", n, "'");
  void* managed = PyCapsule_GetPointer(cap.ptr(), name);
  if (!managed) throw py::error_already_set();
  dl::DLTensor* d;
  bool read_only = false;
  if (versioned) {
    auto* m = static_cast<dl::DLManagedTensorVersioned*>(managed);
    // A newer major version may change the struct layout: refuse before reading further.
    if (m->version.major != dl::kMajor)
      throw py::buffer_error(
          "from_dlpack: the producer exported DLPack " + std::to_string(m->version.major) + "." +
          std::to_string(m->version.minor) + ", but ember supports major version 1 only");
    d = &m->dl_tensor;
    read_only = m->flags & dl::kFlagReadOnly;
  } else {
    d = &static_cast<dl::DLManagedTensor*>(managed)->dl_tensor;
  }

  // Validate everything before taking ownership (see the rename below).
  DType dtype = from_dl_dtype(d->dtype);
  Device device = from_dl_device(d->device);
  EMBER_CHECK(d->ndim >= 0 && d->ndim <= 64, "from_dlpack: invalid ndim ", d->ndim);
  EMBER_CHECK(d->ndim == 0 || d->shape, "from_dlpack: the DLTensor has ndim ", d->ndim,
              " but no shape");
  Shape sizes(d->shape, d->shape + d->ndim);
  int64_t numel = checked_numel(sizes);
  Shape strides = d->strides ? Shape(d->strides, d->strides + d->ndim) : contiguous_strides(sizes);
  int64_t item = element_size(dtype);
  int64_t extent = 1;  // elements spanned, from the first one
  for (int64_t i = 0; i < d->ndim; ++i) {
    if (sizes[i] <= 1) continue;
    EMBER_CHECK(strides[i] >= 0, "from_dlpack: negative strides are not supported (strides ",
                shape_str(strides), ")");
    extent =
        checked_add(extent, checked_mul(sizes[i] - 1, strides[i], "from_dlpack"), "from_dlpack");
  }
  for (int64_t i = 0; i < d->ndim; ++i)
    if (sizes[i] <= 1) strides[i] = std::max<int64_t>(strides[i], 0);  // meaningless there
  size_t nbytes = numel == 0 ? 0 : size_t(checked_mul(extent, item, "from_dlpack"));
  EMBER_CHECK(d->byte_offset <= uint64_t(INT64_MAX), "from_dlpack: invalid byte_offset ",
              d->byte_offset);
  char* data = static_cast<char*>(d->data) + d->byte_offset;
  EMBER_CHECK(numel == 0 || data, "from_dlpack: the DLTensor has a NULL data pointer");
  EMBER_CHECK(numel == 0 || reinterpret_cast<uintptr_t>(data) % uintptr_t(item) == 0,
              "from_dlpack: the data pointer is not aligned to the ", item, "-byte ",
              dtype_name(dtype), " elements");

  // Ownership moves to ember: rename first so the capsule destructor stands down,
  // then every path below frees the producer's tensor exactly once.
  if (PyCapsule_SetName(cap.ptr(), versioned ? dl::kUsedVersionedName : dl::kUsedLegacyName) != 0)
    throw py::error_already_set();
  DataPtr dp{data, new ImportCtx{managed, versioned}, &release_dlpack};
  Tensor t = from_blob(dp, nbytes, device, dtype, sizes, strides, 0);
  // ember tensors are writable; a read-only producer buffer gets a private copy.
  if (read_only) t = clone(t);
  return t;
}

// ember.from_dlpack(ext_tensor, *, device=None, copy=None): a capsule or any object
// with __dlpack__ (asked for a versioned capsule first, legacy if it cannot).
Tensor from_dlpack(py::handle obj, py::object device, py::object copy) {
  if (PyCapsule_CheckExact(obj.ptr())) {
    EMBER_CHECK_VALUE(
        device.is_none() && copy.is_none(),
        "from_dlpack: device= and copy= need an object with __dlpack__, not a capsule");
    return import_capsule(obj);
  }
  EMBER_CHECK_TYPE(py::hasattr(obj, "__dlpack__"),
                   "from_dlpack: expected an object with a __dlpack__ "
                   "method or a DLPack capsule, got ",
                   type_name(obj));
  py::dict kw;
  kw["max_version"] = py::make_tuple(dl::kMajor, dl::kMinor);
  if (!device.is_none()) {
    Device dv = device_arg(device);
    dl::DLDevice dd = to_dl_device(dv);
    kw["dl_device"] = py::make_tuple(dd.device_type, dd.device_id);
  }
  if (!copy.is_none()) kw["copy"] = copy;
  py::object cap;
  bool clone_after = false;
  try {
    cap = obj.attr("__dlpack__")(**kw);
  } catch (py::error_already_set& e) {
    // Producers older than DLPack 1.0 do not know these keywords: ask for the legacy
    // capsule and copy here if a copy was requested.
    if (!e.matches(PyExc_TypeError) || !device.is_none()) throw;
    cap = obj.attr("__dlpack__")();
    clone_after = !copy.is_none() && copy.cast<bool>();
  }
  EMBER_CHECK_TYPE(PyCapsule_CheckExact(cap.ptr()), "from_dlpack: ", type_name(obj),
                   ".__dlpack__() returned ", type_name(cap), ", not a capsule");
  Tensor t = import_capsule(cap);
  return clone_after ? clone(t) : t;
}

}  // namespace

void init_interop(py::module_& m) {
  py::class_<Tensor> cls = tensor_class(m);
  cls.def("__dlpack__", &dlpack_export, py::kw_only(), py::arg("stream") = py::none(),
          py::arg("max_version") = py::none(), py::arg("dl_device") = py::none(),
          py::arg("copy") = py::none(),
          "Exports the tensor as a DLPack capsule: 'dltensor_versioned' (DLPack 1.0) when "
          "max_version >= (1, 0), the legacy 'dltensor' otherwise. Zero-copy unless copy=True "
          "or dl_device asks for another device.");
  cls.def("__dlpack_device__", &dlpack_device,
          "(DLPack device type, device id): (1, 0) for the CPU.");
  m.def("from_dlpack", &from_dlpack, py::arg("ext_tensor"), py::kw_only(),
        py::arg("device") = py::none(), py::arg("copy") = py::none(),
        "A tensor sharing memory with a DLPack producer (an object with __dlpack__ or a capsule).");
}

}  // namespace ember::python
