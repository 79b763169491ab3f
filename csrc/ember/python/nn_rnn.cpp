// Bindings of recurrent layers (the time loop in C++) and attention.
#include "ember/python/bind.h"

namespace ember::python {

void init_nn_rnn(py::module_& m) { (void)m; }

}  // namespace ember::python
