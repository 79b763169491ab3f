// Bindings of activations, softmax/log_softmax, losses, normalization, dropout, embedding.
#include "ember/python/bind.h"

namespace ember::python {

void init_nn(py::module_& m) { (void)m; }

}  // namespace ember::python
