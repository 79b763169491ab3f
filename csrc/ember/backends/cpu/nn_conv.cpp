// CPU kernels of the convolution family: im2col, its adjoint col2im, and the
// block transposes between the GEMM's [C, N*L] layout and NCL images. The GEMMs
// themselves run in the front-end (ops/nn_conv.cpp) through the BLAS, outside
// any parallel region (Note [BLAS loading]); these loops use the thread pool.
#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "ember/core/parallel.h"
#include "ember/kernels/functors.h"
#include "ember/kernels/stubs/nn_conv.h"

namespace ember::cpu {
namespace {

// The output positions o in [0, n) whose tap o * s - p + off lies in [0, size).
inline void valid_range(int64_t n, int64_t s, int64_t p, int64_t off, int64_t size, int64_t& lo,
                        int64_t& hi) {
  // o * s >= p - off  and  o * s < size + p - off
  const int64_t a = p - off, b = size + p - off;
  lo = a <= 0 ? 0 : (a + s - 1) / s;
  hi = b <= 0 ? 0 : (b + s - 1) / s;
  lo = std::min(lo, n);
  hi = std::min(std::max(hi, lo), n);
}

// im2col on raw element bits (a pure copy; zero is all-zero bits for every dtype).
template <typename U>
void im2col_impl(const Tensor& cols, const Tensor& input, const ConvGeom& g) {
  const int64_t kprod = g.k_numel(), L = g.out_numel(), plane = g.in_numel();
  const int64_t nb = input.sizes()[0], C = g.channels;
  const int64_t ld = nb * L;
  const U* src = reinterpret_cast<const U*>(input.data_ptr());
  U* dst0 = reinterpret_cast<U*>(cols.data_ptr());
  const int64_t work = std::max<int64_t>(1, kprod * L);
  parallel_for(0, nb * C, std::max<int64_t>(1, kGrainSize / work), [&](int64_t b, int64_t e) {
    for (int64_t nc = b; nc < e; ++nc) {
      const int64_t n = nc / C, c = nc % C;
      const U* img = src + nc * plane;
      for (int64_t kd = 0; kd < g.k[0]; ++kd)
        for (int64_t kh = 0; kh < g.k[1]; ++kh)
          for (int64_t kw = 0; kw < g.k[2]; ++kw) {
            const int64_t row = c * kprod + (kd * g.k[1] + kh) * g.k[2] + kw;
            U* dst = dst0 + row * ld + n * L;
            const int64_t offd = kd * g.dil[0], offh = kh * g.dil[1], offw = kw * g.dil[2];
            int64_t wlo, whi;
            valid_range(g.out[2], g.stride[2], g.pad[2], offw, g.in[2], wlo, whi);
            for (int64_t od = 0; od < g.out[0]; ++od) {
              const int64_t id = od * g.stride[0] - g.pad[0] + offd;
              for (int64_t oh = 0; oh < g.out[1]; ++oh, dst += g.out[2]) {
                const int64_t ih = oh * g.stride[1] - g.pad[1] + offh;
                if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1] || wlo >= whi) {
                  for (int64_t ow = 0; ow < g.out[2]; ++ow) dst[ow] = U(0);
                  continue;
                }
                const U* row_in = img + (id * g.in[1] + ih) * g.in[2] - g.pad[2] + offw;
                for (int64_t ow = 0; ow < wlo; ++ow) dst[ow] = U(0);
                // plain loops, not memcpy: rows are often a few dozen elements
                if (g.stride[2] == 1) {
                  for (int64_t ow = wlo; ow < whi; ++ow) dst[ow] = row_in[ow];
                } else {
                  const int64_t s = g.stride[2];
                  for (int64_t ow = wlo; ow < whi; ++ow) dst[ow] = row_in[ow * s];
                }
                for (int64_t ow = whi; ow < g.out[2]; ++ow) dst[ow] = U(0);
              }
            }
          }
    }
  });
}

void im2col_kernel(const Tensor& cols, const Tensor& input, const ConvGeom& g) {
  switch (input.element_size()) {
    case 2:
      return im2col_impl<uint16_t>(cols, input, g);
    case 4:
      return im2col_impl<uint32_t>(cols, input, g);
    case 8:
      return im2col_impl<uint64_t>(cols, input, g);
    default:
      EMBER_ERROR("im2col: unsupported element size");
  }
}

template <typename T>
void col2im_impl(const Tensor& image, const Tensor& cols, const ConvGeom& g) {
  using A = opmath_t<T>;
  const int64_t kprod = g.k_numel(), L = g.out_numel(), plane = g.in_numel();
  const int64_t nb = image.sizes()[0], C = g.channels;
  const int64_t ld = nb * L;
  const T* src0 = cols.data<T>();
  T* dst0 = image.data<T>();
  const int64_t work = std::max<int64_t>(1, kprod * L);
  parallel_for(0, nb * C, std::max<int64_t>(1, kGrainSize / work), [&](int64_t b, int64_t e) {
    std::vector<A> acc(static_cast<size_t>(plane));
    for (int64_t nc = b; nc < e; ++nc) {
      const int64_t n = nc / C, c = nc % C;
      std::fill(acc.begin(), acc.end(), A(0));
      for (int64_t kd = 0; kd < g.k[0]; ++kd)
        for (int64_t kh = 0; kh < g.k[1]; ++kh)
          for (int64_t kw = 0; kw < g.k[2]; ++kw) {
            const int64_t row = c * kprod + (kd * g.k[1] + kh) * g.k[2] + kw;
            const T* src = src0 + row * ld + n * L;
            const int64_t offd = kd * g.dil[0], offh = kh * g.dil[1], offw = kw * g.dil[2];
            int64_t wlo, whi;
            valid_range(g.out[2], g.stride[2], g.pad[2], offw, g.in[2], wlo, whi);
            const int64_t s = g.stride[2];
            for (int64_t od = 0; od < g.out[0]; ++od) {
              const int64_t id = od * g.stride[0] - g.pad[0] + offd;
              for (int64_t oh = 0; oh < g.out[1]; ++oh, src += g.out[2]) {
                const int64_t ih = oh * g.stride[1] - g.pad[1] + offh;
                if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1]) continue;
                A* row_out = acc.data() + (id * g.in[1] + ih) * g.in[2] - g.pad[2] + offw;
                if (s == 1)
                  for (int64_t ow = wlo; ow < whi; ++ow) row_out[ow] += A(src[ow]);
                else
                  for (int64_t ow = wlo; ow < whi; ++ow) row_out[ow * s] += A(src[ow]);
              }
            }
          }
      T* dst = dst0 + nc * plane;
      for (int64_t i = 0; i < plane; ++i) dst[i] = T(acc[size_t(i)]);
    }
  });
}

void col2im_kernel(const Tensor& image, const Tensor& cols, const ConvGeom& g) {
  dispatch_numeric(image.dtype(), "col2im", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same<T, bool>::value) col2im_impl<T>(image, cols, g);
  });
}

template <typename T>
void layout_impl(const Tensor& dst, const Tensor& src, const Tensor& bias, int64_t nb, int64_t c,
                 int64_t l, bool to_cnl) {
  const T* s = src.data<T>();
  T* d = dst.data<T>();
  const T* bp = bias.defined() ? bias.data<T>() : nullptr;
  const int64_t bs = bias.defined() ? bias.strides()[0] : 0;
  parallel_for(0, nb * c, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(l, 1)),
               [&](int64_t b, int64_t e) {
                 for (int64_t nci = b; nci < e; ++nci) {
                   const int64_t n = nci / c, ci = nci % c;
                   const T* from = to_cnl ? s + nci * l : s + (ci * nb + n) * l;
                   T* to = to_cnl ? d + (ci * nb + n) * l : d + nci * l;
                   if (bp) {
                     const opmath_t<T> bv = bp[ci * bs];
                     for (int64_t i = 0; i < l; ++i) to[i] = T(opmath_t<T>(from[i]) + bv);
                   } else {
                     std::memcpy(to, from, sizeof(T) * size_t(l));
                   }
                 }
               });
}

void conv_layout_kernel(const Tensor& dst, const Tensor& src, const Tensor& bias, int64_t nb,
                        int64_t c, int64_t l, bool to_cnl) {
  dispatch_numeric(dst.dtype(), "convolution", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same<T, bool>::value) layout_impl<T>(dst, src, bias, nb, c, l, to_cnl);
  });
}

struct Registrar {
  Registrar() {
    im2col_stub.fns[int(DeviceType::CPU)] = im2col_kernel;
    col2im_stub.fns[int(DeviceType::CPU)] = col2im_kernel;
    conv_layout_stub.fns[int(DeviceType::CPU)] = conv_layout_kernel;
  }
} registrar;

}  // namespace
}  // namespace ember::cpu
