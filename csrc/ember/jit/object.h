// Module instances at run time: named attribute slots plus their class's methods.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ember/jit/ivalue.h"

namespace ember::jit {

struct Graph;
struct Code;

/// A method or script function: a graph plus its compiled form (made on first call).
struct Function {
  std::string name;
  std::shared_ptr<Graph> graph;
  std::shared_ptr<Code> code;  // interpreter.h; rebuilt when the graph is replaced
  /// The graph after inlining, constant folding and the other passes (what runs).
  std::shared_ptr<Graph> optimized;
  void set_graph(std::shared_ptr<Graph> g);
};

/// A module's class: its name ("__ember__.MyCell"), methods and attribute layout.
struct ClassType {
  std::string name;
  std::vector<std::string> attr_names;
  std::vector<TypePtr> attr_types;
  std::vector<bool> is_parameter;  // parameters vs buffers vs plain attributes
  std::vector<bool> is_module;
  std::map<std::string, std::shared_ptr<Function>> methods;
  /// Index of `name` in the slots, -1 when absent.
  int slot(const std::string& name) const;
  int add_attr(const std::string& name, TypePtr type, bool parameter, bool module);
};

struct Object {
  std::shared_ptr<ClassType> type;
  std::vector<IValue> slots;
  bool training = true;
  /// Original Python class name (printed by repr as original_name=...).
  std::string original_name;

  const IValue& attr(const std::string& name) const;
  void set_attr(const std::string& name, IValue v);
  bool has_attr(const std::string& name) const { return type->slot(name) >= 0; }
  std::shared_ptr<Function> method(const std::string& name) const;
};

}  // namespace ember::jit
