// CPU inner loops over a TensorIterator. Each loop tests for the contiguous
// and the stride-0 (scalar) cases first so the compiler vectorizes them.
#pragma once
#include "ember/kernels/functors.h"
#include "ember/kernels/tensor_iterator.h"

namespace ember::cpu {

/// out[i] = f(a[i]) computed in opmath_t<In>.
template <typename Out, typename In, typename F>
void unary_loop(const TensorIterator& it, F f) {
  using M = opmath_t<In>;
  it.for_each([f](char** d, const int64_t* s, int64_t n) {
    if (s[0] == sizeof(Out) && s[1] == sizeof(In)) {
      Out* __restrict o = reinterpret_cast<Out*>(d[0]);
      const In* __restrict a = reinterpret_cast<const In*>(d[1]);
      for (int64_t i = 0; i < n; ++i) o[i] = Out(f(M(a[i])));
    } else {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<Out*>(d[0] + i * s[0]) = Out(f(M(*reinterpret_cast<const In*>(d[1] + i * s[1]))));
    }
  });
}

/// out[i] = f(a[i], b[i]) computed in opmath_t<In>.
template <typename Out, typename In, typename F>
void binary_loop(const TensorIterator& it, F f) {
  using M = opmath_t<In>;
  it.for_each([f](char** d, const int64_t* s, int64_t n) {
    Out* __restrict o = reinterpret_cast<Out*>(d[0]);
    const In* __restrict a = reinterpret_cast<const In*>(d[1]);
    const In* __restrict b = reinterpret_cast<const In*>(d[2]);
    if (s[0] == sizeof(Out) && s[1] == sizeof(In) && s[2] == sizeof(In)) {
      for (int64_t i = 0; i < n; ++i) o[i] = Out(f(M(a[i]), M(b[i])));
    } else if (s[0] == sizeof(Out) && s[1] == sizeof(In) && s[2] == 0) {
      const M bv = M(*b);
      for (int64_t i = 0; i < n; ++i) o[i] = Out(f(M(a[i]), bv));
    } else if (s[0] == sizeof(Out) && s[1] == 0 && s[2] == sizeof(In)) {
      const M av = M(*a);
      for (int64_t i = 0; i < n; ++i) o[i] = Out(f(av, M(b[i])));
    } else {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<Out*>(d[0] + i * s[0]) =
            Out(f(M(*reinterpret_cast<const In*>(d[1] + i * s[1])),
                  M(*reinterpret_cast<const In*>(d[2] + i * s[2]))));
    }
  });
}

}  // namespace ember::cpu
