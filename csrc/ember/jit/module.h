// The C++ API of a loaded ember.jit module: what <ember/script.h> gives a C++ program
// (PyTorch's torch::jit::Module). See include/ember/script.h.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ember/jit/ivalue.h"
#include "ember/jit/object.h"

namespace ember::jit {

/// A module loaded from an archive (or made from Python): its methods run in the
/// interpreter, its parameters and buffers are ordinary tensors.
class Module {
 public:
  Module() = default;
  explicit Module(std::shared_ptr<Object> obj) : obj_(std::move(obj)) {}

  bool defined() const { return bool(obj_); }
  /// Runs forward on `inputs` (PyTorch's `module.forward(std::vector<IValue>)`).
  IValue forward(std::vector<IValue> inputs) const {
    return run_method("forward", std::move(inputs));
  }
  IValue operator()(std::vector<IValue> inputs) const { return forward(std::move(inputs)); }
  IValue run_method(const std::string& name, std::vector<IValue> inputs) const;
  bool has_method(const std::string& name) const;

  /// train()/eval() set `training` on this module and every submodule.
  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const;
  /// Moves (or casts) every parameter and buffer, keeping parameters' identity as Python's
  /// Module.to does (their data is replaced in place).
  void to(Device device);
  void to(DType dtype);

  /// ("layer1.0.conv1.weight", tensor) for every parameter, in definition order.
  std::vector<std::pair<std::string, Tensor>> named_parameters(bool recurse = true) const;
  std::vector<Tensor> parameters(bool recurse = true) const;
  std::vector<std::pair<std::string, Tensor>> named_buffers(bool recurse = true) const;
  /// ("layer1", module) for the direct submodules.
  std::vector<std::pair<std::string, Module>> named_children() const;
  /// An attribute (a tensor, a number, a submodule as an Object IValue, ...).
  IValue attr(const std::string& name) const;
  void set_attr(const std::string& name, IValue v);
  /// The method's graph as text (TorchScript's `module.forward.graph`).
  std::string graph_str(const std::string& method = "forward") const;
  void save(const std::string& path) const;

  const std::shared_ptr<Object>& object() const { return obj_; }

 private:
  const Object& checked() const;
  std::shared_ptr<Object> obj_;
};

/// Loads an archive written by ember.jit.save / ScriptModule.save; tensors go to `device`
/// when given. Raises ember::Error for a missing or invalid file.
Module load(const std::string& path, std::optional<Device> device = std::nullopt);

namespace script {
using Module = ::ember::jit::Module;  // torch::jit::script::Module's spelling
}  // namespace script

}  // namespace ember::jit
