#include "ember/autograd/grad_mode.h"

#include "ember/core/inference_mode.h"
#include "ember/core/tls.h"

namespace ember::autograd {
namespace {
EMBER_TLS_FAST thread_local bool t_grad_enabled = true;
}  // namespace
bool grad_enabled() { return t_grad_enabled && !inference_mode_enabled(); }
void set_grad_enabled(bool on) { t_grad_enabled = on; }
// The flag itself lives in core (core/inference_mode.h), which reads it when a tensor is made.
bool inference_mode() { return inference_mode_enabled(); }
void set_inference_mode(bool on) { set_inference_mode_enabled(on); }
}  // namespace ember::autograd
