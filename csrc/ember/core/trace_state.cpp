// See core/trace_state.h.
#include "ember/core/trace_state.h"

#include "ember/core/error.h"

namespace ember::trace_state {

EMBER_TLS_FAST thread_local void* t_tracer = nullptr;
EMBER_TLS_FAST thread_local int t_depth = 0;
void (*untraced_hook)(const char* what) = nullptr;

void untraced(const char* what) {
  if (untraced_hook) untraced_hook(what);
  EMBER_ERROR("ember.jit.trace: '", what, "' ran outside any traced op");
}

}  // namespace ember::trace_state
