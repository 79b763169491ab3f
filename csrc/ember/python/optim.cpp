// Bindings of the fused multi-tensor optimizer steps (ops/optim.h): ember._C._sgd_step_,
// _adam_step_, ... Each converts its lists with the GIL held, then runs the whole
// step with the GIL released.
#include "ember/ops/optim.h"

#include "ember/python/bind.h"

namespace ember::python {
namespace {

/// A list/tuple of Tensors; TypeError naming the op and argument otherwise.
TensorList list_arg(py::handle h, const char* op, const char* arg) {
  EMBER_CHECK_TYPE(py::isinstance<py::list>(h) || py::isinstance<py::tuple>(h), op,
                   "(): argument '", arg, "' must be a list of Tensors, not ", type_name(h));
  TensorList out;
  for (py::handle item : h) {
    Tensor* t;
    EMBER_CHECK_TYPE(as_tensor(item, t), op, "(): argument '", arg,
                     "' must be a list of Tensors, but element ", out.size(), " is ",
                     type_name(item));
    out.push_back(*t);
  }
  return out;
}

/// Like list_arg, with None entries allowed (nullopt).
std::vector<std::optional<Tensor>> optional_list_arg(py::handle h, const char* op,
                                                     const char* arg) {
  EMBER_CHECK_TYPE(py::isinstance<py::list>(h) || py::isinstance<py::tuple>(h), op,
                   "(): argument '", arg, "' must be a list of Tensors or None, not ",
                   type_name(h));
  std::vector<std::optional<Tensor>> out;
  for (py::handle item : h) {
    Tensor* t;
    if (item.is_none()) {
      out.emplace_back();
      continue;
    }
    EMBER_CHECK_TYPE(as_tensor(item, t), op, "(): argument '", arg,
                     "' must be a list of Tensors or None, but element ", out.size(), " is ",
                     type_name(item));
    out.emplace_back(*t);
  }
  return out;
}

void bind_sgd_adam_steps(py::module_& m) {
  // ---- SGD and Adam/AdamW ----
  m.def(
      "_sgd_step_",
      [](py::handle params, py::handle grads, py::handle bufs, double lr, double momentum,
         double dampening, double weight_decay, bool nesterov, bool maximize) {
        const char* op = "_sgd_step_";
        TensorList p = list_arg(params, op, "params"), g = list_arg(grads, op, "grads");
        auto b = optional_list_arg(bufs, op, "momentum_buffers");
        py::gil_scoped_release nogil;
        return sgd_step_(p, g, b, lr, momentum, dampening, weight_decay, nesterov, maximize);
      },
      py::arg("params"), py::arg("grads"), py::arg("momentum_buffers"), py::kw_only(),
      py::arg("lr"), py::arg("momentum"), py::arg("dampening"), py::arg("weight_decay"),
      py::arg("nesterov"), py::arg("maximize"));

  m.def(
      "_adam_step_",
      [](py::handle params, py::handle grads, py::handle exp_avgs, py::handle exp_avg_sqs,
         py::handle max_exp_avg_sqs, py::handle steps, double lr, double beta1, double beta2,
         double weight_decay, double eps, bool amsgrad, bool maximize, bool decoupled) {
        const char* op = "_adam_step_";
        TensorList p = list_arg(params, op, "params"), g = list_arg(grads, op, "grads"),
                   m1 = list_arg(exp_avgs, op, "exp_avgs"),
                   m2 = list_arg(exp_avg_sqs, op, "exp_avg_sqs"),
                   mx = list_arg(max_exp_avg_sqs, op, "max_exp_avg_sqs"),
                   s = list_arg(steps, op, "state_steps");
        py::gil_scoped_release nogil;
        adam_step_(p, g, m1, m2, mx, s, lr, beta1, beta2, weight_decay, eps, amsgrad, maximize,
                   decoupled);
      },
      py::arg("params"), py::arg("grads"), py::arg("exp_avgs"), py::arg("exp_avg_sqs"),
      py::arg("max_exp_avg_sqs"), py::arg("state_steps"), py::kw_only(), py::arg("lr"),
      py::arg("beta1"), py::arg("beta2"), py::arg("weight_decay"), py::arg("eps"),
      py::arg("amsgrad"), py::arg("maximize"), py::arg("decoupled_weight_decay"));
}

void bind_adam_variant_steps(py::module_& m) {
  // ---- Adam variants: Adamax, NAdam, RAdam ----
  m.def(
      "_adamax_step_",
      [](py::handle params, py::handle grads, py::handle exp_avgs, py::handle exp_infs,
         py::handle steps, double lr, double beta1, double beta2, double weight_decay, double eps,
         bool maximize) {
        const char* op = "_adamax_step_";
        TensorList p = list_arg(params, op, "params"), g = list_arg(grads, op, "grads"),
                   m1 = list_arg(exp_avgs, op, "exp_avgs"), u = list_arg(exp_infs, op, "exp_infs"),
                   s = list_arg(steps, op, "state_steps");
        py::gil_scoped_release nogil;
        adamax_step_(p, g, m1, u, s, lr, beta1, beta2, weight_decay, eps, maximize);
      },
      py::arg("params"), py::arg("grads"), py::arg("exp_avgs"), py::arg("exp_infs"),
      py::arg("state_steps"), py::kw_only(), py::arg("lr"), py::arg("beta1"), py::arg("beta2"),
      py::arg("weight_decay"), py::arg("eps"), py::arg("maximize"));

  m.def(
      "_nadam_step_",
      [](py::handle params, py::handle grads, py::handle exp_avgs, py::handle exp_avg_sqs,
         py::handle mu_products, py::handle steps, double lr, double beta1, double beta2,
         double weight_decay, double eps, double momentum_decay, bool decoupled, bool maximize) {
        const char* op = "_nadam_step_";
        TensorList p = list_arg(params, op, "params"), g = list_arg(grads, op, "grads"),
                   m1 = list_arg(exp_avgs, op, "exp_avgs"),
                   m2 = list_arg(exp_avg_sqs, op, "exp_avg_sqs"),
                   mu = list_arg(mu_products, op, "mu_products"),
                   s = list_arg(steps, op, "state_steps");
        py::gil_scoped_release nogil;
        nadam_step_(p, g, m1, m2, mu, s, lr, beta1, beta2, weight_decay, eps, momentum_decay,
                    decoupled, maximize);
      },
      py::arg("params"), py::arg("grads"), py::arg("exp_avgs"), py::arg("exp_avg_sqs"),
      py::arg("mu_products"), py::arg("state_steps"), py::kw_only(), py::arg("lr"),
      py::arg("beta1"), py::arg("beta2"), py::arg("weight_decay"), py::arg("eps"),
      py::arg("momentum_decay"), py::arg("decoupled_weight_decay"), py::arg("maximize"));

  m.def(
      "_radam_step_",
      [](py::handle params, py::handle grads, py::handle exp_avgs, py::handle exp_avg_sqs,
         py::handle steps, double lr, double beta1, double beta2, double weight_decay, double eps,
         bool decoupled, bool maximize) {
        const char* op = "_radam_step_";
        TensorList p = list_arg(params, op, "params"), g = list_arg(grads, op, "grads"),
                   m1 = list_arg(exp_avgs, op, "exp_avgs"),
                   m2 = list_arg(exp_avg_sqs, op, "exp_avg_sqs"),
                   s = list_arg(steps, op, "state_steps");
        py::gil_scoped_release nogil;
        radam_step_(p, g, m1, m2, s, lr, beta1, beta2, weight_decay, eps, decoupled, maximize);
      },
      py::arg("params"), py::arg("grads"), py::arg("exp_avgs"), py::arg("exp_avg_sqs"),
      py::arg("state_steps"), py::kw_only(), py::arg("lr"), py::arg("beta1"), py::arg("beta2"),
      py::arg("weight_decay"), py::arg("eps"), py::arg("decoupled_weight_decay"),
      py::arg("maximize"));
}

void bind_adaptive_lr_steps(py::module_& m) {
  // ---- RMSprop, Adagrad, Adadelta ----
  m.def(
      "_rmsprop_step_",
      [](py::handle params, py::handle grads, py::handle square_avgs, py::handle grad_avgs,
         py::handle bufs, py::handle steps, double lr, double alpha, double eps,
         double weight_decay, double momentum, bool centered, bool maximize) {
        const char* op = "_rmsprop_step_";
        TensorList p = list_arg(params, op, "params"), g = list_arg(grads, op, "grads"),
                   sq = list_arg(square_avgs, op, "square_avgs"),
                   ga = list_arg(grad_avgs, op, "grad_avgs"),
                   b = list_arg(bufs, op, "momentum_buffers"),
                   s = list_arg(steps, op, "state_steps");
        py::gil_scoped_release nogil;
        rmsprop_step_(p, g, sq, ga, b, s, lr, alpha, eps, weight_decay, momentum, centered,
                      maximize);
      },
      py::arg("params"), py::arg("grads"), py::arg("square_avgs"), py::arg("grad_avgs"),
      py::arg("momentum_buffers"), py::arg("state_steps"), py::kw_only(), py::arg("lr"),
      py::arg("alpha"), py::arg("eps"), py::arg("weight_decay"), py::arg("momentum"),
      py::arg("centered"), py::arg("maximize"));

  m.def(
      "_adagrad_step_",
      [](py::handle params, py::handle grads, py::handle sums, py::handle steps, double lr,
         double lr_decay, double weight_decay, double eps, bool maximize) {
        const char* op = "_adagrad_step_";
        TensorList p = list_arg(params, op, "params"), g = list_arg(grads, op, "grads"),
                   su = list_arg(sums, op, "state_sums"), s = list_arg(steps, op, "state_steps");
        py::gil_scoped_release nogil;
        adagrad_step_(p, g, su, s, lr, lr_decay, weight_decay, eps, maximize);
      },
      py::arg("params"), py::arg("grads"), py::arg("state_sums"), py::arg("state_steps"),
      py::kw_only(), py::arg("lr"), py::arg("lr_decay"), py::arg("weight_decay"), py::arg("eps"),
      py::arg("maximize"));

  m.def(
      "_adadelta_step_",
      [](py::handle params, py::handle grads, py::handle square_avgs, py::handle acc_deltas,
         py::handle steps, double lr, double rho, double eps, double weight_decay, bool maximize) {
        const char* op = "_adadelta_step_";
        TensorList p = list_arg(params, op, "params"), g = list_arg(grads, op, "grads"),
                   sq = list_arg(square_avgs, op, "square_avgs"),
                   ad = list_arg(acc_deltas, op, "acc_deltas"),
                   s = list_arg(steps, op, "state_steps");
        py::gil_scoped_release nogil;
        adadelta_step_(p, g, sq, ad, s, lr, rho, eps, weight_decay, maximize);
      },
      py::arg("params"), py::arg("grads"), py::arg("square_avgs"), py::arg("acc_deltas"),
      py::arg("state_steps"), py::kw_only(), py::arg("lr"), py::arg("rho"), py::arg("eps"),
      py::arg("weight_decay"), py::arg("maximize"));
}

}  // namespace

void init_optim(py::module_& m) {
  bind_sgd_adam_steps(m);
  bind_adam_variant_steps(m);
  bind_adaptive_lr_steps(m);
}

}  // namespace ember::python
