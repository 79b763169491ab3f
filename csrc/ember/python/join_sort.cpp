// Bindings: join_sort (being written).
#include "ember/python/bind.h"

namespace ember::python {

void init_join_sort(py::module_& m) { (void)m; }

}  // namespace ember::python
