// Bindings of the DataLoader's hot path: batch gather, collate, prefetch, pinned staging.
#include "ember/python/bind.h"

namespace ember::python {

void init_data(py::module_& m) { (void)m; }

}  // namespace ember::python
