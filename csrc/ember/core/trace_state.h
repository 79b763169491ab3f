// The thread-local tracing state every op front-end reads (see Note [Tracing] in
// jit/tracer.h). It lives in core because kernel dispatch (kernels/dispatch.h) and
// view creation (core/tensor.cpp) check it, and core includes nothing above it; the
// tracer (jit/) owns what it means.
#pragma once
#include "ember/core/tls.h"

namespace ember::trace_state {

/// The tracer recording on this thread (a jit::Tracer), or null.
extern EMBER_TLS_FAST thread_local void* t_tracer;
/// How many traced front-ends are running on this thread: only the outermost records.
extern EMBER_TLS_FAST thread_local int t_depth;

/// True when a front-end entered now is the outermost op of a trace.
inline bool outermost() { return __builtin_expect(t_tracer != nullptr, 0) && t_depth == 0; }

/// Raises the tracer's "not traceable" error for work done outside any traced
/// front-end while tracing (a kernel `what` dispatched, or a view made): such an op
/// would be missing from the graph. The tracer installs the message (jit/tracer.cpp).
[[noreturn]] void untraced(const char* what);
extern void (*untraced_hook)(const char* what);

/// Marks a region that runs while tracing but is not part of the traced program
/// (printing a tensor, the tracer's own checks): nothing in it is recorded or refused.
struct Pause {
  void* saved;
  Pause() : saved(t_tracer) { t_tracer = nullptr; }
  ~Pause() { t_tracer = saved; }
  Pause(const Pause&) = delete;
  Pause& operator=(const Pause&) = delete;
};

}  // namespace ember::trace_state
