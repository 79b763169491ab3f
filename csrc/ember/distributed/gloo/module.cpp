// The ember._C_gloo module: loading it registers the "gloo" backend with the core's engine
// registry (distributed/process_group.h); ember.distributed imports it on demand.
#include <gloo/config.h>
#include <pybind11/pybind11.h>

#include "ember/distributed/gloo/process_group_gloo.h"

PYBIND11_MODULE(_C_gloo, m) {
  m.doc() = "ember.distributed's gloo backend (Gloo " + std::to_string(GLOO_VERSION_MAJOR) + "." +
            std::to_string(GLOO_VERSION_MINOR) + "." + std::to_string(GLOO_VERSION_PATCH) + ")";
  ember::distributed::register_backend("gloo", &ember::distributed::make_gloo_group);
  m.attr("GLOO_VERSION") = std::to_string(GLOO_VERSION_MAJOR) + "." +
                           std::to_string(GLOO_VERSION_MINOR) + "." +
                           std::to_string(GLOO_VERSION_PATCH);
}
