// See module.h.
#include "ember/jit/module.h"

#include <set>

#include "ember/autograd/grad_mode.h"
#include "ember/jit/archive.h"
#include "ember/jit/interpreter.h"
#include "ember/jit/ir.h"
#include "ember/ops/ops.h"

namespace ember::jit {

const Object& Module::checked() const {
  EMBER_CHECK(obj_, "ember::jit::Module: the module is empty (default-constructed; load one)");
  return *obj_;
}

IValue Module::run_method(const std::string& name, std::vector<IValue> inputs) const {
  checked();
  return jit::run_method(obj_, name, std::move(inputs));
}

bool Module::has_method(const std::string& name) const {
  return checked().type->methods.count(name) > 0;
}

namespace {
template <typename F>
void each_object(const std::shared_ptr<Object>& root, F&& f) {
  std::set<const Object*> seen;
  std::vector<std::shared_ptr<Object>> todo{root};
  while (!todo.empty()) {
    auto o = todo.back();
    todo.pop_back();
    if (!seen.insert(o.get()).second) continue;
    f(*o);
    for (const IValue& s : o->slots)
      if (s.is_object()) todo.push_back(s.toObject());
  }
}

void collect(const Object& o, const std::string& prefix, bool recurse, bool params,
             std::vector<std::pair<std::string, Tensor>>& out, std::set<const TensorImpl*>& seen) {
  const ClassType& c = *o.type;
  for (size_t i = 0; i < c.attr_names.size(); ++i) {
    const IValue& v = o.slots[i];
    if (c.is_module[i] || !v.is_tensor() || !v.toTensor().defined()) continue;
    bool is_param = c.is_parameter[i];
    if (is_param != params) continue;
    if (!params && c.attr_types[i]->kind != Type::Kind::Tensor) continue;
    if (!seen.insert(v.toTensor().impl()).second) continue;
    out.emplace_back(prefix + c.attr_names[i], v.toTensor());
  }
  if (!recurse) return;
  for (size_t i = 0; i < c.attr_names.size(); ++i)
    if (c.is_module[i] && o.slots[i].is_object())
      collect(*o.slots[i].toObject(), prefix + c.attr_names[i] + ".", recurse, params, out, seen);
}
}  // namespace

void Module::train(bool on) {
  checked();
  each_object(obj_, [&](Object& o) {
    if (o.training != on) {
      o.training = on;
      for (auto& [k, f] : o.type->methods)
        f->set_graph(f->graph);  // recompile: training may be read
    }
  });
}

bool Module::is_training() const { return checked().training; }

void Module::to(Device device) {
  checked();
  autograd::GradModeGuard no_grad(false);
  each_object(obj_, [&](Object& o) {
    for (IValue& s : o.slots)
      if (s.is_tensor() && s.toTensor().defined()) {
        const Tensor& t = s.toTensor();
        Tensor moved = to_device(t, device);
        if (!moved.is_same(t)) {
          // keep the tensor's identity (it may be shared with Python or another slot)
          TensorImpl* impl = t.impl();
          impl->storage = moved.impl()->storage;
          impl->strides = moved.impl()->strides;
          impl->offset = moved.impl()->offset;
        }
      }
  });
}

void Module::to(DType dtype) {
  checked();
  autograd::GradModeGuard no_grad(false);
  each_object(obj_, [&](Object& o) {
    for (IValue& s : o.slots)
      if (s.is_tensor() && s.toTensor().defined() && is_floating(s.toTensor().dtype())) {
        const Tensor& t = s.toTensor();
        Tensor c = contiguous(to_dtype(t, dtype));
        if (!c.is_same(t)) {
          TensorImpl* impl = t.impl();
          impl->storage = c.impl()->storage;
          impl->strides = c.impl()->strides;
          impl->offset = c.impl()->offset;
          impl->dtype = dtype;
        }
      }
  });
}

std::vector<std::pair<std::string, Tensor>> Module::named_parameters(bool recurse) const {
  std::vector<std::pair<std::string, Tensor>> out;
  std::set<const TensorImpl*> seen;
  collect(checked(), "", recurse, true, out, seen);
  return out;
}

std::vector<Tensor> Module::parameters(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [k, t] : named_parameters(recurse)) out.push_back(t);
  return out;
}

std::vector<std::pair<std::string, Tensor>> Module::named_buffers(bool recurse) const {
  std::vector<std::pair<std::string, Tensor>> out;
  std::set<const TensorImpl*> seen;
  collect(checked(), "", recurse, false, out, seen);
  return out;
}

std::vector<std::pair<std::string, Module>> Module::named_children() const {
  const Object& o = checked();
  std::vector<std::pair<std::string, Module>> out;
  for (size_t i = 0; i < o.type->attr_names.size(); ++i)
    if (o.type->is_module[i] && o.slots[i].is_object())
      out.emplace_back(o.type->attr_names[i], Module(o.slots[i].toObject()));
  return out;
}

IValue Module::attr(const std::string& name) const { return checked().attr(name); }

void Module::set_attr(const std::string& name, IValue v) {
  checked();
  obj_->set_attr(name, std::move(v));
}

std::string Module::graph_str(const std::string& method) const {
  return checked().method(method)->graph->str();
}

void Module::save(const std::string& path) const {
  checked();
  save_module(obj_, path);
}

Module load(const std::string& path, std::optional<Device> device) {
  Archive a = load_archive(path, device);
  EMBER_CHECK(a.module, "ember::jit::load: '", path,
              "' holds a scripted function, not a module; load it with ember.jit.load in Python");
  return Module(a.module);
}

}  // namespace ember::jit
