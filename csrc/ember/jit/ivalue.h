// IValue: the values a graph computes with (tensors, numbers, lists, tuples, modules),
// and Type: what the IR knows about a value. See Note [JIT values].
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ember/core/device.h"
#include "ember/core/dtype.h"
#include "ember/core/scalar.h"
#include "ember/core/tensor.h"

namespace ember::jit {

// Note [JIT values]
// A graph's values are tensors, Python-like numbers (int = int64, float = double,
// bool), strings, None, dtypes and devices, lists (one element type, reference
// semantics as in Python: `append` is seen by every holder), tuples (fixed, immutable)
// and objects (a module instance: named attribute slots, jit/module.h). IValue holds
// one of these; Type is the static description the IR, the script compiler and the
// archive use. `Scalar` in an op's schema is a number (int, float or bool) at run time.

struct Type;
using TypePtr = std::shared_ptr<const Type>;

struct Type {
  enum class Kind : uint8_t {
    Any,
    Tensor,
    Int,
    Float,
    Bool,
    Number,  // Scalar: int, float or bool
    Str,
    None,
    Device,
    DType,  // printed "ScalarType" as TorchScript's
    List,
    Tuple,
    Optional,
    Object,  // a module class, `name` is its qualified name
  };
  Kind kind;
  std::vector<TypePtr> elements;  // List: 1, Optional: 1, Tuple: n
  std::string name;               // Object
  // Tensor types recorded by the tracer (printing only: passes never trust them).
  std::optional<DType> dtype;
  std::optional<std::vector<int64_t>> sizes;

  static TypePtr get(Kind k);  // the shared singleton of an element-less kind
  static TypePtr tensor() { return get(Kind::Tensor); }
  static TypePtr list(TypePtr elem);
  static TypePtr tuple(std::vector<TypePtr> elems);
  static TypePtr optional(TypePtr elem);
  static TypePtr object(std::string name);
  static TypePtr tensor_of(DType dt, std::vector<int64_t> sizes);
  /// TorchScript's spelling: "Tensor", "int[]", "(Tensor, int)", "Tensor?", "Float(8, 1)".
  std::string str() const;
  /// The schema spelling without recorded details: "Tensor", "int[]", "Tensor?".
  std::string annotation() const;
  bool is(Kind k) const { return kind == k; }
  /// True when a value of `this` can be passed where `other` is expected.
  bool subtype_of(const Type& other) const;
};
bool operator==(const Type& a, const Type& b);
inline bool operator!=(const Type& a, const Type& b) { return !(a == b); }

class IValue;
struct Object;

/// A list's storage: shared by every IValue that holds it.
struct ListImpl {
  TypePtr elem;
  std::vector<IValue> items;
};
struct TupleImpl {
  std::vector<IValue> items;
};

class IValue {
 public:
  enum class Tag : uint8_t {
    None,
    Tensor,
    Double,
    Int,
    Bool,
    String,
    List,
    Tuple,
    Device,
    DType,
    Object
  };

  IValue() : tag_(Tag::None) {}
  IValue(Tensor t) : tag_(Tag::Tensor), tensor_(std::move(t)) {}
  IValue(double d) : tag_(Tag::Double) { p_.d = d; }
  IValue(int64_t i) : tag_(Tag::Int) { p_.i = i; }
  IValue(int i) : tag_(Tag::Int) { p_.i = i; }
  IValue(bool b) : tag_(Tag::Bool) { p_.b = b; }
  IValue(std::string s);
  IValue(const char* s) : IValue(std::string(s)) {}
  IValue(Device d) : tag_(Tag::Device) { p_.dev = d; }
  IValue(DType t) : tag_(Tag::DType) { p_.dt = t; }
  IValue(const Scalar& s);
  IValue(std::shared_ptr<ListImpl> l) : tag_(Tag::List), heap_(std::move(l)) {}
  IValue(std::shared_ptr<TupleImpl> t) : tag_(Tag::Tuple), heap_(std::move(t)) {}
  IValue(std::shared_ptr<Object> o);
  IValue(const Shape& s);                 // an int list
  IValue(const std::vector<int64_t>& v);  // an int list
  IValue(const std::vector<Tensor>& v);   // a Tensor list
  static IValue list(TypePtr elem, std::vector<IValue> items);
  static IValue tuple(std::vector<IValue> items);

  Tag tag() const { return tag_; }
  bool is_none() const { return tag_ == Tag::None; }
  bool is_tensor() const { return tag_ == Tag::Tensor; }
  bool is_double() const { return tag_ == Tag::Double; }
  bool is_int() const { return tag_ == Tag::Int; }
  bool is_bool() const { return tag_ == Tag::Bool; }
  bool is_string() const { return tag_ == Tag::String; }
  bool is_list() const { return tag_ == Tag::List; }
  bool is_tuple() const { return tag_ == Tag::Tuple; }
  bool is_device() const { return tag_ == Tag::Device; }
  bool is_dtype() const { return tag_ == Tag::DType; }
  bool is_object() const { return tag_ == Tag::Object; }
  bool is_number() const { return tag_ == Tag::Double || tag_ == Tag::Int || tag_ == Tag::Bool; }

  /// The held value; each raises ember::Error naming the tag it found instead.
  const Tensor& toTensor() const&;
  Tensor toTensor() &&;
  double toDouble() const;  // int and bool convert, as Python's float()
  int64_t toInt() const;    // bool converts
  bool toBool() const;
  Scalar toScalar() const;
  const std::string& toStringRef() const;
  Device toDevice() const;
  DType toDType() const;
  const std::shared_ptr<ListImpl>& toList() const;
  const std::vector<IValue>& toListRef() const { return toList()->items; }
  const std::shared_ptr<TupleImpl>& toTuple() const;
  const std::vector<IValue>& toTupleRef() const { return toTuple()->items; }
  const std::shared_ptr<Object>& toObject() const;
  Shape toShape() const;  // an int list
  std::vector<Tensor> toTensorVector() const;

  /// "Tensor", "int", "List", ... for messages.
  const char* tag_name() const;
  /// Python's repr of the value (tensors as Python prints them).
  std::string repr() const;
  /// Identity for objects/lists/tensors, value for the rest (Python's `is` / `==` mix
  /// that constant interning needs).
  bool same_constant(const IValue& o) const;

 private:
  [[noreturn]] void bad(const char* wanted) const;
  Tag tag_;
  union P {
    double d;
    int64_t i;
    bool b;
    Device dev;
    DType dt;
    P() : i(0) {}
  } p_;
  Tensor tensor_;
  std::shared_ptr<void> heap_;  // String: std::string, List, Tuple, Object
};

using Stack = std::vector<IValue>;

/// The type of a run-time value (lists take their recorded element type).
TypePtr type_of(const IValue& v);

}  // namespace ember::jit
