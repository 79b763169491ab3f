// CPU kernels of the convolution family: im2col, its adjoint col2im, and the
// block transposes between the GEMM's [C, N*L] layout and NCL images. The GEMMs
// themselves run in the front-end (ops/nn_conv.cpp) through the BLAS, outside
// any parallel region (Note [BLAS loading]); these loops use the thread pool.
#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "ember/backends/cpu/blas.h"
#include "ember/backends/cpu/capability.h"
#include "ember/backends/cpu/conv_direct.h"
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
  // ceil(x / s) as (x - 1) / s + 1: x + s - 1 overflows for a stride near INT64_MAX
  lo = a <= 0 ? 0 : (a - 1) / s + 1;
  hi = b <= 0 ? 0 : (b - 1) / s + 1;
  lo = std::min(lo, n);
  hi = std::min(std::max(hi, lo), n);
}

// The k_numel rows of channel c of one image's patches: dst row (c * kprod + kidx)
// at dst + row * ld (L columns each); out-of-image taps are 0.
// im2col_channel for 2-d (and 1-d) geometry: whole out-of-image rows are cleared in
// one fill, and the row copies carry no per-row bounds tests (rows of a dozen
// elements: the per-row overhead, not the bytes, is what costs).
// (no-tree-loop-distribute-patterns: GCC would turn the short row copies into memmove calls)
template <typename U>
__attribute__((optimize("no-tree-loop-distribute-patterns"))) void im2col_channel_2d(
    U* __restrict__ dst0, int64_t ld, const U* __restrict__ img, int64_t c, const ConvGeom& g) {
  const int64_t kprod = g.k_numel(), OH = g.out[1], OW = g.out[2], IW = g.in[2];
  const int64_t sh = g.stride[1], sw = g.stride[2];
  for (int64_t kh = 0; kh < g.k[1]; ++kh) {
    int64_t hlo, hhi;
    valid_range(OH, sh, g.pad[1], kh * g.dil[1], g.in[1], hlo, hhi);
    for (int64_t kw = 0; kw < g.k[2]; ++kw) {
      U* __restrict__ dst = dst0 + (c * kprod + kh * g.k[2] + kw) * ld;
      int64_t wlo, whi;
      valid_range(OW, sw, g.pad[2], kw * g.dil[2], IW, wlo, whi);
      if (wlo >= whi || hlo >= hhi) {
        std::fill(dst, dst + OH * OW, U(0));
        continue;
      }
      std::fill(dst, dst + hlo * OW, U(0));
      for (int64_t oh = hlo; oh < hhi; ++oh) {
        U* __restrict__ d = dst + oh * OW;
        const U* __restrict__ r =
            img + (oh * sh - g.pad[1] + kh * g.dil[1]) * IW - g.pad[2] + kw * g.dil[2];
        for (int64_t ow = 0; ow < wlo; ++ow) d[ow] = U(0);
        if (sw == 1)
          for (int64_t ow = wlo; ow < whi; ++ow) d[ow] = r[ow];
        else
          for (int64_t ow = wlo; ow < whi; ++ow) d[ow] = r[ow * sw];
        for (int64_t ow = whi; ow < OW; ++ow) d[ow] = U(0);
      }
      std::fill(dst + hhi * OW, dst + OH * OW, U(0));
    }
  }
}

template <typename U>
void im2col_channel(U* dst0, int64_t ld, const U* img, int64_t c, const ConvGeom& g) {
  if (g.k[0] == 1 && g.out[0] == 1 && g.in[0] == 1 && g.pad[0] == 0)
    return im2col_channel_2d(dst0, ld, img, c, g);
  const int64_t kprod = g.k_numel();
  for (int64_t kd = 0; kd < g.k[0]; ++kd)
    for (int64_t kh = 0; kh < g.k[1]; ++kh)
      for (int64_t kw = 0; kw < g.k[2]; ++kw) {
        const int64_t row = c * kprod + (kd * g.k[1] + kh) * g.k[2] + kw;
        U* dst = dst0 + row * ld;
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
      im2col_channel(dst0 + n * L, ld, src + nc * plane, c, g);
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

// acc[plane] += the columns of channel c (rows c * kprod + kidx of src0, ld apart),
// scattered back to the taps they came from.
template <typename T, typename A>
void col2im_channel(A* acc, const T* src0, int64_t ld, int64_t c, const ConvGeom& g) {
  const int64_t kprod = g.k_numel();
  for (int64_t kd = 0; kd < g.k[0]; ++kd)
    for (int64_t kh = 0; kh < g.k[1]; ++kh)
      for (int64_t kw = 0; kw < g.k[2]; ++kw) {
        const int64_t row = c * kprod + (kd * g.k[1] + kh) * g.k[2] + kw;
        const T* src = src0 + row * ld;
        const int64_t offd = kd * g.dil[0], offh = kh * g.dil[1], offw = kw * g.dil[2];
        int64_t wlo, whi;
        valid_range(g.out[2], g.stride[2], g.pad[2], offw, g.in[2], wlo, whi);
        const int64_t s = g.stride[2];
        for (int64_t od = 0; od < g.out[0]; ++od) {
          const int64_t id = od * g.stride[0] - g.pad[0] + offd;
          for (int64_t oh = 0; oh < g.out[1]; ++oh, src += g.out[2]) {
            const int64_t ih = oh * g.stride[1] - g.pad[1] + offh;
            if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1]) continue;
            A* row_out = acc + (id * g.in[1] + ih) * g.in[2] - g.pad[2] + offw;
            if (s == 1)
              for (int64_t ow = wlo; ow < whi; ++ow) row_out[ow] += A(src[ow]);
            else
              for (int64_t ow = wlo; ow < whi; ++ow) row_out[ow * s] += A(src[ow]);
          }
        }
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
      col2im_channel(acc.data(), src0 + n * L, ld, c, g);
      T* dst = dst0 + nc * plane;
      for (int64_t i = 0; i < plane; ++i) dst[i] = T(acc[size_t(i)]);
    }
  });
}

// ---- Note [Convolution per image] ---------------------------------------------------------

constexpr int64_t kImageColsBudget = int64_t(4) << 20;  // bytes of one image's columns

bool images_apply(const Tensor& x, int64_t Co, int64_t groups, const ConvGeom& g) {
  if (x.dtype() != DType::Float32 && x.dtype() != DType::Float64) return false;
  if (!blas::enabled()) return false;
  const int64_t Kg = g.channels / groups * g.k_numel(), L = g.out_numel();
  const int64_t lim = blas::kMaxDim;
  const int64_t kall = g.channels * g.k_numel();
  // one image's columns per thread: past a few MiB the batch-chunk path is no worse
  return Co <= lim && Kg <= lim && L <= lim && kall <= lim && Kg > 0 && L > 0 && Co > 0 &&
         x.sizes()[0] > 0 && kall <= kImageColsBudget / int64_t(x.element_size()) / L;
}

template <typename T>
void fwd_images(const Tensor& y, const Tensor& x, const Tensor& w, const Tensor& bias,
                int64_t groups, const ConvGeom& g) {
  const int64_t N = x.sizes()[0], C = g.channels, Co = w.sizes()[0], L = g.out_numel();
  const int64_t plane = g.in_numel(), Kg = C / groups * g.k_numel(), Cog = Co / groups;
  const T* xp = x.data<T>();
  const T* wp = w.data<T>();
  T* yp = y.data<T>();
  const T* bp = bias.defined() ? bias.data<T>() : nullptr;
  const int64_t bs = bias.defined() ? bias.strides()[0] : 0;
  blas::SerialScope serial;
  parallel_for(0, N, 1, [&](int64_t n0, int64_t n1) {
    std::vector<T> cols(static_cast<size_t>(C * g.k_numel() * L));
    for (int64_t n = n0; n < n1; ++n) {
      for (int64_t c = 0; c < C; ++c)
        im2col_channel(cols.data(), L, xp + (n * C + c) * plane, c, g);
      T* yn = yp + n * Co * L;
      if (bp)
        for (int64_t co = 0; co < Co; ++co) std::fill(yn + co * L, yn + (co + 1) * L, bp[co * bs]);
      for (int64_t gi = 0; gi < groups; ++gi)
        blas::gemm_serial(false, false, Cog, L, Kg, T(1), wp + gi * Cog * Kg, Kg,
                          cols.data() + gi * Kg * L, L, bp ? T(1) : T(0), yn + gi * Cog * L, L);
    }
  });
}

bool conv_fwd_images_kernel(const Tensor& y, const Tensor& x, const Tensor& w, const Tensor& bias,
                            int64_t groups, const ConvGeom& g) {
  // small stride-1 float32 convolutions: Note [Direct convolution]
  if (conv_direct_forward(y, x, w, bias, groups, g)) return true;
  if (!images_apply(x, w.sizes()[0], groups, g)) return false;
  if (x.dtype() == DType::Float32)
    fwd_images<float>(y, x, w, bias, groups, g);
  else
    fwd_images<double>(y, x, w, bias, groups, g);
  return true;
}

constexpr int64_t kSlabs = 16;  // fixed batch slabs of the weight gradient's partial sums

template <typename T>
void bwd_images(const Tensor& gx, const Tensor& gw, const Tensor& x, const Tensor& w,
                const Tensor& gy, int64_t groups, const ConvGeom& g) {
  const int64_t N = x.sizes()[0], C = g.channels, Co = gy.sizes()[1], L = g.out_numel();
  const int64_t plane = g.in_numel(), Kg = C / groups * g.k_numel(), Cog = Co / groups;
  const int64_t Kall = C * g.k_numel();
  const T* xp = x.data<T>();
  const T* wp = w.data<T>();
  const T* gyp = gy.data<T>();
  // (gx and gw decide which of x and w are read)
  T* gxp = gx.defined() ? gx.data<T>() : nullptr;
  T* gwp = gw.defined() ? gw.data<T>() : nullptr;
  if (!gwp) xp = nullptr;  // x and w may be stand-ins when their gradient partner is not wanted
  if (!gxp) wp = nullptr;
  const int64_t nslab = std::min(N, kSlabs);
  // partial weight gradients, one per slab of images (slab 0 accumulates into gw itself)
  std::vector<T> part(gwp ? static_cast<size_t>((nslab - 1) * Co * Kg) : 0);
  {
    blas::SerialScope serial;
    parallel_for(0, nslab, 1, [&](int64_t s0, int64_t s1) {
      std::vector<T> cols(static_cast<size_t>(Kall * L));
      std::vector<opmath_t<T>> acc(gxp ? static_cast<size_t>(plane) : 0);
      for (int64_t sl = s0; sl < s1; ++sl) {
        T* gws = gwp ? (sl == 0 ? gwp : part.data() + (sl - 1) * Co * Kg) : nullptr;
        const int64_t nb0 = N * sl / nslab, nb1 = N * (sl + 1) / nslab;
        for (int64_t n = nb0; n < nb1; ++n) {
          const T* gyn = gyp + n * Co * L;
          if (gws) {
            for (int64_t c = 0; c < C; ++c)
              im2col_channel(cols.data(), L, xp + (n * C + c) * plane, c, g);
            for (int64_t gi = 0; gi < groups; ++gi)
              blas::gemm_serial(false, true, Cog, Kg, L, T(1), gyn + gi * Cog * L, L,
                                cols.data() + gi * Kg * L, L, n == nb0 ? T(0) : T(1),
                                gws + gi * Cog * Kg, Kg);
          }
          if (gxp) {
            for (int64_t gi = 0; gi < groups; ++gi)
              blas::gemm_serial(true, false, Kg, L, Cog, T(1), wp + gi * Cog * Kg, Kg,
                                gyn + gi * Cog * L, L, T(0), cols.data() + gi * Kg * L, L);
            for (int64_t c = 0; c < C; ++c) {
              std::fill(acc.begin(), acc.end(), opmath_t<T>(0));
              col2im_channel(acc.data(), cols.data(), L, c, g);
              T* dst = gxp + (n * C + c) * plane;
              for (int64_t i = 0; i < plane; ++i) dst[i] = T(acc[size_t(i)]);
            }
          }
        }
      }
    });
  }
  if (gwp) {
    const int64_t total = Co * Kg;
    parallel_for(0, total, kGrainSize, [&](int64_t b, int64_t e) {
      for (int64_t sl = 1; sl < nslab; ++sl) {
        const T* src = part.data() + (sl - 1) * total;
        for (int64_t i = b; i < e; ++i) gwp[i] += src[i];
      }
    });
  }
}

bool conv_bwd_images_kernel(const Tensor& gx, const Tensor& gw, const Tensor& x, const Tensor& w,
                            const Tensor& gy, int64_t groups, const ConvGeom& g) {
  if (conv_direct_backward(gx, gw, x, w, gy, groups, g)) return true;
  if (!images_apply(x, gy.sizes()[1], groups, g)) return false;
  if (x.dtype() == DType::Float32)
    bwd_images<float>(gx, gw, x, w, gy, groups, g);
  else
    bwd_images<double>(gx, gw, x, w, gy, groups, g);
  return true;
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

EMBER_REGISTER_CPU_KERNELS(nn_conv) {
  im2col_stub.fns[int(DeviceType::CPU)] = im2col_kernel;
  col2im_stub.fns[int(DeviceType::CPU)] = col2im_kernel;
  conv_layout_stub.fns[int(DeviceType::CPU)] = conv_layout_kernel;
  conv_fwd_images_stub.fns[int(DeviceType::CPU)] = conv_fwd_images_kernel;
  conv_bwd_images_stub.fns[int(DeviceType::CPU)] = conv_bwd_images_kernel;
}

}  // namespace
}  // namespace ember::cpu
