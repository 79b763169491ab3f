// Bindings of autograd: Tensor.requires_grad / grad / grad_fn / backward /
// hooks, grad modes, the engine entry points, graph nodes, and the node type
// behind ember.autograd.Function.
#include <cctype>
#include <unordered_map>
#include "ember/python/bind.h"  // first: Python.h before frameobject.h

#include <frameobject.h>

#include "ember/autograd/engine.h"
#include "ember/autograd/functions.h"
#include "ember/autograd/grad_mode.h"
#include "ember/core/sparse.h"
#include "ember/ops/ops.h"
#include "ember/ops/view.h"

namespace ember::python {

using autograd::Node;
using autograd::variable_list;

namespace {

// Python-visible handle on a graph node.
struct PyNode {
  std::shared_ptr<Node> node;
};

// Clears the node's back-pointer when its Python wrapper dies.
struct PyNodeDeleter {
  void operator()(PyNode* p) const {
    if (p->node) p->node->pyobj = nullptr;
    delete p;
  }
};

// Note [Node types]: every node kind is its own Python type named as in PyTorch
// (type(y.grad_fn).__name__ == "MulBackward0"), a subclass of _C._Node made on
// first use and cached by name. The wrapper is constructed as an instance of that
// subclass: _Node's (private) __init__ takes the node parked in g_pending_node.
std::shared_ptr<Node> g_pending_node;

py::object node_type(const std::string& name) {
  static py::dict* cache = new py::dict();  // lives as long as the interpreter
  py::str key(name);
  if (cache->contains(key)) return (*cache)[key];
  py::object base = py::module_::import("ember._C").attr("_Node");
  py::dict ns;
  ns["__module__"] = "ember.autograd.graph";
  py::object t = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(&PyType_Type))(
      key, py::make_tuple(base), ns);
  (*cache)[key] = t;
  return t;
}

// One Python object per live node, so graph walks can use `is`.
py::object node_object(const std::shared_ptr<Node>& n) {
  if (!n) return py::none();
  if (n->pyobj) return py::reinterpret_borrow<py::object>(static_cast<PyObject*>(n->pyobj));
  std::string name = n->name();
  bool ident = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0]));
  for (char c : name) ident = ident && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  py::object o;
  if (ident) {
    g_pending_node = n;
    o = node_type(name)();
    g_pending_node.reset();
  } else {
    o = py::cast(PyNode{n});
  }
  n->pyobj = o.ptr();
  return o;
}

// Node.metadata: a dict per live node, kept beside the node (not its wrapper) so
// it survives the wrapper; entries of dead nodes are purged as the map grows.
py::dict node_metadata(const std::shared_ptr<Node>& n) {
  static auto* table = new std::unordered_map<Node*, std::pair<std::weak_ptr<Node>, py::dict>>();
  static size_t purge_at = 64;
  auto it = table->find(n.get());
  if (it != table->end() && it->second.first.lock() == n) return it->second.second;
  if (table->size() >= purge_at) {
    for (auto i = table->begin(); i != table->end();)
      i = i->second.first.expired() ? table->erase(i) : std::next(i);
    purge_at = std::max<size_t>(64, table->size() * 2);
  }
  py::dict d;
  (*table)[n.get()] = {n, d};
  return d;
}

// Converts Python values to tensors for the engine (None -> undefined).
Tensor tensor_or_undefined(py::handle h, const char* what) {
  if (h.is_none()) return Tensor();
  Tensor* t;
  if (as_tensor(h, t)) return *t;
  raise(ErrorKind::Type, what, " must be a Tensor or None, not ", type_name(h));
}

std::vector<Tensor> autograd_tensor_list(py::handle h, const char* what) {
  std::vector<Tensor> out;
  Tensor* t;
  if (as_tensor(h, t)) {
    out.push_back(*t);
    return out;
  }
  for (py::handle e : py::reinterpret_borrow<py::iterable>(h))
    out.push_back(tensor_or_undefined(e, what));
  return out;
}

// "file.py:12 (in function)" of the innermost frame outside the ember package.
std::string python_location() {
  if (!Py_IsInitialized()) return std::string();
  PyGILState_STATE st = PyGILState_Ensure();
  std::string where;
  PyFrameObject* f = PyEval_GetFrame();
  if (f) Py_INCREF(f);
  while (f) {
    PyCodeObject* code = PyFrame_GetCode(f);
    std::string file = py::str(code->co_filename);
    int line = PyFrame_GetLineNumber(f);
    std::string fn = py::str(code->co_name);
    Py_DECREF(code);
    if (file.find("/ember/") == std::string::npos || file.find("/tests/") != std::string::npos) {
      where = file + ":" + std::to_string(line) + " (in " + fn + ")";
      Py_DECREF(f);
      break;
    }
    PyFrameObject* back = PyFrame_GetBack(f);
    Py_DECREF(f);
    f = back;
  }
  PyGILState_Release(st);
  return where;
}

void anomaly_record(Node& n) {
  PyGILState_STATE st = PyGILState_Ensure();
  try {
    py::object tb = py::module_::import("traceback").attr("format_stack")();
    n.trace = py::str("").attr("join")(tb).cast<std::string>();
  } catch (py::error_already_set&) {
  }
  PyGILState_Release(st);
}

void anomaly_report(const Node& n) {
  PyGILState_STATE st = PyGILState_Ensure();
  {
    py::object warn = py::module_::import("warnings").attr("warn");
    std::string msg =
        "Error detected in " + n.name() + ". Traceback of forward call that caused the error:\n" +
        (n.trace.empty()
             ? std::string(
                   "  (not recorded: the node was created before anomaly mode was enabled)\n")
             : n.trace);
    warn(msg, py::module_::import("builtins").attr("UserWarning"), 2);
  }
  PyGILState_Release(st);
}

// A hook calling a Python function; removal disables it (handle.remove()).
// "ember.FloatTensor" / "ember.cuda.FloatTensor": PyTorch's names in hook messages.
std::string hook_type_name(const Tensor& t) {
  std::string s = legacy_type_name(t.dtype());
  return t.device().is_cpu() ? s : "ember.cuda." + s.substr(6);
}

std::string hook_name(const py::object& fn) {
  return py::hasattr(fn, "__name__") ? py::str(fn.attr("__name__")).cast<std::string>()
                                     : std::string("hook");
}

// Every hook's replacement gradient must keep the gradient's dtype, device and shape
// (PyTorch's check_variable_result): a hook returning (g * 2.5).long() used to turn
// x.grad into an int64 tensor.
void check_hook_value(const Tensor& original, const Tensor& result, const std::string& name) {
  EMBER_CHECK(result.dtype() == original.dtype() && result.device() == original.device(), "hook '",
              name, "' has changed the type of value (was ", hook_type_name(original), " got ",
              hook_type_name(result), ")");
  EMBER_CHECK(result.sizes() == original.sizes(), "hook '", name,
              "' has changed the size of value (was ", shape_str(original.sizes()), " got ",
              shape_str(result.sizes()), ")");
}

struct PyHook {
  py::object fn;
  std::shared_ptr<bool> alive = std::make_shared<bool>(true);
  Tensor operator()(const Tensor& g) const {
    if (!*alive) return Tensor();
    py::gil_scoped_acquire gil;
    py::object r = fn(g);
    if (r.is_none()) return Tensor();
    Tensor* t;
    EMBER_CHECK_TYPE(as_tensor(r, t), "hook returned an object of type ", type_name(r),
                     "; a hook must return None or a Tensor");
    check_hook_value(g, *t, hook_name(fn));
    return *t;
  }
};

// A Python callable a node keeps: released under the GIL whenever the node dies.
std::shared_ptr<py::object> held(py::object fn) {
  return std::shared_ptr<py::object>(new py::object(std::move(fn)), [](py::object* p) {
    if (Py_IsInitialized()) {
      py::gil_scoped_acquire gil;
      delete p;
    } else {
      p->release();
      delete p;
    }
  });
}

// Gradients as the tuple a node hook receives (None where undefined).
py::tuple grads_tuple(const variable_list& gs) {
  py::tuple t(gs.size());
  for (size_t i = 0; i < gs.size(); ++i) t[i] = gs[i].defined() ? wrap(gs[i]) : py::none();
  return t;
}

// A node hook's return value: None keeps `given` (empty result), else a sequence of
// as many Tensors-or-None, as PyTorch checks.
variable_list hook_result(const py::object& r, const variable_list& given, const py::object& fn) {
  if (r.is_none()) return {};
  std::string name = hook_name(fn);
  EMBER_CHECK_TYPE(py::isinstance<py::tuple>(r) || py::isinstance<py::list>(r),
                   "expected tuple, but hook returned '", type_name(r), "'");
  EMBER_CHECK(py::len(r) == given.size(), "hook '", name,
              "' has returned an incorrect number of values (got ", py::len(r), ", but expected ",
              given.size(), ")");
  variable_list out(given.size());
  for (size_t i = 0; i < given.size(); ++i) {
    py::handle v = r[py::int_(i)];
    if (v.is_none()) continue;
    Tensor* t;
    EMBER_CHECK_TYPE(as_tensor(v, t), "expected Variable, but hook returned '", type_name(v), "'");
    if (given[i].defined()) check_hook_value(given[i], *t, name);
    out[i] = *t;
  }
  return out;
}

struct HookHandle {
  std::shared_ptr<bool> alive;
  void remove() { *alive = false; }
};

// The node behind ember.autograd.Function: backward calls back into Python.
struct PyFunctionNode : Node {
  std::string name_;
  py::object backward;  // callable(*grads) -> tuple of grads (one per forward input)
  py::object on_release;
  size_t n_inputs = 0;
  ~PyFunctionNode() override {
    if (Py_IsInitialized()) {
      py::gil_scoped_acquire gil;
      backward = py::object();
      on_release = py::object();
    }
  }
  std::string name() const override { return name_; }
  void release_variables() override {
    released = true;
    py::gil_scoped_acquire gil;
    if (on_release) on_release();
  }
  variable_list apply(variable_list&& grads) override {
    py::gil_scoped_acquire gil;
    py::tuple args(grads.size());
    for (size_t i = 0; i < grads.size(); ++i)
      args[i] = grads[i].defined() ? wrap(grads[i]) : py::none();
    py::object r = backward(*args);
    if (!PyTuple_Check(r.ptr())) r = py::make_tuple(r);
    py::tuple rt = r;
    EMBER_CHECK(rt.size() >= n_inputs, "function ", name_,
                " returned an incorrect number of gradients (expected ", n_inputs, ", got ",
                rt.size(), ")");
    variable_list out(n_inputs);
    for (size_t i = 0; i < n_inputs; ++i) {
      if (rt[i].is_none()) continue;
      Tensor* t;
      EMBER_CHECK_TYPE(as_tensor(rt[i], t), "function ", name_, " returned a gradient of type ",
                       type_name(rt[i]), " at index ", i, "; expected a Tensor or None");
      if (next_edges[i].valid()) out[i] = *t;
    }
    for (size_t i = n_inputs; i < rt.size(); ++i)
      EMBER_CHECK(rt[i].is_none(), "function ", name_,
                  " returned an incorrect number of gradients (expected ", n_inputs, ", got ",
                  rt.size(), ")");
    return out;
  }
};

Tensor grad_of(const Tensor& t) {
  auto* m = autograd::meta(t);
  return m ? m->grad : Tensor();
}

// Graph nodes as Python objects (Note [Node types]) and hook handles.
void bind_nodes(py::module_& m) {
  py::class_<HookHandle>(m, "_HookHandle").def("remove", &HookHandle::remove);

  py::class_<PyNode, std::unique_ptr<PyNode, PyNodeDeleter>>(m, "_Node")
      .def(py::init([]() {
        EMBER_CHECK_TYPE(g_pending_node,
                         "cannot create autograd graph nodes directly; they come from grad_fn");
        return std::unique_ptr<PyNode, PyNodeDeleter>(new PyNode{std::move(g_pending_node)});
      }))
      .def("name", [](const PyNode& n) { return n.node->name(); })
      .def_property_readonly("next_functions",
                             [](const PyNode& n) {
                               py::tuple t(n.node->next_edges.size());
                               for (size_t i = 0; i < n.node->next_edges.size(); ++i) {
                                 const auto& e = n.node->next_edges[i];
                                 t[i] = py::make_tuple(node_object(e.fn), e.input_nr);
                               }
                               return t;
                             })
      .def_property_readonly("variable",
                             [](const PyNode& n) -> py::object {
                               auto* acc = dynamic_cast<autograd::AccumulateGrad*>(n.node.get());
                               if (!acc)
                                 throw py::attribute_error("'" + n.node->name() +
                                                           "' object has no attribute 'variable'");
                               Tensor v = acc->variable();
                               return v.defined() ? wrap(v) : py::none();
                             })
      .def_property_readonly("_sequence_nr", [](const PyNode& n) { return n.node->sequence_nr; })
      .def_property_readonly("metadata", [](const PyNode& n) { return node_metadata(n.node); })
      // The saved tensors of a formula node in save order (None where nothing was saved);
      // raises PyTorch's error once they were freed by backward.
      .def(
          "_saved_values",
          [](const PyNode& n) {
            auto* ln = dynamic_cast<autograd::LambdaNode*>(n.node.get());
            py::list out;
            if (!ln) return out;
            for (size_t i = 0; i < ln->saved.size(); ++i) {
              EMBER_CHECK(
                  !ln->released,
                  "Trying to backward through the graph a second time (or directly access saved "
                  "tensors after they have already been freed). Saved intermediate values of the "
                  "graph are freed when you call .backward() or autograd.grad(). Specify "
                  "retain_graph=True if you need to backward through the graph a second time or if "
                  "you need to access saved tensors after calling backward.");
              if (!ln->saved[i].defined()) {
                out.append(py::none());
                continue;
              }
              Tensor t = ln->saved[i].unpack(n.node);
              out.append(t.defined() ? wrap(t) : py::none());
            }
            return out;
          })
      .def("_released", [](const PyNode& n) { return n.node->released; })
      // Node hooks (PyTorch's Node.register_prehook / register_hook): fn gets tuples of
      // gradients (None where undefined) and may return a tuple replacing them.
      .def("register_prehook",
           [](const PyNode& n, py::object f) {
             auto alive = std::make_shared<bool>(true);
             auto fn = held(std::move(f));
             n.node->node_pre_hooks.push_back([fn, alive](const variable_list& grad_outputs) {
               if (!*alive) return variable_list();
               py::gil_scoped_acquire gil;
               return hook_result((*fn)(grads_tuple(grad_outputs)), grad_outputs, *fn);
             });
             return HookHandle{alive};
           })
      .def("register_hook",
           [](const PyNode& n, py::object f) {
             auto alive = std::make_shared<bool>(true);
             auto fn = held(std::move(f));
             n.node->post_hooks.push_back(
                 [fn, alive](const variable_list& grad_inputs, const variable_list& grad_outputs) {
                   if (!*alive) return variable_list();
                   py::gil_scoped_acquire gil;
                   return hook_result((*fn)(grads_tuple(grad_inputs), grads_tuple(grad_outputs)),
                                      grad_inputs, *fn);
                 });
             return HookHandle{alive};
           })
      .def("__repr__",
           [](const PyNode& n) {
             char buf[64];
             snprintf(buf, sizeof buf, " object at %p>", static_cast<void*>(n.node.get()));
             return "<" + n.node->name() + buf;
           })
      .def("__eq__",
           [](const PyNode& a, py::handle b) {
             return py::isinstance<PyNode>(b) && b.cast<PyNode&>().node == a.node;
           })
      .def("__hash__",
           [](const PyNode& n) { return reinterpret_cast<intptr_t>(n.node.get()) >> 4; });
}

// Tensor.requires_grad / is_leaf / grad / grad_fn and the view/inference queries.
void bind_tensor_grad_state(py::module_& m) {
  tensor_class(m)
      .def_property(
          "requires_grad", [](const Tensor& t) { return autograd::requires_grad(t); },
          [](const Tensor& t, bool on) { autograd::set_requires_grad(t, on); })
      .def(
          "requires_grad_",
          [](py::handle self, bool on) {
            autograd::set_requires_grad(self.cast<Tensor&>(), on);
            return py::reinterpret_borrow<py::object>(self);
          },
          py::arg("requires_grad") = true)
      .def_property_readonly("is_leaf", [](const Tensor& t) { return autograd::is_leaf(t); })
      .def_property(
          "grad",
          [](const Tensor& t) -> py::object {
            if (!autograd::is_leaf(t) && !(autograd::meta(t) && autograd::meta(t)->retains_grad)) {
              PyErr_WarnEx(PyExc_UserWarning,
                           "The .grad attribute of a Tensor that is not a leaf Tensor is being "
                           "accessed. Its "
                           ".grad attribute won't be populated during autograd.backward(). If you "
                           "indeed want "
                           "the .grad field to be populated for a non-leaf Tensor, use "
                           ".retain_grad() on the "
                           "non-leaf Tensor.",
                           2);
            }
            Tensor g = grad_of(t);
            return g.defined() ? wrap(g) : py::none();
          },
          [](const Tensor& t, py::handle g) {
            if (g.is_none()) {
              if (auto* m = autograd::meta(t)) m->grad = Tensor();
              return;
            }
            Tensor* gt;
            EMBER_CHECK_TYPE(as_tensor(g, gt),
                             "assigned grad expected to be a Tensor or None but got grad of type ",
                             type_name(g));
            EMBER_CHECK(gt->dtype() == t.dtype(), "assigned grad has data of a different type (",
                        dtype_name(gt->dtype()), " vs ", dtype_name(t.dtype()), ")");
            EMBER_CHECK(gt->sizes() == t.sizes(), "assigned grad has data of a different size (",
                        shape_str(gt->sizes()), " vs ", shape_str(t.sizes()), ")");
            EMBER_CHECK(gt->device() == t.device(),
                        "assigned grad has data located on a different device");
            autograd::materialize_meta(t)->grad = *gt;
          })
      .def_property_readonly("grad_fn",
                             [](const Tensor& t) { return node_object(autograd::grad_fn(t)); })
      .def_property_readonly("output_nr",
                             [](const Tensor& t) {
                               auto* m = autograd::meta(t);
                               return m ? m->output_nr : 0u;
                             })
      .def_property_readonly("_base",
                             [](const Tensor& t) -> py::object {
                               auto* m = autograd::meta(t);
                               return m && m->is_view && m->base.defined() ? wrap(m->base)
                                                                           : py::none();
                             })
      .def_property_readonly("_is_view",
                             [](const Tensor& t) {
                               auto* m = autograd::meta(t);
                               return bool(m && m->is_view);
                             })
      .def("is_inference", [](const Tensor& t) { return t.impl()->inference; })
      .def_property_readonly("retains_grad", [](const Tensor& t) {
        auto* m = autograd::meta(t);
        return bool(m && m->retains_grad);
      });
}

// Tensor.retain_grad / register_hook / detach / detach_ / data.
void bind_tensor_hooks_and_data(py::module_& m) {
  tensor_class(m)
      .def("retain_grad",
           [](const Tensor& t) {
             EMBER_CHECK(autograd::requires_grad(t),
                         "can't retain_grad on Tensor that has requires_grad=False");
             if (autograd::is_leaf(t)) return;
             auto* m = autograd::materialize_meta(t);
             if (m->retains_grad) return;
             m->retains_grad = true;
             std::weak_ptr<TensorImpl> weak = t.impl_ptr();
             autograd::grad_fn(t)->pre_hooks.push_back(
                 {m->output_nr, [weak](const Tensor& g) {
                    auto impl = weak.lock();
                    if (!impl) return Tensor();
                    Tensor self(impl);
                    auto* mm = autograd::materialize_meta(self);
                    if (!mm->grad.defined())
                      mm->grad = autograd::grad_enabled() ? g : clone(autograd::detach(g));
                    else
                      mm->grad = binary(BinaryOp::add, mm->grad, g);
                    return Tensor();
                  }});
           })
      .def("register_hook",
           [](const Tensor& t, py::object fn) {
             EMBER_CHECK(autograd::requires_grad(t),
                         "cannot register a hook on a tensor that doesn't require gradient");
             PyHook h{fn};
             if (autograd::is_leaf(t)) {
               autograd::materialize_meta(t)->hooks.push_back(h);
             } else {
               auto* m = autograd::materialize_meta(t);
               autograd::grad_fn(t)->pre_hooks.push_back({m->output_nr, h});
             }
             return HookHandle{h.alive};
           })
      .def(
          "register_post_accumulate_grad_hook",
          [](const Tensor& t, py::object fn) {
            EMBER_CHECK(autograd::requires_grad(t),
                        "cannot register a hook on a tensor that doesn't require gradient");
            EMBER_CHECK(autograd::is_leaf(t),
                        "post accumulate grad hooks cannot be registered on non-leaf tensors");
            auto f = held(std::move(fn));
            autograd::PostAccumulateGradHook h;
            h.fn = [f](const Tensor& leaf) {
              py::gil_scoped_acquire gil;
              py::object r = (*f)(leaf);
              EMBER_CHECK(r.is_none(), "Tensor post accumulate grad hooks should return None.");
            };
            autograd::materialize_meta(t)->post_accumulate_hooks.push_back(h);
            return HookHandle{h.alive};
          },
          "Registers fn(tensor), run after the gradient was accumulated into this leaf's .grad "
          "during backward; returns a handle whose remove() unregisters it.")
      .def("detach", [](const Tensor& t) { return autograd::detach(t); })
      .def("detach_",
           [](py::handle self) {
             Tensor& t = self.cast<Tensor&>();
             auto* m = autograd::meta(t);
             EMBER_CHECK(
                 !(m && m->is_view && m->base.defined() && autograd::requires_grad(m->base)),
                 "Can't detach views in-place. Use detach() instead. If you are using "
                 "DistributedDataParallel "
                 "(DDP) for training, and gradient_as_bucket_view is set as True, gradients are "
                 "views of DDP "
                 "buckets, and hence detach_() cannot be called on these gradients. To fix this "
                 "error, please "
                 "refer to the Optimizer.zero_grad() function in torch/optim/optimizer.py as the "
                 "solution.");
             if (m) {
               m->grad_fn.reset();
               m->output_nr = 0;
             }
             t.impl()->requires_grad = false;
             return py::reinterpret_borrow<py::object>(self);
           })
      .def_property(
          "data",
          [](const Tensor& t) {
            Tensor d = alias(t, /*share_version=*/false);
            d.impl()->autograd.reset();
            d.impl()->requires_grad = false;
            return d;
          },
          [](const Tensor& t, const Tensor& src) {
            // Replace the data in place without touching autograd metadata (as `x.data = y`).
            // As torch's set_data: a cached AccumulateGrad (kept alive by an old graph) records
            // the leaf's dtype/device/shape, so drop it when they change (Module.double(), .to()).
            if (auto* m = autograd::meta(t)) {
              if (src.dtype() != t.dtype() || src.device() != t.device() ||
                  src.sizes() != t.sizes())
                m->grad_accumulator.reset();
            }
            TensorImpl* dst = t.impl();
            EMBER_CHECK(src.layout() == t.layout(),
                        "Attempted to call `variable.set_data(tensor)`, but `variable` and "
                        "`tensor` have incompatible tensor type.");
            if (src.is_sparse())
              dst->sparse = std::make_shared<SparseCooParts>(*src.impl()->sparse);
            dst->storage = src.storage();
            dst->sizes = src.sizes();
            dst->strides = src.strides();
            dst->offset = src.storage_offset();
            dst->numel = src.numel();
            dst->dtype = src.dtype();
            dst->version = src.impl()->version;
          });
}

// The engine entry points behind ember.autograd.backward and ember.autograd.grad.
void bind_engine(py::module_& m) {
  m.def("_autograd_backward", [](py::handle tensors, py::handle grads, bool keep_graph,
                                 bool create_graph, py::handle inputs) {
    std::vector<Tensor> roots = autograd_tensor_list(tensors, "tensors");
    std::vector<Tensor> gs = grads.is_none() ? std::vector<Tensor>(roots.size())
                                             : autograd_tensor_list(grads, "grad_tensors");
    EMBER_CHECK(gs.size() == roots.size(), "grad_tensors has ", gs.size(),
                " entries but tensors has ", roots.size());
    for (size_t i = 0; i < roots.size(); ++i) {
      EMBER_CHECK(autograd::requires_grad(roots[i]), "element ", i,
                  " of tensors does not require grad and does not have a grad_fn");
      if (!gs[i].defined()) {
        EMBER_CHECK(roots[i].numel() == 1,
                    "grad can be implicitly created only for scalar outputs");
        gs[i] = full(roots[i].sizes(), Scalar(1.0), roots[i].dtype(), roots[i].device());
      } else {
        EMBER_CHECK(gs[i].sizes() == roots[i].sizes(), "Mismatch in shape: grad_output[", i,
                    "] has a shape of ", shape_str(gs[i].sizes()), " and output[", i,
                    "] has a shape of ", shape_str(roots[i].sizes()), ".");
      }
    }
    autograd::BackwardOptions opts;
    opts.keep_graph = keep_graph;
    opts.create_graph = create_graph;
    if (!inputs.is_none()) {
      for (const Tensor& t : autograd_tensor_list(inputs, "inputs")) {
        EMBER_CHECK(autograd::requires_grad(t),
                    "One of the differentiated Tensors does not require grad");
        opts.inputs.push_back(autograd::gradient_edge(t));
      }
      EMBER_CHECK(!opts.inputs.empty(), "'inputs' argument to backward() cannot be empty.");
    }
    py::gil_scoped_release nogil;
    autograd::run_backward(roots, gs, opts);
  });

  m.def(
      "_queue_callback",
      [](py::object fn) {
        auto f = held(std::move(fn));
        autograd::queue_callback([f] {
          py::gil_scoped_acquire gil;
          (*f)();
        });
      },
      "Queues fn() to run when the backward pass now running ends (the engine's "
      "queue_callback); raises outside backward.");

  m.def("_autograd_grad", [](py::handle outputs, py::handle inputs, py::handle grad_outputs,
                             bool keep_graph, bool create_graph, bool allow_unused) {
    std::vector<Tensor> outs = autograd_tensor_list(outputs, "outputs");
    std::vector<Tensor> ins = autograd_tensor_list(inputs, "inputs");
    std::vector<Tensor> gs = grad_outputs.is_none()
                                 ? std::vector<Tensor>(outs.size())
                                 : autograd_tensor_list(grad_outputs, "grad_outputs");
    EMBER_CHECK(gs.size() == outs.size(), "grad requires one grad_output per output: got ",
                gs.size(), " grad_outputs for ", outs.size(), " outputs");
    for (size_t i = 0; i < outs.size(); ++i) {
      EMBER_CHECK(autograd::requires_grad(outs[i]), "element ", i,
                  " of tensors does not require grad and does not have a grad_fn");
      if (!gs[i].defined()) {
        EMBER_CHECK(outs[i].numel() == 1, "grad can be implicitly created only for scalar outputs");
        gs[i] = full(outs[i].sizes(), Scalar(1.0), outs[i].dtype(), outs[i].device());
      }
    }
    autograd::BackwardOptions opts;
    opts.keep_graph = keep_graph;
    opts.create_graph = create_graph;
    opts.accumulate = false;
    for (size_t i = 0; i < ins.size(); ++i) {
      EMBER_CHECK(autograd::requires_grad(ins[i]),
                  "One of the differentiated Tensors does not require grad");
      opts.inputs.push_back(autograd::gradient_edge(ins[i]));
    }
    variable_list res;
    {
      py::gil_scoped_release nogil;
      res = autograd::run_backward(outs, gs, opts);
    }
    py::tuple r(res.size());
    for (size_t i = 0; i < res.size(); ++i) {
      if (!res[i].defined()) {
        EMBER_CHECK(allow_unused,
                    "One of the differentiated Tensors appears to not have been used in the graph. "
                    "Set allow_unused=True if this is the desired behavior.");
        r[i] = py::none();
      } else {
        r[i] = wrap(res[i]);
      }
    }
    return r;
  });
}

// Grad mode, inference mode and anomaly mode switches.
void bind_modes(py::module_& m) {
  m.def("is_grad_enabled", [] { return autograd::grad_enabled(); });
  m.def("_set_grad_enabled", [](bool on) { autograd::set_grad_enabled(on); });
  m.def("_grad_mode_raw", [] {
    // The stored flag (grad_enabled() is also false inside inference mode).
    autograd::set_inference_mode(autograd::inference_mode());
    return autograd::grad_enabled();
  });
  m.def("is_inference_mode_enabled", [] { return autograd::inference_mode(); });
  m.def("_set_inference_mode", [](bool on) { autograd::set_inference_mode(on); });
  m.def("_set_detect_anomaly",
        [](bool on, bool check_nan) { autograd::set_anomaly_enabled(on, check_nan); });
  m.def("is_anomaly_enabled", [] { return autograd::anomaly_enabled(); });
  m.def("is_anomaly_check_nan_enabled", [] { return autograd::anomaly_check_nan(); });
}

// ember.autograd.Function support: builds the node after forward ran, plus the saved-
// tensor version checks.
void bind_function_support(py::module_& m) {
  m.def("_function_record",
        [](const std::string& name, py::object backward, py::object on_release, py::list inputs,
           py::list outputs, py::list non_differentiable, py::list dirty, bool materialize) {
          std::vector<Tensor> ins;
          for (py::handle h : inputs) ins.push_back(tensor_or_undefined(h, "input"));
          auto node = std::make_shared<PyFunctionNode>();
          node->name_ = name;
          node->backward = backward;
          node->on_release = on_release;
          node->n_inputs = ins.size();
          node->materialize_grads = materialize;
          node->next_edges = autograd::collect_next_edges(ins);
          std::vector<Tensor> nd;
          for (py::handle h : non_differentiable)
            nd.push_back(tensor_or_undefined(h, "non_differentiable"));
          std::vector<Tensor> dirt;
          for (py::handle h : dirty) dirt.push_back(tensor_or_undefined(h, "dirty"));
          uint32_t i = 0;
          for (py::handle h : outputs) {
            Tensor* t;
            if (!as_tensor(h, t)) {
              node->input_meta.push_back(autograd::InputMeta{});
              ++i;
              continue;
            }
            node->add_input_meta(*t);
            bool is_nd = false;
            for (auto& x : nd) is_nd |= x.is_same(*t);
            bool is_dirty = false;
            for (auto& x : dirt) is_dirty |= x.is_same(*t);
            if (!is_nd && is_floating(t->dtype())) {
              if (is_dirty) {
                autograd::check_inplace(*t, name.c_str());
                autograd::rebase_history(*t, node);
                if (i != 0) autograd::materialize_meta(*t)->output_nr = i;
              } else {
                autograd::set_history(*t, node, i);
              }
            }
            ++i;
          }
          return node_object(node);
        });
  m.def("_needs_grad", [](py::list inputs) {
    std::vector<Tensor> ins;
    for (py::handle h : inputs) {
      Tensor* t;
      if (as_tensor(h, t)) ins.push_back(*t);
    }
    return autograd::compute_requires_grad(ins);
  });
  m.def("_check_saved_version", [](const Tensor& t, uint32_t saved_version, const std::string& fn) {
    if (t.version() == saved_version) return;
    EMBER_ERROR(
        "one of the variables needed for gradient computation has been modified by an inplace "
        "operation: [",
        legacy_type_name(t.dtype()), " ", shape_str(t.sizes()), "], which is saved by ", fn,
        ", is at version ", t.version(), "; expected version ", saved_version,
        " instead. Hint: enable anomaly detection to find the operation that failed to compute its "
        "gradient, with ember.autograd.set_detect_anomaly(True).");
  });
  m.def("_watch_version", [](const Tensor& t) { t.impl()->version->watched = true; });
  m.def("_view_as_detached_alias", [](const Tensor& t) {
    // An alias sharing data and version counter, keeping autograd metadata (for saved outputs).
    return t;
  });
}

}  // namespace

void init_autograd(py::module_& m) {
  autograd::python_location_hook = &python_location;
  autograd::anomaly_record_hook = &anomaly_record;
  autograd::anomaly_report_hook = &anomaly_report;
  bind_nodes(m);
  bind_tensor_grad_state(m);
  bind_tensor_hooks_and_data(m);
  bind_engine(m);
  bind_modes(m);
  bind_function_support(m);
}

}  // namespace ember::python
