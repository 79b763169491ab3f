// Kernel slots of the reductions and scans (front-ends in ops/reduce.cpp).
// Backend-neutral: backends include this, never ops/reduce.h.
#pragma once
#include <optional>
#include <utility>

#include "ember/core/scalar.h"
#include "ember/core/tensor.h"
#include "ember/kernels/dispatch.h"

namespace ember {

// ---- kernel interface --------------------------------------------------------------------

/// What the reduction kernels see. `out` (and `out2` when used) are fresh contiguous
/// tensors of the input's rank with size 1 on every reduced dim ("keepdim shape").
struct ReduceArgs {
  Tensor in;
  Tensor out;   // values (undefined for argmax/argmin)
  Tensor out2;  // indices (int64) for max/min/arg*; the mean for var_mean/std_mean
  Shape mask;   // per input dim: 1 if reduced
  int kind = 0;
  double p = 0;      // norm order, or var's correction
  double scale = 1;  // mean: 1 / count
};
using ReduceKernel = void (*)(const ReduceArgs&);

enum class SumKind : int { Sum, Prod, Mean };
enum class MinMaxKind : int { Amax, Amin, MaxIdx, MinIdx };
enum class LogicalKind : int { All, Any, CountNonzero };
enum class VarKind : int { Var, Std };
/// LogCumSumExp: out[i] = logaddexp(out[i - 1], in[i]), a running-max scan (each step
/// shifts by the larger of its two operands), floating dtypes only.
enum class ScanKind : int { Cumsum, Cumprod, LogCumSumExp };

/// sum/prod/mean: `in` has `out`'s dtype, or is integral/bool with an int64 `out`.
extern DispatchStub<ReduceKernel> sum_stub;
/// amax/amin (out), max/min with indices (out + out2), argmax/argmin (out2 only).
extern DispatchStub<ReduceKernel> minmax_stub;
/// all/any (out bool or uint8), count_nonzero (out int64).
extern DispatchStub<ReduceKernel> logical_stub;
/// Vector p-norm of a floating input; `p` may be 0, +-inf or any other value.
extern DispatchStub<ReduceKernel> norm_stub;
/// var/std with correction `p`; out2 (optional) gets the mean.
extern DispatchStub<ReduceKernel> var_stub;
/// Median of each row of a contiguous 2-d `in` [rows, n] into out [rows] (+ out2 indices).
extern DispatchStub<ReduceKernel> median_stub;
/// In-place inclusive scan of the contiguous `out` along dim `mask[0]`.
extern DispatchStub<ReduceKernel> scan_stub;

}  // namespace ember
