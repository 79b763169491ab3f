// The one header a C++ program needs to load and run a module saved by ember.jit
// (PyTorch's <torch/script.h>): ember::jit::load, ember::jit::Module, ember::jit::IValue,
// and the tensor API of <ember/ember.h>.
#pragma once
#include "ember/ember.h"
#include "ember/jit/ivalue.h"
#include "ember/jit/module.h"
