#include "ember/core/flags.h"

#include "ember/core/error.h"

namespace ember {

BackendFlags& backend_flags() {
  static BackendFlags flags;
  return flags;
}

void check_nondeterministic_allowed(const char* op) {
  const BackendFlags& f = backend_flags();
  if (!f.deterministic_algorithms.load(std::memory_order_relaxed) ||
      f.deterministic_warn_only.load(std::memory_order_relaxed))
    return;
  throw Error(ErrorKind::Runtime,
              std::string(op) +
                  " does not have a deterministic implementation, but you set "
                  "'ember.use_deterministic_algorithms(True)'. You can turn off determinism "
                  "just for this operation, or use the 'warn_only=True' option if that is "
                  "acceptable for your application.");
}

}  // namespace ember
