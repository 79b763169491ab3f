// See Note [Operator registry] in operator.h.
#include "ember/jit/operator.h"

#include <cctype>
#include <deque>
#include <mutex>
#include <unordered_map>

namespace ember::jit {

// ---- schema parsing --------------------------------------------------------------------

namespace {

struct Lexer {
  const std::string& s;
  size_t i = 0;
  explicit Lexer(const std::string& text) : s(text) {}
  [[noreturn]] void fail(const std::string& what) const {
    EMBER_ERROR("jit: bad schema '", s, "' at ", i, ": ", what);
  }
  void ws() {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  }
  bool peek(char c) {
    ws();
    return i < s.size() && s[i] == c;
  }
  bool eat(char c) {
    if (!peek(c)) return false;
    ++i;
    return true;
  }
  void expect(char c) {
    if (!eat(c)) fail(std::string("expected '") + c + "'");
  }
  bool eat_word(const char* w) {
    ws();
    size_t n = std::char_traits<char>::length(w);
    if (s.compare(i, n, w) == 0 &&
        (i + n >= s.size() ||
         !(std::isalnum(static_cast<unsigned char>(s[i + n])) || s[i + n] == '_'))) {
      i += n;
      return true;
    }
    return false;
  }
  std::string ident() {
    ws();
    size_t b = i;
    while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_' ||
                            s[i] == ':' || s[i] == '.'))
      ++i;
    if (b == i) fail("expected a name");
    return s.substr(b, i - b);
  }
};

TypePtr parse_type_at(Lexer& L, int* list_size) {
  using K = Type::Kind;
  TypePtr t;
  if (L.eat('(')) {
    std::vector<TypePtr> el;
    if (!L.peek(')')) {
      do {
        el.push_back(parse_type_at(L, nullptr));
        // named tuple fields: "(Tensor values, Tensor indices)"
        L.ws();
        if (L.i < L.s.size() &&
            (std::isalpha(static_cast<unsigned char>(L.s[L.i])) || L.s[L.i] == '_'))
          L.ident();
      } while (L.eat(','));
    }
    L.expect(')');
    t = Type::tuple(std::move(el));
  } else {
    std::string name = L.ident();
    if (name == "Tensor")
      t = Type::tensor();
    else if (name == "int" || name == "SymInt")
      t = Type::get(K::Int);
    else if (name == "float")
      t = Type::get(K::Float);
    else if (name == "bool")
      t = Type::get(K::Bool);
    else if (name == "str")
      t = Type::get(K::Str);
    else if (name == "Scalar")
      t = Type::get(K::Number);
    else if (name == "ScalarType")
      t = Type::get(K::DType);
    else if (name == "Device")
      t = Type::get(K::Device);
    else if (name == "Any" || name == "t" || name == "Generator")
      t = Type::get(K::Any);
    else if (name == "NoneType")
      t = Type::get(K::None);
    else if (name.find('.') != std::string::npos || name.rfind("__", 0) == 0)
      t = Type::object(name);
    else
      L.fail("unknown type '" + name + "'");
    // alias annotation: Tensor(a), Tensor(a!)
    if (L.peek('(') && name == "Tensor") {
      while (L.i < L.s.size() && L.s[L.i] != ')') ++L.i;
      L.expect(')');
    }
  }
  for (;;) {
    if (L.eat('?')) {
      t = Type::optional(t);
    } else if (L.eat('[')) {
      L.ws();
      size_t b = L.i;
      while (L.i < L.s.size() && std::isdigit(static_cast<unsigned char>(L.s[L.i]))) ++L.i;
      if (L.i > b && list_size) *list_size = std::stoi(L.s.substr(b, L.i - b));
      L.expect(']');
      t = Type::list(t);
    } else {
      break;
    }
  }
  return t;
}

IValue parse_default(Lexer& L, const TypePtr& type, int list_size) {
  using K = Type::Kind;
  L.ws();
  if (L.eat_word("None")) return IValue();
  if (L.eat_word("True")) return IValue(true);
  if (L.eat_word("False")) return IValue(false);
  const Type* base = type->kind == K::Optional ? type->elements[0].get() : type.get();
  if (L.peek('[')) {
    L.expect('[');
    std::vector<IValue> items;
    if (!L.peek(']')) {
      do items.push_back(parse_default(L, base->elements.empty() ? type : base->elements[0], 0));
      while (L.eat(','));
    }
    L.expect(']');
    return IValue::list(base->elements.empty() ? Type::get(K::Any) : base->elements[0],
                        std::move(items));
  }
  if (L.peek('"') || L.peek('\'')) {
    char q = L.s[L.i++];
    size_t b = L.i;
    while (L.i < L.s.size() && L.s[L.i] != q) ++L.i;
    std::string v = L.s.substr(b, L.i - b);
    L.expect(q);
    return IValue(v);
  }
  // a number (or an identifier such as contiguous_format, kept as a string)
  size_t b = L.i;
  while (L.i < L.s.size() &&
         (std::isalnum(static_cast<unsigned char>(L.s[L.i])) || L.s[L.i] == '.' ||
          L.s[L.i] == '-' || L.s[L.i] == '+' || L.s[L.i] == '_'))
    ++L.i;
  std::string tok = L.s.substr(b, L.i - b);
  if (tok.empty()) L.fail("expected a default value");
  bool is_num = std::isdigit(static_cast<unsigned char>(tok[0])) || tok[0] == '-' || tok[0] == '.';
  if (!is_num) return IValue(tok);
  bool floating = tok.find_first_of(".eE") != std::string::npos || tok == "inf" || tok == "-inf";
  IValue v = floating || base->kind == K::Float ? IValue(std::stod(tok))
                                                : IValue(int64_t(std::stoll(tok)));
  if (base->kind == K::List && list_size > 0) {
    std::vector<IValue> items(size_t(list_size), v);
    return IValue::list(base->elements[0], std::move(items));
  }
  return v;
}

std::vector<Argument> parse_args(Lexer& L, bool returns) {
  std::vector<Argument> out;
  bool kwarg_only = false;
  L.expect('(');
  if (L.eat(')')) return out;
  do {
    if (L.eat('*')) {
      kwarg_only = true;
      continue;
    }
    Argument a;
    a.type = parse_type_at(L, &a.list_size);
    L.ws();
    if (L.i < L.s.size() && (std::isalpha(static_cast<unsigned char>(L.s[L.i])) || L.s[L.i] == '_'))
      a.name = L.ident();
    if (L.eat('=')) a.default_value = parse_default(L, a.type, a.list_size);
    a.kwarg_only = kwarg_only;
    if (!returns && a.name.empty()) L.fail("an argument needs a name");
    out.push_back(std::move(a));
  } while (L.eat(','));
  L.expect(')');
  return out;
}

}  // namespace

FunctionSchema parse_schema(const std::string& text) {
  Lexer L(text);
  FunctionSchema s;
  std::string full = L.ident();
  auto colons = full.find("::");
  if (colons == std::string::npos) L.fail("the name needs a namespace (aten::, prim::)");
  auto dot = full.find('.', colons);
  s.name = full.substr(0, dot);
  if (dot != std::string::npos) s.overload = full.substr(dot + 1);
  s.arguments = parse_args(L, false);
  L.ws();
  if (L.s.compare(L.i, 2, "->") != 0) L.fail("expected '->'");
  L.i += 2;
  L.ws();
  if (L.peek('(')) {
    s.returns = parse_args(L, true);
  } else {
    Argument r;
    r.type = parse_type_at(L, nullptr);
    s.returns.push_back(std::move(r));
  }
  L.ws();
  if (L.i != L.s.size()) L.fail("trailing text");
  return s;
}

TypePtr parse_type(const std::string& text) {
  Lexer L(text);
  TypePtr t = parse_type_at(L, nullptr);
  L.ws();
  if (L.i != L.s.size()) L.fail("trailing text");
  return t;
}

std::string FunctionSchema::str() const {
  std::string s = qualified_name() + "(";
  bool kw = false;
  for (size_t i = 0; i < arguments.size(); ++i) {
    const Argument& a = arguments[i];
    if (i) s += ", ";
    if (a.kwarg_only && !kw) {
      s += "*, ";
      kw = true;
    }
    s += a.type->annotation() + " " + a.name;
    if (a.default_value) s += "=" + a.default_value->repr();
  }
  s += ") -> ";
  if (returns.size() == 1) return s + returns[0].type->annotation();
  s += "(";
  for (size_t i = 0; i < returns.size(); ++i) s += (i ? ", " : "") + returns[i].type->annotation();
  return s + ")";
}

// ---- the registry ------------------------------------------------------------------------

namespace {

struct Registry {
  std::mutex mu;
  std::deque<Operator> ops;  // stable addresses
  std::unordered_map<std::string, Operator*> by_qualified;
  std::unordered_map<std::string, std::vector<const Operator*>> by_name;
  std::vector<std::string> errors;
};

Registry& registry() {
  static Registry* r = new Registry();  // leaked: ops are looked up during exit
  return *r;
}

// "int[2]" and "int[]" are the same C++ kind; a C++ Tensor may stand for "Tensor?".
bool kinds_match(const std::string& schema_kind, const std::string& cpp_kind) {
  if (schema_kind == cpp_kind) return true;
  if (cpp_kind == "Tensor" && schema_kind == "Tensor?") return true;
  if (cpp_kind == "int[]" && schema_kind == "int") return false;
  return false;
}

std::vector<std::string> split_kinds(const std::string& s) {
  std::vector<std::string> out;
  size_t b = 0;
  while (b < s.size()) {
    size_t e = s.find(", ", b);
    if (e == std::string::npos) e = s.size();
    out.push_back(s.substr(b, e - b));
    b = e + 2;
  }
  return out;
}

}  // namespace

void add_registration_error(const std::string& msg) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lk(r.mu);
  r.errors.push_back(msg);
}

const Operator* register_operator(const std::string& schema_text, BoxedFn fn, int version,
                                  std::optional<Effect> effect, const std::string& cpp_signature) {
  Registry& r = registry();
  FunctionSchema schema;
  try {
    schema = parse_schema(schema_text);
  } catch (const std::exception& e) {
    std::lock_guard<std::mutex> lk(r.mu);
    r.errors.push_back(e.what());
    return nullptr;
  }
  std::lock_guard<std::mutex> lk(r.mu);
  std::string q = schema.qualified_name();
  auto it = r.by_qualified.find(q);
  if (it != r.by_qualified.end()) {
    // One front-end may carry the same line twice (overloads that forward); the first wins.
    if (it->second->schema.str() != schema.str())
      r.errors.push_back("op " + q + " registered twice with different schemas: " +
                         it->second->schema.str() + " and " + schema.str());
    return it->second;
  }
  if (!cpp_signature.empty()) {
    auto kinds = split_kinds(cpp_signature);
    bool ok = kinds.size() == schema.arguments.size();
    for (size_t i = 0; ok && i < kinds.size(); ++i) {
      std::string sk = schema.arguments[i].type->annotation();
      ok = kinds_match(sk, kinds[i]);
    }
    if (!ok) {
      std::string declared;
      for (const Argument& a : schema.arguments)
        declared += (declared.empty() ? "" : ", ") + a.type->annotation();
      r.errors.push_back("op " + q + ": schema arguments (" + declared +
                         ") do not match the front-end's (" + cpp_signature + ")");
    }
  }
  Operator op;
  op.schema = std::move(schema);
  op.fn = std::move(fn);
  op.version = version;
  op.cpp_signature = cpp_signature;
  if (effect) {
    op.effect = *effect;
  } else {
    const std::string& n = op.schema.name;
    bool inplace = !n.empty() && n.back() == '_' && n.size() > 2 && n[n.size() - 2] != '_';
    op.effect = (inplace || op.schema.overload == "out") ? Effect::Mutates : Effect::Pure;
  }
  r.ops.push_back(std::move(op));
  Operator* p = &r.ops.back();
  r.by_qualified[q] = p;
  r.by_name[p->schema.name].push_back(p);
  return p;
}

const Operator* find_operator(const std::string& qualified_name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lk(r.mu);
  auto it = r.by_qualified.find(qualified_name);
  return it == r.by_qualified.end() ? nullptr : it->second;
}

const Operator* get_operator(const std::string& qualified_name) {
  const Operator* op = find_operator(qualified_name);
  EMBER_CHECK(op, "ember.jit: unknown op '", qualified_name,
              "' (not in this build's operator registry)");
  return op;
}

std::vector<const Operator*> operators_named(const std::string& name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lk(r.mu);
  auto it = r.by_name.find(name);
  return it == r.by_name.end() ? std::vector<const Operator*>() : it->second;
}

std::vector<const Operator*> all_operators() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lk(r.mu);
  std::vector<const Operator*> out;
  for (const Operator& op : r.ops) out.push_back(&op);
  return out;
}

std::vector<std::string> registration_errors() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lk(r.mu);
  return r.errors;
}

}  // namespace ember::jit
