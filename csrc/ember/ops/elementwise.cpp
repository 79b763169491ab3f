// Front-ends of the elementwise ops in ops.def, plus copy, fill and where.
#include <cmath>
#include <cstring>
#include <limits>

#include "ember/autograd/functions.h"
#include "ember/autograd/record.h"
#include "ember/core/device_guard.h"
#include "ember/jit/trace_elementwise.h"
#include "ember/jit/trace_hook.h"
#include "ember/ops/ops.h"

#include "ember/ops/sparse.h"

namespace ember {

DispatchStub<IterKernel> unary_stubs[int(UnaryOp::Count)] = {
#define EMBER_STUB(n, F, k) DispatchStub<IterKernel>(#n),
    EMBER_UNARY_OPS(EMBER_STUB)
#undef EMBER_STUB
};
DispatchStub<IterKernel> binary_stubs[int(BinaryOp::Count)] = {
#define EMBER_STUB(n, F, k) DispatchStub<IterKernel>(#n),
    EMBER_BINARY_OPS(EMBER_STUB)
#undef EMBER_STUB
};
DispatchStub<IterKernel> copy_stub("copy_");
DispatchStub<IterKernel> where_stub("where");
DispatchStub<IterKernel> lerp_stub("lerp");
DispatchStub<void (*)(TensorIterator&, Scalar)> fill_stub("fill_");

const char* op_name(UnaryOp op) { return unary_stubs[int(op)].name; }
const char* op_name(BinaryOp op) { return binary_stubs[int(op)].name; }

// "add_", "exp_": the in-place names, for autograd's messages.
static const char* inplace_name(UnaryOp op) {
  static const char* names[] = {
#define EMBER_NAME(n, F, k) #n "_",
      EMBER_UNARY_OPS(EMBER_NAME)
#undef EMBER_NAME
  };
  return names[int(op)];
}
static const char* inplace_name(BinaryOp op) {
  static const char* names[] = {
#define EMBER_NAME(n, F, k) #n "_",
      EMBER_BINARY_OPS(EMBER_NAME)
#undef EMBER_NAME
  };
  return names[int(op)];
}

namespace {

// Result-type state: the dtype of the tensors with dims, of the 0-dim ones,
// and of the wrapped Python numbers, each promoted within its group.
// (-1 = none seen.)
struct Promo {
  int dim = -1, zero = -1, wrapped = -1;
  static int promote(int a, DType b) { return a < 0 ? int(b) : int(promote_types(DType(a), b)); }
  void add(const Tensor& t) {
    if (t.impl()->wrapped_number) {
      DType d = t.dtype();
      if (is_floating(d)) d = default_dtype();
      wrapped = promote(wrapped, d);
    } else if (t.dim() == 0) {
      zero = promote(zero, t.dtype());
    } else {
      dim = promote(dim, t.dtype());
    }
  }
  static int combine(int higher, int lower) {
    if (higher < 0) return lower;
    if (lower < 0) return higher;
    if (is_floating(DType(higher))) return higher;
    if (DType(higher) == DType::Bool || is_floating(DType(lower)))
      return int(promote_types(DType(higher), DType(lower)));
    return higher;
  }
  DType result() const { return DType(combine(dim, combine(zero, wrapped))); }
};

DType unary_compute_dtype(UnaryOp op, DType in) {
  const char* name = op_name(op);
  switch (op_kind(op)) {
    case Kind::FLOAT:
      return is_floating(in) ? in : default_dtype();
    case Kind::FLOATONLY:
      EMBER_CHECK(is_floating(in), '"', name, "\" not implemented for '", dtype_name(in), "'");
      return in;
    case Kind::BITS:
      EMBER_CHECK(!is_floating(in),
                  "bitwise_not: only integral and boolean dtypes are supported, got ",
                  dtype_name(in));
      return in;
    case Kind::ROUND:
      EMBER_CHECK(in != DType::Bool, '"', name, "\" not implemented for 'bool'");
      return in;
    case Kind::SAME:
      if (op == UnaryOp::square && in == DType::Bool) return DType::Int64;  // as PyTorch
      if (op == UnaryOp::relu)
        EMBER_CHECK(in != DType::Bool, "Boolean inputs not supported for relu");
      if (op == UnaryOp::neg)
        EMBER_CHECK(in != DType::Bool,
                    "Negation, the `-` operator, on a bool tensor is not supported. If you are "
                    "trying to invert a mask, use the `~` or `logical_not()` operator instead.");
      EMBER_CHECK(in != DType::Bool || op == UnaryOp::sign, '"', name,
                  "\" not implemented for 'bool'");
      return in;
    default:
      return in;
  }
}

DType unary_out_dtype(UnaryOp op, DType compute) {
  return op_kind(op) == Kind::PRED ? DType::Bool : compute;
}

// An out= tensor that is also an input is written in place and must already have the
// result's shape (PyTorch's in-place error); any other is resized (ops/out.h).
void prepare_out(const Tensor& out, const Tensor& in, const Shape& shape, const char* op) {
  if (out.is_same(in)) {
    EMBER_CHECK(out.sizes() == shape, op, ": output with shape ", shape_str(out.sizes()),
                " doesn't match the broadcast shape ", shape_str(shape));
    return;
  }
  resize_output(out, shape);
}

bool ranges_overlap(const Tensor& a, const Tensor& b) {
  if (a.storage() != b.storage() || a.numel() == 0 || b.numel() == 0) return false;
  auto extent = [](const Tensor& t, int64_t& lo, int64_t& hi) {
    lo = t.storage_offset() * t.element_size();
    int64_t last = t.storage_offset();
    for (int64_t d = 0; d < t.dim(); ++d) last += (t.sizes()[d] - 1) * t.strides()[d];
    hi = (last + 1) * t.element_size();
  };
  int64_t alo, ahi, blo, bhi;
  extent(a, alo, ahi);
  extent(b, blo, bhi);
  return alo < bhi && blo < ahi;
}

}  // namespace

void check_no_internal_overlap(const Tensor& out, const char* op) {
  if (out.numel() == 0) return;  // nothing is written
  for (int64_t d = 0; d < out.dim(); ++d)
    EMBER_CHECK(!(out.strides()[d] == 0 && out.sizes()[d] > 1), op,
                ": unsupported operation: more than one element of the written-to tensor refers "
                "to a single memory location. Please clone() the tensor before performing the "
                "operation.");
}

void check_no_overlap(const Tensor& out, const Tensor& in, const char* op) {
  if (!ranges_overlap(out, in)) return;
  // Exactly the same elements is fine (in-place); any other overlap is not.
  bool same = out.storage_offset() == in.storage_offset() && out.sizes() == in.sizes() &&
              out.strides() == in.strides() && out.dtype() == in.dtype();
  if (same) return;
  // A broadcast input that equals out on its non-broadcast dims is still a hazard: reject.
  EMBER_ERROR(op,
              ": unsupported operation: some elements of the input tensor and the written-to "
              "tensor refer to a single memory location. Please clone() the tensor before "
              "performing the operation.");
}

void check_same_device(const Tensor& a, const Tensor& b, const char* op) {
  if (a.device().type == b.device().type) return;
  if (b.impl()->wrapped_number || (b.dim() == 0 && b.device().is_cpu())) return;
  if (a.impl()->wrapped_number || (a.dim() == 0 && a.device().is_cpu())) return;
  EMBER_ERROR(op,
              ": Expected all tensors to be on the same device, but found at least two "
              "devices, ",
              a.device().str(), " and ", b.device().str(), "!");
}

// A CPU scalar (a wrapped Python number or a 0-d CPU tensor) goes to its partner's device.
static bool cpu_scalar(const Tensor& t) {
  return t.device().is_cpu() && (t.impl()->wrapped_number || t.dim() == 0);
}

// Where an op of `a` and `b` runs (PyTorch's TensorIterator device rule): the device of the
// first operand that is not a CPU scalar; the CPU when every operand is one.
Device op_device(const Tensor& a, const Tensor& b) {
  return cpu_scalar(a) && !b.device().is_cpu() ? b.device() : a.device();
}

void check_same_device_strict(const Tensor& a, const Tensor& b, const char* op) {
  EMBER_CHECK(a.device() == b.device(), op,
              ": Expected all tensors to be on the same device, but found at least two devices, ",
              a.device().str(), " and ", b.device().str(), "!");
}

DType result_type(const Tensor& a, const Tensor& b) {
  // Two tensors of one dtype, neither a wrapped Python number: that dtype, whatever the dims.
  if (a.dtype() == b.dtype() && !a.impl()->wrapped_number && !b.impl()->wrapped_number)
    return a.dtype();
  Promo p;
  p.add(a);
  p.add(b);
  return p.result();
}

DType result_type(const Tensor& a, Scalar s) { return result_type(a, wrap_scalar(s)); }

Tensor wrap_scalar(Scalar s, Device device) {
  DType dt = s.is_bool() ? DType::Bool : s.is_integral() ? DType::Int64 : DType::Float64;
  Tensor t = scalar_tensor(s, dt, device);
  t.impl()->wrapped_number = true;
  return t;
}

// ---- unary ----------------------------------------------------------------------------

// A sparse operand takes the sparse path (ops/sparse_math.cpp): out= and in-place forms
// write the result's parts into a sparse out, or its dense form into a strided one.
static Tensor write_sparse_result(const Tensor& r, const Tensor* out_opt, const char* op) {
  if (!out_opt) return r;
  const Tensor& out = *out_opt;
  check_result_cast(r.dtype(), out.dtype());
  if (out.is_sparse()) {
    EMBER_CHECK(r.is_sparse(), op,
                ": the result is strided and cannot be written into a "
                "sparse out=");
    sparse_assign_(out, r);
  } else {
    resize_output(out, r.sizes());
    copy_(out, r.is_sparse() ? sparse_to_dense(r) : r);
  }
  return out;
}

static Tensor run_unary(UnaryOp op, const Tensor& a, const Tensor* out_opt) {
  if (__builtin_expect(a.is_sparse() || (out_opt && out_opt->is_sparse()), 0))
    return write_sparse_result(sparse_unary(op, a), out_opt, op_name(op));
  DType compute = unary_compute_dtype(op, a.dtype());
  DType out_dt = unary_out_dtype(op, compute);
  Tensor in = a.dtype() == compute ? a : to_dtype(a, compute);
  Tensor out;
  bool direct = false;
  if (out_opt) {
    prepare_out(*out_opt, a, a.sizes(), op_name(op));
    check_no_internal_overlap(*out_opt, op_name(op));
    check_no_overlap(*out_opt, in, op_name(op));
    direct = out_opt->dtype() == out_dt;
    if (!direct) check_result_cast(out_dt, out_opt->dtype());
    out = direct ? *out_opt : empty(a.sizes(), out_dt, a.device());
  } else {
    out = empty(a.sizes(), out_dt, a.device());
  }
  TensorIterator it({out, in}, 1, a.sizes());
  unary_stubs[int(op)].get(a.device())(it);
  if (out_opt) {
    if (!direct)
      copy_(*out_opt, out);
    else
      out_opt->bump_version(out_opt->is_same(a) ? inplace_name(op) : op_name(op));
    return *out_opt;
  }
  return out;
}

static bool inplace_records(const Tensor& self, const Tensor* other) {
  return autograd::inplace_records(self, {other});
}

Tensor unary(UnaryOp op, const Tensor& a) {
  if (trace_state::outermost()) return jit::trace_unary(op, a);
  if (__builtin_expect(a.is_sparse(), 0)) return sparse_unary(op, a);  // records its own graph
  autograd::RecordScope scope({&a});
  Tensor out = run_unary(op, a, nullptr);
  if (scope.rec) {
    scope.done();
    autograd::record_unary(op, a, out);
  }
  return out;
}
Tensor& unary_out(UnaryOp op, const Tensor& a, const Tensor& out) {
  if (trace_state::outermost()) return jit::trace_unary_out(op, a, out);
  if (!out.is_same(a)) autograd::check_out_not_differentiable(op_name(op), {&a, &out});
  run_unary(op, a, &out);
  return const_cast<Tensor&>(out);
}
Tensor& unary_(UnaryOp op, const Tensor& a) {
  if (trace_state::outermost()) return jit::trace_unary_(op, a);
  if (inplace_records(a, nullptr)) {
    autograd::inplace_with_grad(a, inplace_name(op), autograd::unary_needs_input(op),
                                [op](const Tensor& s) { return unary(op, s); });
    return const_cast<Tensor&>(a);
  }
  return unary_out(op, a, a);
}

// ---- binary ---------------------------------------------------------------------------

static void binary_checks(BinaryOp op, const Tensor& a, const Tensor& b, DType common) {
  const char* name = op_name(op);
  Kind k = op_kind(op);
  if (k == Kind::BITS)
    EMBER_CHECK(!is_floating(common), '"', name, "_cpu\" not implemented for '", dtype_name(common),
                "' (bitwise ops take integer or bool tensors)");
  if (op == BinaryOp::sub) {
    EMBER_CHECK(!(a.dtype() == DType::Bool && b.dtype() == DType::Bool),
                "Subtraction, the `-` operator, with two bool tensors is not supported. Use the "
                "`^` or `logical_xor()` operator instead.");
    EMBER_CHECK(a.dtype() != DType::Bool && b.dtype() != DType::Bool,
                "Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
                "trying to invert a mask, use the `~` or `logical_not()` operator instead.");
  }
  if (k == Kind::ARITH && common == DType::Bool) {
    EMBER_CHECK(op == BinaryOp::add || op == BinaryOp::mul || op == BinaryOp::maximum ||
                    op == BinaryOp::minimum,
                '"', name, "\" not implemented for 'bool'");
  }
  if (op == BinaryOp::pow && is_integral(common, false) && b.impl()->wrapped_number &&
      !is_floating(b.dtype()))
    // A wrapped number lives on the CPU unless made with a device (normal's mean): read it
    // through to_device, a no-op on the CPU.
    EMBER_CHECK(b.dtype() != DType::Int64 || *to_device(b, Device()).data<int64_t>() >= 0,
                "Integers to negative integer powers are not allowed.");
  (void)a;
}

// Integer division by zero is an error (as in PyTorch), never a SIGFPE.
static void check_integer_divisor(BinaryOp op, const Tensor& b) {
  if (!(op == BinaryOp::floor_divide || op == BinaryOp::remainder || op == BinaryOp::fmod)) return;
  if (!is_integral(b.dtype(), true) || !b.device().is_cpu()) return;
  Tensor z = binary(BinaryOp::eq, b, wrap_scalar(Scalar(int64_t(0))));
  const Tensor zc = contiguous(z);
  const bool* p = zc.data<bool>();
  for (int64_t i = 0; i < zc.numel(); ++i) EMBER_CHECK(!p[i], "ZeroDivisionError");
}

static Tensor run_binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor* out_opt) {
  if (__builtin_expect(a.is_sparse() || b.is_sparse() || (out_opt && out_opt->is_sparse()), 0)) {
    if (out_opt && out_opt->is_same(a)) return sparse_binary_(op, a, b, Scalar(int64_t(1)));
    return write_sparse_result(sparse_binary(op, a, b), out_opt, op_name(op));
  }
  const char* name = op_name(op);
  check_same_device(a, b, name);
  DType common = result_type(a, b);
  binary_checks(op, a, b, common);
  Kind k = op_kind(op);
  DType compute = common;
  if ((k == Kind::TRUEDIV || k == Kind::FLOATING) && !is_floating(common))
    compute = default_dtype();
  DType out_dt = (k == Kind::COMPARE || k == Kind::LOGICAL) ? DType::Bool : compute;
  const Device dev = op_device(a, b);
  Tensor ca = a.dtype() == compute && a.device() == dev ? a : to_device(to_dtype(a, compute), dev);
  Tensor cb = b.dtype() == compute && b.device() == dev ? b : to_device(to_dtype(b, compute), dev);
  Shape shape = a.sizes() == b.sizes() ? a.sizes() : broadcast_shapes(a.sizes(), b.sizes());
  // An empty result reads no divisor, so a zero in a broadcast divisor is no error.
  if (is_integral(compute, true) && checked_numel(shape) != 0) check_integer_divisor(op, cb);
  Tensor out;
  bool direct = false;
  if (out_opt) {
    prepare_out(*out_opt, out_opt->is_same(b) ? b : a, shape, name);
    check_no_internal_overlap(*out_opt, name);
    check_no_overlap(*out_opt, ca, name);
    check_no_overlap(*out_opt, cb, name);
    DType od = out_opt->dtype();
    check_result_cast(out_dt, od);
    direct = od == out_dt && out_opt->device() == dev;
    out = direct ? *out_opt : empty(shape, out_dt, dev);
  } else {
    out = empty(shape, out_dt, dev);
  }
  TensorIterator it({out, ca, cb}, 1, shape);
  binary_stubs[int(op)].get(dev)(it);
  if (out_opt) {
    if (!direct)
      copy_(*out_opt, out);
    else
      out_opt->bump_version(out_opt->is_same(a) ? inplace_name(op) : op_name(op));
    return *out_opt;
  }
  return out;
}

Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b) {
  if (trace_state::outermost()) return jit::trace_binary(op, a, b);
  autograd::RecordScope scope({&a, &b});
  Tensor out = run_binary(op, a, b, nullptr);
  if (scope.rec) {
    scope.done();
    autograd::record_binary(op, a, b, out);
  }
  return out;
}
Tensor& binary_out(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) {
  if (trace_state::outermost()) return jit::trace_binary_out(op, a, b, out);
  if (!out.is_same(a)) autograd::check_out_not_differentiable(op_name(op), {&a, &b, &out});
  run_binary(op, a, b, &out);
  return const_cast<Tensor&>(out);
}
Tensor& binary_(BinaryOp op, const Tensor& a, const Tensor& b) {
  if (trace_state::outermost()) return jit::trace_binary_(op, a, b);
  if (inplace_records(a, &b)) {
    autograd::inplace_with_grad(a, inplace_name(op), autograd::binary_needs_self(op),
                                [op, &b](const Tensor& s) { return binary(op, s, b); });
    return const_cast<Tensor&>(a);
  }
  return binary_out(op, a, b, a);
}

static bool is_one(Scalar s) { return s.to_double() == 1.0; }

bool takes_alpha(BinaryOp op) { return op == BinaryOp::add || op == BinaryOp::sub; }

// PyTorch's alpha_check: alpha must fit the kind of the op's result dtype.
static void check_alpha(BinaryOp op, const Tensor& a, const Tensor& b, Scalar alpha) {
  EMBER_CHECK_TYPE(takes_alpha(op), op_name(op),
                   "() got an unexpected keyword argument 'alpha' (only add and sub take alpha)");
  DType common = result_type(a, b);
  EMBER_CHECK(common == DType::Bool || !alpha.is_bool(),
              "Boolean alpha only supported for Boolean results.");
  EMBER_CHECK(is_floating(common) || !alpha.is_floating(),
              "For integral input tensors, argument alpha must not be a floating point number.");
}

// b * alpha, or b itself when alpha is 1.
static Tensor scaled(const Tensor& b, Scalar alpha) {
  return is_one(alpha) ? b : binary(BinaryOp::mul, b, wrap_scalar(alpha));
}

Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b, Scalar alpha) {
  check_alpha(op, a, b, alpha);
  return binary(op, a, scaled(b, alpha));
}
Tensor& binary_(BinaryOp op, const Tensor& a, const Tensor& b, Scalar alpha) {
  check_alpha(op, a, b, alpha);
  return binary_(op, a, scaled(b, alpha));
}
Tensor& binary_out(BinaryOp op, const Tensor& a, const Tensor& b, Scalar alpha, const Tensor& out) {
  check_alpha(op, a, b, alpha);
  return binary_out(op, a, scaled(b, alpha), out);
}

Tensor add(const Tensor& a, const Tensor& b, Scalar alpha) {
  EMBER_TRACE("aten::add(Tensor self, Tensor other, *, Scalar alpha) -> Tensor", add, a, b, alpha);
  return binary(BinaryOp::add, a, b, alpha);
}
Tensor sub(const Tensor& a, const Tensor& b, Scalar alpha) {
  EMBER_TRACE("aten::sub(Tensor self, Tensor other, *, Scalar alpha) -> Tensor", sub, a, b, alpha);
  return binary(BinaryOp::sub, a, b, alpha);
}

Tensor div_rounding(const Tensor& a, const Tensor& b, const std::string& mode) {
  EMBER_TRACE("aten::div.Tensor_mode(Tensor self, Tensor other, *, str rounding_mode) -> Tensor",
              div_rounding, a, b, mode);
  EMBER_CHECK(mode == "trunc" || mode == "floor",
              "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '", mode,
              "'");
  if (mode == "floor") return binary(BinaryOp::floor_divide, a, b);
  if (is_floating(result_type(a, b))) return unary(UnaryOp::trunc, binary(BinaryOp::div, a, b));
  // Integers: a - fmod(a, b) is an exact multiple of b, so flooring it truncates.
  return binary(BinaryOp::floor_divide, binary(BinaryOp::sub, a, binary(BinaryOp::fmod, a, b)), b);
}

// ---- where / clamp ----------------------------------------------------------------------

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  EMBER_TRACE("aten::where.self(Tensor condition, Tensor self, Tensor other) -> Tensor", where,
              cond, a, b);
  EMBER_CHECK(cond.dtype() == DType::Bool || cond.dtype() == DType::UInt8,
              "where expected condition to be a boolean tensor, but got a tensor with dtype ",
              dtype_name(cond.dtype()));
  check_same_device(cond, a, "where");
  check_same_device(a, b, "where");
  DType dt = result_type(a, b);
  Device dev = a.device();  // the first operand that is not a CPU scalar decides
  for (const Tensor* t : {&cond, &a, &b})
    if (!cpu_scalar(*t)) {
      dev = t->device();
      break;
    }
  Tensor ca = a.dtype() == dt ? a : to_dtype(a, dt);
  Tensor cb = b.dtype() == dt ? b : to_dtype(b, dt);
  Tensor cc = to_device(cond.dtype() == DType::Bool ? cond : to_dtype(cond, DType::Bool), dev);
  Shape shape = broadcast_shapes(broadcast_shapes(cc.sizes(), ca.sizes()), cb.sizes());
  Tensor out = empty(shape, dt, dev);
  {
    autograd::GradModeGuard no_grad(false);
    TensorIterator it({out, cc, to_device(ca, dev), to_device(cb, dev)}, 1, shape);
    where_stub.get(dev)(it);
  }
  if (autograd::compute_requires_grad({&a, &b})) autograd::record_where(cc, a, b, out);
  return out;
}

Tensor clamp(const Tensor& a, const std::optional<Tensor>& min, const std::optional<Tensor>& max) {
  EMBER_TRACE("aten::clamp.Tensor(Tensor self, Tensor? min=None, Tensor? max=None) -> Tensor",
              clamp, a, min, max);
  EMBER_CHECK(min || max, "ember.clamp: At least one of 'min' or 'max' must not be None");
  // Bounds promote (a bool tensor clamped by ints is int64), as PyTorch; a bool
  // result is allowed only with tensor bounds.
  const bool scalar_bound =
      (min && min->impl()->wrapped_number) || (max && max->impl()->wrapped_number);
  DType rt = min ? result_type(a, *min) : a.dtype();
  if (max) rt = promote_types(rt, result_type(a, *max));
  EMBER_CHECK(!(rt == DType::Bool && scalar_bound), "\"clamp\" not implemented for 'bool'");
  autograd::RecordScope scope({&a, min ? &*min : nullptr, max ? &*max : nullptr});
  Tensor r = a;
  if (min) r = binary(BinaryOp::maximum, r, *min);
  if (max) r = binary(BinaryOp::minimum, r, *max);
  if (r.is_same(a)) r = clone(a);
  if (scope.rec && is_floating(r.dtype())) {
    scope.done();
    // d/dx clamp(x, lo, hi) = 1 where lo <= x <= hi (inclusive), as PyTorch; the
    // bounds get the gradient where they clamp.
    auto node = autograd::record(
        (min && !min->impl()->wrapped_number) || (max && !max->impl()->wrapped_number)
            ? "ClampBackward0"
            : "ClampBackward1",
        {&a, min ? &*min : nullptr, max ? &*max : nullptr}, r,
        [](autograd::LambdaNode& n, autograd::variable_list&& gs) -> autograd::variable_list {
          Tensor g = gs[0], x = n.unpack(0), lo = n.unpack(1), hi = n.unpack(2);
          Tensor keep = full(Shape{}, Scalar(true), DType::Bool, g.device());
          if (lo.defined()) keep = binary(BinaryOp::logical_and, keep, binary(BinaryOp::ge, x, lo));
          if (hi.defined()) keep = binary(BinaryOp::logical_and, keep, binary(BinaryOp::le, x, hi));
          Tensor z = zeros(Shape{}, g.dtype(), g.device());
          Tensor gx =
              autograd::cast_grad(autograd::sum_to_size(where(keep, g, z), n.shape_a), n.dtype_a);
          Tensor glo, ghi;
          if (lo.defined() && n.should_compute_output(1))
            glo = autograd::sum_to_size(where(binary(BinaryOp::lt, x, lo), g, z), lo.sizes());
          if (hi.defined() && n.should_compute_output(2))
            ghi = autograd::sum_to_size(where(binary(BinaryOp::gt, x, hi), g, z), hi.sizes());
          return {gx, glo, ghi};
        });
    node->saved.emplace_back(a, false);
    node->saved.emplace_back(min ? *min : Tensor(), false);
    node->saved.emplace_back(max ? *max : Tensor(), false);
    node->shape_a = a.sizes();
    node->dtype_a = a.dtype();
  }
  return r;
}

// lerp's checks and its one pass of fn::Lerp (lerp_stub), into `out_opt` (in place when it
// is `start`) or a new tensor. It runs on the device of the first operand that is not a CPU
// scalar; a number weight is cast to start's dtype first, as PyTorch's lerp.Scalar.
static Tensor run_lerp(const Tensor& start, const Tensor& end, const Tensor& weight,
                       const Tensor* out_opt, const char* name) {
  EMBER_CHECK(start.dtype() == end.dtype(), name, ": expected dtype ", dtype_name(start.dtype()),
              " for `end` but got dtype ", dtype_name(end.dtype()));
  EMBER_CHECK(is_floating(start.dtype()), name, ": expected a floating-point `start`, got ",
              dtype_name(start.dtype()));
  EMBER_CHECK(weight.impl()->wrapped_number || weight.dtype() == start.dtype(), name,
              ": expected dtype ", dtype_name(start.dtype()), " for `weight` but got dtype ",
              dtype_name(weight.dtype()));
  check_same_device(start, end, name);
  check_same_device(start, weight, name);
  Device dev = start.device();
  for (const Tensor* t : {&start, &end, &weight})
    if (!cpu_scalar(*t)) {
      dev = t->device();
      break;
    }
  const DType dt = start.dtype();
  auto on = [&](const Tensor& t) {
    return t.dtype() == dt && t.device() == dev ? t : to_device(to_dtype(t, dt), dev);
  };
  const Tensor cs = on(start), ce = on(end), cw = on(weight);
  Shape shape = broadcast_shapes(broadcast_shapes(start.sizes(), end.sizes()), weight.sizes());
  Tensor out;
  bool direct = false;
  if (out_opt) {
    prepare_out(*out_opt, start, shape, name);
    check_no_internal_overlap(*out_opt, name);
    for (const Tensor* t : {&cs, &ce, &cw}) check_no_overlap(*out_opt, *t, name);
    check_result_cast(dt, out_opt->dtype());
    direct = out_opt->dtype() == dt && out_opt->device() == dev;
    out = direct ? *out_opt : empty(shape, dt, dev);
  } else {
    out = empty(shape, dt, dev);
  }
  {
    autograd::GradModeGuard no_grad(false);
    TensorIterator it({out, cs, ce, cw}, 1, shape);
    lerp_stub.get(dev)(it);
  }
  if (out_opt) {
    if (!direct)
      copy_(*out_opt, out);
    else
      out_opt->bump_version(name);
    return *out_opt;
  }
  return out;
}

Tensor lerp(const Tensor& start, const Tensor& end, const Tensor& weight) {
  EMBER_TRACE("aten::lerp.Tensor(Tensor self, Tensor end, Tensor weight) -> Tensor", lerp, start,
              end, weight);
  autograd::RecordScope rs({&start, &end, &weight});
  Tensor r = run_lerp(start, end, weight, nullptr, "lerp");
  rs.done();
  if (rs.rec) {
    // One node as PyTorch's: LerpBackward0 for a number weight, LerpBackward1 for a tensor.
    using autograd::LambdaNode;
    auto node = autograd::record(
        weight.impl()->wrapped_number ? "LerpBackward0" : "LerpBackward1", {&start, &end, &weight},
        r, [](LambdaNode& n, autograd::variable_list&& gs) -> autograd::variable_list {
          Tensor g = gs[0], s0 = n.unpack(0), e0 = n.unpack(1), w0 = n.unpack(2);
          Tensor gs_, ge_, gw_;
          if (n.should_compute_output(0))
            gs_ = autograd::sum_to_size(
                binary(BinaryOp::mul, g, binary(BinaryOp::sub, wrap_scalar(Scalar(1.0)), w0)),
                n.shape_a);
          if (n.should_compute_output(1))
            ge_ = autograd::sum_to_size(binary(BinaryOp::mul, g, w0), n.shape_b);
          if (n.should_compute_output(2))
            gw_ = autograd::cast_grad(
                autograd::sum_to_size(binary(BinaryOp::mul, g, binary(BinaryOp::sub, e0, s0)),
                                      n.shape_c),
                n.dtype_b);
          return {gs_, ge_, gw_};
        });
    node->shape_a = start.sizes();
    node->shape_b = end.sizes();
    node->shape_c = weight.sizes();
    node->dtype_b = weight.dtype();
    node->saved.emplace_back(start, false);
    node->saved.emplace_back(end, false);
    node->saved.emplace_back(weight, false);
  }
  return r;
}

Tensor& lerp_out(const Tensor& start, const Tensor& end, const Tensor& weight, const Tensor& out) {
  EMBER_TRACE(
      "aten::lerp.Tensor_out(Tensor self, Tensor end, Tensor weight, *, Tensor out) -> Tensor",
      lerp_out, start, end, weight, out);
  autograd::check_out_not_differentiable("lerp", {&start, &end, &weight, &out});
  run_lerp(start, end, weight, &out, "lerp");
  return const_cast<Tensor&>(out);
}

const Tensor& lerp_(const Tensor& self, const Tensor& end, const Tensor& weight) {
  EMBER_TRACE("aten::lerp_.Tensor(Tensor self, Tensor end, Tensor weight) -> Tensor", lerp_, self,
              end, weight);
  if (autograd::inplace_records(self, {&end, &weight})) {
    check_no_internal_overlap(self, "lerp_");
    return autograd::inplace_with_grad(self, "lerp_", true,
                                       [&](const Tensor& s) { return lerp(s, end, weight); });
  }
  run_lerp(self, end, weight, &self, "lerp_");
  return self;
}

double finfo_max(DType t) {
  switch (t) {
    case DType::Float16:
      return 65504.0;
    case DType::BFloat16:
      return 3.3895313892515355e38;
    case DType::Float32:
      return 3.4028234663852886e38;
    case DType::Float64:
      return 1.7976931348623157e308;
    default:
      EMBER_ERROR("finfo: ", dtype_name(t), " is not a floating dtype");
  }
}

Tensor nan_to_num(const Tensor& a, double nan, std::optional<double> posinf,
                  std::optional<double> neginf) {
  EMBER_TRACE("aten::nan_to_num(Tensor self, float nan, float? posinf, float? neginf) -> Tensor",
              nan_to_num, a, nan, posinf, neginf);
  if (!is_floating(a.dtype())) return clone(a);
  autograd::RecordScope rs({&a});
  double big = finfo_max(a.dtype());
  Tensor r = where(unary(UnaryOp::isnan, a), wrap_scalar(Scalar(nan)), a);
  Tensor inf = unary(UnaryOp::isinf, r);
  Tensor pos =
      binary(BinaryOp::logical_and, inf, binary(BinaryOp::gt, r, wrap_scalar(Scalar(0.0))));
  Tensor neg =
      binary(BinaryOp::logical_and, inf, binary(BinaryOp::lt, r, wrap_scalar(Scalar(0.0))));
  r = where(pos, wrap_scalar(Scalar(posinf.value_or(big))), r);
  r = where(neg, wrap_scalar(Scalar(neginf.value_or(-big))), r);
  rs.done();
  if (rs.rec) {
    // The gradient passes where the input was finite (NanToNumBackward0, as PyTorch).
    auto node = autograd::record(
        "NanToNumBackward0", {&a}, r,
        [](autograd::LambdaNode& n, autograd::variable_list&& gs) -> autograd::variable_list {
          Tensor x = n.unpack(0);
          return {where(unary(UnaryOp::isfinite, x), gs[0], wrap_scalar(Scalar(0.0)))};
        });
    node->saved.emplace_back(a, false);
  }
  return r;
}

Tensor round_decimals(const Tensor& a, int64_t decimals) {
  EMBER_TRACE("aten::round.decimals(Tensor self, *, int decimals) -> Tensor", round_decimals, a,
              decimals);
  if (decimals == 0) return unary(UnaryOp::round, a);
  EMBER_CHECK(is_floating(a.dtype()), "round(decimals=", decimals,
              ") is only implemented for "
              "floating-point tensors, got ",
              dtype_name(a.dtype()));
  double ten = 1.0;
  for (int64_t i = 0; i < (decimals < 0 ? -decimals : decimals); ++i) ten *= 10.0;
  Tensor s = wrap_scalar(Scalar(ten));
  if (decimals > 0)
    return binary(BinaryOp::div, unary(UnaryOp::round, binary(BinaryOp::mul, a, s)), s);
  return binary(BinaryOp::mul, unary(UnaryOp::round, binary(BinaryOp::div, a, s)), s);
}

// ---- copy / convert -------------------------------------------------------------------

static const Tensor& copy_impl(const Tensor& dst, const Tensor& src);

const Tensor& copy_(const Tensor& dst, const Tensor& src) {
  EMBER_TRACE("aten::copy_(Tensor self, Tensor src) -> Tensor", copy_, dst, src);
  if (__builtin_expect(dst.is_sparse() || src.is_sparse(), 0)) {
    if (autograd::grad_enabled() && (autograd::requires_grad(src) || autograd::requires_grad(dst)))
      autograd::check_inplace(dst, "copy_");
    // A strided destination cannot take a sparse source (PyTorch's copy_ refuses): a
    // LayoutError, so a front-end that copies its input names itself (Note [Layout errors]).
    if (!dst.is_sparse())
      throw LayoutError(Layout::SparseCoo,
                        "copy_() between dense and sparse Tensors is not implemented! Found "
                        "self type = strided and src type = sparse");
    sparse_copy_(dst, src);
    if (autograd::grad_enabled() && autograd::requires_grad(src)) autograd::record_copy(dst, src);
    return dst;
  }
  if (autograd::grad_enabled() && (autograd::requires_grad(src) || autograd::requires_grad(dst))) {
    autograd::check_inplace(dst, "copy_");
    {
      autograd::GradModeGuard no_grad(false);
      copy_impl(dst, src);
    }
    autograd::record_copy(dst, src);
    return dst;
  }
  return copy_impl(dst, src);
}

static const Tensor& copy_impl(const Tensor& dst, const Tensor& src) {
  if (dst.numel() == 0 && src.numel() == 0) return dst;
  Tensor s = expand_to(src, dst.sizes(), "copy_");
  check_no_internal_overlap(dst, "copy_");
  if (dst.is_same(src)) return dst;
  // Overlapping views (e.g. a[1:].copy_(a[:-1])) go through a temporary.
  if (ranges_overlap(dst, s) && !(dst.storage_offset() == s.storage_offset() &&
                                  dst.strides() == s.strides() && dst.dtype() == s.dtype())) {
    s = clone(s);
  }
  Device dev = dst.device();
  if (!s.device().is_cpu() || !dev.is_cpu()) {
    // Cross-device copies are the CUDA backend's; it registers in copy_stub's CUDA slot.
    dev = s.device().is_cpu() ? dst.device() : s.device();
  }
  TensorIterator it({dst, s}, 1, dst.sizes());
  copy_stub.get(dev)(it);
  dst.bump_version("copy_");
  return dst;
}

// One CPU element converted between dtypes without the iterator: the path
// Python scalars take on every `tensor + 1`.
static Tensor convert_single(const Tensor& a, DType dtype) {
  Scalar v = a.item();  // a CPU tensor of one element: a plain read
  Tensor out = scalar_tensor(v, dtype);
  if (a.dim() != 0) out = make_view(out, a.sizes(), a.strides(), 0);
  out.impl()->wrapped_number = a.impl()->wrapped_number;
  return out;
}

Tensor to_dtype(const Tensor& a, DType dtype, bool copy) {
  EMBER_TRACE("aten::to.dtype(Tensor self, ScalarType dtype, bool copy=False) -> Tensor", to_dtype,
              a, dtype, copy);
  if (a.dtype() == dtype && !copy) return a;
  if (__builtin_expect(a.is_sparse(), 0)) return sparse_to(a, dtype, a.device(), copy);
  if (a.dim() == 0 && a.device().is_cpu() && !autograd::compute_requires_grad({&a}))
    return convert_single(a, dtype);
  Tensor out = empty(a.sizes(), dtype, a.device());
  if (a.numel()) copy_impl(out, a);
  out.impl()->wrapped_number = a.impl()->wrapped_number;
  *out.impl()->version = 0;
  if (autograd::compute_requires_grad({&a})) autograd::record_to_copy(a, out);
  return out;
}

Tensor to_device(const Tensor& a, Device device, bool copy) {
  EMBER_TRACE("aten::to.device(Tensor self, Device device, bool copy=False) -> Tensor", to_device,
              a, device, copy);
  device = resolve_device(device);  // "cuda": the current device
  Device ad = a.device();
  if (ad.type == device.type && (ad.index == device.index || device.index < 0) && !copy) return a;
  if (__builtin_expect(a.is_sparse(), 0)) return sparse_to(a, a.dtype(), device, copy);
  Tensor out = empty(a.sizes(), a.dtype(), device);
  if (a.numel()) copy_impl(out, a);
  *out.impl()->version = 0;
  if (autograd::compute_requires_grad({&a})) autograd::record_to_copy(a, out);
  return out;
}

Tensor contiguous(const Tensor& a) {
  EMBER_TRACE("aten::contiguous(Tensor self) -> Tensor", contiguous, a);
  if (a.is_contiguous()) return a;
  return clone(a);
}

Tensor clone(const Tensor& a) {
  EMBER_TRACE("aten::clone(Tensor self) -> Tensor", clone, a);
  if (__builtin_expect(a.is_sparse(), 0)) return sparse_clone(a);
  Tensor out = empty(a.sizes(), a.dtype(), a.device());
  if (a.numel()) copy_impl(out, a);
  *out.impl()->version = 0;
  if (autograd::compute_requires_grad({&a})) autograd::record_clone(a, out);
  return out;
}

void check_scalar_fits(Scalar v, DType dt, const char* op) {
  bool bad = false;
  if (dt == DType::Bool || dt == DType::Float64) return;
  if (is_floating(dt)) {
    double f = v.to_double();
    bad = std::isfinite(f) && std::fabs(f) > finfo_max(dt);
  } else {
    double lo = 0, hi = 0;
    dispatch_all(dt, op, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_integral<T>::value) {
        lo = double(std::numeric_limits<T>::lowest());
        hi = double(std::numeric_limits<T>::max());
      }
    });
    if (v.is_floating()) {
      double f = v.to_double();
      bad = !(f >= lo && f <= hi);  // NaN and infinities too
    } else if (dt == DType::UInt8 && v.to_int() < 0) {
      bad = v.to_int() < -255;  // negative ints wrap (a - b == a + 255 * b), as PyTorch
    } else if (dt != DType::Int64) {
      bad = v.to_int() < int64_t(lo) || v.to_int() > int64_t(hi);
    }
  }
  if (!bad) return;
  if (v.is_floating())
    EMBER_ERROR(op, ": value ", v.to_double(), " cannot be converted to type ", dtype_name(dt),
                " without overflow");
  EMBER_ERROR(op, ": value ", v.to_int(), " cannot be converted to type ", dtype_name(dt),
              " without overflow");
}

const Tensor& fill_(const Tensor& a, Scalar v) {
  EMBER_TRACE("aten::fill_.Scalar(Tensor self, Scalar value) -> Tensor", fill_, a, v);
  if (__builtin_expect(a.is_sparse(), 0)) {
    // zero_() is the one fill a sparse tensor takes (PyTorch's zero_ of a sparse tensor).
    if (v.to_double() != 0.0) raise_sparse_unsupported("fill_", a);
    return sparse_zero_(a);
  }
  check_scalar_fits(v, a.dtype(), "fill_");
  if (autograd::grad_enabled() && autograd::requires_grad(a)) {
    autograd::check_inplace(a, "fill_");
    Tensor filled = full(Shape{}, v, a.dtype(), a.device());
    return copy_(a, filled);  // records CopyBackwards: no gradient reaches a's old value
  }
  check_no_internal_overlap(a, "fill_");
  if (a.numel()) {
    TensorIterator it({a}, 1, a.sizes());
    fill_stub.get(a.device())(it, v);
  }
  a.bump_version("fill_");
  return a;
}

Scalar local_scalar(const Tensor& t, const char* op) {
  EMBER_CHECK(t.numel() == 1, op, "(): a Tensor with ", t.numel(),
              " elements cannot be converted to Scalar");
  Tensor c = to_device(t, Device());
  return dispatch_all(c.dtype(), op, [&](auto tag) -> Scalar {
    using T = typename decltype(tag)::type;
    T v = *c.data<T>();
    if constexpr (std::is_same<T, bool>::value)
      return Scalar(v);
    else if constexpr (std::is_integral<T>::value)
      return Scalar(int64_t(v));
    else
      return Scalar(double(v));
  });
}

const Tensor& fill_(const Tensor& a, const Tensor& value) {
  EMBER_CHECK(value.dim() == 0, "fill_ only supports 0-dimension value tensor but got tensor with ",
              value.dim(), " dimensions.");
  // A differentiable value gets grad.sum() (PyTorch's fill_.Tensor): copy_ broadcasts the
  // 0-d value and records CopyBackwards, whose source gradient is that sum. Going through
  // a Scalar would drop it.
  if (autograd::grad_enabled() && autograd::requires_grad(value)) return copy_(a, value);
  return fill_(a, local_scalar(value, "fill_"));
}

Tensor full(const Shape& sizes, Scalar v, DType dtype, Device device) {
  EMBER_TRACE(
      "aten::full(int[] size, Scalar fill_value, *, ScalarType dtype, Device device) -> Tensor",
      full, sizes, v, dtype, device);
  Tensor t = empty(sizes, dtype, device);
  fill_(t, v);
  *t.impl()->version = 0;
  return t;
}

Tensor zeros(const Shape& sizes, DType dtype, Device device) {
  EMBER_TRACE("aten::zeros(int[] size, *, ScalarType dtype, Device device) -> Tensor", zeros, sizes,
              dtype, device);
  return full(sizes, Scalar(int64_t(0)), dtype, device);
}

Tensor scalar_tensor(Scalar s, DType dtype, Device device) {
  Tensor t = empty(Shape{}, dtype, Device());
  dispatch_all(dtype, "scalar_tensor", [&](auto tag) {
    using T = typename decltype(tag)::type;
    *t.data<T>() = s.to<T>();
  });
  return device.is_cpu() ? t : to_device(t, device);
}

}  // namespace ember
