// The practitioner's notes' example app (seed 004), with ember for torch: load a module that
// Python traced and saved (ember.jit.save / ScriptModule.save) and run it without Python.
//
//   cmake -DCMAKE_PREFIX_PATH="$(python -c 'import ember.utils;
//   print(ember.utils.cmake_prefix_path)')" .. cmake --build . && ./example-app
//   traced_resnet_model.pt
#include <ember/script.h>  // One-stop header.

#include <iostream>
#include <memory>

int main(int argc, const char* argv[]) {
  if (argc != 2) {
    std::cerr << "usage: example-app <path-to-exported-script-module>\n";
    return -1;
  }

  ember::jit::script::Module module;
  try {
    // Deserialize the ScriptModule from a file using ember::jit::load().
    module = ember::jit::load(argv[1]);
  } catch (const ember::Error& e) {
    std::cerr << "error loading the model\n" << e.what() << "\n";
    return -1;
  }
  std::cout << "ok\n";

  // Create a vector of inputs.
  std::vector<ember::jit::IValue> inputs;
  inputs.push_back(ember::ones({1, 3, 224, 224}));

  // Execute the model and turn its output into a tensor.
  ember::Tensor output = module.forward(inputs).toTensor();
  std::cout << output.slice(/*dim=*/1, /*start=*/0, /*end=*/5) << '\n';
}
