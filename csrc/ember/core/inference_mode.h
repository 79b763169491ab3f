// The thread-local inference-mode flag. It lives in core because a new TensorImpl
// records whether it was made under inference mode (TensorImpl::inference), and core
// includes nothing above it; autograd owns the switch and what it means
// (autograd/grad_mode.h: inference_mode(), set_inference_mode(), grad_enabled()).
#pragma once

namespace ember {

/// True inside ember.inference_mode() on this thread.
bool inference_mode_enabled();
/// Sets the flag; autograd::set_inference_mode is the one caller.
void set_inference_mode_enabled(bool on);

}  // namespace ember
