// Bindings: ember.Generator, seeding, the sampling factories and the in-place
// random fills (uniform_, normal_, random_, bernoulli_, exponential_).
#include "ember/ops/random.h"
#include "ember/ops/factory.h"
#include "ember/ops/ops.h"
#include "ember/python/bind.h"
#include "ember/python/factory_args.h"

namespace ember::python {
namespace {

// A seed from a Python int: [0, 2^64) as is, negative values wrap (like PyTorch).
uint64_t seed_arg(py::handle h, const char* op) {
  PyObject* o = h.ptr();
  py::object idx;
  if (!PyLong_Check(o) || PyBool_Check(o)) {
    EMBER_CHECK_TYPE(!PyFloat_Check(o) && PyIndex_Check(o), op, "(): expected an int seed, got ",
                     type_name(h));
    idx = py::reinterpret_steal<py::object>(PyNumber_Index(o));
    if (!idx) throw py::error_already_set();
    o = idx.ptr();
  }
  unsigned long long u = PyLong_AsUnsignedLongLong(o);
  if (u == (unsigned long long)-1 && PyErr_Occurred()) {
    PyErr_Clear();
    int of = 0;
    long long s = PyLong_AsLongLongAndOverflow(o, &of);
    if (of || (s == -1 && PyErr_Occurred())) {
      PyErr_Clear();
      raise(ErrorKind::Runtime, "Overflow when unpacking long: the seed ", std::string(py::str(h)),
            " does not fit in 64 bits");
    }
    return uint64_t(s);
  }
  return uint64_t(u);
}

Tensor state_tensor(const GeneratorImpl& g) {
  Tensor t = empty(Shape{16}, DType::UInt8, Device());
  g.get_state(t.data<uint8_t>());
  return t;
}

void set_state(GeneratorImpl& g, py::handle h) {
  Tensor* t;
  EMBER_CHECK_TYPE(as_tensor(h, t), "expected an ember.ByteTensor as the RNG state, but got ",
                   type_name(h));
  EMBER_CHECK_TYPE(t->dtype() == DType::UInt8,
                   "expected an ember.ByteTensor as the RNG state, but got a tensor of dtype ",
                   dtype_name(t->dtype()));
  EMBER_CHECK(t->numel() == 16, "RNG state is wrong size: expected 16 bytes, got ", t->numel());
  Tensor c = contiguous(to_device(*t, Device()));
  g.set_state(c.data<uint8_t>());
}

// Options shared by rand/randn/randint/randperm/normal: the generator plus the factory options.
struct SampleOpts {
  Generator gen;
  std::optional<DType> dtype;
  Device device;
  bool requires_grad = false;
};
SampleOpts sample_opts(FactoryKwargs& kw) {
  SampleOpts o;
  o.gen = generator_arg(kw.take("generator"));
  o.dtype = kw.dtype();
  o.device = kw.device_or_default();
  o.requires_grad = kw.requires_grad();
  kw.ignore_layout();
  kw.done();
  return o;
}

Shape size_of(const char* op, const py::args& args, FactoryKwargs& kw) {
  py::object size = kw.take("size");
  if (!size.is_none()) {
    EMBER_CHECK_TYPE(args.size() == 0, op, "(): got the size both positionally and as size=");
    return shape_arg(size, op, "size");
  }
  return shape_from_args(args, op, "size");
}

double num(py::handle h, const char* op, const char* arg) {
  return scalar_arg(h, op, arg).to_double();
}

}  // namespace

namespace {

// ember.Generator and the default generator.
void bind_generator(py::module_& m) {
  py::class_<GeneratorImpl, std::shared_ptr<GeneratorImpl>>(m, "Generator")
      .def(py::init([](py::object device) {
             Device d = device.is_none() ? Device() : device_arg(device);
             return std::make_shared<GeneratorImpl>(d);
           }),
           py::arg("device") = "cpu")
      .def_property_readonly("device",
                             [](const GeneratorImpl& g) { return device_object(g.device()); })
      .def(
          "manual_seed",
          [](py::object self, py::handle seed) {
            self.cast<GeneratorImpl&>().manual_seed(seed_arg(seed, "manual_seed"));
            return self;
          },
          py::arg("seed"))
      .def("seed", &GeneratorImpl::seed)
      .def("initial_seed", &GeneratorImpl::initial_seed)
      .def("get_state", &state_tensor)
      .def(
          "set_state",
          [](py::object self, py::handle st) {
            set_state(self.cast<GeneratorImpl&>(), st);
            return self;
          },
          py::arg("new_state"))
      .def("get_offset", &GeneratorImpl::offset);
}

// Seeding and RNG state of the default generator, and the raw Philox block.
void bind_seeding(py::module_& m) {
  m.attr("default_generator") = py::cast(default_generator());
  // The raw engine, for known-answer tests: the 4 words of block `counter` for key `seed`.
  m.def("_philox_block", [](uint64_t seed, uint64_t counter) {
    philox::Block b = philox::block(seed, counter);
    return py::make_tuple(b.w[0], b.w[1], b.w[2], b.w[3]);
  });
  // ember.compile's fused dropout (Note [Fused dropout]): reserves the blocks a bernoulli_
  // fill of `numel` elements takes from the default generator, as eager's dropout does, and
  // returns (seed, first block) as two 0-d int64 tensors (the bits of the uint64 values),
  // which the generated kernel reads as operands.
  m.def(
      "_philox_reserve_bernoulli",
      [](int64_t numel) {
        EMBER_CHECK(numel >= 0, "_philox_reserve_bernoulli: numel must be >= 0, got ", numel);
        std::pair<uint64_t, uint64_t> so{0, 0};
        if (numel > 0)
          so = default_generator()->reserve(
              random_blocks_needed(Dist::Bernoulli, DType::Float32, numel));
        Tensor seed = empty(Shape{}, DType::Int64, Device()),
               offset = empty(Shape{}, DType::Int64, Device());
        *seed.data<int64_t>() = int64_t(so.first);
        *offset.data<int64_t>() = int64_t(so.second);
        return py::make_tuple(seed, offset);
      },
      py::arg("numel"));

  m.def(
      "manual_seed",
      [](py::handle seed) {
        // torch.manual_seed calls int(seed) first, so floats truncate.
        py::object s = PyFloat_Check(seed.ptr())
                           ? py::object(py::int_(py::reinterpret_borrow<py::object>(seed)))
                           : py::reinterpret_borrow<py::object>(seed);
        default_generator()->manual_seed(seed_arg(s, "manual_seed"));
        return default_generator();
      },
      py::arg("seed"));
  m.def("seed", [] { return default_generator()->seed(); });
  m.def("initial_seed", [] { return default_generator()->initial_seed(); });
  m.def("get_rng_state", [] { return state_tensor(*default_generator()); });
  m.def(
      "set_rng_state", [](py::handle st) { set_state(*default_generator(), st); },
      py::arg("new_state"));
}

// rand, randn, randint and randperm.
void bind_random_factories(py::module_& m) {
  m.def("rand", [](py::args args, py::kwargs kwargs) {
    FactoryKwargs kw("rand", kwargs, true);
    Shape s = size_of("rand", args, kw);
    SampleOpts o = sample_opts(kw);
    return kw.finish(rand(s, o.dtype.value_or(default_dtype()), o.device, o.gen), o.requires_grad);
  });
  m.def("randn", [](py::args args, py::kwargs kwargs) {
    FactoryKwargs kw("randn", kwargs, true);
    Shape s = size_of("randn", args, kw);
    SampleOpts o = sample_opts(kw);
    return kw.finish(randn(s, o.dtype.value_or(default_dtype()), o.device, o.gen), o.requires_grad);
  });
  // randint(high, size) / randint(low, high, size), each also as a keyword.
  m.def("randint", [](py::args args, py::kwargs kwargs) {
    FactoryKwargs kw("randint", kwargs, true);
    py::object lo = kw.take("low"), hi = kw.take("high"), sz = kw.take("size");
    std::vector<py::object> pos;
    for (py::handle a : args) pos.push_back(py::reinterpret_borrow<py::object>(a));
    // Fill the positional slots (low, high, size) from the right, as PyTorch's two overloads do.
    py::object low, high, size;
    if (pos.size() == 3) {
      low = pos[0], high = pos[1], size = pos[2];
    } else if (pos.size() == 2) {
      if (!sz.is_none())
        low = pos[0], high = pos[1];
      else
        high = pos[0], size = pos[1];
    } else if (pos.size() == 1) {
      if (!sz.is_none() && !hi.is_none())
        low = pos[0];
      else
        high = pos[0];
    } else {
      EMBER_CHECK_TYPE(pos.empty(), "randint() takes at most 3 positional arguments (", pos.size(),
                       " given)");
    }
    if (!lo.is_none()) low = lo;
    if (!hi.is_none()) high = hi;
    if (!sz.is_none()) size = sz;
    EMBER_CHECK_TYPE(high && !high.is_none(), "randint() missing required argument 'high'");
    EMBER_CHECK_TYPE(size && !size.is_none(), "randint() missing required argument 'size'");
    int64_t l = (low && !low.is_none()) ? int_arg(low, "randint", "low") : 0;
    int64_t h = int_arg(high, "randint", "high");
    Shape s = shape_arg(size, "randint", "size");
    SampleOpts o = sample_opts(kw);
    return kw.finish(randint(l, h, s, o.dtype.value_or(DType::Int64), o.device, o.gen),
                     o.requires_grad);
  });
  m.def(
      "randperm",
      [](py::handle n, py::kwargs kwargs) {
        FactoryKwargs kw("randperm", kwargs, true);
        SampleOpts o = sample_opts(kw);
        return kw.finish(
            randperm(int_arg(n, "randperm", "n"), o.dtype.value_or(DType::Int64), o.device, o.gen),
            o.requires_grad);
      },
      py::arg("n"));
}

// The sampling functions normal, bernoulli and multinomial.
void bind_sampling_functions(py::module_& m) {
  m.def(
      "normal",
      [](py::handle mean, py::object std, py::object size, py::kwargs kwargs) {
        FactoryKwargs kw("normal", kwargs);
        SampleOpts o = sample_opts(kw);
        Tensor* tm;
        Tensor* ts;
        bool mt = as_tensor(mean, tm), st = !std.is_none() && as_tensor(std, ts);
        if (!mt && !st) {
          EMBER_CHECK_TYPE(
              !size.is_none(),
              "normal() received an invalid combination of arguments: with a "
              "float mean and std, the size argument is required (normal(mean, std, size))");
          Tensor t =
              empty(shape_arg(size, "normal", "size"), o.dtype.value_or(default_dtype()), o.device);
          normal_(t, num(mean, "normal", "mean"), std.is_none() ? 1.0 : num(std, "normal", "std"),
                  o.gen);
          *t.impl()->version = 0;
          return finish_factory(t, o.requires_grad);
        }
        EMBER_CHECK_TYPE(size.is_none(),
                         "normal() received an invalid combination of arguments: size is "
                         "only accepted with a float mean and std");
        Tensor tmean = mt ? *tm : wrap_scalar(Scalar(num(mean, "normal", "mean")), (*ts).device());
        Tensor tstd = st ? *ts
                         : wrap_scalar(Scalar(std.is_none() ? 1.0 : num(std, "normal", "std")),
                                       tmean.device());
        return finish_factory(normal(tmean, tstd, o.gen), o.requires_grad);
      },
      py::arg("mean"), py::arg("std") = py::none(), py::arg("size") = py::none());
  m.def(
      "bernoulli",
      [](const Tensor& input, py::object p, py::kwargs kwargs) {
        FactoryKwargs kw("bernoulli", kwargs);
        Generator g = generator_arg(kw.take("generator"));
        kw.done();
        if (p.is_none()) return bernoulli(input, g);
        Tensor out = empty(input.sizes(), input.dtype(), input.device());
        bernoulli_(out, num(p, "bernoulli", "p"), g);
        *out.impl()->version = 0;
        return out;
      },
      py::arg("input"), py::arg("p") = py::none());
  m.def(
      "multinomial",
      [](const Tensor& input, py::handle n, bool replacement, py::kwargs kwargs) {
        FactoryKwargs kw("multinomial", kwargs);
        Generator g = generator_arg(kw.take("generator"));
        kw.done();
        return multinomial(input, int_arg(n, "multinomial", "num_samples"), replacement, g);
      },
      py::arg("input"), py::arg("num_samples"), py::arg("replacement") = false);
}

// The in-place samplers and sampling methods on Tensor.
void bind_random_methods(py::module_& m) {
  py::class_<Tensor> cls = tensor_class(m);
  cls.def(
         "uniform_",
         [](const Tensor& t, py::handle from, py::handle to, py::object gen) {
           return uniform_(t, num(from, "uniform_", "from"), num(to, "uniform_", "to"),
                           generator_arg(gen));
         },
         py::arg("from") = 0.0, py::arg("to") = 1.0, py::kw_only(),
         py::arg("generator") = py::none())
      .def(
          "normal_",
          [](const Tensor& t, py::handle mean, py::handle std, py::object gen) {
            return normal_(t, num(mean, "normal_", "mean"), num(std, "normal_", "std"),
                           generator_arg(gen));
          },
          py::arg("mean") = 0.0, py::arg("std") = 1.0, py::kw_only(),
          py::arg("generator") = py::none())
      .def(
          "exponential_",
          [](const Tensor& t, py::handle l, py::object gen) {
            return exponential_(t, num(l, "exponential_", "lambd"), generator_arg(gen));
          },
          py::arg("lambd") = 1.0, py::kw_only(), py::arg("generator") = py::none())
      // random_() / random_(to) / random_(from, to) ; to=None: up to the dtype's max.
      .def("random_",
           [](const Tensor& t, py::args args, py::kwargs kwargs) {
             FactoryKwargs kw("random_", kwargs);
             Generator g = generator_arg(kw.take("generator"));
             bool has_to = kw.has("to");
             py::object kf = kw.take("from"), kt = kw.take("to");
             kw.done();
             EMBER_CHECK_TYPE(args.size() <= 2, "random_() takes at most 2 positional arguments (",
                              args.size(), " given)");
             int64_t from = 0;
             std::optional<int64_t> to;
             if (args.size() == 2) {
               from = int_arg(args[0], "random_", "from");
               if (!args[1].is_none()) to = int_arg(args[1], "random_", "to");
             } else if (args.size() == 1) {
               if (!kf.is_none() || has_to) {
                 // random_(from, to=...) with to given by keyword
                 if (!kf.is_none())
                   raise(ErrorKind::Type, "random_() got multiple values for argument 'from'");
                 from = int_arg(args[0], "random_", "from");
                 if (!kt.is_none()) to = int_arg(kt, "random_", "to");
               } else {
                 to = int_arg(args[0], "random_", "to");
               }
             } else {
               if (!kf.is_none()) from = int_arg(kf, "random_", "from");
               if (!kt.is_none())
                 to = int_arg(kt, "random_", "to");
               else if (!has_to && kf.is_none()) {
                 // random_(): [0, max] of the dtype.
               }
             }
             return random_(t, from, to, g);
           })
      .def(
          "bernoulli_",
          [](const Tensor& t, py::handle p, py::object gen) {
            Tensor* pt;
            if (as_tensor(p, pt)) return bernoulli_(t, *pt, generator_arg(gen));
            return bernoulli_(t, num(p, "bernoulli_", "p"), generator_arg(gen));
          },
          py::arg("p") = 0.5, py::kw_only(), py::arg("generator") = py::none())
      .def(
          "bernoulli",
          [](const Tensor& t, py::object p, py::object gen) {
            if (p.is_none()) return bernoulli(t, generator_arg(gen));
            Tensor out = empty(t.sizes(), t.dtype(), t.device());
            bernoulli_(out, num(p, "bernoulli", "p"), generator_arg(gen));
            *out.impl()->version = 0;
            return out;
          },
          py::arg("p") = py::none(), py::kw_only(), py::arg("generator") = py::none())
      .def(
          "multinomial",
          [](const Tensor& t, py::handle n, bool replacement, py::object gen) {
            return multinomial(t, int_arg(n, "multinomial", "num_samples"), replacement,
                               generator_arg(gen));
          },
          py::arg("num_samples"), py::arg("replacement") = false, py::kw_only(),
          py::arg("generator") = py::none());
}

}  // namespace

void init_random(py::module_& m) {
  bind_generator(m);
  bind_seeding(m);
  bind_random_factories(m);
  bind_sampling_functions(m);
  bind_random_methods(m);
}

}  // namespace ember::python
