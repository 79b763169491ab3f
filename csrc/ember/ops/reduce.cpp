// Reduction and scan front-ends: dims, result dtypes, PyTorch's errors; the
// kernels (backends/cpu/reduce_*.cpp) get validated inputs and fresh outputs.
#include "ember/ops/reduce.h"
#include "ember/jit/trace_hook.h"

#include <cmath>
#include <limits>
#include <sstream>

#include "ember/autograd/derivatives/reduce.h"
#include "ember/autograd/record.h"
#include "ember/ops/autocast.h"
#include "ember/ops/ops.h"
#include "ember/ops/view.h"

#include "ember/ops/sparse.h"

namespace ember {

DispatchStub<ReduceKernel> sum_stub("sum");
DispatchStub<ReduceKernel> minmax_stub("max");
DispatchStub<ReduceKernel> logical_stub("all");
DispatchStub<ReduceKernel> norm_stub("norm");
DispatchStub<ReduceKernel> var_stub("var");
DispatchStub<ReduceKernel> median_stub("median");
DispatchStub<ReduceKernel> scan_stub("cumsum");

namespace {

/// The reduced dims of one call and the shapes they give.
struct Plan {
  Shape mask;         // per input dim: 1 if reduced
  Shape keep_shape;   // input sizes with 1 on reduced dims (what kernels write)
  Shape out_shape;    // the result's shape (keep_shape when keepdim)
  int64_t count = 1;  // input elements per output element
};

Plan make_plan(const Tensor& a, const OptDims& dims, bool keepdim) {
  const int64_t nd = a.dim();
  Plan p;
  p.mask.resize(size_t(nd), 0);
  if (!dims || dims->empty()) {
    for (int64_t d = 0; d < nd; ++d) p.mask[d] = 1;
  } else {
    Shape seen(size_t(std::max<int64_t>(nd, 1)), 0);
    for (int64_t d : *dims) {
      const int64_t w = wrap_dim(d, nd);
      EMBER_CHECK(!seen[w], "dim ", w, " appears multiple times in the list of dims");
      seen[w] = 1;
      if (nd) p.mask[w] = 1;
    }
  }
  for (int64_t d = 0; d < nd; ++d) {
    const int64_t s = a.sizes()[d];
    p.keep_shape.push_back(p.mask[d] ? 1 : s);
    if (p.mask[d])
      p.count *= s;
    else
      p.out_shape.push_back(s);
  }
  if (keepdim) p.out_shape = p.keep_shape;
  return p;
}

/// The result view of a kernel's keepdim-shaped contiguous output.
Tensor finish(const Tensor& keep, const Plan& p) {
  return make_view(keep, p.out_shape, contiguous_strides(p.out_shape), keep.storage_offset());
}

/// Copies `result` into the user's out= tensor (same shape required; dtype converted).
const Tensor& write_reduce_out(const Tensor& result, const Tensor& out, const char* op) {
  check_same_device(out, result, op);
  resize_output(out, result.sizes());
  check_no_internal_overlap(out, op);
  copy_(out, result);
  return out;
}

/// Raises PyTorch's error for reducing an empty input without an identity.
void check_nonempty(const Tensor& a, const OptDims& dims, const char* op) {
  if (!dims || dims->empty()) {
    EMBER_CHECK(a.numel() != 0, op,
                "(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
                "reduction dim with the 'dim' argument.");
    return;
  }
  for (int64_t d : *dims) {
    const int64_t w = wrap_dim(d, a.dim());
    EMBER_CHECK_INDEX(a.dim() == 0 || a.sizes()[w] != 0, op, "(): Expected reduction dim ", w,
                      " to have non-zero size.");
  }
}

DType sum_result_dtype(const Tensor& a, std::optional<DType> dtype) {
  if (dtype) return *dtype;
  return is_integral(a.dtype(), true) ? DType::Int64 : a.dtype();
}

Tensor run_sum(const Tensor& a, const OptDims& dims, bool keepdim, DType out_dt, SumKind kind) {
  Plan p = make_plan(a, dims, keepdim);
  Tensor in = a;
  // Integers read directly into an int64 accumulator; anything else is cast first.
  if (a.dtype() != out_dt && !(is_integral(a.dtype(), true) && out_dt == DType::Int64))
    in = to_dtype(a, out_dt);
  Tensor out = empty(p.keep_shape, out_dt, a.device());
  ReduceArgs args;
  args.in = in;
  args.out = out;
  args.mask = p.mask;
  args.kind = int(kind);
  args.scale = kind == SumKind::Mean ? 1.0 / double(p.count) : 1.0;
  sum_stub.get(a.device())(args);
  return finish(out, p);
}

void check_mean_dtype(const Tensor& a, std::optional<DType> dtype) {
  const DType d = dtype ? *dtype : a.dtype();
  EMBER_CHECK(
      is_floating(d), "mean(): could not infer output dtype. ", dtype ? "Optional" : "Input",
      " dtype must be either a floating point or complex dtype. Got: ", scalar_type_name(d));
}

OptDims one_dim(std::optional<int64_t> dim) {
  if (!dim) return std::nullopt;
  return Shape{*dim};
}

Tensor run_extreme(const Tensor& a, const OptDims& dims, bool keepdim, MinMaxKind kind,
                   const char* op) {
  Plan p = make_plan(a, dims, keepdim);
  check_nonempty(a, dims, op);
  Tensor out = empty(p.keep_shape, a.dtype(), a.device());
  ReduceArgs args;
  args.in = a;
  args.out = out;
  args.mask = p.mask;
  args.kind = int(kind);
  minmax_stub.get(a.device())(args);
  return finish(out, p);
}

const Tensor& extreme_out(const Tensor& a, const OptDims& dims, bool keepdim, MinMaxKind kind,
                          const char* op, const Tensor& out) {
  EMBER_CHECK(out.dtype() == a.dtype(), "Expected the dtype for input and out to match, but got ",
              scalar_type_name(a.dtype()), " for input's dtype and ", scalar_type_name(out.dtype()),
              " for out's dtype.");
  return write_reduce_out(run_extreme(a, dims, keepdim, kind, op), out, op);
}

std::pair<Tensor, Tensor> run_indexed(const Tensor& a, int64_t dim, bool keepdim, bool values,
                                      MinMaxKind kind, const char* op) {
  OptDims dims = Shape{dim};
  Plan p = make_plan(a, dims, keepdim);
  check_nonempty(a, dims, op);
  Tensor idx = empty(p.keep_shape, DType::Int64, a.device());
  ReduceArgs args;
  args.in = a;
  if (values) args.out = empty(p.keep_shape, a.dtype(), a.device());
  args.out2 = idx;
  args.mask = p.mask;
  args.kind = int(kind);
  minmax_stub.get(a.device())(args);
  return {values ? finish(args.out, p) : Tensor(), finish(idx, p)};
}

Tensor run_arg(const Tensor& a, std::optional<int64_t> dim, bool keepdim, MinMaxKind kind,
               const char* op) {
  EMBER_CHECK(a.dtype() != DType::Bool, '"', op, "_cpu\" not implemented for 'Bool'");
  if (dim) return run_indexed(a, *dim, keepdim, false, kind, op).second;
  // PyTorch raises IndexError here (RuntimeError for max()/min() without a dim).
  EMBER_CHECK_INDEX(a.numel() != 0, op,
                    "(): Expected reduction dim to be specified for input.numel() == 0.");
  Tensor flat = reshape(a, Shape{a.numel()});
  Tensor r = run_indexed(flat, 0, false, false, kind, op).second;
  if (keepdim) r = reshape(r, Shape(size_t(a.dim()), 1));
  return r;
}

Tensor run_logical(const Tensor& a, const OptDims& dims, bool keepdim, LogicalKind kind) {
  Plan p = make_plan(a, dims, keepdim);
  DType dt = kind == LogicalKind::CountNonzero ? DType::Int64
             : a.dtype() == DType::UInt8       ? DType::UInt8
                                               : DType::Bool;
  Tensor out = empty(p.keep_shape, dt, a.device());
  ReduceArgs args;
  args.in = a;
  args.out = out;
  args.mask = p.mask;
  args.kind = int(kind);
  logical_stub.get(a.device())(args);
  return finish(out, p);
}

std::pair<Tensor, Tensor> run_var(const Tensor& a, const OptDims& dims, double correction,
                                  bool keepdim, VarKind kind, bool with_mean) {
  EMBER_CHECK(is_floating(a.dtype()), "std and var only support floating point and complex dtypes");
  Plan p = make_plan(a, dims, keepdim);
  ReduceArgs args;
  args.in = a;
  args.out = empty(p.keep_shape, a.dtype(), a.device());
  if (with_mean) args.out2 = empty(p.keep_shape, a.dtype(), a.device());
  args.mask = p.mask;
  args.kind = int(kind);
  args.p = correction;
  var_stub.get(a.device())(args);
  return {finish(args.out, p), with_mean ? finish(args.out2, p) : Tensor()};
}

Tensor run_scan(const Tensor& a, int64_t dim, DType dt, ScanKind kind) {
  const int64_t d = wrap_dim(dim, a.dim());
  Tensor out = empty(a.sizes(), dt, a.device());
  copy_(out, a);
  if (a.dim() == 0 || a.numel() == 0) return out;
  ReduceArgs args;
  args.out = out;
  args.mask = Shape{d};
  args.kind = int(kind);
  scan_stub.get(a.device())(args);
  return out;
}

}  // namespace

// ---- sum / mean / prod --------------------------------------------------------------------

Tensor sum(const Tensor& a, const OptDims& dims, bool keepdim, std::optional<DType> dtype) {
  EMBER_TRACE(
      "aten::sum(Tensor self, int[]? dim=None, bool keepdim=False, ScalarType? dtype=None) -> "
      "Tensor",
      sum, a, dims, keepdim, dtype);
  if (__builtin_expect(a.is_sparse(), 0)) {
    return keepdim ? sparse_sum_keepdim(a, dims, dtype) : sparse_sum(a, dims, dtype);
  }
  if (autocast::active()) {  // Note [Autocast policy]
    auto c_ = autocast::autocast_inputs("sum", {a});
    autocast::ExcludeGuard g_;
    return sum(c_[0], dims, keepdim, dtype);
  }
  autograd::RecordScope scope({&a});
  Tensor r = run_sum(a, dims, keepdim, sum_result_dtype(a, dtype), SumKind::Sum);
  if (scope.rec) {
    scope.done();
    autograd::record_sum(a, r, dims, keepdim, /*mean=*/false);
  }
  return r;
}
const Tensor& sum_out(const Tensor& a, const OptDims& dims, bool keepdim,
                      std::optional<DType> dtype, const Tensor& out) {
  EMBER_TRACE(
      "aten::sum.out(Tensor self, int[]? dim, bool keepdim, ScalarType? dtype, *, Tensor out) -> "
      "Tensor",
      sum_out, a, dims, keepdim, dtype, out);
  autograd::check_out_not_differentiable("sum", {&a, &out});
  return write_reduce_out(run_sum(a, dims, keepdim, dtype ? *dtype : out.dtype(), SumKind::Sum),
                          out, "sum");
}

Tensor mean(const Tensor& a, const OptDims& dims, bool keepdim, std::optional<DType> dtype) {
  EMBER_TRACE(
      "aten::mean(Tensor self, int[]? dim=None, bool keepdim=False, ScalarType? dtype=None) -> "
      "Tensor",
      mean, a, dims, keepdim, dtype);
  if (autocast::active()) {  // Note [Autocast policy]
    auto c_ = autocast::autocast_inputs("mean", {a});
    autocast::ExcludeGuard g_;
    return mean(c_[0], dims, keepdim, dtype);
  }
  check_mean_dtype(a, dtype);
  autograd::RecordScope scope({&a});
  Tensor r = run_sum(a, dims, keepdim, dtype ? *dtype : a.dtype(), SumKind::Mean);
  if (scope.rec) {
    scope.done();
    autograd::record_sum(a, r, dims, keepdim, /*mean=*/true);
  }
  return r;
}
const Tensor& mean_out(const Tensor& a, const OptDims& dims, bool keepdim,
                       std::optional<DType> dtype, const Tensor& out) {
  EMBER_TRACE(
      "aten::mean.out(Tensor self, int[]? dim, bool keepdim, ScalarType? dtype, *, Tensor out) -> "
      "Tensor",
      mean_out, a, dims, keepdim, dtype, out);
  autograd::check_out_not_differentiable("mean", {&a, &out});
  check_mean_dtype(a, dtype);
  return write_reduce_out(run_sum(a, dims, keepdim, dtype ? *dtype : a.dtype(), SumKind::Mean), out,
                          "mean");
}

Tensor prod(const Tensor& a, std::optional<int64_t> dim, bool keepdim, std::optional<DType> dtype) {
  EMBER_TRACE(
      "aten::prod(Tensor self, int? dim=None, bool keepdim=False, ScalarType? dtype=None) -> "
      "Tensor",
      prod, a, dim, keepdim, dtype);
  if (autocast::active()) {  // Note [Autocast policy]
    auto c_ = autocast::autocast_inputs("prod", {a});
    autocast::ExcludeGuard g_;
    return prod(c_[0], dim, keepdim, dtype);
  }
  autograd::RecordScope scope({&a});
  Tensor r = run_sum(a, one_dim(dim), keepdim, sum_result_dtype(a, dtype), SumKind::Prod);
  if (scope.rec) {
    scope.done();
    autograd::record_prod(a, r, dim, keepdim);
  }
  return r;
}
const Tensor& prod_out(const Tensor& a, std::optional<int64_t> dim, bool keepdim,
                       std::optional<DType> dtype, const Tensor& out) {
  EMBER_TRACE(
      "aten::prod.out(Tensor self, int? dim, bool keepdim, ScalarType? dtype, *, Tensor out) -> "
      "Tensor",
      prod_out, a, dim, keepdim, dtype, out);
  autograd::check_out_not_differentiable("prod", {&a, &out});
  return write_reduce_out(
      run_sum(a, one_dim(dim), keepdim, dtype ? *dtype : out.dtype(), SumKind::Prod), out, "prod");
}

// ---- max / min ----------------------------------------------------------------------------

Tensor amax(const Tensor& a, const OptDims& dims, bool keepdim) {
  EMBER_TRACE("aten::amax(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor", amax, a,
              dims, keepdim);
  autograd::RecordScope scope({&a});
  Tensor r = run_extreme(a, dims, keepdim, MinMaxKind::Amax, "amax");
  if (scope.rec) {
    scope.done();
    autograd::record_amax(a, r, dims, keepdim, /*is_max=*/true);
  }
  return r;
}
Tensor amin(const Tensor& a, const OptDims& dims, bool keepdim) {
  EMBER_TRACE("aten::amin(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor", amin, a,
              dims, keepdim);
  autograd::RecordScope scope({&a});
  Tensor r = run_extreme(a, dims, keepdim, MinMaxKind::Amin, "amin");
  if (scope.rec) {
    scope.done();
    autograd::record_amax(a, r, dims, keepdim, /*is_max=*/false);
  }
  return r;
}
const Tensor& amax_out(const Tensor& a, const OptDims& dims, bool keepdim, const Tensor& out) {
  EMBER_TRACE("aten::amax.out(Tensor self, int[]? dim, bool keepdim, *, Tensor out) -> Tensor",
              amax_out, a, dims, keepdim, out);
  autograd::check_out_not_differentiable("amax", {&a, &out});
  return extreme_out(a, dims, keepdim, MinMaxKind::Amax, "amax", out);
}
const Tensor& amin_out(const Tensor& a, const OptDims& dims, bool keepdim, const Tensor& out) {
  EMBER_TRACE("aten::amin.out(Tensor self, int[]? dim, bool keepdim, *, Tensor out) -> Tensor",
              amin_out, a, dims, keepdim, out);
  autograd::check_out_not_differentiable("amin", {&a, &out});
  return extreme_out(a, dims, keepdim, MinMaxKind::Amin, "amin", out);
}
Tensor max(const Tensor& a) {
  EMBER_TRACE("aten::max(Tensor self) -> Tensor", max, a);
  autograd::RecordScope scope({&a});
  Tensor r = run_extreme(a, std::nullopt, false, MinMaxKind::Amax, "max");
  if (scope.rec) {
    scope.done();
    autograd::record_evenly("MaxBackward1", a, r);
  }
  return r;
}
Tensor min(const Tensor& a) {
  EMBER_TRACE("aten::min(Tensor self) -> Tensor", min, a);
  autograd::RecordScope scope({&a});
  Tensor r = run_extreme(a, std::nullopt, false, MinMaxKind::Amin, "min");
  if (scope.rec) {
    scope.done();
    autograd::record_evenly("MinBackward1", a, r);
  }
  return r;
}

std::pair<Tensor, Tensor> max_dim(const Tensor& a, int64_t dim, bool keepdim) {
  EMBER_TRACE("aten::max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor, Tensor)",
              max_dim, a, dim, keepdim);
  autograd::RecordScope scope({&a});
  auto r = run_indexed(a, dim, keepdim, true, MinMaxKind::MaxIdx, "max");
  if (scope.rec) {
    scope.done();
    autograd::record_value_selecting("MaxBackward0", a, r.first, r.second, dim, keepdim);
  }
  return r;
}
std::pair<Tensor, Tensor> min_dim(const Tensor& a, int64_t dim, bool keepdim) {
  EMBER_TRACE("aten::min.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor, Tensor)",
              min_dim, a, dim, keepdim);
  autograd::RecordScope scope({&a});
  auto r = run_indexed(a, dim, keepdim, true, MinMaxKind::MinIdx, "min");
  if (scope.rec) {
    scope.done();
    autograd::record_value_selecting("MinBackward0", a, r.first, r.second, dim, keepdim);
  }
  return r;
}
Tensor argmax(const Tensor& a, std::optional<int64_t> dim, bool keepdim) {
  EMBER_TRACE("aten::argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor", argmax, a,
              dim, keepdim);
  autograd::GradModeGuard no_grad(false);  // integer result: nothing to record
  return run_arg(a, dim, keepdim, MinMaxKind::MaxIdx, "argmax");
}
Tensor argmin(const Tensor& a, std::optional<int64_t> dim, bool keepdim) {
  EMBER_TRACE("aten::argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor", argmin, a,
              dim, keepdim);
  autograd::GradModeGuard no_grad(false);
  return run_arg(a, dim, keepdim, MinMaxKind::MinIdx, "argmin");
}

// ---- logical ------------------------------------------------------------------------------

Tensor all(const Tensor& a, const OptDims& dims, bool keepdim) {
  EMBER_TRACE("aten::all(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor", all, a, dims,
              keepdim);
  return run_logical(a, dims, keepdim, LogicalKind::All);
}
Tensor any(const Tensor& a, const OptDims& dims, bool keepdim) {
  EMBER_TRACE("aten::any(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor", any, a, dims,
              keepdim);
  return run_logical(a, dims, keepdim, LogicalKind::Any);
}
Tensor count_nonzero(const Tensor& a, const OptDims& dims) {
  EMBER_TRACE("aten::count_nonzero(Tensor self, int[]? dim=None) -> Tensor", count_nonzero, a,
              dims);
  return run_logical(a, dims, false, LogicalKind::CountNonzero);
}

// ---- statistics ---------------------------------------------------------------------------

Tensor var(const Tensor& a, const OptDims& dims, double correction, bool keepdim) {
  EMBER_TRACE(
      "aten::var(Tensor self, int[]? dim=None, float correction=1, bool keepdim=False) -> Tensor",
      var, a, dims, correction, keepdim);
  autograd::RecordScope scope({&a});
  Tensor r = run_var(a, dims, correction, keepdim, VarKind::Var, false).first;
  if (scope.rec) {
    scope.done();
    autograd::record_var(a, r, dims, correction, keepdim, /*is_std=*/false);
  }
  return r;
}
Tensor std(const Tensor& a, const OptDims& dims, double correction, bool keepdim) {
  EMBER_TRACE(
      "aten::std(Tensor self, int[]? dim=None, float correction=1, bool keepdim=False) -> Tensor",
      std, a, dims, correction, keepdim);
  autograd::RecordScope scope({&a});
  Tensor r = run_var(a, dims, correction, keepdim, VarKind::Std, false).first;
  if (scope.rec) {
    scope.done();
    autograd::record_var(a, r, dims, correction, keepdim, /*is_std=*/true);
  }
  return r;
}
std::pair<Tensor, Tensor> var_mean(const Tensor& a, const OptDims& dims, double correction,
                                   bool keepdim) {
  EMBER_TRACE(
      "aten::var_mean(Tensor self, int[]? dim=None, float correction=1, bool keepdim=False) -> "
      "(Tensor, Tensor)",
      var_mean, a, dims, correction, keepdim);
  autograd::RecordScope scope({&a});
  auto r = run_var(a, dims, correction, keepdim, VarKind::Var, true);
  if (scope.rec) {
    scope.done();
    autograd::record_var_mean(a, r.first, r.second, dims, correction, keepdim, /*is_std=*/false);
  }
  return r;
}
std::pair<Tensor, Tensor> std_mean(const Tensor& a, const OptDims& dims, double correction,
                                   bool keepdim) {
  EMBER_TRACE(
      "aten::std_mean(Tensor self, int[]? dim=None, float correction=1, bool keepdim=False) -> "
      "(Tensor, Tensor)",
      std_mean, a, dims, correction, keepdim);
  autograd::RecordScope scope({&a});
  auto r = run_var(a, dims, correction, keepdim, VarKind::Std, true);
  if (scope.rec) {
    scope.done();
    autograd::record_var_mean(a, r.first, r.second, dims, correction, keepdim, /*is_std=*/true);
  }
  return r;
}

Tensor norm(const Tensor& a, double p, const OptDims& dims, bool keepdim,
            std::optional<DType> dtype) {
  EMBER_TRACE(
      "aten::norm(Tensor self, float p=2, int[]? dim=None, bool keepdim=False, ScalarType? "
      "dtype=None) -> Tensor",
      norm, a, p, dims, keepdim, dtype);
  EMBER_CHECK(is_floating(a.dtype()),
              "linalg.vector_norm: Expected a floating point or complex tensor as input. Got ",
              scalar_type_name(a.dtype()));
  EMBER_CHECK(!dtype || is_floating(*dtype),
              "linalg.vector_norm: dtype should be floating point or complex. Got ",
              scalar_type_name(dtype ? *dtype : a.dtype()));
  EMBER_CHECK(!std::isnan(p), "linalg.vector_norm: the order p must not be NaN");
  if (p < 0 || std::isinf(p)) {
    std::ostringstream os;
    os << "linalg.vector_norm cannot compute the " << p
       << " norm on an empty tensor because the operation does not have an identity";
    if (!dims || dims->empty()) {
      EMBER_CHECK(a.numel() != 0, os.str());
    } else {
      for (int64_t d : *dims)
        EMBER_CHECK(a.dim() == 0 || a.sizes()[wrap_dim(d, a.dim())] != 0, os.str());
    }
  }
  autograd::RecordScope scope({&a});
  Tensor in = dtype && *dtype != a.dtype() ? to_dtype(a, *dtype) : a;
  Plan pl = make_plan(in, dims, keepdim);
  ReduceArgs args;
  args.in = in;
  args.out = empty(pl.keep_shape, in.dtype(), a.device());
  args.mask = pl.mask;
  args.p = p;
  norm_stub.get(a.device())(args);
  Tensor r = finish(args.out, pl);
  if (scope.rec) {
    scope.done();
    autograd::record_norm(a, r, p, dims, keepdim, dtype.has_value());
  }
  return r;
}

static Tensor logsumexp_forward(const Tensor& a, const OptDims& dims, bool keepdim);

Tensor logsumexp(const Tensor& a, const OptDims& dims, bool keepdim) {
  EMBER_TRACE("aten::logsumexp(Tensor self, int[]? dim, bool keepdim=False) -> Tensor", logsumexp,
              a, dims, keepdim);
  autograd::RecordScope scope({&a});
  Tensor r = logsumexp_forward(a, dims, keepdim);
  if (scope.rec) {
    scope.done();
    autograd::record_logsumexp(a, r, dims, keepdim);
  }
  return r;
}

static Tensor logsumexp_forward(const Tensor& a, const OptDims& dims, bool keepdim) {
  const Tensor x = is_floating(a.dtype()) ? a : to_dtype(a, default_dtype());
  Plan p = make_plan(x, dims, keepdim);
  if (x.numel() == 0)
    return full(p.out_shape, Scalar(-std::numeric_limits<double>::infinity()), x.dtype(),
                x.device());
  // Shift by the max so exp never overflows; an infinite max shifts by 0 instead
  // (all -inf gives -inf, any +inf gives +inf, NaN stays NaN).
  Tensor m = amax(x, dims, true);
  Tensor shift =
      where(unary(UnaryOp::isfinite, m), m, scalar_tensor(Scalar(0.0), x.dtype(), x.device()));
  Tensor s = sum(unary(UnaryOp::exp, binary(BinaryOp::sub, x, shift)), dims, true);
  Tensor r = binary(BinaryOp::add, unary(UnaryOp::log, s), shift);
  return reshape(r, p.out_shape);
}

// ---- median -------------------------------------------------------------------------------

Tensor median(const Tensor& a) {
  EMBER_TRACE("aten::median(Tensor self) -> Tensor", median, a);
  EMBER_CHECK(a.dtype() != DType::Bool, "\"median\" not implemented for 'Bool'");
  if (a.numel() == 0) {
    EMBER_CHECK(is_floating(a.dtype()),
                "median(): Expected reduction dim to be specified for input.numel() == 0.");
    return full(Shape{}, Scalar(std::nan("")), a.dtype(), a.device());
  }
  autograd::RecordScope scope({&a});
  ReduceArgs args;
  args.in = reshape(contiguous(a), Shape{1, a.numel()});
  args.out = empty(Shape{1}, a.dtype(), a.device());
  median_stub.get(a.device())(args);
  Tensor r = reshape(args.out, Shape{});
  if (scope.rec) {
    scope.done();
    autograd::record_evenly("MedianBackward0", a, r);
  }
  return r;
}

static std::pair<Tensor, Tensor> median_dim_forward(const Tensor& a, int64_t dim, bool keepdim);

std::pair<Tensor, Tensor> median_dim(const Tensor& a, int64_t dim, bool keepdim) {
  EMBER_TRACE("aten::median.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor, Tensor)",
              median_dim, a, dim, keepdim);
  autograd::RecordScope scope({&a});
  auto r = median_dim_forward(a, dim, keepdim);
  if (scope.rec) {
    scope.done();
    autograd::record_value_selecting("MedianBackward1", a, r.first, r.second, dim, keepdim);
  }
  return r;
}

static std::pair<Tensor, Tensor> median_dim_forward(const Tensor& a, int64_t dim, bool keepdim) {
  EMBER_CHECK(a.dtype() != DType::Bool, "\"median\" not implemented for 'Bool'");
  Plan p = make_plan(a, Shape{dim}, keepdim);
  check_nonempty(a, Shape{dim}, "median");
  if (a.dim() == 0) return {clone(a), zeros(Shape{}, DType::Int64, a.device())};
  const int64_t d = wrap_dim(dim, a.dim());
  const int64_t n = a.sizes()[d];
  Tensor moved = contiguous(movedim(a, Shape{d}, Shape{-1}));
  ReduceArgs args;
  args.in = reshape(moved, Shape{n ? moved.numel() / n : 0, n});
  const int64_t rows = args.in.sizes()[0];
  args.out = empty(Shape{rows}, a.dtype(), a.device());
  args.out2 = empty(Shape{rows}, DType::Int64, a.device());
  if (rows) median_stub.get(a.device())(args);
  return {reshape(args.out, p.out_shape), reshape(args.out2, p.out_shape)};
}

// ---- scans --------------------------------------------------------------------------------

Tensor cumsum(const Tensor& a, int64_t dim, std::optional<DType> dtype) {
  EMBER_TRACE("aten::cumsum(Tensor self, int dim, ScalarType? dtype=None) -> Tensor", cumsum, a,
              dim, dtype);
  if (autocast::active()) {  // Note [Autocast policy]
    auto c_ = autocast::autocast_inputs("cumsum", {a});
    autocast::ExcludeGuard g_;
    return cumsum(c_[0], dim, dtype);
  }
  autograd::RecordScope scope({&a});
  Tensor r = run_scan(a, dim, sum_result_dtype(a, dtype), ScanKind::Cumsum);
  if (scope.rec) {
    scope.done();
    autograd::record_cumsum(a, r, dim);
  }
  return r;
}
Tensor cumprod(const Tensor& a, int64_t dim, std::optional<DType> dtype) {
  EMBER_TRACE("aten::cumprod(Tensor self, int dim, ScalarType? dtype=None) -> Tensor", cumprod, a,
              dim, dtype);
  if (autocast::active()) {  // Note [Autocast policy]
    auto c_ = autocast::autocast_inputs("cumprod", {a});
    autocast::ExcludeGuard g_;
    return cumprod(c_[0], dim, dtype);
  }
  autograd::RecordScope scope({&a});
  Tensor r = run_scan(a, dim, sum_result_dtype(a, dtype), ScanKind::Cumprod);
  if (scope.rec) {
    scope.done();
    autograd::record_cumprod(a, r, dim);
  }
  return r;
}
const Tensor& cumsum_out(const Tensor& a, int64_t dim, std::optional<DType> dtype,
                         const Tensor& out) {
  EMBER_TRACE("aten::cumsum.out(Tensor self, int dim, ScalarType? dtype, *, Tensor out) -> Tensor",
              cumsum_out, a, dim, dtype, out);
  autograd::check_out_not_differentiable("cumsum", {&a, &out});
  return write_reduce_out(run_scan(a, dim, dtype ? *dtype : out.dtype(), ScanKind::Cumsum), out,
                          "cumsum");
}
const Tensor& cumprod_out(const Tensor& a, int64_t dim, std::optional<DType> dtype,
                          const Tensor& out) {
  EMBER_TRACE("aten::cumprod.out(Tensor self, int dim, ScalarType? dtype, *, Tensor out) -> Tensor",
              cumprod_out, a, dim, dtype, out);
  autograd::check_out_not_differentiable("cumprod", {&a, &out});
  return write_reduce_out(run_scan(a, dim, dtype ? *dtype : out.dtype(), ScanKind::Cumprod), out,
                          "cumprod");
}
const Tensor& cumsum_(const Tensor& a, int64_t dim, std::optional<DType> dtype) {
  EMBER_TRACE("aten::cumsum_(Tensor self, int dim, ScalarType? dtype=None) -> Tensor", cumsum_, a,
              dim, dtype);
  EMBER_CHECK(!dtype || *dtype == a.dtype(), "cumsum_(): dtype ",
              dtype_name(dtype ? *dtype : a.dtype()), " does not match the tensor's dtype ",
              dtype_name(a.dtype()));
  if (autograd::inplace_records(a, {})) {
    wrap_dim(dim, a.dim());  // validate before touching autograd state
    return autograd::inplace_with_grad(a, "cumsum_", /*needs_self=*/false,
                                       [dim](const Tensor& s) { return cumsum(s, dim); });
  }
  copy_(a, run_scan(a, dim, a.dtype(), ScanKind::Cumsum));
  return a;
}
const Tensor& cumprod_(const Tensor& a, int64_t dim, std::optional<DType> dtype) {
  EMBER_TRACE("aten::cumprod_(Tensor self, int dim, ScalarType? dtype=None) -> Tensor", cumprod_, a,
              dim, dtype);
  EMBER_CHECK(!dtype || *dtype == a.dtype(), "cumprod_(): dtype ",
              dtype_name(dtype ? *dtype : a.dtype()), " does not match the tensor's dtype ",
              dtype_name(a.dtype()));
  if (autograd::inplace_records(a, {})) {
    wrap_dim(dim, a.dim());
    return autograd::inplace_with_grad(a, "cumprod_", /*needs_self=*/true,
                                       [dim](const Tensor& s) { return cumprod(s, dim); });
  }
  copy_(a, run_scan(a, dim, a.dtype(), ScanKind::Cumprod));
  return a;
}

}  // namespace ember
