// Bindings: interop (being written).
#include "ember/python/bind.h"

namespace ember::python {

void init_interop(py::module_& m) { (void)m; }

}  // namespace ember::python
