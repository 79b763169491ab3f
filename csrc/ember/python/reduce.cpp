// Bindings: reduce (being written).
#include "ember/python/bind.h"

namespace ember::python {

void init_reduce(py::module_& m) { (void)m; }

}  // namespace ember::python
