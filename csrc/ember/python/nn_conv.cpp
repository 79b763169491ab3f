// Bindings of convolution, pooling, padding and resampling.
#include "ember/python/bind.h"

namespace ember::python {

void init_nn_conv(py::module_& m) { (void)m; }

}  // namespace ember::python
