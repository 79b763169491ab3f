// Warnings raised by the C++ core and ops. The Python bindings install a handler
// that calls warnings.warn (and may throw when warnings are errors); without one a
// warning is dropped. Lives in core/ so that core code (the thread pool) can warn too.
#pragma once
#include <string>

namespace ember {

using WarnHandler = void (*)(const std::string& message);
void set_warn_handler(WarnHandler handler);
/// Emits a UserWarning through the installed handler.
void warn(const std::string& message);

}  // namespace ember
