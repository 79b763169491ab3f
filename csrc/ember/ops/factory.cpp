// Factory front-ends: validate, pick the dtype, allocate, run the kernel.
#include "ember/ops/factory.h"
#include "ember/jit/trace_hook.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "ember/ops/ops.h"
#include "ember/ops/view.h"

namespace ember {

DispatchStub<void (*)(const Tensor&, Scalar, Scalar)> arange_stub("arange");
DispatchStub<void (*)(const Tensor&, double, double, std::optional<double>)> linspace_stub(
    "linspace");

Tensor ones(const Shape& sizes, DType dtype, Device device) {
  EMBER_TRACE("aten::ones(int[] size, ScalarType dtype, Device device) -> Tensor", ones, sizes,
              dtype, device);
  return full(sizes, Scalar(int64_t(1)), dtype, device);
}

namespace {
// True when `a`'s elements exactly tile a contiguous block (some permutation
// of contiguous strides): then empty_like keeps its strides.
bool non_overlapping_and_dense(const Tensor& a) {
  int64_t n = a.dim();
  std::vector<int64_t> perm(static_cast<size_t>(n));
  std::iota(perm.begin(), perm.end(), int64_t(0));
  std::sort(perm.begin(), perm.end(), [&](int64_t x, int64_t y) {
    if (a.sizes()[x] < 2 || a.sizes()[y] < 2) return a.sizes()[x] < 2 && a.sizes()[y] >= 2;
    return a.strides()[x] < a.strides()[y];
  });
  int64_t expected = 1;
  for (int64_t d : perm) {
    int64_t sz = a.sizes()[d];
    if (sz == 1) continue;
    if (a.strides()[d] != expected) return false;
    expected *= sz;
  }
  return true;
}
}  // namespace

Tensor empty_like(const Tensor& a, std::optional<DType> dtype, std::optional<Device> device) {
  EMBER_TRACE(
      "aten::empty_like(Tensor self, ScalarType? dtype=None, Device? device=None) -> Tensor",
      empty_like, a, dtype, device);
  DType dt = dtype.value_or(a.dtype());
  Device dev = device.value_or(a.device());
  if (a.is_contiguous() || a.numel() == 0 || !non_overlapping_and_dense(a))
    return empty(a.sizes(), dt, dev);
  Tensor base = empty(Shape{a.numel()}, dt, dev);
  return make_view(base, a.sizes(), a.strides(), 0);
}

DType full_dtype(Scalar fill) { return fill.wrapped_dtype(); }

int64_t arange_size(Scalar start, Scalar end, Scalar step, DType dtype) {
  double size_d;
  if (is_integral(dtype, true)) {
    // Integral results: the arguments are truncated to integers first.
    auto as_int = [](Scalar s, const char* what) {
      if (!s.is_floating()) return s.to_int();
      double v = s.to_double();
      EMBER_CHECK(std::isfinite(v) && v >= -9.2233720368547758e18 && v < 9.2233720368547758e18,
                  "arange: unsupported ", what, " ", v, " for an integral result");
      return int64_t(v);
    };
    int64_t xs = as_int(start, "start"), xe = as_int(end, "end"), xd = as_int(step, "step");
    EMBER_CHECK(xd != 0, "step must be nonzero");
    EMBER_CHECK((xd > 0 && xe >= xs) || (xd < 0 && xe <= xs),
                "upper bound and larger bound inconsistent with step sign (arange(", xs, ", ", xe,
                ", ", xd, "))");
    // ceil((end - start) / step) without overflow: 128-bit intermediates.
    __int128 diff = __int128(xe) - xs, d = xd;
    __int128 q = diff / d;
    if (q * d != diff) ++q;
    size_d = double(q);
    // PyTorch's quirk, kept for identical shapes: only int64 takes the size from the
    // truncated arguments; narrower integer types take it from the arguments as doubles
    // (arange(2.5, dtype=int64) has 2 elements, dtype=int32 has 3; the values are the
    // truncated start and step either way).
    if (dtype != DType::Int64)
      size_d = std::ceil((end.to_double() - start.to_double()) / step.to_double());
  } else {
    double xs = start.to_double(), xe = end.to_double(), xd = step.to_double();
    EMBER_CHECK(xd != 0, "step must be nonzero");
    EMBER_CHECK(std::isfinite(xs) && std::isfinite(xe), "unsupported range: ", xs, " -> ", xe);
    EMBER_CHECK((xd > 0 && xe >= xs) || (xd < 0 && xe <= xs),
                "upper bound and larger bound inconsistent with step sign (arange(", xs, ", ", xe,
                ", ", xd, "))");
    size_d = std::ceil((xe - xs) / xd);
  }
  EMBER_CHECK(size_d >= 0 && size_d <= double(std::numeric_limits<int64_t>::max()),
              "invalid size, possible overflow?");
  return int64_t(size_d);
}

Tensor arange(Scalar start, Scalar end, Scalar step, std::optional<DType> dtype, Device device) {
  EMBER_TRACE(
      "aten::arange(Scalar start, Scalar end, Scalar step, ScalarType? dtype=None, Device device) "
      "-> Tensor",
      arange, start, end, step, dtype, device);
  DType dt;
  if (dtype) {
    dt = *dtype;
  } else {
    bool any_float = start.is_floating() || end.is_floating() || step.is_floating();
    dt = any_float ? default_dtype() : DType::Int64;
  }
  int64_t n = arange_size(start, end, step, dt);
  Tensor out = empty(Shape{n}, dt, device);
  if (n) {
    if (is_integral(dt, true)) {
      // The kernel steps in int64; truncate float arguments the way arange_size did.
      Scalar s(start.is_floating() ? int64_t(start.to_double()) : start.to_int());
      Scalar d(step.is_floating() ? int64_t(step.to_double()) : step.to_int());
      arange_stub.get(device)(out, s, d);
    } else {
      arange_stub.get(device)(out, Scalar(start.to_double()), Scalar(step.to_double()));
    }
  }
  return out;
}

namespace {
Tensor spaced(const char* op, double start, double end, int64_t steps, std::optional<double> base,
              DType dtype, Device device) {
  EMBER_CHECK(steps >= 0, "number of steps must be non-negative (", op, " got steps=", steps, ")");
  // PyTorch converts start/end to the result type with c10's checked conversion.
  if (is_integral(dtype, true)) {
    EMBER_CHECK(std::isfinite(start) && std::isfinite(end) && std::fabs(start) < 9.2e18 &&
                    std::fabs(end) < 9.2e18,
                op, ": start (", start, ") and end (", end, ") must be finite integers for an ",
                dtype_name(dtype), " result");
    if (dtype != DType::Bool) {
      check_scalar_fits(Scalar(int64_t(start)), dtype, op);
      check_scalar_fits(Scalar(int64_t(end)), dtype, op);
    }
  } else {
    check_scalar_fits(Scalar(start), dtype, op);  // linspace(0, 1e39, dtype=float16) raises
    check_scalar_fits(Scalar(end), dtype, op);
  }
  Tensor out = empty(Shape{steps}, dtype, device);
  if (steps) linspace_stub.get(device)(out, start, end, base);
  return out;
}
}  // namespace

Tensor linspace(double start, double end, int64_t steps, DType dtype, Device device) {
  EMBER_TRACE(
      "aten::linspace(float start, float end, int steps, ScalarType dtype, Device device) -> "
      "Tensor",
      linspace, start, end, steps, dtype, device);
  return spaced("linspace", start, end, steps, std::nullopt, dtype, device);
}

Tensor logspace(double start, double end, int64_t steps, double base, DType dtype, Device device) {
  EMBER_TRACE(
      "aten::logspace(float start, float end, int steps, float base, ScalarType dtype, Device "
      "device) -> Tensor",
      logspace, start, end, steps, base, dtype, device);
  return spaced("logspace", start, end, steps, base, dtype, device);
}

Tensor eye(int64_t n, std::optional<int64_t> m_opt, DType dtype, Device device) {
  EMBER_TRACE("aten::eye(int n, int? m, ScalarType dtype, Device device) -> Tensor", eye, n, m_opt,
              dtype, device);
  EMBER_CHECK(n >= 0, "n must be greater or equal to 0, got ", n);
  int64_t m = m_opt.value_or(n);
  EMBER_CHECK(m >= 0, "m must be greater or equal to 0, got ", m);
  Tensor out = zeros(Shape{n, m}, dtype, device);
  if (n && m) fill_(diagonal(out, 0, 0, 1), Scalar(int64_t(1)));
  *out.impl()->version = 0;
  return out;
}

}  // namespace ember
