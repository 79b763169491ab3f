// Bindings of ember.jit (csrc/ember/jit/): graphs and their nodes for the script compiler
// and the ONNX exporter, the tracer, module objects, the interpreter, passes and archives.
// Argument conversion only; the Python side is python/ember/jit/.
#include <pybind11/stl.h>

#include <set>

#include "ember/autograd/node.h"
#include "ember/jit/archive.h"
#include "ember/jit/interpreter.h"
#include "ember/jit/ir.h"
#include "ember/jit/object.h"
#include "ember/jit/operator.h"
#include "ember/jit/passes.h"
#include "ember/jit/tracer.h"
#include "ember/python/bind.h"

namespace ember::python {
namespace {

using jit::Block;
using jit::Graph;
using jit::IValue;
using jit::Node;
using jit::Object;
using jit::TypePtr;
using jit::Value;

// ---- IValue <-> Python --------------------------------------------------------------------

struct JitObjectRef {  // a module object handed to Python
  std::shared_ptr<Object> obj;
};

IValue jit_to_ivalue(py::handle h);

TypePtr jit_list_elem_type(const std::vector<IValue>& items) {
  using K = jit::Type::Kind;
  if (items.empty()) return jit::Type::get(K::Any);
  TypePtr t = jit::type_of(items[0]);
  for (const IValue& v : items)
    if (*jit::type_of(v) != *t) return jit::Type::get(K::Any);
  return t;
}

IValue jit_to_ivalue(py::handle h) {
  if (h.is_none()) return IValue();
  Tensor* t;
  if (as_tensor(h, t)) return IValue(*t);
  if (PyBool_Check(h.ptr())) return IValue(h.ptr() == Py_True);
  if (PyLong_Check(h.ptr())) return IValue(int64_t(h.cast<int64_t>()));
  if (PyFloat_Check(h.ptr())) return IValue(h.cast<double>());
  if (PyUnicode_Check(h.ptr())) return IValue(h.cast<std::string>());
  if (py::isinstance<PyDType>(h)) return IValue(h.cast<PyDType&>().dtype);
  if (py::isinstance<PyDevice>(h)) return IValue(h.cast<PyDevice&>().device);
  if (py::isinstance<JitObjectRef>(h)) return IValue(h.cast<JitObjectRef&>().obj);
  if (PyTuple_Check(h.ptr())) {
    std::vector<IValue> items;
    for (py::handle x : h) items.push_back(jit_to_ivalue(x));
    return IValue::tuple(std::move(items));
  }
  if (PyList_Check(h.ptr())) {
    std::vector<IValue> items;
    for (py::handle x : h) items.push_back(jit_to_ivalue(x));
    TypePtr elem = jit_list_elem_type(items);
    return IValue::list(elem, std::move(items));
  }
  // A ScriptModule passes its C++ object.
  if (py::hasattr(h, "_c") && py::isinstance<JitObjectRef>(h.attr("_c")))
    return IValue(h.attr("_c").cast<JitObjectRef&>().obj);
  raise(ErrorKind::Type, "ember.jit: cannot pass a value of type ", type_name(h),
        " to a graph (tensors, numbers, bools, strings, None, dtypes, devices, lists and tuples)");
}

py::object jit_from_ivalue(const IValue& v) {
  switch (v.tag()) {
    case IValue::Tag::None:
      return py::none();
    case IValue::Tag::Tensor:
      return v.toTensor().defined() ? wrap(v.toTensor()) : py::none();
    case IValue::Tag::Double:
      return py::float_(v.toDouble());
    case IValue::Tag::Int:
      return py::int_(v.toInt());
    case IValue::Tag::Bool:
      return py::bool_(v.toBool());
    case IValue::Tag::String:
      return py::str(v.toStringRef());
    case IValue::Tag::Device:
      return device_object(v.toDevice());
    case IValue::Tag::DType:
      return dtype_object(v.toDType());
    case IValue::Tag::List: {
      py::list l;
      for (const IValue& x : v.toListRef()) l.append(jit_from_ivalue(x));
      return l;
    }
    case IValue::Tag::Tuple: {
      const auto& items = v.toTupleRef();
      py::tuple t(items.size());
      for (size_t i = 0; i < items.size(); ++i) t[i] = jit_from_ivalue(items[i]);
      return t;
    }
    case IValue::Tag::Object:
      return py::cast(JitObjectRef{v.toObject()});
  }
  return py::none();
}

// ---- graph handles ----------------------------------------------------------------------------

struct JitGraph {
  std::shared_ptr<Graph> g;
};
struct JitValue {
  std::shared_ptr<Graph> g;
  Value* v;
};
struct JitNode {
  std::shared_ptr<Graph> g;
  Node* n;
};
struct JitBlock {
  std::shared_ptr<Graph> g;
  Block* b;
};

py::list jit_values_list(const std::shared_ptr<Graph>& g, const std::vector<Value*>& vs) {
  py::list l;
  for (Value* v : vs) l.append(JitValue{g, v});
  return l;
}

TypePtr jit_type_arg(const std::string& s) { return jit::parse_type(s); }

void bind_jit_graph(py::module_& m) {
  py::class_<JitGraph>(m, "_jit_Graph")
      .def(py::init([] { return JitGraph{std::make_shared<Graph>()}; }))
      .def(
          "str", [](const JitGraph& g, bool src) { return g.g->str(src); },
          py::arg("print_source") = true)
      .def("__str__", [](const JitGraph& g) { return g.g->str(true); })
      .def("__repr__", [](const JitGraph& g) { return g.g->str(true); })
      .def("inputs", [](const JitGraph& g) { return jit_values_list(g.g, g.g->inputs()); })
      .def("outputs", [](const JitGraph& g) { return jit_values_list(g.g, g.g->outputs()); })
      .def("block", [](const JitGraph& g) { return JitBlock{g.g, g.g->block()}; })
      .def("nodes",
           [](const JitGraph& g) {
             py::list l;
             for (Node* n : *g.g->block()) l.append(JitNode{g.g, n});
             return l;
           })
      .def(
          "add_input",
          [](JitGraph& g, const std::string& type, const std::string& name) {
            return JitValue{g.g, g.g->add_input(jit_type_arg(type), name)};
          },
          py::arg("type"), py::arg("name") = "")
      .def("register_output", [](JitGraph& g, const JitValue& v) { g.g->register_output(v.v); })
      .def("constant",
           [](JitGraph& g, py::handle value) {
             return JitValue{g.g, g.g->insert_constant(jit_to_ivalue(value))};
           })
      .def("create",
           [](JitGraph& g, const std::string& kind, const std::vector<JitValue>& inputs,
              size_t n_outputs) {
             Node* n = g.g->create(kind, n_outputs);
             for (const JitValue& v : inputs) n->add_input(v.v);
             return JitNode{g.g, n};
           })
      .def("create_op",
           [](JitGraph& g, const std::string& qualified, const std::vector<JitValue>& inputs) {
             const jit::Operator* op = jit::get_operator(qualified);
             EMBER_CHECK(inputs.size() == op->num_inputs(), "ember.jit: ", qualified, " takes ",
                         op->num_inputs(), " arguments, got ", inputs.size());
             Node* n = g.g->create_op(op);
             for (const JitValue& v : inputs) n->add_input(v.v);
             return JitNode{g.g, n};
           })
      .def("insert",
           [](JitGraph& g, const JitNode& n) {
             g.g->insert(n.n);
             return n;
           })
      .def("set_insert_point_end",
           [](JitGraph& g, const JitBlock& b) { g.g->set_insert_point(b.b->ret()); })
      .def("set_insert_point_before",
           [](JitGraph& g, const JitNode& n) { g.g->set_insert_point(n.n); })
      .def("copy", [](const JitGraph& g) { return JitGraph{g.g->copy()}; })
      .def("lint", [](const JitGraph& g) { g.g->lint(); });

  py::class_<JitValue>(m, "_jit_Value")
      .def_property_readonly("name", [](const JitValue& v) { return v.v->debug_name(); })
      .def("set_name", [](JitValue& v, const std::string& n) { v.v->set_name(n); })
      .def_property_readonly("has_name", [](const JitValue& v) { return v.v->has_name(); })
      .def_property_readonly("type", [](const JitValue& v) { return v.v->type->annotation(); })
      .def_property_readonly("type_str", [](const JitValue& v) { return v.v->type->str(); })
      .def_property_readonly("dtype",
                             [](const JitValue& v) -> py::object {
                               if (v.v->type->dtype) return dtype_object(*v.v->type->dtype);
                               return py::none();
                             })
      .def_property_readonly("sizes",
                             [](const JitValue& v) -> py::object {
                               if (v.v->type->sizes) return py::cast(*v.v->type->sizes);
                               return py::none();
                             })
      .def("set_type", [](JitValue& v, const std::string& t) { v.v->type = jit_type_arg(t); })
      .def("node", [](const JitValue& v) { return JitNode{v.g, v.v->node}; })
      .def_property_readonly("offset", [](const JitValue& v) { return v.v->offset; })
      .def_property_readonly("unique", [](const JitValue& v) { return v.v->unique; })
      .def_property_readonly("num_uses", [](const JitValue& v) { return v.v->uses.size(); })
      .def("uses",
           [](const JitValue& v) {
             py::list l;
             for (const jit::Use& u : v.v->uses)
               l.append(py::make_tuple(JitNode{v.g, u.user}, u.offset));
             return l;
           })
      .def("replace_all_uses_with",
           [](JitValue& v, const JitValue& w) { v.v->replace_all_uses_with(w.v); })
      .def("__eq__", [](const JitValue& a, const JitValue& b) { return a.v == b.v; })
      .def("__hash__", [](const JitValue& a) { return reinterpret_cast<intptr_t>(a.v); });

  py::class_<JitNode>(m, "_jit_Node")
      .def_property_readonly("kind", [](const JitNode& n) { return n.n->kind; })
      .def_property_readonly("qualified_name",
                             [](const JitNode& n) -> py::object {
                               if (n.n->op) return py::str(n.n->op->qualified_name());
                               return py::none();
                             })
      .def_property_readonly("schema",
                             [](const JitNode& n) -> py::object {
                               if (n.n->op) return py::str(n.n->op->schema.str());
                               return py::none();
                             })
      .def("inputs", [](const JitNode& n) { return jit_values_list(n.g, n.n->inputs()); })
      .def("outputs", [](const JitNode& n) { return jit_values_list(n.g, n.n->outputs()); })
      .def(
          "output", [](const JitNode& n, size_t i) { return JitValue{n.g, n.n->output(i)}; },
          py::arg("i") = 0)
      .def("blocks",
           [](const JitNode& n) {
             py::list l;
             for (Block* b : n.n->blocks()) l.append(JitBlock{n.g, b});
             return l;
           })
      .def("add_block", [](JitNode& n) { return JitBlock{n.g, n.n->add_block()}; })
      .def("add_output",
           [](JitNode& n, const std::string& type) {
             return JitValue{n.g, n.n->add_output(jit_type_arg(type))};
           })
      .def("add_input", [](JitNode& n, const JitValue& v) { n.n->add_input(v.v); })
      .def("attrs",
           [](const JitNode& n) {
             py::dict d;
             for (const auto& [k, v] : n.n->attrs) d[py::str(k)] = jit_from_ivalue(v);
             return d;
           })
      .def("attr",
           [](const JitNode& n, const std::string& k) { return jit_from_ivalue(n.n->attr(k)); })
      .def("has_attr", [](const JitNode& n, const std::string& k) { return n.n->has_attr(k); })
      .def("set_attr", [](JitNode& n, const std::string& k,
                          py::handle v) { n.n->set_attr(k, jit_to_ivalue(v)); })
      .def_property(
          "source", [](const JitNode& n) { return n.n->source; },
          [](JitNode& n, const std::string& s) { n.n->source = s; })
      .def("destroy", [](JitNode& n) { n.n->destroy(); })
      .def("__eq__", [](const JitNode& a, const JitNode& b) { return a.n == b.n; })
      .def("__hash__", [](const JitNode& a) { return reinterpret_cast<intptr_t>(a.n); });

  py::class_<JitBlock>(m, "_jit_Block")
      .def("inputs", [](const JitBlock& b) { return jit_values_list(b.g, b.b->inputs()); })
      .def("outputs", [](const JitBlock& b) { return jit_values_list(b.g, b.b->outputs()); })
      .def("nodes",
           [](const JitBlock& b) {
             py::list l;
             for (Node* n : *b.b) l.append(JitNode{b.g, n});
             return l;
           })
      .def(
          "add_input",
          [](JitBlock& b, const std::string& type, const std::string& name) {
            return JitValue{b.g, b.b->add_input(jit_type_arg(type), name)};
          },
          py::arg("type"), py::arg("name") = "")
      .def("register_output", [](JitBlock& b, const JitValue& v) { b.b->register_output(v.v); });
}

// ---- the tracer ------------------------------------------------------------------------------

struct JitTracer {
  std::unique_ptr<jit::Tracer> t = std::make_unique<jit::Tracer>();
  std::vector<void*> saved;
};

// The local variable of the innermost frame outside ember's package (the traced code)
// that holds `t`, or "" (Tracer::variable_name_hook).
std::string jit_variable_name(const Tensor& t) {
  std::string name;
  if (!Py_IsInitialized()) return name;
  py::gil_scoped_acquire gil;  // the op's binding may have released it
  PyFrameObject* f = PyEval_GetFrame();
  if (f) Py_INCREF(f);
  while (f) {
    PyCodeObject* code = PyFrame_GetCode(f);
    std::string file = py::str(code->co_filename);
    Py_DECREF(code);
    if (file.find("/ember/") == std::string::npos || file.find("/tests/") != std::string::npos) {
      PyObject* locals = PyFrame_GetLocals(f);
      if (locals) {
        py::object l = py::reinterpret_steal<py::object>(locals);
        for (py::handle item : l.attr("items")()) {  // a dict, or 3.13's proxy
          py::tuple kv = py::reinterpret_borrow<py::tuple>(item);
          Tensor* x;
          if (PyUnicode_Check(kv[0].ptr()) && as_tensor(kv[1], x) && x->impl() == t.impl()) {
            name = py::str(kv[0]);
            break;
          }
        }
      } else {
        PyErr_Clear();
      }
      Py_DECREF(f);
      break;
    }
    PyFrameObject* back = PyFrame_GetBack(f);
    Py_DECREF(f);
    f = back;
  }
  return name;
}

void bind_jit_tracer(py::module_& m) {
  jit::install_untraced_message();
  jit::Tracer::location_hook = [] {
    return autograd::python_location_hook ? autograd::python_location_hook() : std::string();
  };
  jit::Tracer::variable_name_hook = &jit_variable_name;
  py::class_<JitTracer>(m, "_jit_Tracer")
      .def(py::init<>())
      .def("activate",
           [](JitTracer& p) {
             p.saved.push_back(trace_state::t_tracer);
             trace_state::t_tracer = p.t.get();
           })
      .def("deactivate",
           [](JitTracer& p) {
             EMBER_CHECK(!p.saved.empty(),
                         "ember.jit: tracer deactivated more often than activated");
             trace_state::t_tracer = p.saved.back();
             p.saved.pop_back();
           })
      .def("push_scope",
           [](JitTracer& p, const JitGraph& g, py::object self) {
             Value* s = self.is_none() ? nullptr : self.cast<JitValue&>().v;
             p.t->push_scope(g.g, s);
           })
      .def("pop_scope", [](JitTracer& p) { p.t->pop_scope(); })
      .def("set_value",
           [](JitTracer& p, const Tensor& t, const JitValue& v) { p.t->set_value(t, v.v); })
      .def("has_value", [](JitTracer& p, const Tensor& t) { return p.t->has_value(t); })
      .def("value_of",
           [](JitTracer& p, const Tensor& t) {
             return JitValue{p.t->scope().graph, p.t->value_of(t)};
           })
      .def("constant",
           [](JitTracer& p, py::handle v) {
             return JitValue{p.t->scope().graph, p.t->constant(jit_to_ivalue(v))};
           })
      .def("add_param",
           [](JitTracer& p, const Tensor& t, const std::string& path) { p.t->add_param(t, path); })
      .def("attr_value",
           [](JitTracer& p, const std::string& path) {
             return JitValue{p.t->scope().graph, p.t->attr_value(path)};
           })
      .def("graph", [](JitTracer& p) { return JitGraph{p.t->scope().graph}; })
      .def("keep", [](JitTracer& p, const Tensor& t) { p.t->keep_alive.push_back(t); })
      .def("location", [](JitTracer& p) { return p.t->location(); })
      .def("sym_size", [](JitTracer& p, const Tensor& t, int64_t d) { return p.t->sym_size(t, d); })
      .def("sym_constant", [](JitTracer& p, int64_t v) { return p.t->sym_constant(v); })
      .def("sym_tensor_op", [](JitTracer& p, const std::string& op,
                               const Tensor& t) { return p.t->sym_tensor_op(op, t); })
      .def("sym_op", [](JitTracer& p, const std::string& op, int64_t a, int64_t av, int64_t b,
                        int64_t bv, int64_t r) { return p.t->sym_op(op, a, av, b, bv, r); })
      .def("sym_value",
           [](JitTracer& p, int64_t h) { return JitValue{p.t->scope().graph, p.t->sym(h).value}; })
      .def("sym_scope", [](JitTracer& p, int64_t h) { return p.t->sym(h).scope; })
      .def("depth", [](JitTracer& p) { return p.t->depth(); })
      .def("set_pending",
           [](JitTracer& p, std::vector<std::pair<int64_t, int64_t>> ints) {
             p.t->set_pending(std::move(ints));
           })
      .def("flush_pending", [](JitTracer& p) { p.t->flush_pending(); })
      .def("guard_tensor_bool", [](JitTracer& p, const Tensor& t, bool v,
                                   const std::string& what) { p.t->guard_tensor_bool(t, v, what); })
      .def("guard_tensor_item",
           [](JitTracer& p, const Tensor& t, py::handle v, const std::string& what) {
             p.t->guard_tensor_item(t, jit_to_ivalue(v), what);
           })
      .def("guard_tensor_values",
           [](JitTracer& p, const Tensor& t, const std::string& what) {
             p.t->guard_tensor_values(t, what);
           })
      .def("guard_sym_compare",
           [](JitTracer& p, const std::string& op, int64_t a, int64_t av, int64_t b, int64_t bv,
              bool r,
              const std::string& what) { p.t->guard_sym_compare(op, a, av, b, bv, r, what); })
      .def("guard_sym_value",
           [](JitTracer& p, int64_t h, const std::string& what) { p.t->guard_sym_value(h, what); });
  m.def("_jit_is_tracing", [] { return trace_state::t_tracer != nullptr; });
  m.def("_jit_trace_depth", [] { return trace_state::t_depth; });
  m.def("_jit_pause_tracing", [] {
    void* t = trace_state::t_tracer;
    trace_state::t_tracer = nullptr;
    return reinterpret_cast<uintptr_t>(t);
  });
  m.def("_jit_resume_tracing",
        [](uintptr_t t) { trace_state::t_tracer = reinterpret_cast<void*>(t); });
}

// ---- module objects, functions, passes, archives
// --------------------------------------------------

std::vector<IValue> jit_ivalue_args(const py::tuple& args) {
  std::vector<IValue> out;
  out.reserve(args.size());
  for (py::handle a : args) out.push_back(jit_to_ivalue(a));
  return out;
}

void bind_jit_objects(py::module_& m) {
  using jit::ClassType;
  using jit::Function;
  py::class_<ClassType, std::shared_ptr<ClassType>>(m, "_jit_ClassType")
      .def(py::init([](const std::string& name) {
        auto c = std::make_shared<ClassType>();
        c->name = name;
        return c;
      }))
      .def_readonly("name", &ClassType::name)
      .def("add_attr",
           [](ClassType& c, const std::string& name, const std::string& type, bool param,
              bool module) { return c.add_attr(name, jit_type_arg(type), param, module); })
      .def("attr_names", [](const ClassType& c) { return c.attr_names; })
      .def("attr_kinds",
           [](const ClassType& c) {
             std::vector<std::string> k;
             for (size_t i = 0; i < c.attr_names.size(); ++i)
               k.push_back(c.is_module[i]      ? "module"
                           : c.is_parameter[i] ? "parameter"
                                               : "attribute");
             return k;
           })
      .def("attr_type",
           [](const ClassType& c, const std::string& n) {
             int s = c.slot(n);
             EMBER_CHECK(s >= 0, "ember.jit: class ", c.name, " has no attribute ", n);
             return c.attr_types[size_t(s)]->annotation();
           })
      .def("add_method",
           [](ClassType& c, const std::string& name, const JitGraph& g) {
             auto f = std::make_shared<Function>();
             f->name = name;
             f->graph = g.g;
             c.methods[name] = f;
           })
      .def("method_names",
           [](const ClassType& c) {
             std::vector<std::string> n;
             for (const auto& [k, v] : c.methods) n.push_back(k);
             return n;
           })
      .def("has_method",
           [](const ClassType& c, const std::string& n) { return c.methods.count(n) > 0; });

  py::class_<JitObjectRef>(m, "_jit_Object")
      .def(py::init([](std::shared_ptr<ClassType> c) {
        auto o = std::make_shared<Object>();
        o->type = c;
        o->slots.resize(c->attr_names.size());
        return JitObjectRef{o};
      }))
      .def_property_readonly("type", [](const JitObjectRef& r) { return r.obj->type; })
      .def_property_readonly("type_name", [](const JitObjectRef& r) { return r.obj->type->name; })
      .def_property(
          "training", [](const JitObjectRef& r) { return r.obj->training; },
          [](JitObjectRef& r, bool t) { r.obj->training = t; })
      .def_property(
          "original_name", [](const JitObjectRef& r) { return r.obj->original_name; },
          [](JitObjectRef& r, const std::string& n) { r.obj->original_name = n; })
      .def("grow", [](JitObjectRef& r) { r.obj->slots.resize(r.obj->type->attr_names.size()); })
      .def("get_attr", [](const JitObjectRef& r,
                          const std::string& n) { return jit_from_ivalue(r.obj->attr(n)); })
      .def("set_attr",
           [](JitObjectRef& r, const std::string& n, py::handle v) {
             r.obj->slots.resize(r.obj->type->attr_names.size());
             r.obj->set_attr(n, jit_to_ivalue(v));
           })
      .def("has_attr",
           [](const JitObjectRef& r, const std::string& n) { return r.obj->has_attr(n); })
      .def("run_method",
           [](JitObjectRef& r, const std::string& name, py::tuple args) {
             std::vector<IValue> in = jit_ivalue_args(args);
             IValue out;
             {
               py::gil_scoped_release nogil;
               out = jit::run_method(r.obj, name, std::move(in));
             }
             return jit_from_ivalue(out);
           })
      .def("method_graph",
           [](const JitObjectRef& r, const std::string& name) {
             return JitGraph{r.obj->method(name)->graph};
           })
      .def("set_method_graph", [](JitObjectRef& r, const std::string& name,
                                  const JitGraph& g) { r.obj->method(name)->set_graph(g.g); })
      .def("optimized_graph",
           [](JitObjectRef& r, const std::string& name) {
             return JitGraph{jit::optimized_graph(*r.obj->method(name), r.obj)};
           })
      .def("inlined_graph",
           [](JitObjectRef& r, const std::string& name) {
             auto g = r.obj->method(name)->graph->copy();
             jit::inline_methods(*g, r.obj);
             return JitGraph{g};
           })
      .def("reset_code",
           [](JitObjectRef& r) {
             // Forget every compiled method of this object's tree (after train()/eval() or a
             // submodule swap); they are rebuilt on the next call.
             std::vector<std::shared_ptr<Object>> todo{r.obj};
             std::set<const Object*> seen;
             while (!todo.empty()) {
               auto o = todo.back();
               todo.pop_back();
               if (!seen.insert(o.get()).second) continue;
               for (auto& [k, f] : o->type->methods) f->set_graph(f->graph);
               for (const IValue& s : o->slots)
                 if (s.is_object()) todo.push_back(s.toObject());
             }
           })
      .def("same", [](const JitObjectRef& a, const JitObjectRef& b) { return a.obj == b.obj; })
      .def(
          "save",
          [](const JitObjectRef& r, const std::string& path,
             const std::map<std::string, std::string>& extra) {
            jit::save_module(r.obj, path, extra);
          },
          py::arg("path"), py::arg("extra_files") = std::map<std::string, std::string>())
      .def(
          "save_to_bytes",
          [](const JitObjectRef& r, const std::map<std::string, std::string>& extra) {
            return py::bytes(jit::serialize_module(r.obj, extra));
          },
          py::arg("extra_files") = std::map<std::string, std::string>());

  py::class_<Function, std::shared_ptr<Function>>(m, "_jit_Function")
      .def(py::init([](const std::string& name, const JitGraph& g) {
        auto f = std::make_shared<Function>();
        f->name = name;
        f->graph = g.g;
        return f;
      }))
      .def_readonly("name", &Function::name)
      .def_property_readonly("graph", [](const Function& f) { return JitGraph{f.graph}; })
      .def("set_graph", [](Function& f, const JitGraph& g) { f.set_graph(g.g); })
      .def("optimized_graph",
           [](Function& f) { return JitGraph{jit::optimized_graph(f, nullptr)}; })
      .def("__call__",
           [](Function& f, py::args args) {
             std::vector<IValue> in = jit_ivalue_args(args);
             IValue out;
             {
               py::gil_scoped_release nogil;
               out = jit::run_function(f, std::move(in));
             }
             return jit_from_ivalue(out);
           })
      .def(
          "save",
          [](const Function& f, const std::string& path,
             const std::map<std::string, std::string>& extra) {
            jit::save_function(f, path, extra);
          },
          py::arg("path"), py::arg("extra_files") = std::map<std::string, std::string>());

  m.def("_jit_load", [](const std::string& path, py::object device) {
    std::optional<Device> d;
    if (!device.is_none()) d = device_arg(device);
    jit::Archive a = jit::load_archive(path, d);
    py::object what = a.module ? py::cast(JitObjectRef{a.module}) : py::cast(a.function);
    return py::make_tuple(what, a.extra_files);
  });
  m.def("_jit_load_bytes", [](py::bytes data, py::object device) {
    std::optional<Device> d;
    if (!device.is_none()) d = device_arg(device);
    jit::Archive a = jit::deserialize(std::string(data), d, "the given bytes");
    py::object what = a.module ? py::cast(JitObjectRef{a.module}) : py::cast(a.function);
    return py::make_tuple(what, a.extra_files);
  });
  m.def("_jit_file_format", &jit::file_format);

  // passes
  m.def("_jit_pass_inline",
        [](JitGraph& g, const JitObjectRef& self) { jit::inline_methods(*g.g, self.obj); });
  m.def("_jit_pass_dce", [](JitGraph& g) { jit::eliminate_dead_code(*g.g); });
  m.def("_jit_pass_cse", [](JitGraph& g) { jit::eliminate_common_subexpressions(*g.g); });
  m.def("_jit_pass_constant_fold", [](JitGraph& g) { jit::fold_constants(*g.g); });
  m.def("_jit_pass_remove_noops", [](JitGraph& g) { jit::remove_noops(*g.g); });
  m.def("_jit_pass_optimize", [](JitGraph& g) { jit::optimize(*g.g); });
  m.def("_jit_pass_freeze",
        [](JitGraph& g, const JitObjectRef& self) { jit::freeze_attributes(*g.g, self.obj); });
  m.def("_jit_register_pass", [](const std::string& name, py::function f) {
    // A Python pass (tests, prototypes): called with the graph under the GIL.
    auto keep = std::make_shared<py::function>(std::move(f));
    jit::register_graph_pass(name, [keep](Graph& g) {
      py::gil_scoped_acquire gil;
      std::shared_ptr<Graph> alias(&g, [](Graph*) {});
      (*keep)(JitGraph{alias});
    });
  });
  m.def("_jit_unregister_pass", &jit::unregister_graph_pass);

  // the operator registry
  m.def("_jit_operators", [] {
    py::list l;
    for (const jit::Operator* op : jit::all_operators()) {
      const char* eff = op->effect == jit::Effect::Pure     ? "pure"
                        : op->effect == jit::Effect::Random ? "random"
                                                            : "mutates";
      l.append(py::make_tuple(op->qualified_name(), op->schema.str(), op->version, eff));
    }
    return l;
  });
  m.def("_jit_operator_schema", [](const std::string& q) {
    const jit::Operator* op = jit::get_operator(q);
    py::list args;
    for (const jit::Argument& a : op->schema.arguments) {
      py::object dflt =
          a.default_value ? jit_from_ivalue(*a.default_value) : py::object(py::ellipsis());
      args.append(py::make_tuple(a.name, a.type->annotation(), dflt, a.kwarg_only, a.list_size));
    }
    py::list rets;
    for (const jit::Argument& r : op->schema.returns) rets.append(r.type->annotation());
    return py::make_tuple(args, rets);
  });
  m.def("_jit_registration_errors", &jit::registration_errors);
  m.def("_jit_parse_schema", [](const std::string& s) { return jit::parse_schema(s).str(); });
}

}  // namespace

void init_jit(py::module_& m) {
  bind_jit_graph(m);
  bind_jit_tracer(m);
  bind_jit_objects(m);
}

}  // namespace ember::python
