// Bindings of activations, softmax/log_softmax, losses, normalization, dropout,
// embedding and the nn helpers. ember.softmax / log_softmax / pdist / cdist (and the
// Tensor methods) are public; everything else lives in ember._C._nn, called by
// ember.nn.functional, which normalizes the arguments.
#include "ember/ops/nn_activation.h"
#include "ember/ops/nn_loss.h"
#include "ember/ops/nn_misc.h"
#include "ember/ops/nn_norm.h"
#include "ember/python/bind.h"

namespace ember::python {
namespace {

using OptT = std::optional<Tensor>;

std::optional<int64_t> softmax_dim(py::handle dim, const char* op) {
  if (dim.is_none()) return std::nullopt;
  return int_arg(dim, op, "dim");
}

/// torch.softmax(input, dim, dtype=None): dim is required at this level.
Tensor softmax_call(const Tensor& x, py::handle dim, py::handle dtype, bool log) {
  const char* op = log ? "log_softmax" : "softmax";
  auto d = softmax_dim(dim, op);
  EMBER_CHECK_TYPE(d.has_value(), op,
                   "() missing required argument 'dim' (pass the dimension "
                   "to normalize over)");
  auto dt = optional_dtype(dtype, op);
  return log ? log_softmax(x, *d, dt) : softmax(x, *d, dt);
}

Reduction reduction_arg(int64_t r) {
  EMBER_CHECK_VALUE(r >= 0 && r <= 2, "invalid reduction ", r);
  return Reduction(r);
}

void bind_nn_softmax_and_distance(py::module_& m, py::class_<Tensor>& cls) {
  using py::arg;
  const auto none = py::none();
  // ---- public: softmax / log_softmax / pdist / cdist ----
  for (bool log : {false, true}) {
    const char* name = log ? "log_softmax" : "softmax";
    m.def(
        name,
        [log](const Tensor& x, py::handle dim, py::handle dtype) {
          return softmax_call(x, dim, dtype, log);
        },
        arg("input"), arg("dim") = none, py::kw_only(), arg("dtype") = none);
    cls.def(
        name,
        [log](const Tensor& x, py::handle dim, py::handle dtype) {
          return softmax_call(x, dim, dtype, log);
        },
        arg("dim") = none, py::kw_only(), arg("dtype") = none);
  }
  m.def(
      "pdist", [](const Tensor& x, double p) { return pdist(x, p); }, arg("input"), arg("p") = 2.0);
  m.def(
      "cdist",
      [](const Tensor& x1, const Tensor& x2, double p, py::handle mode) {
        return cdist(
            x1, x2, p,
            mode.is_none() ? "use_mm_for_euclid_dist_if_necessary" : mode.cast<std::string>());
      },
      arg("x1"), arg("x2"), arg("p") = 2.0, arg("compute_mode") = none);
}

void bind_nn_linear_and_activations(py::module_& nn) {
  using py::arg;
  const auto none = py::none();
  // ---- linear ----
  nn.def("linear", &linear, arg("input"), arg("weight"), arg("bias") = none);
  nn.def("bilinear", &bilinear, arg("input1"), arg("input2"), arg("weight"), arg("bias") = none);

  // ---- activations: out-of-place, and `name_` in place (fused kernels, PyTorch's nodes) ----
#define EMBER_ACT(name, sig, call, icall, ...)                         \
  nn.def(#name, [] sig { return call; }, arg("input"), ##__VA_ARGS__); \
  nn.def(#name "_", [] sig -> Tensor { return icall; }, arg("input"), ##__VA_ARGS__);
  EMBER_ACT(hardtanh, (const Tensor& input, double lo, double hi), hardtanh(input, lo, hi),
            hardtanh_(input, lo, hi), arg("min_val") = -1.0, arg("max_val") = 1.0)
  EMBER_ACT(relu6, (const Tensor& input), relu6(input), relu6_(input))
  EMBER_ACT(leaky_relu, (const Tensor& input, double s), leaky_relu(input, s),
            leaky_relu_(input, s), arg("negative_slope") = 0.01)
  EMBER_ACT(elu, (const Tensor& input, double a, double s, double i), elu(input, a, s, i),
            elu_(input, a, s, i), arg("alpha") = 1.0, arg("scale") = 1.0, arg("input_scale") = 1.0)
  EMBER_ACT(selu, (const Tensor& input), selu(input), selu_(input))
  EMBER_ACT(celu, (const Tensor& input, double a), celu(input, a), celu_(input, a),
            arg("alpha") = 1.0)
  EMBER_ACT(silu, (const Tensor& input), silu(input), silu_(input))
  EMBER_ACT(mish, (const Tensor& input), mish(input), mish_(input))
  EMBER_ACT(hardsigmoid, (const Tensor& input), hardsigmoid(input), hardsigmoid_(input))
  EMBER_ACT(hardswish, (const Tensor& input), hardswish(input), hardswish_(input))
  EMBER_ACT(threshold, (const Tensor& input, double t, double v), threshold(input, t, v),
            threshold_(input, t, v), arg("threshold"), arg("value"))
#undef EMBER_ACT
  nn.def(
      "dropout",
      [](const Tensor& input, double p, bool train, bool feature, bool alpha) {
        return dropout(input, p, train, feature, alpha);
      },
      arg("input"), arg("p") = 0.5, arg("train") = true, arg("feature") = false,
      arg("alpha") = false);
  nn.def(
      "dropout_",
      [](const Tensor& input, double p, bool train, bool feature, bool alpha) -> Tensor {
        return activation_(input, "dropout_", [&](const Tensor& input) {
          return dropout(input, p, train, feature, alpha);
        });
      },
      arg("input"), arg("p") = 0.5, arg("train") = true, arg("feature") = false,
      arg("alpha") = false);
  nn.def("gelu", &gelu, arg("input"), arg("approximate") = "none");
  nn.def("hardshrink", &hardshrink, arg("input"), arg("lambd") = 0.5);
  nn.def("softshrink", &softshrink, arg("input"), arg("lambd") = 0.5);
  nn.def("tanhshrink", &tanhshrink, arg("input"));
  nn.def("softplus", &softplus, arg("input"), arg("beta") = 1.0, arg("threshold") = 20.0);
  nn.def("softsign", &softsign, arg("input"));
  nn.def("logsigmoid", &logsigmoid, arg("input"));
  nn.def("prelu", &prelu, arg("input"), arg("weight"));
  nn.def("glu", &glu, arg("input"), arg("dim") = -1);
}

void bind_nn_losses(py::module_& nn) {
  using py::arg;
  const auto none = py::none();
  // ---- losses (reduction: 0 none, 1 mean, 2 sum) ----
  nn.def(
      "nll_loss",
      [](const Tensor& x, const Tensor& t, const OptT& w, int64_t r, int64_t ig) {
        return nll_loss(x, t, w, reduction_arg(r), ig);
      },
      arg("input"), arg("target"), arg("weight") = none, arg("reduction") = 1,
      arg("ignore_index") = -100);
  nn.def(
      "cross_entropy",
      [](const Tensor& x, const Tensor& t, const OptT& w, int64_t r, int64_t ig, double ls) {
        return cross_entropy(x, t, w, reduction_arg(r), ig, ls);
      },
      arg("input"), arg("target"), arg("weight") = none, arg("reduction") = 1,
      arg("ignore_index") = -100, arg("label_smoothing") = 0.0);
  nn.def(
      "mse_loss",
      [](const Tensor& x, const Tensor& t, int64_t r) { return mse_loss(x, t, reduction_arg(r)); },
      arg("input"), arg("target"), arg("reduction") = 1);
  nn.def(
      "l1_loss",
      [](const Tensor& x, const Tensor& t, int64_t r) { return l1_loss(x, t, reduction_arg(r)); },
      arg("input"), arg("target"), arg("reduction") = 1);
  nn.def(
      "smooth_l1_loss",
      [](const Tensor& x, const Tensor& t, int64_t r, double beta) {
        return smooth_l1_loss(x, t, reduction_arg(r), beta);
      },
      arg("input"), arg("target"), arg("reduction") = 1, arg("beta") = 1.0);
  nn.def(
      "huber_loss",
      [](const Tensor& x, const Tensor& t, int64_t r, double delta) {
        return huber_loss(x, t, reduction_arg(r), delta);
      },
      arg("input"), arg("target"), arg("reduction") = 1, arg("delta") = 1.0);
  nn.def(
      "binary_cross_entropy",
      [](const Tensor& x, const Tensor& t, const OptT& w, int64_t r) {
        return binary_cross_entropy(x, t, w, reduction_arg(r));
      },
      arg("input"), arg("target"), arg("weight") = none, arg("reduction") = 1);
  nn.def(
      "binary_cross_entropy_with_logits",
      [](const Tensor& x, const Tensor& t, const OptT& w, const OptT& pw, int64_t r) {
        return binary_cross_entropy_with_logits(x, t, w, pw, reduction_arg(r));
      },
      arg("input"), arg("target"), arg("weight") = none, arg("pos_weight") = none,
      arg("reduction") = 1);

  nn.def(
      "ctc_loss",
      [](const Tensor& lp, const Tensor& t, const Tensor& il, const Tensor& tl, int64_t blank,
         int64_t r, bool zi) { return ctc_loss(lp, t, il, tl, blank, reduction_arg(r), zi); },
      arg("log_probs"), arg("targets"), arg("input_lengths"), arg("target_lengths"),
      arg("blank") = 0, arg("reduction") = 1, arg("zero_infinity") = false);
}

void bind_nn_norm_and_embedding(py::module_& nn) {
  using py::arg;
  const auto none = py::none();
  // ---- normalization ----
  nn.def("batch_norm", &batch_norm, arg("input"), arg("running_mean"), arg("running_var"),
         arg("weight") = none, arg("bias") = none, arg("training") = false, arg("momentum") = 0.1,
         arg("eps") = 1e-5);
  nn.def(
      "layer_norm",
      [](const Tensor& x, py::handle shape, const OptT& w, const OptT& b, double eps) {
        return layer_norm(x, shape_arg(shape, "layer_norm", "normalized_shape"), w, b, eps);
      },
      arg("input"), arg("normalized_shape"), arg("weight") = none, arg("bias") = none,
      arg("eps") = 1e-5);
  nn.def("group_norm", &group_norm, arg("input"), arg("num_groups"), arg("weight") = none,
         arg("bias") = none, arg("eps") = 1e-5);
  nn.def("instance_norm", &instance_norm, arg("input"), arg("running_mean") = none,
         arg("running_var") = none, arg("weight") = none, arg("bias") = none,
         arg("use_input_stats") = true, arg("momentum") = 0.1, arg("eps") = 1e-5);

  // ---- embedding / helpers ----
  nn.def("embedding", &embedding, arg("weight"), arg("indices"), arg("padding_idx") = -1,
         arg("scale_grad_by_freq") = false, arg("sparse") = false);
  nn.def("embedding_renorm_", &embedding_renorm_, arg("weight"), arg("indices"), arg("max_norm"),
         arg("norm_type") = 2.0);
  nn.def("one_hot", &one_hot, arg("tensor"), arg("num_classes") = -1);
}

}  // namespace

void init_nn(py::module_& m) {
  py::class_<Tensor> cls = tensor_class(m);
  bind_nn_softmax_and_distance(m, cls);
  py::module_ nn = m.def_submodule("_nn", "nn kernels behind ember.nn.functional");
  bind_nn_linear_and_activations(nn);
  bind_nn_losses(nn);
  bind_nn_norm_and_embedding(nn);
}

}  // namespace ember::python
