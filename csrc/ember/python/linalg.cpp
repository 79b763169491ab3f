// Bindings: linalg (being written).
#include "ember/python/bind.h"

namespace ember::python {

void init_linalg(py::module_& m) { (void)m; }

}  // namespace ember::python
