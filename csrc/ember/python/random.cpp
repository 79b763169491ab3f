// Bindings: random (being written).
#include "ember/python/bind.h"

namespace ember::python {

void init_random(py::module_& m) { (void)m; }

}  // namespace ember::python
