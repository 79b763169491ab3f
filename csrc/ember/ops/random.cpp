// Random ops: generator state and the front-ends of every sampling op. The
// kernels (backends/cpu/random_kernels.cpp) fill contiguous outputs from the
// Philox stream (see Note [Philox streams] in random.h).
#include "ember/ops/random.h"
#include "ember/jit/trace_hook.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "ember/autograd/grad_mode.h"
#include "ember/ops/ops.h"
#include "ember/ops/reduce.h"
#include "ember/ops/view.h"

namespace ember {

namespace {

/// all(mask) read on the host: one reduction on mask's device and a one-byte copy.
bool all_on_host(const Tensor& mask) {
  autograd::GradModeGuard no_grad(false);
  return *to_device(all(mask), Device()).data<bool>();
}

}  // namespace

DispatchStub<RandomKernel> random_stubs[int(Dist::Count)] = {
    DispatchStub<RandomKernel>("uniform_"), DispatchStub<RandomKernel>("normal_"),
    DispatchStub<RandomKernel>("random_"), DispatchStub<RandomKernel>("bernoulli_"),
    DispatchStub<RandomKernel>("exponential_")};
DispatchStub<void (*)(const Tensor&, const Tensor&, const RandomArgs&)> bernoulli_tensor_stub(
    "bernoulli_");
DispatchStub<void (*)(const Tensor&, const Tensor&, bool, const RandomArgs&)> multinomial_stub(
    "multinomial");
DispatchStub<void (*)(const Tensor&, const RandomArgs&)> randperm_stub("randperm");

// ---- Generator -------------------------------------------------------------------------

void GeneratorImpl::manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> g(mu_);
  seed_ = seed;
  offset_ = 0;
}

uint64_t GeneratorImpl::seed() {
  std::random_device rd;
  uint64_t s = (uint64_t(rd()) << 32) ^ rd() ^
               uint64_t(std::chrono::high_resolution_clock::now().time_since_epoch().count());
  s &= (uint64_t(1) << 63) - 1;  // fits an int64 too, like PyTorch's seeds
  manual_seed(s);
  return s;
}

uint64_t GeneratorImpl::initial_seed() const {
  std::lock_guard<std::mutex> g(mu_);
  return seed_;
}

uint64_t GeneratorImpl::offset() const {
  std::lock_guard<std::mutex> g(mu_);
  return offset_;
}

std::pair<uint64_t, uint64_t> GeneratorImpl::reserve(uint64_t nblocks) {
  std::lock_guard<std::mutex> g(mu_);
  uint64_t start = offset_;
  offset_ += nblocks;
  return {seed_, start};
}

void GeneratorImpl::get_state(uint8_t out[16]) const {
  std::lock_guard<std::mutex> g(mu_);
  for (int i = 0; i < 8; ++i) {
    out[i] = uint8_t(seed_ >> (8 * i));
    out[8 + i] = uint8_t(offset_ >> (8 * i));
  }
}

void GeneratorImpl::set_state(const uint8_t in[16]) {
  std::lock_guard<std::mutex> g(mu_);
  seed_ = offset_ = 0;
  for (int i = 0; i < 8; ++i) {
    seed_ |= uint64_t(in[i]) << (8 * i);
    offset_ |= uint64_t(in[8 + i]) << (8 * i);
  }
}

const Generator& default_generator() {
  static Generator g = std::make_shared<GeneratorImpl>();
  return g;
}

GeneratorImpl& pick_generator(const Generator& gen, Device device, const char* op) {
  if (!gen) {
    // CUDA tensors use the CPU generator's stream too until the CUDA backend adds its own.
    return *default_generator();
  }
  EMBER_CHECK(gen->device().type == device.type, op, ": Expected a '",
              device.is_cpu() ? "cpu" : "cuda", "' device type for generator but found '",
              gen->device().is_cpu() ? "cpu" : "cuda", "'");
  return *gen;
}

uint64_t random_blocks_needed(Dist dist, DType dtype, int64_t numel, uint64_t range) {
  uint64_t per = 4;
  switch (dist) {
    case Dist::Uniform:
    case Dist::Normal:
    case Dist::Exponential:
      per = dtype == DType::Float64 ? 2 : 4;
      break;
    case Dist::Bernoulli:
      per = 2;
      break;
    case Dist::Random:
      per = (range == 0 || range > (uint64_t(1) << 32)) ? 2 : 4;
      break;
    default:
      break;
  }
  return (uint64_t(numel) + per - 1) / per;
}

namespace {

// Runs one fill kernel over `self` (any strides): contiguous targets are written
// directly, others through a contiguous buffer so the samples follow logical order.
const Tensor& run_fill(const Tensor& self, Dist dist, RandomArgs args, const Generator& gen,
                       const char* op) {
  check_no_internal_overlap(self, op);
  if (self.numel() == 0) {
    self.bump_version();
    return self;
  }
  GeneratorImpl& g = pick_generator(gen, self.device(), op);
  auto kernel = random_stubs[int(dist)].get(self.device());
  auto so = g.reserve(random_blocks_needed(dist, self.dtype(), self.numel(), args.range));
  args.seed = so.first;
  args.offset = so.second;
  if (self.is_contiguous()) {
    kernel(self, args);
    self.bump_version();
  } else {
    Tensor buf = empty(self.sizes(), self.dtype(), self.device());
    kernel(buf, args);
    copy_(self, buf);
  }
  return self;
}

void check_floating_sampling(const Tensor& t, const char* op) {
  EMBER_CHECK(is_floating(t.dtype()), '"', op, "\" not implemented for '", dtype_name(t.dtype()),
              "' (it needs a floating point tensor)");
}

// Largest integer every smaller one of which the dtype represents exactly
// (2^digits for floats), and the dtype's smallest value on that scale.
int64_t dtype_max_int(DType t) {
  switch (t) {
    case DType::Bool:
      return 1;
    case DType::UInt8:
      return 255;
    case DType::Int8:
      return 127;
    case DType::Int16:
      return 32767;
    case DType::Int32:
      return 2147483647;
    case DType::Int64:
      return std::numeric_limits<int64_t>::max();
    case DType::Float16:
      return int64_t(1) << 11;
    case DType::BFloat16:
      return int64_t(1) << 8;
    case DType::Float32:
      return int64_t(1) << 24;
    default:
      return int64_t(1) << 53;
  }
}
int64_t dtype_min_int(DType t) {
  switch (t) {
    case DType::Bool:
    case DType::UInt8:
      return 0;
    case DType::Int8:
      return -128;
    case DType::Int16:
      return -32768;
    case DType::Int32:
      return -2147483648ll;
    case DType::Int64:
      return std::numeric_limits<int64_t>::min();
    default:
      return -dtype_max_int(t);
  }
}

double dtype_max_double(DType t) {
  switch (t) {
    case DType::Float16:
      return 65504.0;
    case DType::BFloat16:
      return 3.3895313892515355e38;
    case DType::Float32:
      return double(std::numeric_limits<float>::max());
    default:
      return std::numeric_limits<double>::max();
  }
}

}  // namespace

// ---- in-place fills ----------------------------------------------------------------------

const Tensor& uniform_(const Tensor& self, double from, double to, const Generator& gen) {
  EMBER_TRACE_RANDOM(
      "aten::uniform_(Tensor self, float from=0, float to=1, Generator? generator=None) -> Tensor",
      uniform_, self, from, to, gen);
  check_floating_sampling(self, "uniform_");
  EMBER_CHECK(std::isfinite(from) && std::isfinite(to),
              "uniform_ expects finite bounds, but got from=", from, " and to=", to);
  EMBER_CHECK(from <= to, "uniform_ expects to return a [from, to) range, but found from=", from,
              " > to=", to);
  double mx = dtype_max_double(self.dtype());
  EMBER_CHECK(from >= -mx && to <= mx, "uniform_: from=", from, " and to=", to,
              " are out of bounds for ", dtype_name(self.dtype()));
  EMBER_CHECK(to - from <= mx, "uniform_ expects to-from <= the largest ", dtype_name(self.dtype()),
              " (", mx, "), but found to=", to, " and from=", from,
              " which result in to-from to exceed the limit");
  RandomArgs a;
  a.a = from;
  a.b = to;
  return run_fill(self, Dist::Uniform, a, gen, "uniform_");
}

const Tensor& normal_(const Tensor& self, double mean, double std, const Generator& gen) {
  EMBER_TRACE_RANDOM(
      "aten::normal_(Tensor self, float mean=0, float std=1, Generator? generator=None) -> Tensor",
      normal_, self, mean, std, gen);
  check_floating_sampling(self, "normal_");
  EMBER_CHECK(std >= 0.0, "normal expects std >= 0.0, but found std ", std);
  RandomArgs a;
  a.a = mean;
  a.b = std;
  return run_fill(self, Dist::Normal, a, gen, "normal_");
}

const Tensor& exponential_(const Tensor& self, double lambd, const Generator& gen) {
  EMBER_TRACE_RANDOM(
      "aten::exponential_(Tensor self, float lambd=1, Generator? generator=None) -> Tensor",
      exponential_, self, lambd, gen);
  check_floating_sampling(self, "exponential_");
  EMBER_CHECK(lambd > 0.0, "exponential_ expects lambda > 0.0, but found lambda=", lambd);
  RandomArgs a;
  a.a = lambd;
  return run_fill(self, Dist::Exponential, a, gen, "exponential_");
}

const Tensor& random_(const Tensor& self, int64_t from, std::optional<int64_t> to,
                      const Generator& gen) {
  EMBER_TRACE_RANDOM(
      "aten::random_(Tensor self, int from, int? to, Generator? generator=None) -> Tensor", random_,
      self, from, to, gen);
  DType dt = self.dtype();
  int64_t lo = dtype_min_int(dt), hi = dtype_max_int(dt);
  int64_t to_inc;
  if (to) {
    EMBER_CHECK(from < *to, "random_ expects 'from' to be less than 'to', but got from=", from,
                " >= to=", *to);
    to_inc = *to - 1;
    EMBER_CHECK(from >= lo && from <= hi, "random_: from is out of bounds for ", dtype_name(dt),
                " (from=", from, ", valid range [", lo, ", ", hi, "])");
    EMBER_CHECK(to_inc >= lo && to_inc <= hi, "random_: to - 1 is out of bounds for ",
                dtype_name(dt), " (to=", *to, ", valid range [", lo, ", ", hi, "])");
  } else {
    to_inc = hi;
    EMBER_CHECK(from >= lo && from <= hi, "random_: from is out of bounds for ", dtype_name(dt),
                " (from=", from, ", valid range [", lo, ", ", hi, "])");
  }
  RandomArgs a;
  a.from = from;
  a.range = uint64_t(to_inc) - uint64_t(from) + 1;  // wraps to 0 for the full 2^64 range
  return run_fill(self, Dist::Random, a, gen, "random_");
}

const Tensor& bernoulli_(const Tensor& self, double p, const Generator& gen) {
  EMBER_TRACE_RANDOM(
      "aten::bernoulli_.float_GeneratorOpt(Tensor self, float p, Generator? generator=None) -> "
      "Tensor",
      bernoulli_, self, p, gen);
  EMBER_CHECK(p >= 0 && p <= 1, "bernoulli_ expects p to be in [0, 1], but got p=", p);
  RandomArgs a;
  a.a = p;
  return run_fill(self, Dist::Bernoulli, a, gen, "bernoulli_");
}

const Tensor& bernoulli_(const Tensor& self, const Tensor& p, const Generator& gen) {
  EMBER_TRACE_RANDOM(
      "aten::bernoulli_.Tensor_GeneratorOpt(Tensor self, Tensor p, Generator? generator=None) -> "
      "Tensor",
      bernoulli_, self, p, gen);
  check_no_internal_overlap(self, "bernoulli_");
  check_same_device(self, p, "bernoulli_");
  EMBER_CHECK(p.dtype() != DType::Bool,
              "bernoulli_: expected a floating point or integer p tensor, got bool");
  Tensor pe = contiguous(
      to_dtype(expand_to(to_device(p, self.device()), self.sizes(), "bernoulli_"), DType::Float64));
  if (self.numel() == 0) {
    self.bump_version();
    return self;
  }
  // Off the CPU, one on-device check and a one-byte read (a sync): the whole of p travels
  // to the host only to name the first bad element in the error.
  if (pe.device().is_cpu() ||
      !all_on_host(binary(BinaryOp::logical_and, binary(BinaryOp::ge, pe, wrap_scalar(Scalar(0.0))),
                          binary(BinaryOp::le, pe, wrap_scalar(Scalar(1.0)))))) {
    Tensor pc = to_device(pe, Device());
    const double* pp = pc.data<double>();
    for (int64_t i = 0; i < pc.numel(); ++i)
      EMBER_CHECK(pp[i] >= 0 && pp[i] <= 1,
                  "Expected p_in >= 0 && p_in <= 1 to be true, but got false (bernoulli_: "
                  "probability ",
                  pp[i], " at flat index ", i, " is outside [0, 1])");
  }
  GeneratorImpl& g = pick_generator(gen, self.device(), "bernoulli_");
  auto kernel = bernoulli_tensor_stub.get(self.device());
  auto so = g.reserve(random_blocks_needed(Dist::Bernoulli, self.dtype(), self.numel()));
  RandomArgs a;
  a.seed = so.first;
  a.offset = so.second;
  if (self.is_contiguous()) {
    kernel(self, pe, a);
    self.bump_version();
  } else {
    Tensor buf = empty(self.sizes(), self.dtype(), self.device());
    kernel(buf, pe, a);
    copy_(self, buf);
  }
  return self;
}

// ---- sampling factories -----------------------------------------------------------------

Tensor rand(const Shape& size, DType dtype, Device device, const Generator& gen) {
  EMBER_TRACE_RANDOM(
      "aten::rand(int[] size, ScalarType dtype, Device device, Generator? generator=None) -> "
      "Tensor",
      rand, size, dtype, device, gen);
  EMBER_CHECK(is_floating(dtype), "\"rand\" not implemented for '", dtype_name(dtype),
              "' (rand needs a floating point dtype)");
  Tensor t = empty(size, dtype, device);
  uniform_(t, 0, 1, gen);
  *t.impl()->version = 0;
  return t;
}

Tensor randn(const Shape& size, DType dtype, Device device, const Generator& gen) {
  EMBER_TRACE_RANDOM(
      "aten::randn(int[] size, ScalarType dtype, Device device, Generator? generator=None) -> "
      "Tensor",
      randn, size, dtype, device, gen);
  EMBER_CHECK(is_floating(dtype), "\"randn\" not implemented for '", dtype_name(dtype),
              "' (randn needs a floating point dtype)");
  Tensor t = empty(size, dtype, device);
  normal_(t, 0, 1, gen);
  *t.impl()->version = 0;
  return t;
}

Tensor randint(int64_t low, int64_t high, const Shape& size, DType dtype, Device device,
               const Generator& gen) {
  EMBER_TRACE_RANDOM(
      "aten::randint(int low, int high, int[] size, ScalarType dtype, Device device, Generator? "
      "generator=None) -> Tensor",
      randint, low, high, size, dtype, device, gen);
  Tensor t = empty(size, dtype, device);
  random_(t, low, high, gen);
  *t.impl()->version = 0;
  return t;
}

Tensor randperm(int64_t n, DType dtype, Device device, const Generator& gen) {
  EMBER_TRACE_RANDOM(
      "aten::randperm(int n, ScalarType dtype, Device device, Generator? generator=None) -> Tensor",
      randperm, n, dtype, device, gen);
  EMBER_CHECK(n >= 0, "randperm: n must be non-negative, got", n);
  EMBER_CHECK(dtype != DType::Bool || n <= 2,
              "randperm: n is too large for result tensor type: 'bool'");
  if (dtype != DType::Int64)
    EMBER_CHECK(n <= dtype_max_int(dtype) + 1, "randperm: n is too large for result tensor type: '",
                dtype_name(dtype), "' (n=", n, ", but ", dtype_name(dtype),
                " represents consecutive integers only up to ", dtype_max_int(dtype), ")");
  Tensor out = empty(Shape{n}, DType::Int64, device);
  if (n > 0) {
    GeneratorImpl& g = pick_generator(gen, device, "randperm");
    auto kernel = randperm_stub.get(device);
    auto so = g.reserve(uint64_t(n));
    RandomArgs a;
    a.seed = so.first;
    a.offset = so.second;
    kernel(out, a);
  }
  return dtype == DType::Int64 ? out : to_dtype(out, dtype);
}

Tensor normal(const Tensor& mean, const Tensor& std, const Generator& gen) {
  EMBER_TRACE_RANDOM("aten::normal(Tensor mean, Tensor std, Generator? generator=None) -> Tensor",
                     normal, mean, std, gen);
  check_same_device(mean, std, "normal");
  bool mean_is_scalar = mean.impl()->wrapped_number;
  DType dt = mean_is_scalar ? std.dtype() : mean.dtype();
  EMBER_CHECK(is_floating(dt), "normal expects floating point ", mean_is_scalar ? "std" : "mean",
              ", but got a ", dtype_name(dt), " tensor");
  // As bernoulli_: off the CPU the elements reach the host only for the error message.
  if (std.device().is_cpu() || std.numel() == 0 ||
      !all_on_host(binary(BinaryOp::ge, std, wrap_scalar(Scalar(0.0))))) {
    Tensor s = to_device(contiguous(to_dtype(std, DType::Float64)), Device());
    const double* sp = s.data<double>();
    for (int64_t i = 0; i < s.numel(); ++i)
      EMBER_CHECK(sp[i] >= 0.0, "normal expects all elements of std >= 0.0 (found std ", sp[i],
                  " at flat index ", i, ")");
  }
  Shape shape = broadcast_shapes(mean.sizes(), std.sizes());
  Tensor out = empty(shape, dt, op_device(mean, std));
  normal_(out, 0, 1, gen);
  binary_(BinaryOp::mul, out, std);
  binary_(BinaryOp::add, out, mean);
  *out.impl()->version = 0;
  return out;
}

Tensor bernoulli(const Tensor& p, const Generator& gen) {
  EMBER_TRACE_RANDOM("aten::bernoulli(Tensor p, Generator? generator=None) -> Tensor", bernoulli, p,
                     gen);
  EMBER_CHECK(is_floating(p.dtype()), "\"bernoulli\" not implemented for '", dtype_name(p.dtype()),
              "' (the probabilities must be a floating point tensor)");
  Tensor out = empty(p.sizes(), p.dtype(), p.device());
  bernoulli_(out, p, gen);
  *out.impl()->version = 0;
  return out;
}

Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement,
                   const Generator& gen) {
  EMBER_TRACE_RANDOM(
      "aten::multinomial(Tensor probs, int num_samples, bool replacement=False, Generator? "
      "generator=None) -> Tensor",
      multinomial, probs, num_samples, replacement, gen);
  EMBER_CHECK(probs.dim() > 0 && probs.dim() <= 2, "prob_dist must be 1 or 2 dim (got a ",
              probs.dim(), "-d tensor of shape ", shape_str(probs.sizes()), ")");
  EMBER_CHECK(is_floating(probs.dtype()),
              "multinomial only supports floating-point dtypes for input, got: ",
              dtype_name(probs.dtype()));
  EMBER_CHECK(num_samples > 0, "cannot sample n_sample <= 0 samples");
  int64_t k = probs.size(-1);
  EMBER_CHECK(replacement || num_samples <= k,
              "cannot sample n_sample > prob_dist.size(-1) samples without replacement (n_sample=",
              num_samples, ", prob_dist.size(-1)=", k, ")");
  EMBER_CHECK(k <= (int64_t(1) << 24), "number of categories cannot exceed 2^24");
  int64_t rows = probs.dim() == 2 ? probs.size(0) : 1;
  Tensor p = contiguous(to_dtype(probs, DType::Float64));
  // Off the CPU the kernel validates the rows itself (a device flag, raising the same errors
  // for the first bad row): the probabilities never travel to the host.
  if (p.device().is_cpu()) {
    const double* pp = p.data<double>();
    for (int64_t r = 0; r < rows; ++r) {
      double sum = 0;
      for (int64_t j = 0; j < k; ++j) {
        double v = pp[r * k + j];
        EMBER_CHECK(std::isfinite(v) && v >= 0,
                    "probability tensor contains either `inf`, `nan` or element < 0");
        sum += v;
      }
      EMBER_CHECK(sum > 0, "invalid multinomial distribution (sum of probabilities <= 0)");
    }
  }
  Tensor out = empty(probs.dim() == 2 ? Shape{rows, num_samples} : Shape{num_samples}, DType::Int64,
                     probs.device());
  if (rows == 0) return out;
  GeneratorImpl& g = pick_generator(gen, probs.device(), "multinomial");
  auto kernel = multinomial_stub.get(probs.device());
  int64_t per_row = replacement ? num_samples : k;
  auto so = g.reserve(uint64_t(rows) * uint64_t((per_row + 1) / 2));
  RandomArgs a;
  a.seed = so.first;
  a.offset = so.second;
  kernel(out, p, replacement, a);
  return out;
}

}  // namespace ember
