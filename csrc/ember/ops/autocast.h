// Automatic mixed precision (ember.autocast): the thread-local autocast state
// and the cast policy the op front-ends consult. See Note [Autocast policy].
#pragma once
#include <initializer_list>
#include <optional>
#include <utility>
#include <vector>

#include "ember/core/device.h"
#include "ember/core/dtype.h"
#include "ember/core/tensor.h"

namespace ember::autocast {

// Note [Autocast policy]
// Inside an enabled autocast region for a device type, the front-ends of the
// ops in the policy table (autocast.cpp, data: op name -> category) cast their
// floating inputs on that device type before running:
//   LowerPrecision  matmul/mm/bmm/addmm/linear/conv/sdpa...: to the region's
//                   dtype (float16/bfloat16), float64 left alone;
//   Float32         softmax, losses, norms, exp/log/pow, sum/mean/prod/cumsum...:
//                   float16/bfloat16 to float32;
//   Promote         mixed floating inputs to the widest of them.
// The op then runs with autocast excluded (ExcludeGuard), so its own internal
// ops see the already-cast inputs, as PyTorch's Autocast dispatch key does.
// The autograd engine also excludes autocast while running backward.
// With cache_enabled, LowerPrecision casts of float32 leaves that require grad
// (parameters) are cached until the outermost autocast region exits.
enum class Category { None = 0, LowerPrecision = 1, Float32 = 2, Promote = 3 };

struct State {
  bool enabled[kNumDeviceTypes] = {};
  DType dtype[kNumDeviceTypes] = {};
  bool cache_enabled = true;
  int exclude = 0;  // > 0: inside an autocast-wrapped op or a backward pass
  int nesting = 0;  // entered autocast regions (Python's enter/exit)
};
State& state();
/// True when some device type's autocast is on and not excluded (the front-ends' fast check).
inline bool active() {
  const State& s = state();
  if (s.exclude) return false;
  for (bool e : s.enabled)
    if (e) return true;
  return false;
}

/// The policy category of an op name (Category::None when not listed).
Category category_of(const char* op);
/// Every row of the policy table, in table order (tests check each row's effect).
std::vector<std::pair<const char*, Category>> policy_rows();
/// Casts `tensors` (undefined ones pass through) by op's category; the result has
/// one tensor per input.
std::vector<Tensor> autocast_inputs(const char* op, std::initializer_list<Tensor> tensors);
std::vector<Tensor> autocast_inputs(Category c, std::initializer_list<Tensor> tensors);
/// The same for a list argument (cat, stack).
std::vector<Tensor> autocast_list(const char* op, const std::vector<Tensor>& tensors);

struct ExcludeGuard {
  ExcludeGuard() { ++state().exclude; }
  ~ExcludeGuard() { --state().exclude; }
  ExcludeGuard(const ExcludeGuard&) = delete;
  ExcludeGuard& operator=(const ExcludeGuard&) = delete;
};

bool is_enabled(DeviceType t);
void set_enabled(DeviceType t, bool on);
DType get_dtype(DeviceType t);
void set_dtype(DeviceType t, DType d);
void clear_cache();
int64_t cache_size();

/// GradScaler kernels. For each grad: found_inf[0] = 1 if any element is inf/NaN,
/// then grad *= inv_scale (in place). found_inf and inv_scale: 1-element float32.
void amp_foreach_non_finite_check_and_unscale_(const std::vector<Tensor>& grads,
                                               const Tensor& found_inf, const Tensor& inv_scale);
/// PyTorch's _amp_update_scale_: backs off on inf, grows after growth_interval
/// clean steps. scale: 1-element float32, growth_tracker: 1-element int32.
Tensor& amp_update_scale_(Tensor& scale, const Tensor& growth_tracker, const Tensor& found_inf,
                          double growth_factor, double backoff_factor, int64_t growth_interval);

}  // namespace ember::autocast

namespace ember::autocast {
inline Tensor opt(const std::optional<Tensor>& t) { return t ? *t : Tensor(); }
inline std::optional<Tensor> to_opt(const Tensor& t) {
  return t.defined() ? std::optional<Tensor>(t) : std::nullopt;
}
}  // namespace ember::autocast
