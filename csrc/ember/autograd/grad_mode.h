// Grad mode and inference mode: thread-local switches read by every op that
// might record autograd history.
#pragma once

namespace ember::autograd {

/// True when ops record history for inputs that require grad (the default).
bool grad_enabled();
void set_grad_enabled(bool on);
/// True inside ember.inference_mode(): nothing records, and tensors made here
/// are inference tensors that can never require grad later.
bool inference_mode();
void set_inference_mode(bool on);

/// RAII guard that sets grad mode and restores the previous state.
struct GradModeGuard {
  explicit GradModeGuard(bool on) : prev_(grad_enabled()) { set_grad_enabled(on); }
  ~GradModeGuard() { set_grad_enabled(prev_); }
  GradModeGuard(const GradModeGuard&) = delete;
  GradModeGuard& operator=(const GradModeGuard&) = delete;

 private:
  bool prev_;
};

}  // namespace ember::autograd
