// See Note [Archive format] in archive.h.
#include "ember/jit/archive.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <unordered_map>

#include "ember/autograd/grad_mode.h"
#include "ember/autograd/node.h"
#include "ember/core/trace_state.h"
#include "ember/data/crc32c.h"
#include "ember/jit/interpreter.h"
#include "ember/jit/ir.h"
#include "ember/jit/json.h"
#include "ember/jit/operator.h"
#include "ember/ops/ops.h"

namespace ember::jit {
namespace {

constexpr const char* kFormat = "ember.jit";
constexpr uint64_t kMaxHeader = 256ull << 20;
constexpr int64_t kMaxNdim = 64;

const char* dtype_code(DType t) {
  switch (t) {
    case DType::Bool:
      return "BOOL";
    case DType::UInt8:
      return "U8";
    case DType::Int8:
      return "I8";
    case DType::Int16:
      return "I16";
    case DType::Int32:
      return "I32";
    case DType::Int64:
      return "I64";
    case DType::Float16:
      return "F16";
    case DType::BFloat16:
      return "BF16";
    case DType::Float32:
      return "F32";
    case DType::Float64:
      return "F64";
    default:
      break;
  }
  EMBER_ERROR("ember.jit.save: unsupported dtype ", dtype_name(t));
}

std::optional<DType> dtype_from_code(const std::string& c) {
  static const std::pair<const char*, DType> table[] = {
      {"BOOL", DType::Bool},   {"U8", DType::UInt8},      {"I8", DType::Int8},
      {"I16", DType::Int16},   {"I32", DType::Int32},     {"I64", DType::Int64},
      {"F16", DType::Float16}, {"BF16", DType::BFloat16}, {"F32", DType::Float32},
      {"F64", DType::Float64}};
  for (auto& [k, v] : table)
    if (c == k) return v;
  return std::nullopt;
}

std::optional<DType> dtype_from_name(const std::string& n) {
  for (int i = 0; i < kNumDTypes; ++i)
    if (n == dtype_name(DType(i))) return DType(i);
  return std::nullopt;
}

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08x", v);
  return buf;
}

// ---- writing -----------------------------------------------------------------------------

struct Writer {
  std::vector<Tensor> tensors;
  std::unordered_map<const TensorImpl*, std::string> tensor_names;
  std::unordered_map<const Object*, int64_t> object_ids;
  std::vector<std::shared_ptr<Object>> objects;
  std::unordered_map<const ClassType*, int64_t> class_ids;
  std::vector<std::shared_ptr<ClassType>> classes;
  std::map<std::string, int> ops;

  Json tensor_ref(const Tensor& t) {
    if (!t.defined()) {
      Json none = Json::object();
      none.set("t", Json::string("none"));
      return none;
    }
    auto it = tensor_names.find(t.impl());
    std::string name;
    if (it != tensor_names.end()) {
      name = it->second;
    } else {
      name = "t" + std::to_string(tensors.size());
      tensor_names[t.impl()] = name;
      tensors.push_back(t);
    }
    Json j = Json::object();
    j.set("t", Json::string("tensor"));
    j.set("name", Json::string(name));
    if (t.requires_grad() && autograd::is_leaf(t)) j.set("requires_grad", Json::boolean(true));
    if (t.impl()->wrapped_number) j.set("wrapped", Json::boolean(true));
    return j;
  }

  int64_t object_id(const std::shared_ptr<Object>& o) {
    auto it = object_ids.find(o.get());
    if (it != object_ids.end()) return it->second;
    int64_t id = int64_t(objects.size());
    object_ids[o.get()] = id;
    objects.push_back(o);
    return id;
  }

  Json ivalue(const IValue& v) {
    Json j = Json::object();
    switch (v.tag()) {
      case IValue::Tag::None:
        j.set("t", Json::string("none"));
        break;
      case IValue::Tag::Tensor:
        if (!v.toTensor().defined()) {
          j.set("t", Json::string("none"));
          break;
        }
        return tensor_ref(v.toTensor());
      case IValue::Tag::Int:
        j.set("t", Json::string("int"));
        j.set("v", Json::integer(v.toInt()));
        break;
      case IValue::Tag::Double: {
        double d = v.toDouble();
        j.set("t", Json::string("float"));
        if (std::isfinite(d))
          j.set("v", Json::number(d));
        else
          j.set("v", Json::string(std::isnan(d) ? "nan" : d > 0 ? "inf" : "-inf"));
        break;
      }
      case IValue::Tag::Bool:
        j.set("t", Json::string("bool"));
        j.set("v", Json::boolean(v.toBool()));
        break;
      case IValue::Tag::String:
        j.set("t", Json::string("str"));
        j.set("v", Json::string(v.toStringRef()));
        break;
      case IValue::Tag::Device:
        j.set("t", Json::string("device"));
        j.set("v", Json::string(v.toDevice().str()));
        break;
      case IValue::Tag::DType:
        j.set("t", Json::string("dtype"));
        j.set("v", Json::string(dtype_name(v.toDType())));
        break;
      case IValue::Tag::List:
      case IValue::Tag::Tuple: {
        bool list = v.is_list();
        j.set("t", Json::string(list ? "list" : "tuple"));
        if (list) j.set("elem", Json::string(v.toList()->elem->annotation()));
        Json items = Json::array();
        for (const IValue& x : list ? v.toListRef() : v.toTupleRef()) items.push(ivalue(x));
        j.set("items", std::move(items));
        break;
      }
      case IValue::Tag::Object:
        j.set("t", Json::string("object"));
        j.set("id", Json::integer(object_id(v.toObject())));
        break;
    }
    return j;
  }

  Json value_decl(const Value* v) {
    Json j = Json::object();
    j.set("id", Json::integer(int64_t(v->unique)));
    if (v->has_name()) j.set("name", Json::string(v->debug_name()));
    j.set("type", Json::string(v->type->annotation()));
    return j;
  }

  Json block(const Block* b) {
    Json j = Json::object();
    Json ins = Json::array();
    for (const Value* p : b->inputs()) ins.push(value_decl(p));
    j.set("inputs", std::move(ins));
    Json nodes = Json::array();
    for (const Node* n : *b) {
      Json jn = Json::object();
      jn.set("kind", Json::string(n->kind));
      if (n->op) {
        std::string q = n->op->qualified_name();
        jn.set("op", Json::string(q));
        ops[q] = n->op->version;
      }
      Json in = Json::array();
      for (const Value* x : n->inputs()) in.push(Json::integer(int64_t(x->unique)));
      jn.set("inputs", std::move(in));
      Json out = Json::array();
      for (const Value* x : n->outputs()) out.push(value_decl(x));
      jn.set("outputs", std::move(out));
      if (!n->attrs.empty()) {
        Json attrs = Json::object();
        for (const auto& [k, a] : n->attrs) attrs.set(k, ivalue(a));
        jn.set("attrs", std::move(attrs));
      }
      if (!n->blocks().empty()) {
        Json bs = Json::array();
        for (const Block* sub : n->blocks()) bs.push(block(sub));
        jn.set("blocks", std::move(bs));
      }
      if (!n->source.empty()) jn.set("source", Json::string(n->source));
      nodes.push(std::move(jn));
    }
    j.set("nodes", std::move(nodes));
    Json outs = Json::array();
    for (const Value* o : b->outputs()) outs.push(Json::integer(int64_t(o->unique)));
    j.set("outputs", std::move(outs));
    return j;
  }

  Json graph(const Graph& g) { return block(g.block()); }

  int64_t class_id(const std::shared_ptr<ClassType>& c) {
    auto it = class_ids.find(c.get());
    if (it != class_ids.end()) return it->second;
    int64_t id = int64_t(classes.size());
    class_ids[c.get()] = id;
    classes.push_back(c);
    return id;
  }

  Json program(const std::shared_ptr<Object>* module, const Function* fn) {
    Json p = Json::object();
    if (module) {
      p.set("kind", Json::string("module"));
      object_id(*module);
      Json objs = Json::array();
      // Objects are appended while their slots are written, so index, do not iterate.
      for (size_t i = 0; i < objects.size(); ++i) {
        std::shared_ptr<Object> o = objects[i];
        Json jo = Json::object();
        jo.set("class", Json::integer(class_id(o->type)));
        jo.set("training", Json::boolean(o->training));
        jo.set("original_name", Json::string(o->original_name));
        Json slots = Json::array();
        for (const IValue& s : o->slots) slots.push(ivalue(s));
        jo.set("slots", std::move(slots));
        objs.push(std::move(jo));
      }
      Json cls = Json::array();
      for (size_t i = 0; i < classes.size(); ++i) {
        const ClassType& c = *classes[i];
        Json jc = Json::object();
        jc.set("name", Json::string(c.name));
        Json attrs = Json::array();
        for (size_t k = 0; k < c.attr_names.size(); ++k) {
          Json a = Json::object();
          a.set("name", Json::string(c.attr_names[k]));
          a.set("type", Json::string(c.attr_types[k]->annotation()));
          a.set("kind", Json::string(c.is_module[k]      ? "module"
                                     : c.is_parameter[k] ? "parameter"
                                                         : "attribute"));
          attrs.push(std::move(a));
        }
        jc.set("attributes", std::move(attrs));
        Json methods = Json::object();
        for (const auto& [name, f] : c.methods) methods.set(name, graph(*f->graph));
        jc.set("methods", std::move(methods));
        cls.push(std::move(jc));
      }
      p.set("classes", std::move(cls));
      p.set("objects", std::move(objs));
    } else {
      p.set("kind", Json::string("function"));
      p.set("name", Json::string(fn->name));
      p.set("graph", graph(*fn->graph));
    }
    Json ol = Json::array();
    for (const auto& [name, version] : ops) {
      Json o = Json::object();
      o.set("name", Json::string(name));
      o.set("version", Json::integer(version));
      ol.push(std::move(o));
    }
    p.set("ops", std::move(ol));
    return p;
  }
};

std::string write_archive(Writer& w, const Json& program,
                          const std::map<std::string, std::string>& extra_files) {
  trace_state::Pause pause;
  autograd::GradModeGuard no_grad(false);
  std::string program_text = program.dump();
  // Tensor data, each a contiguous CPU copy.
  std::string data;
  Json header = Json::object();
  std::vector<std::pair<std::string, Json>> entries;
  for (size_t i = 0; i < w.tensors.size(); ++i) {
    Tensor t = w.tensors[i];
    Tensor c = contiguous(to_device(t, Device()));
    size_t nbytes = size_t(c.numel()) * size_t(c.element_size());
    size_t begin = data.size();
    if (nbytes) data.append(c.data_ptr(), nbytes);
    Json e = Json::object();
    e.set("dtype", Json::string(dtype_code(t.dtype())));
    Json shape = Json::array();
    for (int64_t s : t.sizes()) shape.push(Json::integer(s));
    e.set("shape", std::move(shape));
    Json off = Json::array();
    off.push(Json::integer(int64_t(begin)));
    off.push(Json::integer(int64_t(data.size())));
    e.set("data_offsets", std::move(off));
    entries.emplace_back(w.tensor_names.at(t.impl()), std::move(e));
  }
  Json meta = Json::object();
  meta.set("format", Json::string(kFormat));
  meta.set("format_version", Json::string(std::to_string(kArchiveFormatVersion)));
  meta.set("program", Json::string(program_text));
  if (!extra_files.empty()) {
    Json extra = Json::object();
    for (const auto& [k, v] : extra_files) extra.set(k, Json::string(v));
    meta.set("extra_files", Json::string(extra.dump()));
  }
  meta.set("checksum",
           Json::string("crc32c:" + hex32(data::crc32c(program_text.data(), program_text.size())) +
                        ":" + hex32(data::crc32c(data.data(), data.size()))));
  header.set("__metadata__", std::move(meta));
  for (auto& [k, e] : entries) header.set(k, std::move(e));
  std::string htext = header.dump();
  while (htext.size() % 8) htext += ' ';
  std::string out;
  uint64_t n = htext.size();
  for (int i = 0; i < 8; ++i) out += char((n >> (8 * i)) & 0xff);
  out += htext;
  out += data;
  return out;
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  EMBER_CHECK(f.good(), "ember.jit.save: cannot open '", path, "' for writing");
  f.write(bytes.data(), std::streamsize(bytes.size()));
  EMBER_CHECK(f.good(), "ember.jit.save: writing '", path, "' failed");
}

// ---- reading -----------------------------------------------------------------------------

struct Header {
  Json json;
  std::map<std::string, std::string> meta;
  size_t data_begin = 0;
};

[[noreturn]] void bad(const std::string& name, const std::string& msg) {
  raise(ErrorKind::Runtime, "ember.jit.load: ", name, " is not a valid archive: ", msg);
}

Header read_header(const std::string& bytes, const std::string& name) {
  if (bytes.size() < 8) bad(name, "the file is shorter than its 8-byte header length");
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i)
    n |= uint64_t(static_cast<unsigned char>(bytes[size_t(i)])) << (8 * i);
  if (n > kMaxHeader || n > bytes.size() - 8)
    bad(name, "its header claims " + std::to_string(n) + " bytes, more than the file holds");
  Header h;
  try {
    h.json = Json::parse(bytes.substr(8, size_t(n)), 64);
  } catch (const Error& e) {
    bad(name, std::string("its header is not valid JSON (") + e.what() + ")");
  }
  if (!h.json.is_object()) bad(name, "its header is not a JSON object");
  if (const Json* m = h.json.find("__metadata__")) {
    if (!m->is_object()) bad(name, "__metadata__ is not an object");
    for (const auto& [k, v] : m->fields("__metadata__")) {
      if (!v.is_string()) bad(name, "metadata value '" + k + "' is not a string");
      h.meta[k] = v.as_string("");
    }
  }
  h.data_begin = 8 + size_t(n);
  return h;
}

struct TensorEntry {
  DType dtype;
  Shape shape;
  size_t begin, end;
};

std::map<std::string, TensorEntry> check_tensors(const Header& h, size_t data_size,
                                                 const std::string& name) {
  std::map<std::string, TensorEntry> out;
  std::vector<std::pair<size_t, size_t>> ranges;
  for (const auto& [k, v] : h.json.fields("header")) {
    if (k == "__metadata__") continue;
    if (!v.is_object()) bad(name, "entry '" + k + "' is not an object");
    const Json* dt = v.find("dtype");
    const Json* sh = v.find("shape");
    const Json* off = v.find("data_offsets");
    if (!dt || !dt->is_string() || !sh || !sh->is_array() || !off || !off->is_array())
      bad(name, "entry '" + k + "' needs dtype, shape and data_offsets");
    auto dtype = dtype_from_code(dt->as_string(""));
    if (!dtype) bad(name, "entry '" + k + "' has an unknown dtype '" + dt->as_string("") + "'");
    const auto& dims = sh->items("");
    if (int64_t(dims.size()) > kMaxNdim) bad(name, "entry '" + k + "' has too many dimensions");
    Shape shape;
    uint64_t numel = 1;
    for (const Json& d : dims) {
      if (!d.is_int() || d.as_int("") < 0) bad(name, "entry '" + k + "' has a bad size");
      uint64_t s = uint64_t(d.as_int(""));
      if (s && numel > (uint64_t(1) << 62) / s) bad(name, "entry '" + k + "' is too large");
      numel *= s;
      shape.push_back(int64_t(s));
    }
    const auto& o = off->items("");
    if (o.size() != 2 || !o[0].is_int() || !o[1].is_int() || o[0].as_int("") < 0 ||
        o[1].as_int("") < o[0].as_int(""))
      bad(name, "entry '" + k + "' has bad data_offsets");
    size_t b = size_t(o[0].as_int("")), e = size_t(o[1].as_int(""));
    if (e > data_size) bad(name, "entry '" + k + "' reaches past the end of the file");
    if (uint64_t(e - b) != numel * uint64_t(element_size(*dtype)))
      bad(name, "entry '" + k + "' holds " + std::to_string(e - b) + " bytes but its shape needs " +
                    std::to_string(numel * uint64_t(element_size(*dtype))));
    ranges.emplace_back(b, e);
    out[k] = TensorEntry{*dtype, shape, b, e};
  }
  std::sort(ranges.begin(), ranges.end());
  size_t at = 0;
  for (auto& [b, e] : ranges) {
    if (b != at) bad(name, "the tensors' data ranges overlap or leave gaps");
    at = e;
  }
  if (at != data_size) bad(name, "the data section does not end where the last tensor does");
  return out;
}

struct Reader {
  std::string name;
  const std::string& bytes;
  size_t data_begin;
  std::map<std::string, TensorEntry> entries;
  std::map<std::string, Tensor> loaded;
  std::optional<Device> device;
  std::map<std::string, int> ops;
  std::vector<std::shared_ptr<Object>> objects;
  bool build = false;  // false: validate only (no tensor is allocated)

  Tensor tensor(const std::string& tname) {
    auto e = entries.find(tname);
    if (e == entries.end()) bad(name, "the program names a tensor '" + tname + "' the file lacks");
    if (!build) return Tensor();
    auto it = loaded.find(tname);
    if (it != loaded.end()) return it->second;
    const TensorEntry& te = e->second;
    Tensor t = empty(te.shape, te.dtype, Device());
    if (te.end > te.begin)
      std::memcpy(t.data_ptr(), bytes.data() + data_begin + te.begin, te.end - te.begin);
    if (device && !device->is_cpu()) t = to_device(t, *device);
    loaded[tname] = t;
    return t;
  }

  IValue ivalue(const Json& j) {
    const std::string& t = j.at("t", "value").as_string("value tag");
    if (t == "none") return IValue();
    if (t == "int") return IValue(j.at("v", "int").as_int("int"));
    if (t == "bool") return IValue(j.at("v", "bool").as_bool("bool"));
    if (t == "str") return IValue(j.at("v", "str").as_string("str"));
    if (t == "float") {
      const Json& v = j.at("v", "float");
      if (v.is_string()) {
        const std::string& s = v.as_string("");
        if (s == "nan") return IValue(std::nan(""));
        if (s == "inf") return IValue(HUGE_VAL);
        if (s == "-inf") return IValue(-HUGE_VAL);
        bad(name, "a float constant is '" + s + "'");
      }
      return IValue(v.as_double("float"));
    }
    if (t == "device") {
      Device d = Device::parse(j.at("v", "device").as_string("device"));
      if (device && d.type == DeviceType::CPU) d = *device;  // follow map_location
      return IValue(d);
    }
    if (t == "dtype") {
      auto d = dtype_from_name(j.at("v", "dtype").as_string("dtype"));
      if (!d) bad(name, "unknown dtype constant");
      return IValue(*d);
    }
    if (t == "tensor") {
      Tensor x = tensor(j.at("name", "tensor").as_string("tensor name"));
      if (!build) return IValue(Tensor());
      if (const Json* w = j.find("wrapped"); w && w->as_bool("wrapped"))
        x.impl()->wrapped_number = true;
      if (const Json* rg = j.find("requires_grad"); rg && rg->as_bool("requires_grad"))
        autograd::set_requires_grad(x, true);
      return IValue(x);
    }
    if (t == "list" || t == "tuple") {
      std::vector<IValue> items;
      for (const Json& x : j.at("items", t.c_str()).items("items")) items.push_back(ivalue(x));
      if (t == "tuple") return IValue::tuple(std::move(items));
      return IValue::list(parse_type(j.at("elem", "list").as_string("elem")), std::move(items));
    }
    if (t == "object") {
      int64_t id = j.at("id", "object").as_int("object id");
      if (id < 0 || id >= int64_t(objects.size())) bad(name, "an object reference is out of range");
      return IValue(objects[size_t(id)]);
    }
    bad(name, "unknown value tag '" + t + "'");
  }

  void block(const Json& jb, Block* b, std::unordered_map<int64_t, Value*>& values) {
    Graph* g = b->graph();
    auto declare = [&](const Json& decl, Value* v) {
      int64_t id = decl.at("id", "value").as_int("value id");
      if (values.count(id)) bad(name, "value %" + std::to_string(id) + " is defined twice");
      v->type = parse_type(decl.at("type", "value").as_string("value type"));
      if (const Json* n = decl.find("name")) v->set_name(n->as_string("value name"));
      values[id] = v;
    };
    for (const Json& in : jb.at("inputs", "block").items("block inputs"))
      declare(in, b->add_input(nullptr));
    for (const Json& jn : jb.at("nodes", "block").items("block nodes")) {
      const std::string& kind = jn.at("kind", "node").as_string("node kind");
      Node* n = nullptr;
      if (const Json* op = jn.find("op")) {
        const std::string& q = op->as_string("op");
        if (!ops.count(q)) bad(name, "node of op '" + q + "' is missing from the op list");
        n = g->create(kind, 0);
        n->op = find_operator(q);
      } else {
        if (kind.rfind("prim::", 0) != 0) bad(name, "node '" + kind + "' names no registered op");
        n = g->create(kind, 0);
      }
      for (const Json& id : jn.at("inputs", "node").items("node inputs")) {
        auto it = values.find(id.as_int("input id"));
        if (it == values.end()) bad(name, "node " + kind + " uses a value before it is defined");
        n->add_input(it->second);
      }
      if (const Json* attrs = jn.find("attrs"))
        for (const auto& [k, v] : attrs->fields("attrs")) n->set_attr(k, ivalue(v));
      if (const Json* src = jn.find("source")) n->source = src->as_string("source");
      if (const Json* blocks = jn.find("blocks")) {
        for (const Json& sb : blocks->items("blocks")) {
          Block* nb = n->add_block();
          auto inner = values;  // values of a block are not visible after it
          block(sb, nb, inner);
        }
      }
      for (const Json& out : jn.at("outputs", "node").items("node outputs"))
        declare(out, n->add_output(nullptr));
      if (n->op && n->outputs().size() != n->op->num_outputs())
        bad(name, "node " + kind + " has " + std::to_string(n->outputs().size()) +
                      " outputs but the op returns " + std::to_string(n->op->num_outputs()));
      if (n->op && n->inputs().size() != n->op->num_inputs())
        bad(name, "node " + kind + " has " + std::to_string(n->inputs().size()) +
                      " inputs but the op takes " + std::to_string(n->op->num_inputs()));
      b->append(n);
    }
    for (const Json& id : jb.at("outputs", "block").items("block outputs")) {
      auto it = values.find(id.as_int("output id"));
      if (it == values.end()) bad(name, "a block returns an undefined value");
      b->register_output(it->second);
    }
  }

  std::shared_ptr<Graph> graph(const Json& jg) {
    auto g = std::make_shared<Graph>();
    std::unordered_map<int64_t, Value*> values;
    block(jg, g->block(), values);
    try {
      g->lint();
      compile(g);  // every node can run
    } catch (const Error& e) {
      bad(name, std::string("a graph is malformed: ") + e.what());
    }
    return g;
  }

  void check_ops(const Json& program) {
    for (const Json& o : program.at("ops", "program").items("ops")) {
      const std::string& q = o.at("name", "op").as_string("op name");
      int64_t v = o.at("version", "op").as_int("op version");
      const Operator* op = find_operator(q);
      EMBER_CHECK(op, "ember.jit.load: ", name, " calls the op '", q,
                  "', which this build of ember does not have (saved by a newer or different "
                  "version of ember)");
      EMBER_CHECK(v <= op->version, "ember.jit.load: ", name, " calls '", q, "' version ", v,
                  ", but this build of ember has version ", op->version,
                  " of it; upgrade ember to load this archive");
      ops[q] = int(v);
    }
  }

  Archive module_or_function(const Json& program) {
    Archive a;
    const std::string& kind = program.at("kind", "program").as_string("kind");
    if (kind == "function") {
      auto fn = std::make_shared<Function>();
      fn->name = program.at("name", "program").as_string("name");
      fn->graph = graph(program.at("graph", "program"));
      a.function = fn;
      return a;
    }
    if (kind != "module") bad(name, "unknown program kind '" + kind + "'");
    const auto& jobjs = program.at("objects", "program").items("objects");
    const auto& jclasses = program.at("classes", "program").items("classes");
    if (jobjs.empty()) bad(name, "the module tree is empty");
    std::vector<std::shared_ptr<ClassType>> classes;
    for (const Json& jc : jclasses) {
      auto c = std::make_shared<ClassType>();
      c->name = jc.at("name", "class").as_string("class name");
      for (const Json& ja : jc.at("attributes", "class").items("attributes")) {
        const std::string& k = ja.at("kind", "attribute").as_string("attribute kind");
        c->add_attr(ja.at("name", "attribute").as_string("attribute name"),
                    parse_type(ja.at("type", "attribute").as_string("attribute type")),
                    k == "parameter", k == "module");
      }
      classes.push_back(c);
    }
    // Objects first (slots may refer to later ones), then their slots.
    for (const Json& jo : jobjs) {
      int64_t ci = jo.at("class", "object").as_int("object class");
      if (ci < 0 || ci >= int64_t(classes.size())) bad(name, "an object's class is out of range");
      auto o = std::make_shared<Object>();
      o->type = classes[size_t(ci)];
      o->training = jo.at("training", "object").as_bool("training");
      if (const Json* on = jo.find("original_name"))
        o->original_name = on->as_string("original_name");
      objects.push_back(o);
    }
    for (size_t i = 0; i < jobjs.size(); ++i) {
      const auto& slots = jobjs[i].at("slots", "object").items("slots");
      if (slots.size() != objects[i]->type->attr_names.size())
        bad(name, "an object has " + std::to_string(slots.size()) + " slots, its class declares " +
                      std::to_string(objects[i]->type->attr_names.size()));
      for (const Json& s : slots) objects[i]->slots.push_back(ivalue(s));
    }
    for (size_t i = 0; i < jclasses.size(); ++i)
      for (const auto& [mname, jg] : jclasses[i].at("methods", "class").fields("methods")) {
        auto fn = std::make_shared<Function>();
        fn->name = mname;
        fn->graph = graph(jg);
        classes[i]->methods[mname] = fn;
      }
    a.module = objects[0];
    return a;
  }
};

}  // namespace

std::string serialize_module(const std::shared_ptr<Object>& module,
                             const std::map<std::string, std::string>& extra_files) {
  Writer w;
  Json p = w.program(&module, nullptr);
  return write_archive(w, p, extra_files);
}

void save_module(const std::shared_ptr<Object>& module, const std::string& path,
                 const std::map<std::string, std::string>& extra_files) {
  write_file(path, serialize_module(module, extra_files));
}

void save_function(const Function& fn, const std::string& path,
                   const std::map<std::string, std::string>& extra_files) {
  Writer w;
  Json p = w.program(nullptr, &fn);
  write_file(path, write_archive(w, p, extra_files));
}

Archive deserialize(const std::string& bytes, std::optional<Device> device,
                    const std::string& name) {
  trace_state::Pause pause;
  autograd::GradModeGuard no_grad(false);
  Header h = read_header(bytes, name);
  auto fmt = h.meta.find("format");
  if (fmt == h.meta.end() || fmt->second != kFormat) {
    std::string what =
        fmt == h.meta.end() ? "a plain safetensors file" : "an '" + fmt->second + "' file";
    raise(ErrorKind::Runtime, "ember.jit.load: ", name, " is ", what,
          ", not an ember.jit archive (one saved by ember.jit.save or ScriptModule.save). "
          "A checkpoint saved with ember.save loads with ember.load.");
  }
  auto ver = h.meta.find("format_version");
  if (ver == h.meta.end()) bad(name, "it has no format_version");
  int version = 0;
  try {
    version = std::stoi(ver->second);
  } catch (const std::exception&) {
    bad(name, "its format_version is not a number");
  }
  EMBER_CHECK(version >= 1 && version <= kArchiveFormatVersion, "ember.jit.load: ", name,
              " has archive format version ", version,
              "; this build of ember reads versions up to ", kArchiveFormatVersion,
              ". Upgrade ember to load it.");
  size_t data_size = bytes.size() - h.data_begin;
  auto entries = check_tensors(h, data_size, name);
  auto prog = h.meta.find("program");
  auto sum = h.meta.find("checksum");
  if (prog == h.meta.end()) bad(name, "it has no program");
  if (sum == h.meta.end()) bad(name, "it has no checksum");
  std::string expect = "crc32c:" + hex32(data::crc32c(prog->second.data(), prog->second.size())) +
                       ":" + hex32(data::crc32c(bytes.data() + h.data_begin, data_size));
  if (sum->second != expect)
    bad(name, "its checksum does not match its contents (the file is corrupted or was modified)");
  Json program;
  try {
    program = Json::parse(prog->second, 512);
  } catch (const Error& e) {
    bad(name, std::string("its program is not valid JSON (") + e.what() + ")");
  }
  Reader r{name, bytes, h.data_begin, std::move(entries), {}, device, {}, {}, false};
  r.check_ops(program);
  // Validate the whole program without allocating, then build it.
  r.module_or_function(program);
  r.objects.clear();
  r.build = true;
  Archive a = r.module_or_function(program);
  if (auto ex = h.meta.find("extra_files"); ex != h.meta.end()) {
    Json e = Json::parse(ex->second, 4);
    for (const auto& [k, v] : e.fields("extra_files")) a.extra_files[k] = v.as_string("extra file");
  }
  return a;
}

Archive load_archive(const std::string& path, std::optional<Device> device) {
  std::ifstream f(path, std::ios::binary);
  EMBER_CHECK(f.good(), "ember.jit.load: cannot open '", path, "'");
  std::ostringstream ss;
  ss << f.rdbuf();
  return deserialize(ss.str(), device, "'" + path + "'");
}

std::string file_format(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  EMBER_CHECK(f.good(), "cannot open '", path, "'");
  char len[8];
  f.read(len, 8);
  if (f.gcount() != 8) return "";
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t(static_cast<unsigned char>(len[i])) << (8 * i);
  if (n > kMaxHeader) return "";
  std::string text(size_t(n), '\0');
  f.read(text.data(), std::streamsize(n));
  if (size_t(f.gcount()) != n) return "";
  try {
    Json h = Json::parse(text, 64);
    const Json* m = h.find("__metadata__");
    const Json* fmt = m ? m->find("format") : nullptr;
    return fmt && fmt->is_string() ? fmt->as_string("") : "";
  } catch (const Error&) {
    return "";
  }
}

}  // namespace ember::jit
