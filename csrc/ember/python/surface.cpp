// Bindings of the everyday torch.* functions beyond the core families.
#include "ember/python/bind.h"

namespace ember::python {

void init_surface(py::module_& m) { (void)m; }

}  // namespace ember::python
