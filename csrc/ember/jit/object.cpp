// Module instances at run time (object.h).
#include "ember/jit/object.h"

#include "ember/jit/interpreter.h"
#include "ember/jit/ir.h"

namespace ember::jit {

void Function::set_graph(std::shared_ptr<Graph> g) {
  graph = std::move(g);
  code.reset();
  optimized.reset();
}

int ClassType::slot(const std::string& name) const {
  for (size_t i = 0; i < attr_names.size(); ++i)
    if (attr_names[i] == name) return int(i);
  return -1;
}

int ClassType::add_attr(const std::string& name, TypePtr type, bool parameter, bool module) {
  int s = slot(name);
  if (s >= 0) {
    attr_types[size_t(s)] = std::move(type);
    is_parameter[size_t(s)] = parameter;
    is_module[size_t(s)] = module;
    return s;
  }
  attr_names.push_back(name);
  attr_types.push_back(std::move(type));
  is_parameter.push_back(parameter);
  is_module.push_back(module);
  return int(attr_names.size() - 1);
}

const IValue& Object::attr(const std::string& name) const {
  int s = type->slot(name);
  EMBER_CHECK(s >= 0, "ember.jit: module '", type->name, "' has no attribute '", name, "'");
  return slots[size_t(s)];
}

void Object::set_attr(const std::string& name, IValue v) {
  int s = type->slot(name);
  EMBER_CHECK(s >= 0, "ember.jit: module '", type->name, "' has no attribute '", name, "'");
  slots[size_t(s)] = std::move(v);
}

std::shared_ptr<Function> Object::method(const std::string& name) const {
  auto it = type->methods.find(name);
  EMBER_CHECK(it != type->methods.end(), "ember.jit: module '", type->name, "' has no method '",
              name, "'");
  return it->second;
}

}  // namespace ember::jit
