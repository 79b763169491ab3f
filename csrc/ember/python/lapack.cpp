// Bindings of ember.linalg through LAPACK.
#include "ember/python/bind.h"

namespace ember::python {

void init_lapack(py::module_& m) { (void)m; }

}  // namespace ember::python
