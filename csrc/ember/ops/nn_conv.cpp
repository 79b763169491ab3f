// Convolution front-ends (ops/nn_conv.h): argument checks with messages that say
// which dim is wrong and what the kernel needs, then im2col + one GEMM per group
// over a whole batch chunk (Note [Convolution layout]).
#include "ember/ops/nn_conv.h"
#include "ember/jit/trace_hook.h"

#include <algorithm>

#include "ember/autograd/derivatives/nn_conv.h"
#include "ember/autograd/record.h"
#include "ember/ops/autocast.h"
#include "ember/ops/linalg.h"
#include "ember/ops/ops.h"
#include "ember/ops/reduce.h"
#include "ember/ops/view.h"

namespace ember {

DispatchStub<Im2colKernel> im2col_stub("im2col");
DispatchStub<Col2imKernel> col2im_stub("col2im");
DispatchStub<ConvLayoutKernel> conv_layout_stub("convolution");
DispatchStub<ConvFwdImagesKernel> conv_fwd_images_stub("convolution");
DispatchStub<ConvBwdImagesKernel> conv_bwd_images_stub("convolution_backward");
DispatchStub<ConvFwdImagesKernel> conv_engine_fwd_stub("convolution");
DispatchStub<ConvBwdImagesKernel> conv_engine_bwd_stub("convolution_backward");

// Note [Convolution layout]
// A batch chunk of nb images becomes one column matrix cols [C*k, nb*L] (L output
// positions per image), so each group is a single GEMM with nb*L columns: the
// GEMM is large even when one image's is tiny (1->16 channels on 28x28), and the
// BLAS runs from this thread with its own threads, never inside a parallel region
// (Note [BLAS loading]). im2col, col2im and the [C, nb*L] <-> [nb, C, L] block
// transposes run on the thread pool. Chunks keep cols under kColsBudget bytes.
namespace {

constexpr int64_t kColsBudget = int64_t(2) << 20;

// A contiguous 2-d view [rows, cols] of a contiguous buffer at a row offset.
Tensor rows_view(const Tensor& buf, int64_t row0, int64_t nrows, int64_t ncols) {
  return make_view(buf, Shape{nrows, ncols}, Shape{ncols, 1},
                   buf.storage_offset() + checked_mul(row0, ncols, "convolution"));
}

// A contiguous batch slice [n0, n0 + nb) of a contiguous tensor.
Tensor batch_view(const Tensor& t, int64_t n0, int64_t nb) {
  Shape sizes = t.sizes();
  const int64_t per = t.sizes()[0] ? t.numel() / t.sizes()[0] : 0;
  sizes[0] = nb;
  return make_view(t, sizes, contiguous_strides(sizes), t.storage_offset() + n0 * per);
}

// c = beta * c + a @ b through the registry's GEMM (BLAS for float32/64).
void gemm(const Tensor& c, const Tensor& a, const Tensor& b, double beta) {
  gemm_stub.get(c.device())(c, a, b, Scalar(beta), Scalar(1.0));
}

// A 1x1 kernel with unit stride and no padding: an image's columns are the image
// itself ([C, L] = [C, in]), so one-image chunks need no im2col/col2im at all.
bool identity_cols(const ConvSpec& s) {
  for (int i = 0; i < 3; ++i)
    if (s.g.k[i] != 1 || s.g.stride[i] != 1 || s.g.pad[i] != 0 || s.g.in[i] != s.g.out[i])
      return false;
  return true;
}

// Note [Convolution of small images]: on the CPU, an image of fewer than kSmallImage output
// positions makes a per-image GEMM too thin for the BLAS ([512, 4608] x [4608, 49] for ResNet's
// last stage), so such convolutions take the batch-chunk path with a larger column budget: one GEMM
// over several images' columns.
constexpr int64_t kSmallImage = 256;
// (Convolutions with at most 256 taps per output keep the per-image path: on AVX2 CPUs the
// direct kernels of Note [Direct convolution] take them there.)
bool small_images(const ConvSpec& s) {
  return s.g.out_numel() < kSmallImage && s.g.channels * s.g.k_numel() > 256;
}

int64_t chunk_size(const ConvSpec& s, int64_t n, int64_t elem) {
  if (identity_cols(s)) return 1;
  const int64_t per = checked_mul(checked_mul(s.g.channels, s.g.k_numel(), "convolution"),
                                  checked_mul(s.g.out_numel(), elem, "convolution"), "convolution");
  const int64_t budget = small_images(s) ? 4 * kColsBudget : kColsBudget;  // CUDA too: harmless
  return std::max<int64_t>(1, std::min<int64_t>(n, budget / std::max<int64_t>(per, 1)));
}

Shape with_spatial(int64_t n, int64_t c, const int64_t* sp, int64_t nsp) {
  Shape r{n, c};
  for (int64_t i = 3 - nsp; i < 3; ++i) r.push_back(sp[i]);
  return r;
}

Tensor bias_view(const Tensor& bias, int64_t nsp) {
  Shape s{1, bias.numel()};
  for (int64_t i = 0; i < nsp; ++i) s.push_back(1);
  return view(bias, s);
}

Tensor cols_for(const Tensor& xc, int64_t n0, int64_t nb, const ConvSpec& s) {
  if (nb == 1 && identity_cols(s))
    return rows_view(batch_view(xc, n0, 1), 0, s.g.channels, s.g.out_numel());
  Tensor cols =
      empty(Shape{s.g.channels * s.g.k_numel(), nb * s.g.out_numel()}, xc.dtype(), xc.device());
  im2col_stub.get(xc.device())(cols, batch_view(xc, n0, nb), s.g);
  return cols;
}

// gy chunk as [cout, nb * L] (a view when nb == 1).
Tensor gy_cnl(const Tensor& gyc, int64_t n0, int64_t nb, const ConvSpec& s) {
  const int64_t L = s.g.out_numel();
  if (nb == 1) return rows_view(batch_view(gyc, n0, 1), 0, s.cout, L);
  Tensor r = empty(Shape{s.cout, nb * L}, gyc.dtype(), gyc.device());
  conv_layout_stub.get(gyc.device())(r, batch_view(gyc, n0, nb), Tensor(), nb, s.cout, L, true);
  return r;
}

// Note [Convolution per image]: the device has the per-image kernels and the
// columns are not the image itself (1x1 kernels stay on the copy-free chunk path).
bool per_image(const Tensor& t, const ConvSpec& s) {
  if (t.device().type == DeviceType::CPU && small_images(s)) return false;
  return !identity_cols(s) && conv_fwd_images_stub.fns[int(t.device().type)] &&
         conv_bwd_images_stub.fns[int(t.device().type)];
}

// Note [oneDNN convolution]: the device's optional engine, tried first (contiguous operands).
bool engine_fwd(const Tensor& y, const Tensor& x, const Tensor& w, const Tensor& bias,
                const ConvSpec& s) {
  auto fn = conv_engine_fwd_stub.fns[int(x.device().type)];
  return fn && fn(y, x, w, bias, s.groups, s.g);
}

bool engine_bwd(const Tensor& gx, const Tensor& gw, const Tensor& x, const Tensor& w,
                const Tensor& gy, const ConvSpec& s) {
  auto fn = conv_engine_bwd_stub.fns[int(gy.device().type)];
  return fn && fn(gx, gw, x, w, gy, s.groups, s.g);
}

}  // namespace

bool conv_engine_available(DeviceType type) {
  return conv_engine_fwd_stub.fns[int(type)] != nullptr;
}

// ---- the three primitives, without autograd ------------------------------------------------

namespace detail {

Tensor conv_forward_raw(const Tensor& x, const Tensor& w, const Tensor& bias, const ConvSpec& s) {
  const int64_t N = x.sizes()[0], G = s.groups, Co = s.cout, L = s.g.out_numel();
  const int64_t Kg = s.g.channels / G * s.g.k_numel(), Cog = Co / G;
  Tensor y = empty(with_spatial(N, Co, s.g.out, s.nsp), x.dtype(), x.device());
  if (y.numel() == 0) return y;
  if (Kg == 0) {
    fill_(y, Scalar(0.0));
    if (bias.defined()) binary_(BinaryOp::add, y, bias_view(bias, s.nsp));
    return y;
  }
  const Tensor xc = contiguous(x), wc = contiguous(w);
  if (engine_fwd(y, xc, wc, bias, s)) return y;
  if (per_image(x, s) && conv_fwd_images_stub.get(x.device())(y, xc, wc, bias, G, s.g)) return y;
  const int64_t chunk = chunk_size(s, N, x.element_size());
  for (int64_t n0 = 0; n0 < N; n0 += chunk) {
    const int64_t nb = std::min(chunk, N - n0);
    Tensor cols = cols_for(xc, n0, nb, s);
    // One image: [Co, L] is already its NCL layout, so the GEMM writes y directly
    // (onto the broadcast bias, beta = 1). Several: a [Co, nb*L] result, then one move.
    const bool direct = nb == 1;
    Tensor res = direct ? rows_view(batch_view(y, n0, 1), 0, Co, L)
                        : empty(Shape{Co, nb * L}, x.dtype(), x.device());
    if (direct && bias.defined()) copy_(res, expand(view(bias, Shape{Co, 1}), Shape{Co, L}));
    const double beta = direct && bias.defined() ? 1.0 : 0.0;
    for (int64_t gi = 0; gi < G; ++gi)
      gemm(rows_view(res, gi * Cog, Cog, nb * L), rows_view(wc, gi * Cog, Cog, Kg),
           rows_view(cols, gi * Kg, Kg, nb * L), beta);
    if (!direct)
      conv_layout_stub.get(x.device())(batch_view(y, n0, nb), res, bias, nb, Co, L, false);
  }
  return y;
}

Tensor conv_backward_input_raw(const Tensor& gy, const Tensor& w, const Tensor& bias,
                               const ConvSpec& s) {
  const int64_t N = gy.sizes()[0], G = s.groups, Co = s.cout, L = s.g.out_numel();
  const int64_t C = s.g.channels, Kg = C / G * s.g.k_numel(), Cog = Co / G;
  Tensor gx = empty(with_spatial(N, C, s.g.in, s.nsp), gy.dtype(), gy.device());
  if (gx.numel() == 0) return gx;
  if (Cog == 0 || L == 0) {
    fill_(gx, Scalar(0.0));
  } else if (engine_bwd(gx, Tensor(), gy, contiguous(w), contiguous(gy), s)) {
    // (x is not read without a weight gradient: gy stands in for it)
  } else if (per_image(gy, s) && conv_bwd_images_stub.get(gy.device())(
                                     gx, Tensor(), gy, contiguous(w), contiguous(gy), G, s.g)) {
    // (x is not read without a weight gradient: gy stands in for it)
  } else {
    const Tensor gyc = contiguous(gy), wc = contiguous(w);
    const int64_t chunk = chunk_size(s, N, gy.element_size());
    for (int64_t n0 = 0; n0 < N; n0 += chunk) {
      const int64_t nb = std::min(chunk, N - n0);
      Tensor g2 = gy_cnl(gyc, n0, nb, s);
      const bool direct = nb == 1 && identity_cols(s);  // gx's image is its columns
      Tensor gcols = direct ? rows_view(batch_view(gx, n0, 1), 0, C, L)
                            : empty(Shape{C * s.g.k_numel(), nb * L}, gy.dtype(), gy.device());
      for (int64_t gi = 0; gi < G; ++gi)
        gemm(rows_view(gcols, gi * Kg, Kg, nb * L), t(rows_view(wc, gi * Cog, Cog, Kg)),
             make_view(g2, Shape{Cog, nb * L}, g2.strides(),
                       g2.storage_offset() + gi * Cog * g2.strides()[0]),
             0.0);
      if (!direct) col2im_stub.get(gy.device())(batch_view(gx, n0, nb), gcols, s.g);
    }
  }
  if (bias.defined()) binary_(BinaryOp::add, gx, bias_view(bias, s.nsp));
  return gx;
}

Tensor conv_backward_weight_raw(const Tensor& x, const Tensor& gy, const ConvSpec& s) {
  const int64_t N = x.sizes()[0], G = s.groups, Co = s.cout, L = s.g.out_numel();
  const int64_t Kg = s.g.channels / G * s.g.k_numel(), Cog = Co / G;
  Tensor gw = zeros(Shape{Co, Kg}, x.dtype(), x.device());
  if (gw.numel() > 0 && N * L > 0 &&
      engine_bwd(Tensor(), gw, contiguous(x), gy, contiguous(gy), s)) {
    // (w is not read without an input gradient: gy stands in for it)
  } else if (gw.numel() > 0 && N * L > 0 && per_image(x, s) &&
             conv_bwd_images_stub.get(x.device())(Tensor(), gw, contiguous(x), gy, contiguous(gy),
                                                  G, s.g)) {
    // (w is not read without an input gradient: gy stands in for it)
  } else if (gw.numel() > 0 && N * L > 0) {
    const Tensor xc = contiguous(x), gyc = contiguous(gy);
    const int64_t chunk = chunk_size(s, N, x.element_size());
    for (int64_t n0 = 0; n0 < N; n0 += chunk) {
      const int64_t nb = std::min(chunk, N - n0);
      Tensor cols = cols_for(xc, n0, nb, s);
      Tensor g2 = gy_cnl(gyc, n0, nb, s);
      for (int64_t gi = 0; gi < G; ++gi)
        gemm(rows_view(gw, gi * Cog, Cog, Kg),
             make_view(g2, Shape{Cog, nb * L}, g2.strides(),
                       g2.storage_offset() + gi * Cog * g2.strides()[0]),
             t(rows_view(cols, gi * Kg, Kg, nb * L)), 1.0);
    }
  }
  return view(gw, s.weight_sizes);
}

std::pair<Tensor, Tensor> conv_backward_both_raw(const Tensor& x, const Tensor& w, const Tensor& gy,
                                                 const ConvSpec& s) {
  // The input and weight gradients of one convolution in one pass over the batch:
  // each chunk's grad_output is moved to [Co, nb*L] once and read by both GEMMs.
  const int64_t N = x.sizes()[0], G = s.groups, Co = s.cout, L = s.g.out_numel();
  const int64_t C = s.g.channels, Kg = C / G * s.g.k_numel(), Cog = Co / G;
  if (Cog == 0 || Kg == 0 || N * L == 0)
    return {conv_backward_input_raw(gy, w, Tensor(), s), conv_backward_weight_raw(x, gy, s)};
  Tensor gx = empty(with_spatial(N, C, s.g.in, s.nsp), x.dtype(), x.device());
  Tensor gw = zeros(Shape{Co, Kg}, x.dtype(), x.device());
  const Tensor xc = contiguous(x), wc = contiguous(w), gyc = contiguous(gy);
  if (engine_bwd(gx, gw, xc, wc, gyc, s)) return {gx, view(gw, s.weight_sizes)};
  // the engine may take the input gradient alone (oneDNN: Note [oneDNN convolution])
  if (engine_bwd(gx, Tensor(), xc, wc, gyc, s)) return {gx, conv_backward_weight_raw(xc, gyc, s)};
  if (per_image(x, s) && conv_bwd_images_stub.get(x.device())(gx, gw, xc, wc, gyc, G, s.g))
    return {gx, view(gw, s.weight_sizes)};
  const int64_t chunk = chunk_size(s, N, x.element_size());
  for (int64_t n0 = 0; n0 < N; n0 += chunk) {
    const int64_t nb = std::min(chunk, N - n0);
    Tensor g2 = gy_cnl(gyc, n0, nb, s);
    auto g2_rows = [&](int64_t gi) {
      return make_view(g2, Shape{Cog, nb * L}, g2.strides(),
                       g2.storage_offset() + gi * Cog * g2.strides()[0]);
    };
    Tensor cols = cols_for(xc, n0, nb, s);
    for (int64_t gi = 0; gi < G; ++gi)
      gemm(rows_view(gw, gi * Cog, Cog, Kg), g2_rows(gi), t(rows_view(cols, gi * Kg, Kg, nb * L)),
           1.0);
    // Identity columns (1x1 kernels) come one image at a time and are views of x: the
    // input gradient then goes straight into gx. Otherwise cols is a fresh buffer that
    // the weight GEMM has finished with, reused for the input gradient's columns.
    const bool direct = identity_cols(s);
    Tensor gcols = direct ? rows_view(batch_view(gx, n0, 1), 0, C, L) : cols;
    for (int64_t gi = 0; gi < G; ++gi)
      gemm(rows_view(gcols, gi * Kg, Kg, nb * L), t(rows_view(wc, gi * Cog, Cog, Kg)), g2_rows(gi),
           0.0);
    if (!direct) col2im_stub.get(x.device())(batch_view(gx, n0, nb), gcols, s.g);
  }
  return {gx, view(gw, s.weight_sizes)};
}

}  // namespace detail

// ---- differentiable primitives ----------------------------------------------------------------

Tensor conv_forward(const Tensor& x, const Tensor& w, const Tensor& bias, const ConvSpec& s) {
  autograd::RecordScope scope({&x, &w, &bias});
  Tensor y = detail::conv_forward_raw(x, w, bias, s);
  if (scope.rec) {
    scope.done();
    autograd::record_conv_forward(x, w, bias, s, y);
  }
  return y;
}

Tensor conv_backward_input(const Tensor& gy, const Tensor& w, const Tensor& bias, const ConvSpec& s,
                           const char* node_name) {
  autograd::RecordScope scope({&gy, &w, &bias});
  Tensor gx = detail::conv_backward_input_raw(gy, w, bias, s);
  if (scope.rec) {
    scope.done();
    autograd::record_conv_backward_input(gy, w, bias, s, gx, node_name);
  }
  return gx;
}

Tensor conv_backward_weight(const Tensor& x, const Tensor& gy, const ConvSpec& s) {
  autograd::RecordScope scope({&x, &gy});
  Tensor gw = detail::conv_backward_weight_raw(x, gy, s);
  if (scope.rec) {
    scope.done();
    autograd::record_conv_backward_weight(x, gy, s, gw);
  }
  return gw;
}

// ---- the public front-end ----------------------------------------------------------------------

namespace {

const char* dim_name(int64_t nsp, int64_t i) {
  static const char* names3[] = {"depth", "height", "width"};
  if (nsp == 1) return "length";
  return names3[3 - nsp + i];
}

std::string kernel_str(const Shape& k) {
  std::string r;
  for (size_t i = 0; i < k.size(); ++i) r += (i ? "x" : "") + std::to_string(k[i]);
  return r;
}

void check_param(const Shape& v, int64_t nsp, const std::string& op, const char* what) {
  EMBER_CHECK(int64_t(v.size()) == nsp, op, ": expected ", what, " to be a single integer or a ",
              "tuple of ", nsp, " integers, got ", nsp == 1 ? "" : "", v.size(), " values");
}

}  // namespace

Tensor convolution(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias_opt,
                   const Shape& stride, const Shape& pad_lo, const Shape& pad_hi,
                   const Shape& dilation, bool transposed, const Shape& output_padding,
                   int64_t groups, const std::string& op) {
  EMBER_TRACE(
      "aten::convolution(Tensor input, Tensor weight, Tensor? bias, int[] stride, int[] pad_lo, "
      "int[] pad_hi, int[] dilation, bool transposed, int[] output_padding, int groups, str op) -> "
      "Tensor",
      convolution, input, weight, bias_opt, stride, pad_lo, pad_hi, dilation, transposed,
      output_padding, groups, op);
  if (autocast::active()) {  // Note [Autocast policy]
    auto c_ = autocast::autocast_inputs("convolution", {input, weight, autocast::opt(bias_opt)});
    autocast::ExcludeGuard g_;
    return convolution(c_[0], c_[1], autocast::to_opt(c_[2]), stride, pad_lo, pad_hi, dilation,
                       transposed, output_padding, groups, op);
  }
  const int64_t wd = weight.dim();
  EMBER_CHECK(wd >= 3 && wd <= 5, op,
              ": expected weight to be 3-, 4- or 5-dimensional, got weight of shape ",
              shape_str(weight.sizes()));
  const int64_t nsp = wd - 2;
  EMBER_CHECK(input.dim() == nsp + 1 || input.dim() == nsp + 2, "Expected ", nsp + 1,
              "D (unbatched) or ", nsp + 2, "D (batched) input to ", op,
              ", but got input of size: ", shape_str(input.sizes()));
  EMBER_CHECK(input.dtype() != DType::Bool, '"', op, "\" not implemented for '",
              dtype_name(input.dtype()), "'");
  EMBER_CHECK(input.dtype() == weight.dtype(), op, ": input type (", dtype_name(input.dtype()),
              ") and weight type (", dtype_name(weight.dtype()), ") should be the same");
  EMBER_CHECK(input.device() == weight.device(), op,
              ": input and weight must be on the same device");
  Tensor bias = bias_opt ? *bias_opt : Tensor();
  if (bias.defined())
    EMBER_CHECK(bias.dtype() == input.dtype(), op, ": input type (", dtype_name(input.dtype()),
                ") and bias type (", dtype_name(bias.dtype()), ") should be the same");
  check_param(stride, nsp, op, "stride");
  check_param(pad_lo, nsp, op, "padding");
  check_param(pad_hi, nsp, op, "padding");
  check_param(dilation, nsp, op, "dilation");
  if (transposed) check_param(output_padding, nsp, op, "output_padding");
  EMBER_CHECK(groups > 0, op, ": non-positive groups is not supported (groups=", groups, ")");
  for (int64_t i = 0; i < nsp; ++i) {
    EMBER_CHECK(stride[i] > 0, op,
                ": non-positive stride is not supported (stride=", shape_str(stride), ")");
    EMBER_CHECK(pad_lo[i] >= 0 && pad_hi[i] >= 0, op,
                ": negative padding is not supported (padding=", shape_str(pad_lo), ")");
    EMBER_CHECK(dilation[i] > 0, op,
                ": dilation should be greater than zero (dilation=", shape_str(dilation), ")");
    if (transposed)
      EMBER_CHECK(output_padding[i] >= 0 &&
                      (output_padding[i] < stride[i] || output_padding[i] < dilation[i]),
                  op, ": output padding must be smaller than either stride or dilation, got ",
                  "output_padding=", shape_str(output_padding), ", stride=", shape_str(stride),
                  ", dilation=", shape_str(dilation));
  }
  const bool batched = input.dim() == nsp + 2;
  Tensor x = batched ? input : unsqueeze(input, 0);
  const int64_t C = x.sizes()[1], w0 = weight.sizes()[0], w1 = weight.sizes()[1];
  EMBER_CHECK(w0 % groups == 0 || transposed, op, ": given groups=", groups,
              ", expected weight to be divisible by ", groups,
              " at dimension 0, but got weight of size ", shape_str(weight.sizes()), " instead");
  const int64_t expect_c = transposed ? w0 : w1 * groups;
  EMBER_CHECK(C == expect_c, op, ": expected input with ", expect_c, " channels (weight of size ",
              shape_str(weight.sizes()), ", groups=", groups, "), got ", C,
              " channels (input shape ", shape_str(input.sizes()), ")");
  if (transposed)
    EMBER_CHECK(w0 % groups == 0, op, ": given groups=", groups, ", expected weight to be ",
                "divisible by ", groups, " at dimension 0, but got weight of size ",
                shape_str(weight.sizes()), " instead");
  const int64_t cout = transposed ? w1 * groups : w0;
  if (bias.defined())
    EMBER_CHECK(bias.dim() == 1 && bias.numel() == cout, op, ": given weight of size ",
                shape_str(weight.sizes()), ", expected bias to be 1-dimensional with ", cout,
                " elements, but got bias of size ", shape_str(bias.sizes()), " instead");

  ConvSpec s;
  s.groups = groups;
  s.nsp = nsp;
  s.weight_sizes = weight.sizes();
  Shape ksz;
  for (int64_t i = 0; i < nsp; ++i) ksz.push_back(weight.sizes()[2 + i]);
  // A zero-size kernel has no taps: PyTorch refuses it (an empty weight used to give a
  // larger-than-input tensor of zeros).
  for (int64_t i = 0; i < nsp; ++i)
    EMBER_CHECK(ksz[i] > 0, op,
                ": kernel size should be greater than zero, but got weight of size ",
                shape_str(weight.sizes()));
  for (int64_t i = 0; i < nsp; ++i) {
    const int64_t j = 3 - nsp + i;
    const int64_t k = weight.sizes()[2 + i], in = x.sizes()[2 + i];
    const int64_t dk = checked_add(checked_mul(dilation[i], k - 1, op.c_str()), 1, op.c_str());
    s.g.k[j] = k;
    s.g.stride[j] = stride[i];
    s.g.pad[j] = pad_lo[i];
    s.g.dil[j] = dilation[i];
    if (!transposed) {
      const int64_t padded =
          checked_add(in, checked_add(pad_lo[i], pad_hi[i], op.c_str()), op.c_str());
      EMBER_CHECK(padded >= dk, op, ": input of shape ", shape_str(input.sizes()),
                  " is smaller than the (dilated) kernel ", kernel_str(ksz), " along ",
                  dim_name(nsp, i), " (padded size ", padded, ", dilated kernel size ", dk, ")");
      s.g.in[j] = in;
      s.g.out[j] = (padded - dk) / stride[i] + 1;
    } else {
      // checked: a huge padding (2**63 - 1) is an error, not an overflow (tests/test_fuzz.py)
      int64_t extra;
      EMBER_CHECK(!__builtin_sub_overflow(checked_add(dk, output_padding[i], op.c_str()),
                                          checked_add(pad_lo[i], pad_hi[i], op.c_str()), &extra),
                  op, ": integer overflow computing the output size along ", dim_name(nsp, i));
      const int64_t o = checked_add(checked_mul(in - 1, stride[i], op.c_str()), extra, op.c_str());
      EMBER_CHECK(o > 0 || in == 0, op, ": input of shape ", shape_str(input.sizes()),
                  " gives an output of size ", o, " along ", dim_name(nsp, i),
                  " (output size is too small: reduce padding)");
      s.g.in[j] = std::max<int64_t>(o, 0);
      s.g.out[j] = in;
    }
  }
  // checked: a huge padding gives spatial sizes whose product overflows (2**31 per dim: found
  // by tests/test_fuzz_hostile.py under UBSan); the kernels take out_numel()/in_numel()
  for (const int64_t* v : {s.g.out, s.g.in})
    (void)checked_mul(checked_mul(v[0], v[1], op.c_str()), v[2], op.c_str());
  Tensor y;
  if (!transposed) {
    s.g.channels = C;
    s.cout = cout;
    y = conv_forward(x, weight, bias, s);
  } else {
    s.g.channels = cout;
    s.cout = C;
    y = conv_backward_input(x, weight, bias, s, "ConvolutionBackward0");
  }
  return batched ? y : squeeze(y, Shape{0});
}

// ---- unfold / fold ---------------------------------------------------------------------------

namespace {

void check_pair(const Shape& v, const char* op, const char* what, bool positive) {
  EMBER_CHECK(v.size() == 2, op, ": expected ", what, " to be a pair of integers, got ",
              shape_str(v));
  for (int64_t e : v)
    EMBER_CHECK(positive ? e > 0 : e >= 0, op, ": expected ", what, " to be ",
                positive ? "greater than zero" : "non-negative", ", got ", shape_str(v));
}

// The im2col geometry of a 2-d image of size hw, or an error naming the op.
ConvGeom fold_geom(const char* op, int64_t channels, const Shape& hw, const Shape& kernel,
                   const Shape& dilation, const Shape& padding, const Shape& stride) {
  check_pair(kernel, op, "kernel_size", true);
  check_pair(dilation, op, "dilation", true);
  check_pair(padding, op, "padding", false);
  check_pair(stride, op, "stride", true);
  ConvGeom g;
  g.channels = channels;
  int64_t blocks[2];
  for (int i = 0; i < 2; ++i) {
    // checked: huge sizes (2**62) are errors, not overflows (found by tests/test_fuzz.py)
    const int64_t dk = checked_add(checked_mul(dilation[i], kernel[i] - 1, op), 1, op);
    const int64_t padded = checked_add(hw[i], checked_mul(2, padding[i], op), op);
    blocks[i] = padded >= dk ? (padded - dk) / stride[i] + 1 : 0;
    g.in[1 + i] = hw[i];
    g.k[1 + i] = kernel[i];
    g.dil[1 + i] = dilation[i];
    g.pad[1 + i] = padding[i];
    g.stride[1 + i] = stride[i];
    g.out[1 + i] = blocks[i];
  }
  EMBER_CHECK(blocks[0] > 0 && blocks[1] > 0, op, ": given input with spatial size (", hw[0], ", ",
              hw[1], "), kernel_size=(", kernel[0], ", ", kernel[1], "), dilation=(", dilation[0],
              ", ", dilation[1], "), padding=(", padding[0], ", ", padding[1],
              "), the calculated shape of the array of sliding blocks is (", blocks[0], ", ",
              blocks[1], "), but its components must be at least one");
  (void)checked_mul(blocks[0], blocks[1], op);  // g.out_numel() and g.k_numel() cannot overflow
  (void)checked_mul(kernel[0], kernel[1], op);
  return g;
}

}  // namespace

Tensor im2col(const Tensor& input, const Shape& kernel, const Shape& dilation, const Shape& padding,
              const Shape& stride) {
  EMBER_TRACE(
      "aten::im2col(Tensor self, int[] kernel_size, int[] dilation, int[] padding, int[] stride) "
      "-> Tensor",
      im2col, input, kernel, dilation, padding, stride);
  EMBER_CHECK(input.dim() == 3 || input.dim() == 4, "unfold: expected a 3-D (unbatched) or 4-D ",
              "(batched) input, but got input of shape ", shape_str(input.sizes()));
  EMBER_CHECK(is_floating(input.dtype()), "\"unfold\" not implemented for '",
              dtype_name(input.dtype()), "'");
  const bool batched = input.dim() == 4;
  Tensor x = batched ? input : unsqueeze(input, 0);
  const int64_t N = x.sizes()[0], C = x.sizes()[1];
  const Shape hw{x.sizes()[2], x.sizes()[3]};
  ConvGeom g = fold_geom("unfold", C, hw, kernel, dilation, padding, stride);
  const int64_t K = checked_mul(C, g.k_numel(), "unfold"), L = g.out_numel();
  autograd::RecordScope scope({&x});
  Tensor out;
  {
    Tensor cols = empty(Shape{K, checked_mul(N, L, "unfold")}, x.dtype(), x.device());
    if (cols.numel()) im2col_stub.get(x.device())(cols, contiguous(x), g);
    out = contiguous(permute(view(cols, Shape{K, N, L}), Shape{1, 0, 2}));
  }
  if (scope.rec) {
    scope.done();
    autograd::record_im2col(x, out, hw, kernel, dilation, padding, stride);
  }
  return batched ? out : squeeze(out, Shape{0});
}

Tensor col2im(const Tensor& input, const Shape& output_size, const Shape& kernel,
              const Shape& dilation, const Shape& padding, const Shape& stride) {
  EMBER_TRACE(
      "aten::col2im(Tensor self, int[] output_size, int[] kernel_size, int[] dilation, int[] "
      "padding, int[] stride) -> Tensor",
      col2im, input, output_size, kernel, dilation, padding, stride);
  EMBER_CHECK(input.dim() == 2 || input.dim() == 3, "fold: expected a 2-D (unbatched) or 3-D ",
              "(batched) input, but got input of shape ", shape_str(input.sizes()));
  EMBER_CHECK(is_floating(input.dtype()), "\"fold\" not implemented for '",
              dtype_name(input.dtype()), "'");
  check_pair(output_size, "fold", "output_size", true);
  check_pair(kernel, "fold", "kernel_size", true);
  const bool batched = input.dim() == 3;
  Tensor x = batched ? input : unsqueeze(input, 0);
  const int64_t N = x.sizes()[0], K = x.sizes()[1], L = x.sizes()[2];
  const int64_t kprod = checked_mul(kernel[0], kernel[1], "fold");
  EMBER_CHECK(K % kprod == 0, "fold: expected size of input's dimension 1 to be divisible by ",
              "the product of kernel_size, but got input.size(1)=", K, " and kernel_size=(",
              kernel[0], ", ", kernel[1], ")");
  ConvGeom g = fold_geom("fold", K / kprod, output_size, kernel, dilation, padding, stride);
  EMBER_CHECK(L == g.out_numel(), "fold: given output_size=(", output_size[0], ", ", output_size[1],
              "), kernel_size=(", kernel[0], ", ", kernel[1],
              "), expected size of input's dimension 2 to match the calculated number of ",
              "sliding blocks ", g.out[1], " * ", g.out[2], " = ", g.out_numel(),
              ", but got input.size(2)=", L);
  autograd::RecordScope scope({&x});
  Tensor out = empty(Shape{N, K / kprod, output_size[0], output_size[1]}, x.dtype(), x.device());
  if (out.numel()) {
    Tensor cols = contiguous(permute(x, Shape{1, 0, 2}));
    col2im_stub.get(x.device())(out, cols, g);
  }
  if (scope.rec) {
    scope.done();
    autograd::record_col2im(x, out, kernel, dilation, padding, stride);
  }
  return batched ? out : squeeze(out, Shape{0});
}

}  // namespace ember
