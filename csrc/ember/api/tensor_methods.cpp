// The Tensor methods of the C++ API (<ember/script.h>): each calls the front-end a Python
// method binds, so C++ and Python give the same results and errors.
#include "ember/autograd/engine.h"
#include "ember/autograd/node.h"
#include "ember/core/scalar.h"
#include "ember/ops/nn_activation.h"
#include "ember/ops/ops.h"
#include "ember/ops/reduce.h"
#include "ember/ops/view.h"

namespace ember {

Tensor Tensor::slice(int64_t dim, int64_t start, int64_t end, int64_t step) const {
  return ::ember::slice(*this, dim, start, end, step);
}
Tensor Tensor::select(int64_t dim, int64_t index) const {
  return ::ember::select(*this, dim, index);
}
Tensor Tensor::narrow(int64_t dim, int64_t start, int64_t length) const {
  return ::ember::narrow(*this, dim, start, length);
}
Tensor Tensor::view(const Shape& shape) const { return ::ember::view(*this, shape); }
Tensor Tensor::reshape(const Shape& shape) const { return ::ember::reshape(*this, shape); }
Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const {
  return ::ember::flatten(*this, start_dim, end_dim);
}
Tensor Tensor::contiguous() const { return ::ember::contiguous(*this); }
Tensor Tensor::clone() const { return ::ember::clone(*this); }
Tensor Tensor::detach() const { return autograd::detach(*this); }
Tensor Tensor::to(Device device) const { return to_device(*this, device); }
Tensor Tensor::to(DType dtype) const { return to_dtype(*this, dtype); }
Tensor Tensor::sum() const { return ::ember::sum(*this); }
Tensor Tensor::mean() const { return ::ember::mean(*this); }
Tensor Tensor::argmax(int64_t dim, bool keepdim) const {
  return ::ember::argmax(*this, dim, keepdim);
}
Tensor Tensor::softmax(int64_t dim) const { return ::ember::softmax(*this, dim); }

Scalar Tensor::item() const {
  EMBER_CHECK(defined(), "item(): the tensor is undefined");
  EMBER_CHECK(numel() == 1, "a Tensor with ", numel(),
              " elements cannot be converted to Scalar (item() needs exactly one element; shape ",
              shape_str(sizes()), ")");
  Tensor c = device().is_cpu() ? *this : to_device(*this, Device());
  return dispatch_all(c.dtype(), "item", [&](auto tag) -> Scalar {
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

bool Tensor::requires_grad() const { return autograd::requires_grad(*this); }

Tensor Tensor::grad() const {
  autograd::AutogradMetaImpl* m = autograd::meta(*this);
  return m ? m->grad : Tensor();
}

void Tensor::backward() const {
  EMBER_CHECK(requires_grad(),
              "element 0 of tensors does not require grad and does not have a grad_fn");
  EMBER_CHECK(numel() == 1, "grad can be implicitly created only for scalar outputs");
  autograd::BackwardOptions opts;
  autograd::run_backward({*this}, {full(Shape{}, Scalar(1.0), dtype(), device())}, opts);
}

}  // namespace ember
