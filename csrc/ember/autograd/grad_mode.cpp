#include "ember/autograd/grad_mode.h"

namespace ember::autograd {
namespace {
thread_local bool t_grad_enabled = true;
thread_local bool t_inference = false;
}  // namespace
bool grad_enabled() { return t_grad_enabled && !t_inference; }
void set_grad_enabled(bool on) { t_grad_enabled = on; }
bool inference_mode() { return t_inference; }
void set_inference_mode(bool on) { t_inference = on; }
}  // namespace ember::autograd
