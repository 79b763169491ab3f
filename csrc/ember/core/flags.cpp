#include "ember/core/flags.h"

namespace ember {

BackendFlags& backend_flags() {
  static BackendFlags flags;
  return flags;
}

}  // namespace ember
