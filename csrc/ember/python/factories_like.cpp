// Bindings: the *_like factories (zeros_like, ..., randint_like): a new tensor shaped
// like the input, with its dtype and device unless given.
#include "ember/ops/factory.h"
#include "ember/ops/ops.h"
#include "ember/ops/random.h"
#include "ember/python/bind.h"
#include "ember/python/factory_args.h"

namespace ember::python {
namespace {

Tensor like_factory(const char* op, const Tensor& a, const py::kwargs& kwargs,
                    const std::function<void(const Tensor&, const Generator&)>& fill) {
  FactoryKwargs kw(op, kwargs);
  auto dt = kw.dtype();
  auto dev = kw.device();
  bool rg = kw.requires_grad();
  py::object g = kw.take("generator");
  Generator gen = generator_arg(g);
  kw.ignore_layout();
  kw.done();
  Tensor t = empty_like(a, dt, dev);
  fill(t, gen);
  *t.impl()->version = 0;
  return finish_factory(t, rg);
}

}  // namespace

void init_factories_like(py::module_& m) {
  m.def(
      "zeros_like",
      [](const Tensor& a, py::kwargs k) {
        return like_factory("zeros_like", a, k, [](const Tensor& t, const Generator&) {
          fill_(t, Scalar(int64_t(0)));
        });
      },
      py::arg("input"));
  m.def(
      "ones_like",
      [](const Tensor& a, py::kwargs k) {
        return like_factory("ones_like", a, k, [](const Tensor& t, const Generator&) {
          fill_(t, Scalar(int64_t(1)));
        });
      },
      py::arg("input"));
  m.def(
      "empty_like",
      [](const Tensor& a, py::kwargs k) {
        return like_factory("empty_like", a, k, [](const Tensor&, const Generator&) {});
      },
      py::arg("input"));
  m.def(
      "full_like",
      [](const Tensor& a, py::handle fill, py::kwargs k) {
        Scalar v = scalar_arg(fill, "full_like", "fill_value");
        return like_factory("full_like", a, k,
                            [v](const Tensor& t, const Generator&) { fill_(t, v); });
      },
      py::arg("input"), py::arg("fill_value"));
  m.def(
      "rand_like",
      [](const Tensor& a, py::kwargs k) {
        return like_factory("rand_like", a, k,
                            [](const Tensor& t, const Generator& g) { uniform_(t, 0, 1, g); });
      },
      py::arg("input"));
  m.def(
      "randn_like",
      [](const Tensor& a, py::kwargs k) {
        return like_factory("randn_like", a, k,
                            [](const Tensor& t, const Generator& g) { normal_(t, 0, 1, g); });
      },
      py::arg("input"));
  m.def(
      "randint_like",
      [](const Tensor& a, py::args args, py::kwargs k) {
        FactoryKwargs kw("randint_like", k);
        py::object lo = kw.take("low"), hi = kw.take("high");
        int64_t low = 0, high;
        if (args.size() == 2) {
          low = int_arg(args[0], "randint_like", "low");
          high = int_arg(args[1], "randint_like", "high");
        } else if (args.size() == 1) {
          if (!lo.is_none()) low = int_arg(lo, "randint_like", "low");
          high = int_arg(args[0], "randint_like", "high");
        } else {
          EMBER_CHECK_TYPE(args.size() == 0 && !hi.is_none(),
                           "randint_like() missing required argument 'high'");
          if (!lo.is_none()) low = int_arg(lo, "randint_like", "low");
          high = int_arg(hi, "randint_like", "high");
        }
        py::kwargs rest;
        for (const char* n : {"dtype", "device", "requires_grad", "generator", "memory_format",
                              "layout", "pin_memory"}) {
          py::object v = kw.take(n);
          if (!v.is_none()) rest[n] = v;
        }
        kw.done();
        return like_factory(
            "randint_like", a, rest,
            [low, high](const Tensor& t, const Generator& g) { random_(t, low, high, g); });
      },
      py::arg("input"));
}

}  // namespace ember::python
