// Fused multi-tensor optimizer steps: one call updates every parameter of a group
// in place (see Note [Fused optimizer steps] in kernels/stubs/optim.h).
//
// Common contract: `params` are floating tensors; `grads` and every per-parameter
// state list hold one tensor per param with its device, dtype and shape (a state
// list that an option leaves unused may be empty); `state_steps` are one-element
// floating CPU tensors (PyTorch's 0-d float32 `state['step']`) that the step
// increments before using. Params and state are written in place, non-contiguous
// ones included, and their version counters bumped. No autograd history is recorded.
#pragma once
#include <optional>
#include <vector>

#include "ember/core/tensor.h"

namespace ember {

using TensorList = std::vector<Tensor>;

/// SGD with momentum/dampening/nesterov. A missing momentum buffer (nullopt) is
/// created from this step's gradient, as PyTorch does; returns the buffers
/// (empty when momentum == 0).
TensorList sgd_step_(const TensorList& params, const TensorList& grads,
                     const std::vector<std::optional<Tensor>>& momentum_buffers, double lr,
                     double momentum, double dampening, double weight_decay, bool nesterov,
                     bool maximize);
/// Adam (decoupled = false: L2 weight decay) or AdamW (decoupled = true).
void adam_step_(const TensorList& params, const TensorList& grads, const TensorList& exp_avgs,
                const TensorList& exp_avg_sqs, const TensorList& max_exp_avg_sqs,
                const TensorList& state_steps, double lr, double beta1, double beta2,
                double weight_decay, double eps, bool amsgrad, bool maximize, bool decoupled);
void adamax_step_(const TensorList& params, const TensorList& grads, const TensorList& exp_avgs,
                  const TensorList& exp_infs, const TensorList& state_steps, double lr,
                  double beta1, double beta2, double weight_decay, double eps, bool maximize);
/// NAdam; `mu_products` are one-element floating CPU tensors, updated in place.
void nadam_step_(const TensorList& params, const TensorList& grads, const TensorList& exp_avgs,
                 const TensorList& exp_avg_sqs, const TensorList& mu_products,
                 const TensorList& state_steps, double lr, double beta1, double beta2,
                 double weight_decay, double eps, double momentum_decay, bool decoupled,
                 bool maximize);
void radam_step_(const TensorList& params, const TensorList& grads, const TensorList& exp_avgs,
                 const TensorList& exp_avg_sqs, const TensorList& state_steps, double lr,
                 double beta1, double beta2, double weight_decay, double eps, bool decoupled,
                 bool maximize);
/// RMSprop; `momentum_buffers` is used when momentum > 0, `grad_avgs` when centered.
void rmsprop_step_(const TensorList& params, const TensorList& grads, const TensorList& square_avgs,
                   const TensorList& grad_avgs, const TensorList& momentum_buffers,
                   const TensorList& state_steps, double lr, double alpha, double eps,
                   double weight_decay, double momentum, bool centered, bool maximize);
void adagrad_step_(const TensorList& params, const TensorList& grads, const TensorList& state_sums,
                   const TensorList& state_steps, double lr, double lr_decay, double weight_decay,
                   double eps, bool maximize);
void adadelta_step_(const TensorList& params, const TensorList& grads,
                    const TensorList& square_avgs, const TensorList& acc_deltas,
                    const TensorList& state_steps, double lr, double rho, double eps,
                    double weight_decay, bool maximize);

}  // namespace ember
