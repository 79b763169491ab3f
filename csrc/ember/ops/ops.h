// Op front-ends: the C++ API of every tensor op. Each validates its arguments,
// promotes dtypes, broadcasts, allocates the result and calls its kernel
// through the registry (kernels/dispatch.h).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "ember/core/scalar.h"
#include "ember/core/tensor.h"
#include "ember/kernels/dispatch.h"
#include "ember/kernels/elementwise.h"
#include "ember/kernels/tensor_iterator.h"

namespace ember {

// UnaryOp, BinaryOp, their kinds and kernel stubs: kernels/elementwise.h.
const char* op_name(UnaryOp op);
const char* op_name(BinaryOp op);

// ---- elementwise -------------------------------------------------------------
Tensor unary(UnaryOp op, const Tensor& a);
Tensor& unary_(UnaryOp op, const Tensor& a);
Tensor& unary_out(UnaryOp op, const Tensor& a, const Tensor& out);

Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b);
Tensor& binary_(BinaryOp op, const Tensor& a, const Tensor& b);
Tensor& binary_out(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out);
/// PyTorch's alpha= (`a op alpha * b`): only add and sub take it (takes_alpha); for any
/// other op these raise TypeError naming the op. alpha == 1 is the plain op.
bool takes_alpha(BinaryOp op);
Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b, Scalar alpha);
Tensor& binary_(BinaryOp op, const Tensor& a, const Tensor& b, Scalar alpha);
Tensor& binary_out(BinaryOp op, const Tensor& a, const Tensor& b, Scalar alpha, const Tensor& out);
/// A 0-dim "wrapped number" tensor for a Python scalar (weak in promotion).
Tensor wrap_scalar(Scalar s, Device device = Device());
/// PyTorch's result_type over tensors (wrapped numbers count as scalars).
DType result_type(const Tensor& a, const Tensor& b);
DType result_type(const Tensor& a, Scalar s);

Tensor add(const Tensor& a, const Tensor& b, Scalar alpha = Scalar(int64_t(1)));
Tensor sub(const Tensor& a, const Tensor& b, Scalar alpha = Scalar(int64_t(1)));
/// div(rounding_mode=): "trunc" or "floor" rounds the quotient and keeps the promoted
/// dtype (integers stay integers), as PyTorch; integer division by zero raises.
Tensor div_rounding(const Tensor& a, const Tensor& b, const std::string& mode);
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor clamp(const Tensor& a, const std::optional<Tensor>& min, const std::optional<Tensor>& max);
/// start + weight * (end - start), in PyTorch's two-sided form for accuracy near weight = 1.
Tensor lerp(const Tensor& start, const Tensor& end, const Tensor& weight);
Tensor& lerp_out(const Tensor& start, const Tensor& end, const Tensor& weight, const Tensor& out);
const Tensor& lerp_(const Tensor& self, const Tensor& end, const Tensor& weight);
/// NaN -> nan, +inf -> posinf (default: the dtype's max), -inf -> neginf (default: lowest).
Tensor nan_to_num(const Tensor& a, double nan, std::optional<double> posinf,
                  std::optional<double> neginf);
/// Round half to even; with decimals != 0, round(a * 10^d) / 10^d as PyTorch.
Tensor round_decimals(const Tensor& a, int64_t decimals);
/// Largest and lowest finite values of a floating dtype.
double finfo_max(DType t);

// ---- copies and conversions ------------------------------------------------------
/// Copies src into dst, broadcasting src and converting its dtype. Bumps dst's version.
const Tensor& copy_(const Tensor& dst, const Tensor& src);
Tensor to_dtype(const Tensor& a, DType dtype, bool copy = false);
Tensor to_device(const Tensor& a, Device device, bool copy = false);
Tensor contiguous(const Tensor& a);
Tensor clone(const Tensor& a);
/// Raises RuntimeError when `v` cannot be stored in `dt` without overflow (PyTorch's
/// checked scalar conversion: NaN/inf into integers, out-of-range values; negative ints
/// may wrap into uint8).
void check_scalar_fits(Scalar v, DType dt, const char* op);
/// Fills `a` with `v` (checked with check_scalar_fits).
const Tensor& fill_(const Tensor& a, Scalar v);
/// The value of a one-element tensor (bool, int64 or double), read on the host;
/// raises naming `op` when `t` has another number of elements.
Scalar local_scalar(const Tensor& t, const char* op = "item");
/// fill_ with a 0-d tensor value (PyTorch's fill_.Tensor): a value that requires grad
/// gets the sum of the gradient, as a broadcast copy records it.
const Tensor& fill_(const Tensor& a, const Tensor& value);

// ---- factories -------------------------------------------------------------------
Tensor full(const Shape& sizes, Scalar v, DType dtype, Device device = Device());
Tensor zeros(const Shape& sizes, DType dtype, Device device = Device());
Tensor scalar_tensor(Scalar s, DType dtype, Device device = Device());

// ---- checks shared by front-ends ---------------------------------------------------------
/// Raises if `out` has internal overlap (stride-0 writes) or partially overlaps `in`.
void check_no_overlap(const Tensor& out, const Tensor& in, const char* op);
void check_no_internal_overlap(const Tensor& out, const char* op);
void check_same_device(const Tensor& a, const Tensor& b, const char* op);
/// As check_same_device, without the CPU-scalar exemption: for operands a kernel reads on
/// a's device (indices, targets, sources), which PyTorch also refuses from another device.
void check_same_device_strict(const Tensor& a, const Tensor& b, const char* op);
/// Where an op of a and b runs: the device of the first that is not a CPU scalar (a Python
/// number or a 0-d CPU tensor), else the CPU (PyTorch's TensorIterator rule).
Device op_device(const Tensor& a, const Tensor& b);

}  // namespace ember
