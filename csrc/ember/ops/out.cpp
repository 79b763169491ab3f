// The out= contract (ops/out.h).
#include "ember/ops/out.h"

#include "ember/core/error.h"
#include "ember/ops/surface.h"

namespace ember {

bool resize_output(const Tensor& out, const Shape& shape) {
  if (out.sizes() == shape) return false;
  if (out.numel() != 0)
    warn("An output with one or more elements was resized since it had shape " +
         shape_str(out.sizes()) + ", which does not match the required output shape " +
         shape_str(shape) +
         ". This behavior is deprecated, and in a future PyTorch release outputs will not be "
         "resized unless they have zero elements. You can explicitly reuse an out tensor t by "
         "resizing it, inplace, to zero elements with t.resize_(0).");
  resize_(out, shape);
  return true;
}

bool can_cast(DType from, DType to) {
  return !(is_floating(from) && !is_floating(to)) && !(from != DType::Bool && to == DType::Bool);
}

void check_result_cast(DType result, DType into, const char* op) {
  if (can_cast(result, into)) return;
  if (op)
    EMBER_ERROR(op, ": result type ", dtype_name(result),
                " can't be cast to the desired output type ", dtype_name(into));
  EMBER_ERROR("result type ", dtype_name(result), " can't be cast to the desired output type ",
              dtype_name(into));
}

}  // namespace ember
