// Front-ends of the fused multi-tensor optimizer steps (see ops/optim.h and
// Note [Fused optimizer steps] in kernels/stubs/optim.h).
#include "ember/ops/optim.h"

#include <cmath>
#include <string>

#include "ember/autograd/grad_mode.h"
#include "ember/kernels/functors.h"
#include "ember/kernels/stubs/optim.h"
#include "ember/ops/ops.h"

namespace ember {

DispatchStub<OptimKernel<SgdArgs>> sgd_step_stub("sgd_step_");
DispatchStub<OptimKernel<AdamArgs>> adam_step_stub("adam_step_");
DispatchStub<OptimKernel<AdamaxArgs>> adamax_step_stub("adamax_step_");
DispatchStub<OptimKernel<NAdamArgs>> nadam_step_stub("nadam_step_");
DispatchStub<OptimKernel<RAdamArgs>> radam_step_stub("radam_step_");
DispatchStub<OptimKernel<RmspropArgs>> rmsprop_step_stub("rmsprop_step_");
DispatchStub<OptimKernel<AdagradArgs>> adagrad_step_stub("adagrad_step_");
DispatchStub<OptimKernel<AdadeltaArgs>> adadelta_step_stub("adadelta_step_");

namespace {

/// Validates the lists of one step and prepares contiguous operands: a
/// non-contiguous param or state is updated through a contiguous copy that
/// finish() writes back. finish() also bumps every written tensor's version.
class StepLists {
 public:
  StepLists(const char* op, const TensorList& params, const TensorList& grads)
      : op_(op), params_(&params) {
    for (size_t i = 0; i < params.size(); ++i) {
      const Tensor& p = params[i];
      EMBER_CHECK(p.defined(), op_, ": params[", i, "] is undefined");
      EMBER_CHECK(is_floating(p.dtype()), op_, ": params[", i, "] has dtype ",
                  dtype_name(p.dtype()), "; optimizer steps need floating-point params");
      EMBER_CHECK(p.device() == params[0].device(), op_, ": params[", i, "] is on device ",
                  p.device().str(), " but params[0] is on device ", params[0].device().str(),
                  "; all tensors of one fused step must be on one device");
    }
    t_.params.reserve(params.size());
    for (const Tensor& p : params) t_.params.push_back(writable(p));
    for (size_t i = 0; i < params.size() && !t_.serial; ++i)
      for (size_t j = 0; j < i; ++j)
        if (params[i].data_ptr() == params[j].data_ptr() && params[i].numel() > 0) {
          t_.serial = true;
          break;
        }
    check_like("grads", grads);
    t_.grads.reserve(grads.size());
    for (const Tensor& g : grads) t_.grads.push_back(g.is_contiguous() ? g : contiguous(g));
  }

  /// state[k] <- `list`, which must match the params when `used`; ignored otherwise.
  void state(int k, const char* name, const TensorList& list, bool used) {
    if (!used) return;
    check_like(name, list);
    t_.state[k].reserve(list.size());
    for (const Tensor& s : list) t_.state[k].push_back(writable(s));
  }

  /// Checks one-element floating CPU scalars (step counters, NAdam's mu_product).
  void check_scalars(const char* name, const TensorList& list) const {
    check_len(name, list);
    for (size_t i = 0; i < list.size(); ++i) {
      const Tensor& s = list[i];
      EMBER_CHECK(s.defined(), op_, ": ", name, "[", i, "] is undefined");
      EMBER_CHECK(s.numel() == 1 && is_floating(s.dtype()) && s.device().is_cpu(), op_, ": ", name,
                  "[", i, "] must be a one-element floating-point CPU tensor, got dtype ",
                  dtype_name(s.dtype()), " with shape ", shape_str(s.sizes()), " on device ",
                  s.device().str());
    }
  }

  OptimTensors& tensors() { return t_; }
  size_t size() const { return params_->size(); }
  Device device() const { return params_->empty() ? Device() : (*params_)[0].device(); }

  void finish() {
    autograd::GradModeGuard no_grad(false);
    for (auto& [orig, tmp] : writeback_) copy_(orig, tmp);  // copy_ bumps the version
    for (const Tensor& t : bump_) t.bump_version(op_);
  }

 private:
  void check_len(const char* name, const TensorList& list) const {
    EMBER_CHECK(list.size() == params_->size(), op_, ": expected ", name, " to hold ",
                params_->size(), " tensors (one per param), got ", list.size());
  }
  void check_like(const char* name, const TensorList& list) const {
    check_len(name, list);
    for (size_t i = 0; i < list.size(); ++i) {
      const Tensor& t = list[i];
      const Tensor& p = (*params_)[i];
      EMBER_CHECK(t.defined(), op_, ": ", name, "[", i, "] is undefined");
      EMBER_CHECK(t.device() == p.device(), op_, ": ", name, "[", i, "] is on device ",
                  t.device().str(), " but params[", i, "] is on device ", p.device().str());
      EMBER_CHECK(t.dtype() == p.dtype(), op_, ": ", name, "[", i, "] has dtype ",
                  dtype_name(t.dtype()), " but params[", i, "] has dtype ", dtype_name(p.dtype()));
      EMBER_CHECK(t.sizes() == p.sizes(), op_, ": ", name, "[", i, "] has shape ",
                  shape_str(t.sizes()), " but params[", i, "] has shape ", shape_str(p.sizes()));
    }
  }
  Tensor writable(const Tensor& t) {
    if (t.is_contiguous()) {
      bump_.push_back(t);
      return t;
    }
    Tensor tmp = contiguous(t);
    writeback_.emplace_back(t, tmp);
    return tmp;
  }

  const char* op_;
  const TensorList* params_ = nullptr;
  OptimTensors t_;
  std::vector<std::pair<Tensor, Tensor>> writeback_;
  TensorList bump_;
};

double read_scalar(const Tensor& t) {
  return dispatch_floating(t.dtype(), "optimizer step", [&](auto tag) {
    using T = typename decltype(tag)::type;
    return double(*t.data<T>());
  });
}
/// Stores v (rounded to t's dtype) and returns the stored value.
double write_scalar(const Tensor& t, double v) {
  return dispatch_floating(t.dtype(), "optimizer step", [&](auto tag) {
    using T = typename decltype(tag)::type;
    *t.data<T>() = T(v);
    t.bump_version("add_");
    return double(*t.data<T>());
  });
}
/// t *= factor computed in t's opmath type (as PyTorch's `mu_product *= mu` on a float32
/// tensor); returns the stored value.
double mul_scalar(const Tensor& t, double factor) {
  return dispatch_floating(t.dtype(), "optimizer step", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = opmath_t<T>;
    *t.data<T>() = T(M(*t.data<T>()) * M(factor));
    t.bump_version("mul_");
    return double(*t.data<T>());
  });
}
/// Increments each step counter; returns the new values.
std::vector<double> advance_steps(const TensorList& steps) {
  std::vector<double> out(steps.size());
  for (size_t i = 0; i < steps.size(); ++i)
    out[i] = write_scalar(steps[i], read_scalar(steps[i]) + 1);
  return out;
}

/// One state list of a step: its name (for errors), the list, and whether the step uses
/// it (an unused one is ignored, e.g. max_exp_avg_sqs without amsgrad).
struct StateArg {
  const char* name;
  const TensorList& list;
  bool used = true;
};

/// The plumbing every fused step shares: validates params, grads and the state lists
/// (state[k] <- states[k]) and the scalar lists (step counters last), advances the step
/// counters, runs the kernel with `make_args(new step values)` and writes back / bumps
/// the versions of everything written.
template <typename Args, typename MakeArgs>
void fused_step(const char* op, const DispatchStub<OptimKernel<Args>>& stub,
                const TensorList& params, const TensorList& grads,
                std::initializer_list<StateArg> states,
                std::initializer_list<std::pair<const char*, const TensorList*>> scalars,
                const TensorList* steps, MakeArgs&& make_args) {
  StepLists lists(op, params, grads);
  int k = 0;
  for (const StateArg& s : states) lists.state(k++, s.name, s.list, s.used);
  for (const auto& [name, list] : scalars) lists.check_scalars(name, *list);
  if (steps) lists.check_scalars("state_steps", *steps);
  if (params.empty()) return;
  const Args args = make_args(steps ? advance_steps(*steps) : std::vector<double>());
  stub.get(lists.device())(lists.tensors(), args);
  lists.finish();
}

}  // namespace

TensorList sgd_step_(const TensorList& params, const TensorList& grads,
                     const std::vector<std::optional<Tensor>>& momentum_buffers, double lr,
                     double momentum, double dampening, double weight_decay, bool nesterov,
                     bool maximize) {
  SgdArgs a{lr, momentum, dampening, weight_decay, nesterov, maximize, {}};
  TensorList bufs;
  if (momentum != 0) {
    EMBER_CHECK(momentum_buffers.size() == params.size(),
                "sgd_step_: expected momentum_buffers to hold ", params.size(),
                " tensors (one per param), got ", momentum_buffers.size());
    a.first.resize(params.size());
    for (size_t i = 0; i < params.size(); ++i) {
      a.first[i] = !momentum_buffers[i].has_value() || !momentum_buffers[i]->defined();
      // an undefined param gets no buffer: fused_step raises naming it
      bufs.push_back(!a.first[i] ? *momentum_buffers[i]
                     : params[i].defined()
                         ? empty(params[i].sizes(), params[i].dtype(), params[i].device())
                         : Tensor());
    }
  }
  fused_step("sgd_step_", sgd_step_stub, params, grads, {{"momentum_buffers", bufs, momentum != 0}},
             {}, nullptr, [&](const std::vector<double>&) { return a; });
  return bufs;
}

void adam_step_(const TensorList& params, const TensorList& grads, const TensorList& exp_avgs,
                const TensorList& exp_avg_sqs, const TensorList& max_exp_avg_sqs,
                const TensorList& state_steps, double lr, double beta1, double beta2,
                double weight_decay, double eps, bool amsgrad, bool maximize, bool decoupled) {
  fused_step("adam_step_", adam_step_stub, params, grads,
             {{"exp_avgs", exp_avgs},
              {"exp_avg_sqs", exp_avg_sqs},
              {"max_exp_avg_sqs", max_exp_avg_sqs, amsgrad}},
             {}, &state_steps, [&](const std::vector<double>& steps) {
               AdamArgs a{lr,      beta1,    beta2,     eps, weight_decay,
                          amsgrad, maximize, decoupled, {},  {}};
               for (double step : steps) {
                 a.step_size.push_back(lr / (1 - std::pow(beta1, step)));
                 a.bc2_sqrt.push_back(std::sqrt(1 - std::pow(beta2, step)));
               }
               return a;
             });
}

void adamax_step_(const TensorList& params, const TensorList& grads, const TensorList& exp_avgs,
                  const TensorList& exp_infs, const TensorList& state_steps, double lr,
                  double beta1, double beta2, double weight_decay, double eps, bool maximize) {
  fused_step("adamax_step_", adamax_step_stub, params, grads,
             {{"exp_avgs", exp_avgs}, {"exp_infs", exp_infs}}, {}, &state_steps,
             [&](const std::vector<double>& steps) {
               AdamaxArgs a{beta1, beta2, eps, weight_decay, maximize, {}};
               for (double step : steps) a.clr.push_back(lr / (1 - std::pow(beta1, step)));
               return a;
             });
}

void nadam_step_(const TensorList& params, const TensorList& grads, const TensorList& exp_avgs,
                 const TensorList& exp_avg_sqs, const TensorList& mu_products,
                 const TensorList& state_steps, double lr, double beta1, double beta2,
                 double weight_decay, double eps, double momentum_decay, bool decoupled,
                 bool maximize) {
  fused_step("nadam_step_", nadam_step_stub, params, grads,
             {{"exp_avgs", exp_avgs}, {"exp_avg_sqs", exp_avg_sqs}},
             {{"mu_products", &mu_products}}, &state_steps, [&](const std::vector<double>& steps) {
               NAdamArgs a{lr, beta1, beta2, eps, weight_decay, maximize, decoupled, {}, {}, {}};
               for (size_t i = 0; i < steps.size(); ++i) {
                 double step = steps[i];
                 double mu = beta1 * (1.0 - 0.5 * std::pow(0.96, step * momentum_decay));
                 double mu_next = beta1 * (1.0 - 0.5 * std::pow(0.96, (step + 1) * momentum_decay));
                 double mu_product = mul_scalar(mu_products[i], mu);
                 a.bc2.push_back(1 - std::pow(beta2, step));
                 a.coef_grad.push_back(-lr * (1.0 - mu) / (1.0 - mu_product));
                 a.coef_avg.push_back(-lr * mu_next / (1.0 - mu_product * mu_next));
               }
               return a;
             });
}

void radam_step_(const TensorList& params, const TensorList& grads, const TensorList& exp_avgs,
                 const TensorList& exp_avg_sqs, const TensorList& state_steps, double lr,
                 double beta1, double beta2, double weight_decay, double eps, bool decoupled,
                 bool maximize) {
  fused_step("radam_step_", radam_step_stub, params, grads,
             {{"exp_avgs", exp_avgs}, {"exp_avg_sqs", exp_avg_sqs}}, {}, &state_steps,
             [&](const std::vector<double>& steps) {
               RAdamArgs a{lr, beta1, beta2, eps, weight_decay, maximize, decoupled, {}, {}, {}};
               const double rho_inf = 2 / (1 - beta2) - 1;
               for (double step : steps) {
                 double bc1 = 1 - std::pow(beta1, step), bc2 = 1 - std::pow(beta2, step);
                 double rho_t = rho_inf - 2 * step * std::pow(beta2, step) / bc2;
                 a.bc1.push_back(bc1);
                 a.bc2_sqrt.push_back(std::sqrt(bc2));
                 a.rect.push_back(rho_t > 5.0 ? std::sqrt((rho_t - 4) * (rho_t - 2) * rho_inf /
                                                          ((rho_inf - 4) * (rho_inf - 2) * rho_t))
                                              : 0.0);
               }
               return a;
             });
}

void rmsprop_step_(const TensorList& params, const TensorList& grads, const TensorList& square_avgs,
                   const TensorList& grad_avgs, const TensorList& momentum_buffers,
                   const TensorList& state_steps, double lr, double alpha, double eps,
                   double weight_decay, double momentum, bool centered, bool maximize) {
  fused_step("rmsprop_step_", rmsprop_step_stub, params, grads,
             {{"square_avgs", square_avgs},
              {"momentum_buffers", momentum_buffers, momentum > 0},
              {"grad_avgs", grad_avgs, centered}},
             {}, &state_steps, [&](const std::vector<double>&) {
               return RmspropArgs{lr, alpha, eps, weight_decay, momentum, centered, maximize};
             });
}

void adagrad_step_(const TensorList& params, const TensorList& grads, const TensorList& state_sums,
                   const TensorList& state_steps, double lr, double lr_decay, double weight_decay,
                   double eps, bool maximize) {
  fused_step("adagrad_step_", adagrad_step_stub, params, grads, {{"state_sums", state_sums}}, {},
             &state_steps, [&](const std::vector<double>& steps) {
               AdagradArgs a{eps, weight_decay, maximize, {}};
               for (double step : steps) a.clr.push_back(lr / (1 + (step - 1) * lr_decay));
               return a;
             });
}

void adadelta_step_(const TensorList& params, const TensorList& grads,
                    const TensorList& square_avgs, const TensorList& acc_deltas,
                    const TensorList& state_steps, double lr, double rho, double eps,
                    double weight_decay, bool maximize) {
  fused_step("adadelta_step_", adadelta_step_stub, params, grads,
             {{"square_avgs", square_avgs}, {"acc_deltas", acc_deltas}}, {}, &state_steps,
             [&](const std::vector<double>&) {
               return AdadeltaArgs{lr, rho, eps, weight_decay, maximize};
             });
}

}  // namespace ember
