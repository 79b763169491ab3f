// Bindings of the fused multi-tensor optimizer steps.
#include "ember/python/bind.h"

namespace ember::python {

void init_optim(py::module_& m) { (void)m; }

}  // namespace ember::python
