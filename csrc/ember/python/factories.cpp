// Bindings: factories (being written).
#include "ember/python/bind.h"

namespace ember::python {

void init_factories(py::module_& m) { (void)m; }

}  // namespace ember::python
