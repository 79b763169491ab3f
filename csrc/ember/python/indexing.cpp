// Bindings: indexing (being written).
#include "ember/python/bind.h"

namespace ember::python {

void init_indexing(py::module_& m) { (void)m; }

}  // namespace ember::python
