// Kernel slots of the fused multi-tensor optimizer steps (front-ends in ops/optim.cpp).
#pragma once
#include <vector>

#include "ember/core/tensor.h"
#include "ember/kernels/dispatch.h"

namespace ember {

// Note [Fused optimizer steps]
// Each optimizer's step() is one call per parameter group: a front-end
// (ops/optim.cpp) validates the tensor lists, advances the per-parameter step
// counters, computes each tensor's scalar coefficients (bias corrections,
// decayed learning rates) in double, and hands a kernel an OptimTensors whose
// lists are contiguous, on one device, with equal dtypes and sizes at each index.
// The kernel updates every element of every tensor in one pass, computing in
// opmath_t (float for float16/bfloat16/float32, double for float64), and writes
// params and state in place. The front-end copies results back into
// non-contiguous originals and bumps the version counters.

/// The lists of one fused step. `state[k]` is the k-th per-parameter state list
/// of the optimizer (documented per kernel below), empty when that state is unused.
struct OptimTensors {
  std::vector<Tensor> params, grads;
  std::vector<Tensor> state[3];
  /// A parameter appears more than once (PyTorch allows it, with a warning): the kernel
  /// then runs the tensors one after another, in order, as PyTorch's loop would.
  bool serial = false;
};

/// SGD. state[0]: momentum buffers (empty when momentum == 0); `first[i]` marks a
/// buffer that is initialized from this step's gradient.
struct SgdArgs {
  double lr, momentum, dampening, weight_decay;
  bool nesterov, maximize;
  std::vector<char> first;
};
/// Adam/AdamW. state: exp_avg, exp_avg_sq, max_exp_avg_sq (amsgrad only).
/// Per tensor: step_size = lr / (1 - beta1^t), bc2_sqrt = sqrt(1 - beta2^t).
struct AdamArgs {
  double lr, beta1, beta2, eps, weight_decay;
  bool amsgrad, maximize, decoupled;
  std::vector<double> step_size, bc2_sqrt;
};
/// Adamax. state: exp_avg, exp_inf. Per tensor: clr = lr / (1 - beta1^t).
struct AdamaxArgs {
  double beta1, beta2, eps, weight_decay;
  bool maximize;
  std::vector<double> clr;
};
/// NAdam. state: exp_avg, exp_avg_sq. Per tensor: bc2 = 1 - beta2^t and the
/// coefficients of grad and exp_avg in the update (both already negative).
struct NAdamArgs {
  double lr, beta1, beta2, eps, weight_decay;
  bool maximize, decoupled;
  std::vector<double> bc2, coef_grad, coef_avg;
};
/// RAdam. state: exp_avg, exp_avg_sq. Per tensor: bc1, bc2_sqrt and the
/// rectification term `rect` (0 when the variance is not tractable: plain momentum step).
struct RAdamArgs {
  double lr, beta1, beta2, eps, weight_decay;
  bool maximize, decoupled;
  std::vector<double> bc1, bc2_sqrt, rect;
};
/// RMSprop. state: square_avg, momentum_buffer (momentum > 0), grad_avg (centered).
struct RmspropArgs {
  double lr, alpha, eps, weight_decay, momentum;
  bool centered, maximize;
};
/// Adagrad. state: sum. Per tensor: clr = lr / (1 + (t - 1) * lr_decay).
struct AdagradArgs {
  double eps, weight_decay;
  bool maximize;
  std::vector<double> clr;
};
/// Adadelta. state: square_avg, acc_delta.
struct AdadeltaArgs {
  double lr, rho, eps, weight_decay;
  bool maximize;
};

template <typename Args>
using OptimKernel = void (*)(const OptimTensors&, const Args&);

extern DispatchStub<OptimKernel<SgdArgs>> sgd_step_stub;
extern DispatchStub<OptimKernel<AdamArgs>> adam_step_stub;
extern DispatchStub<OptimKernel<AdamaxArgs>> adamax_step_stub;
extern DispatchStub<OptimKernel<NAdamArgs>> nadam_step_stub;
extern DispatchStub<OptimKernel<RAdamArgs>> radam_step_stub;
extern DispatchStub<OptimKernel<RmspropArgs>> rmsprop_step_stub;
extern DispatchStub<OptimKernel<AdagradArgs>> adagrad_step_stub;
extern DispatchStub<OptimKernel<AdadeltaArgs>> adadelta_step_stub;

}  // namespace ember
