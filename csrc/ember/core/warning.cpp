#include "ember/core/warning.h"

#include <atomic>

namespace ember {
namespace {
std::atomic<WarnHandler> g_warn_handler{nullptr};
}  // namespace

void set_warn_handler(WarnHandler handler) { g_warn_handler.store(handler); }

void warn(const std::string& message) {
  if (WarnHandler h = g_warn_handler.load()) h(message);
}

}  // namespace ember
