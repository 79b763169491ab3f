// See Note [JIT values] in ivalue.h.
#include "ember/jit/ivalue.h"

#include <cmath>
#include <sstream>

#include "ember/jit/object.h"

namespace ember::jit {

// ---- Type ---------------------------------------------------------------------------

TypePtr Type::get(Kind k) {
  static const TypePtr table[] = {
#define EMBER_T(k) std::make_shared<const Type>(Type{Kind::k, {}, {}, {}, {}})
      EMBER_T(Any),    EMBER_T(Tensor), EMBER_T(Int),  EMBER_T(Float),  EMBER_T(Bool),
      EMBER_T(Number), EMBER_T(Str),    EMBER_T(None), EMBER_T(Device), EMBER_T(DType),
#undef EMBER_T
  };
  EMBER_CHECK(int(k) < int(sizeof(table) / sizeof(table[0])), "jit: Type::get of a compound kind");
  return table[int(k)];
}

TypePtr Type::list(TypePtr elem) {
  return std::make_shared<const Type>(Type{Kind::List, {std::move(elem)}, {}, {}, {}});
}
TypePtr Type::tuple(std::vector<TypePtr> elems) {
  return std::make_shared<const Type>(Type{Kind::Tuple, std::move(elems), {}, {}, {}});
}
TypePtr Type::optional(TypePtr elem) {
  if (elem->kind == Kind::Optional || elem->kind == Kind::None || elem->kind == Kind::Any)
    return elem;
  return std::make_shared<const Type>(Type{Kind::Optional, {std::move(elem)}, {}, {}, {}});
}
TypePtr Type::object(std::string name) {
  return std::make_shared<const Type>(Type{Kind::Object, {}, std::move(name), {}, {}});
}
TypePtr Type::tensor_of(DType dt, std::vector<int64_t> sizes) {
  return std::make_shared<const Type>(Type{Kind::Tensor, {}, {}, dt, std::move(sizes)});
}

std::string Type::annotation() const {
  switch (kind) {
    case Kind::Any:
      return "Any";
    case Kind::Tensor:
      return "Tensor";
    case Kind::Int:
      return "int";
    case Kind::Float:
      return "float";
    case Kind::Bool:
      return "bool";
    case Kind::Number:
      return "Scalar";
    case Kind::Str:
      return "str";
    case Kind::None:
      return "NoneType";
    case Kind::Device:
      return "Device";
    case Kind::DType:
      return "ScalarType";
    case Kind::List:
      return elements[0]->annotation() + "[]";
    case Kind::Optional:
      return elements[0]->annotation() + "?";
    case Kind::Object:
      return name;
    case Kind::Tuple: {
      std::string s = "(";
      for (size_t i = 0; i < elements.size(); ++i) s += (i ? ", " : "") + elements[i]->annotation();
      return s + ")";
    }
  }
  return "?";
}

std::string Type::str() const {
  if (kind == Kind::Tensor && dtype) {
    // The tracer's spelling of a complete tensor type: Float(8, 1).
    std::string s = scalar_type_name(*dtype);
    s += "(";
    if (sizes)
      for (size_t i = 0; i < sizes->size(); ++i) s += (i ? ", " : "") + std::to_string((*sizes)[i]);
    return s + ")";
  }
  if (kind == Kind::List) return elements[0]->str() + "[]";
  if (kind == Kind::Optional) return elements[0]->str() + "?";
  if (kind == Kind::Tuple) {
    std::string s = "(";
    for (size_t i = 0; i < elements.size(); ++i) s += (i ? ", " : "") + elements[i]->str();
    return s + ")";
  }
  return annotation();
}

bool operator==(const Type& a, const Type& b) {
  if (a.kind != b.kind || a.elements.size() != b.elements.size() || a.name != b.name) return false;
  for (size_t i = 0; i < a.elements.size(); ++i)
    if (*a.elements[i] != *b.elements[i]) return false;
  return true;
}

bool Type::subtype_of(const Type& o) const {
  if (o.kind == Kind::Any) return true;
  if (o.kind == Kind::Optional)
    return kind == Kind::None || subtype_of(*o.elements[0]) ||
           (kind == Kind::Optional && elements[0]->subtype_of(*o.elements[0]));
  if (o.kind == Kind::Number)
    return kind == Kind::Int || kind == Kind::Float || kind == Kind::Bool || kind == Kind::Number;
  if (o.kind == Kind::Float && kind == Kind::Int) return false;
  if (kind != o.kind) return false;
  if (kind == Kind::List) return elements[0]->kind == Kind::Any || *elements[0] == *o.elements[0];
  if (kind == Kind::Tuple) {
    if (elements.size() != o.elements.size()) return false;
    for (size_t i = 0; i < elements.size(); ++i)
      if (!elements[i]->subtype_of(*o.elements[i])) return false;
    return true;
  }
  if (kind == Kind::Object) return name == o.name;
  return true;
}

// ---- IValue --------------------------------------------------------------------------

IValue::IValue(std::string s)
    : tag_(Tag::String), heap_(std::make_shared<std::string>(std::move(s))) {}
IValue::IValue(const Scalar& s) {
  if (s.is_bool()) {
    tag_ = Tag::Bool;
    p_.b = s.to_bool();
  } else if (s.is_integral()) {
    tag_ = Tag::Int;
    p_.i = s.to_int();
  } else {
    tag_ = Tag::Double;
    p_.d = s.to_double();
  }
}
IValue::IValue(std::shared_ptr<Object> o) : tag_(Tag::Object), heap_(std::move(o)) {}
IValue::IValue(const Shape& s) : tag_(Tag::List) {
  auto l = std::make_shared<ListImpl>();
  l->elem = Type::get(Type::Kind::Int);
  l->items.reserve(s.size());
  for (int64_t v : s) l->items.emplace_back(v);
  heap_ = std::move(l);
}
IValue::IValue(const std::vector<int64_t>& v) : IValue(Shape(v.begin(), v.end())) {}
IValue::IValue(const std::vector<Tensor>& v) : tag_(Tag::List) {
  auto l = std::make_shared<ListImpl>();
  l->elem = Type::tensor();
  l->items.reserve(v.size());
  for (const Tensor& t : v) l->items.emplace_back(t);
  heap_ = std::move(l);
}

IValue IValue::list(TypePtr elem, std::vector<IValue> items) {
  auto l = std::make_shared<ListImpl>();
  l->elem = std::move(elem);
  l->items = std::move(items);
  return IValue(std::move(l));
}
IValue IValue::tuple(std::vector<IValue> items) {
  auto t = std::make_shared<TupleImpl>();
  t->items = std::move(items);
  return IValue(std::move(t));
}

const char* IValue::tag_name() const {
  switch (tag_) {
    case Tag::None:
      return "None";
    case Tag::Tensor:
      return "Tensor";
    case Tag::Double:
      return "float";
    case Tag::Int:
      return "int";
    case Tag::Bool:
      return "bool";
    case Tag::String:
      return "str";
    case Tag::List:
      return "List";
    case Tag::Tuple:
      return "Tuple";
    case Tag::Device:
      return "Device";
    case Tag::DType:
      return "ScalarType";
    case Tag::Object:
      return "Object";
  }
  return "?";
}

void IValue::bad(const char* wanted) const {
  raise(ErrorKind::Runtime, "expected ", wanted, " but got ", tag_name());
}

const Tensor& IValue::toTensor() const& {
  if (tag_ != Tag::Tensor) bad("Tensor");
  return tensor_;
}
Tensor IValue::toTensor() && {
  if (tag_ != Tag::Tensor) bad("Tensor");
  return std::move(tensor_);
}
double IValue::toDouble() const {
  if (tag_ == Tag::Double) return p_.d;
  if (tag_ == Tag::Int) return double(p_.i);
  if (tag_ == Tag::Bool) return p_.b ? 1.0 : 0.0;
  bad("float");
}
int64_t IValue::toInt() const {
  if (tag_ == Tag::Int) return p_.i;
  if (tag_ == Tag::Bool) return p_.b;
  bad("int");
}
bool IValue::toBool() const {
  if (tag_ == Tag::Bool) return p_.b;
  bad("bool");
}
Scalar IValue::toScalar() const {
  if (tag_ == Tag::Double) return Scalar(p_.d);
  if (tag_ == Tag::Int) return Scalar(p_.i);
  if (tag_ == Tag::Bool) return Scalar(p_.b);
  bad("a number");
}
const std::string& IValue::toStringRef() const {
  if (tag_ != Tag::String) bad("str");
  return *static_cast<const std::string*>(heap_.get());
}
Device IValue::toDevice() const {
  if (tag_ == Tag::String) return Device::parse(toStringRef());
  if (tag_ != Tag::Device) bad("Device");
  return p_.dev;
}
DType IValue::toDType() const {
  if (tag_ != Tag::DType) bad("ScalarType");
  return p_.dt;
}
const std::shared_ptr<ListImpl>& IValue::toList() const {
  if (tag_ != Tag::List) bad("List");
  return reinterpret_cast<const std::shared_ptr<ListImpl>&>(heap_);
}
const std::shared_ptr<TupleImpl>& IValue::toTuple() const {
  if (tag_ != Tag::Tuple) bad("Tuple");
  return reinterpret_cast<const std::shared_ptr<TupleImpl>&>(heap_);
}
const std::shared_ptr<Object>& IValue::toObject() const {
  if (tag_ != Tag::Object) bad("Object");
  return reinterpret_cast<const std::shared_ptr<Object>&>(heap_);
}
Shape IValue::toShape() const {
  if (tag_ == Tag::Int) return Shape{p_.i};  // int[1] accepts an int, as in TorchScript
  Shape s;
  for (const IValue& v : toListRef()) s.push_back(v.toInt());
  return s;
}
std::vector<Tensor> IValue::toTensorVector() const {
  std::vector<Tensor> out;
  const auto& items = (tag_ == Tag::Tuple) ? toTupleRef() : toListRef();
  out.reserve(items.size());
  for (const IValue& v : items) out.push_back(v.toTensor());
  return out;
}

namespace {
std::string float_repr(double d) {
  // Python's repr of a float: shortest round-tripping digits, "1.0" for integers.
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  for (int prec = 1; prec <= 17; ++prec) {
    std::ostringstream os;
    os.precision(prec);
    os << d;
    if (std::stod(os.str()) == d) {
      std::string s = os.str();
      if (s.find_first_of(".en") == std::string::npos) s += ".";
      if (s.back() == '.') s += "0";
      return s;
    }
  }
  return std::to_string(d);
}
}  // namespace

std::string IValue::repr() const {
  switch (tag_) {
    case Tag::None:
      return "None";
    case Tag::Tensor:
      return tensor_.defined() ? tensor_.str() : "None";
    case Tag::Double:
      return float_repr(p_.d);
    case Tag::Int:
      return std::to_string(p_.i);
    case Tag::Bool:
      return p_.b ? "True" : "False";
    case Tag::String: {
      std::string s = "\"";
      for (char c : toStringRef()) {
        if (c == '"' || c == '\\') s += '\\';
        if (c == '\n') {
          s += "\\n";
          continue;
        }
        s += c;
      }
      return s + "\"";
    }
    case Tag::Device:
      return p_.dev.str();
    case Tag::DType:
      return std::string("ember.") + dtype_name(p_.dt);
    case Tag::List:
    case Tag::Tuple: {
      const auto& items = tag_ == Tag::List ? toListRef() : toTupleRef();
      std::string s = tag_ == Tag::List ? "[" : "(";
      for (size_t i = 0; i < items.size(); ++i) s += (i ? ", " : "") + items[i].repr();
      if (tag_ == Tag::Tuple && items.size() == 1) s += ",";
      return s + (tag_ == Tag::List ? "]" : ")");
    }
    case Tag::Object:
      return "<" + toObject()->type->name + " object>";
  }
  return "?";
}

bool IValue::same_constant(const IValue& o) const {
  if (tag_ != o.tag_) return false;
  switch (tag_) {
    case Tag::None:
      return true;
    case Tag::Tensor:
      return tensor_.is_same(o.tensor_);
    case Tag::Double:
      return std::memcmp(&p_.d, &o.p_.d, sizeof(double)) == 0;
    case Tag::Int:
      return p_.i == o.p_.i;
    case Tag::Bool:
      return p_.b == o.p_.b;
    case Tag::String:
      return toStringRef() == o.toStringRef();
    case Tag::Device:
      return p_.dev == o.p_.dev;
    case Tag::DType:
      return p_.dt == o.p_.dt;
    case Tag::List:
    case Tag::Tuple: {
      if (heap_ == o.heap_) return true;
      const auto& a = tag_ == Tag::List ? toListRef() : toTupleRef();
      const auto& b = tag_ == Tag::List ? o.toListRef() : o.toTupleRef();
      if (a.size() != b.size()) return false;
      if (tag_ == Tag::List && *toList()->elem != *o.toList()->elem) return false;
      for (size_t i = 0; i < a.size(); ++i)
        if (!a[i].same_constant(b[i])) return false;
      return true;
    }
    case Tag::Object:
      return heap_ == o.heap_;
  }
  return false;
}

TypePtr type_of(const IValue& v) {
  using K = Type::Kind;
  switch (v.tag()) {
    case IValue::Tag::None:
      return Type::get(K::None);
    case IValue::Tag::Tensor:
      return Type::tensor();
    case IValue::Tag::Double:
      return Type::get(K::Float);
    case IValue::Tag::Int:
      return Type::get(K::Int);
    case IValue::Tag::Bool:
      return Type::get(K::Bool);
    case IValue::Tag::String:
      return Type::get(K::Str);
    case IValue::Tag::Device:
      return Type::get(K::Device);
    case IValue::Tag::DType:
      return Type::get(K::DType);
    case IValue::Tag::List:
      return Type::list(v.toList()->elem);
    case IValue::Tag::Tuple: {
      std::vector<TypePtr> el;
      for (const IValue& x : v.toTupleRef()) el.push_back(type_of(x));
      return Type::tuple(std::move(el));
    }
    case IValue::Tag::Object:
      return Type::object(v.toObject()->type->name);
  }
  return Type::get(K::Any);
}

}  // namespace ember::jit
