// Pooling front-ends (ops/nn_pool.h): argument checks, the window tables of
// Note [Pooling windows], kernels through their stubs, and autograd recording.
// Gradients: max pooling scatters into the argmax positions (its own gradient is a
// gather, so double backward works); average pooling is linear and its adjoint
// kernel is again linear, each one the other's derivative.
#include "ember/ops/nn_pool.h"
#include "ember/jit/trace_hook.h"

#include <algorithm>
#include <cmath>

#include "ember/autograd/record.h"
#include "ember/ops/index.h"
#include "ember/ops/ops.h"
#include "ember/ops/reduce.h"
#include "ember/ops/view.h"

namespace ember {

DispatchStub<MaxPoolKernel> max_pool_stub("max_pool2d");
DispatchStub<MaxPoolBackwardKernel> max_pool_backward_stub("max_pool2d_backward");
DispatchStub<AvgPoolKernel> avg_pool_stub("avg_pool2d");

namespace {

const char* dim_name(int64_t nsp, int64_t i) {
  if (nsp == 1) return "length";
  return i == 0 ? "height" : "width";
}

std::string kstr(const Shape& k) {
  std::string r;
  for (size_t i = 0; i < k.size(); ++i) r += (i ? "x" : "") + std::to_string(k[i]);
  return r;
}

int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil) {
  // checked: huge kernel/dilation/padding (2**62) are errors, not overflows (tests/test_fuzz.py)
  const char* op = "pool output size";
  const int64_t span = checked_add(checked_mul(d, k - 1, op), 1, op);
  const int64_t num =
      checked_add(checked_add(in, checked_mul(2, p, op), op), (ceil ? s - 1 : 0) - span, op);
  int64_t out = floor_div(num, s) + 1;
  if (ceil && out > 0 && (out - 1) * s >= in + p) --out;
  return out;
}

// Checks the input's rank and dtype; returns the input with a batch dim.
void check_input(const Tensor& x, int64_t nsp, const std::string& op, bool floating = true) {
  EMBER_CHECK(x.dim() == nsp + 1 || x.dim() == nsp + 2, op, ": expected a ", nsp + 1,
              "-D (unbatched) or ", nsp + 2, "-D (batched) input, but got input of shape ",
              shape_str(x.sizes()));
  for (int64_t d = x.dim() - nsp; d < x.dim(); ++d)
    EMBER_CHECK(x.sizes()[d] > 0, op, ": expected input with non-zero spatial sizes, but got ",
                "input of shape ", shape_str(x.sizes()));
  if (floating)
    EMBER_CHECK(is_floating(x.dtype()), '"', op, "\" not implemented for '", dtype_name(x.dtype()),
                "'");
}

void check_len(const Shape& v, int64_t nsp, const std::string& op, const char* what) {
  EMBER_CHECK(int64_t(v.size()) == nsp, op, ": ", what, " must be a single int or a tuple of ", nsp,
              " ints, got ", shape_str(v));
}

PoolDim unit_dim() {
  PoolDim d;
  d.ptr = {0, 1};
  d.idx = {0};
  d.scale = {1.0};
  return d;
}

// The spatial sizes of x as (h, w), h = 1 for 1-d.
void spatial(const Tensor& x, int64_t nsp, int64_t& h, int64_t& w) {
  h = nsp == 2 ? x.sizes()[x.dim() - 2] : 1;
  w = x.sizes()[x.dim() - 1];
}

Shape out_shape(const Tensor& x, int64_t nsp, const PoolGeom& g) {
  Shape s(x.sizes().begin(), x.sizes().end() - nsp);
  if (nsp == 2) s.push_back(g.h.out());
  s.push_back(g.w.out());
  return s;
}

// Window tables of a (dilated, padded) sliding pool along one dim.
PoolDim sliding_dim(int64_t in, int64_t out, int64_t k, int64_t s, int64_t p, int64_t d, bool avg,
                    bool count_include_pad) {
  PoolDim r;
  r.in = in;
  r.ptr.push_back(0);
  for (int64_t o = 0; o < out; ++o) {
    const int64_t start = o * s - p;
    if (avg) {
      const int64_t end = k > in + p - start ? in + p : start + k;  // no overflow for a huge k
      const int64_t cs = std::max<int64_t>(start, 0), ce = std::min(end, in);
      for (int64_t t = cs; t < ce; ++t) r.idx.push_back(t);
      const int64_t div = count_include_pad ? end - start : ce - cs;
      r.scale.push_back(div > 0 ? 1.0 / double(div) : 0.0);
    } else {
      // only the taps inside the input: a huge padded kernel (2**62) is not looped over
      const int64_t t0 = start >= 0 ? 0 : (-start - 1) / d + 1;
      const int64_t t1 = std::min(k, in - start <= 0 ? 0 : (in - start - 1) / d + 1);
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t pos = start + t * d;
        if (pos >= 0 && pos < in) r.idx.push_back(pos);
      }
      r.scale.push_back(1.0);
    }
    r.ptr.push_back(int64_t(r.idx.size()));
  }
  return r;
}

PoolDim adaptive_dim(int64_t in, int64_t out) {
  // The geometry holds ~3 int64 per output position: a huge output_size (2**32) fails here as
  // the allocation would (RuntimeError), before looping over it (found by tests/test_fuzz.py).
  (void)empty(Shape{checked_mul(checked_add(out, 1, "adaptive pool"), 3, "adaptive pool")},
              DType::Int64, Device(DeviceType::CPU));
  PoolDim r;
  r.in = in;
  r.ptr.push_back(0);
  for (int64_t o = 0; o < out; ++o) {
    const int64_t start = (o * in) / out, end = ((o + 1) * in + out - 1) / out;
    for (int64_t t = start; t < end; ++t) r.idx.push_back(t);
    r.scale.push_back(1.0 / double(end - start));
    r.ptr.push_back(int64_t(r.idx.size()));
  }
  return r;
}

// Sliding-window geometry with the checks torch makes, in clearer words.
std::shared_ptr<PoolGeom> sliding_geom(const Tensor& x, int64_t nsp, const Shape& kernel,
                                       const Shape& stride_in, const Shape& padding,
                                       const Shape& dilation, bool ceil_mode, bool avg,
                                       bool count_include_pad, const std::string& op) {
  check_len(kernel, nsp, op, "kernel_size");
  const Shape stride = stride_in.empty() ? kernel : stride_in;
  check_len(stride, nsp, op, "stride");
  check_len(padding, nsp, op, "padding");
  check_len(dilation, nsp, op, "dilation");
  auto g = std::make_shared<PoolGeom>();
  g->h = unit_dim();
  int64_t in[2];
  spatial(x, nsp, in[0], in[1]);
  for (int64_t i = 0; i < nsp; ++i) {
    const int64_t k = kernel[i], s = stride[i], p = padding[i], d = dilation[i];
    EMBER_CHECK(k > 0, op, ": kernel_size must be greater than zero, but got ", shape_str(kernel));
    EMBER_CHECK(s > 0, op, ": stride must be greater than zero, but got ", shape_str(stride));
    EMBER_CHECK(d > 0, op, ": dilation must be greater than zero, but got ", shape_str(dilation));
    EMBER_CHECK(p >= 0, op, ": pad must be non-negative, but got pad: ", p);
    EMBER_CHECK(p <= k / 2, op, ": pad should be at most half of the kernel size, ",
                "but got padding=", shape_str(padding), " for kernel_size=", shape_str(kernel));
    const int64_t len = in[nsp == 2 ? i : 1];
    const int64_t out = pool_out(len, k, s, p, d, ceil_mode);
    EMBER_CHECK(out > 0, op, ": input of shape ", shape_str(x.sizes()),
                " is smaller than the (dilated) kernel ", kstr(kernel), " along ", dim_name(nsp, i),
                " (padded size ", len + 2 * p, ", dilated kernel size ", d * (k - 1) + 1, ")");
    PoolDim pd = sliding_dim(len, out, k, s, p, d, avg, count_include_pad);
    (nsp == 2 && i == 0 ? g->h : g->w) = std::move(pd);
  }
  return g;
}

std::shared_ptr<PoolGeom> adaptive_geom(const Tensor& x, int64_t nsp, const Shape& output_size,
                                        const std::string& op) {
  check_len(output_size, nsp, op, "output_size");
  auto g = std::make_shared<PoolGeom>();
  g->h = unit_dim();
  int64_t in[2];
  spatial(x, nsp, in[0], in[1]);
  for (int64_t i = 0; i < nsp; ++i) {
    EMBER_CHECK(output_size[i] >= 0, op, ": output_size must be non-negative, got ",
                shape_str(output_size));
    (nsp == 2 && i == 0 ? g->h : g->w) = adaptive_dim(in[nsp == 2 ? i : 1], output_size[i]);
  }
  return g;
}

std::pair<Tensor, Tensor> max_pool_impl(const Tensor& x, int64_t nsp,
                                        const std::shared_ptr<PoolGeom>& g, const char* node) {
  autograd::RecordScope scope({&x});
  const Shape os = out_shape(x, nsp, *g);
  Tensor out = empty(os, x.dtype(), x.device());
  Tensor idx = empty(os, DType::Int64, x.device());
  if (out.numel()) max_pool_stub.get(x.device())(out, idx, contiguous(x), *g);
  if (scope.rec) {
    scope.done();
    const Shape in_sizes = x.sizes();
    auto n =
        autograd::record(node, {&x}, out,
                         [in_sizes, nsp](autograd::LambdaNode& n,
                                         autograd::variable_list&& gr) -> autograd::variable_list {
                           return {max_pool_backward(gr[0], n.unpack(0), in_sizes, nsp)};
                         });
    n->saved.emplace_back(idx, false);
  }
  return {out, idx};
}

}  // namespace

Tensor max_pool_backward(const Tensor& grad, const Tensor& indices, const Shape& input_sizes,
                         int64_t nsp) {
  autograd::RecordScope scope({&grad});
  Tensor gi = empty(input_sizes, grad.dtype(), grad.device());
  // [planes, plane] views: the leading (batch, channel) dims against the nsp spatial ones.
  const int64_t nd = int64_t(input_sizes.size());
  int64_t planes = 1, pin = 1, pout = 1;
  for (int64_t d = 0; d < nd - nsp; ++d) planes *= input_sizes[d];
  for (int64_t d = nd - nsp; d < nd; ++d) {
    pin *= input_sizes[d];
    pout *= grad.sizes()[d];
  }
  if (gi.numel()) {
    if (pout == 0) {
      fill_(gi, Scalar(0.0));
    } else {
      max_pool_backward_stub.get(grad.device())(view(gi, Shape{planes, pin}),
                                                reshape(contiguous(grad), Shape{planes, pout}),
                                                reshape(contiguous(indices), Shape{planes, pout}));
    }
  }
  if (scope.rec) {
    scope.done();
    auto n = autograd::record(
        "MaxPool2DWithIndicesBackwardBackward0", {&grad}, gi,
        [planes, pin, pout](autograd::LambdaNode& n,
                            autograd::variable_list&& gr) -> autograd::variable_list {
          Tensor idx = n.unpack(0);
          Tensor gg = reshape(gr[0], Shape{planes, pin});
          return {view(gather(gg, 1, reshape(idx, Shape{planes, pout})), idx.sizes())};
        });
    n->saved.emplace_back(indices, false);
  }
  return gi;
}

Tensor avg_pool_apply(const Tensor& in, const std::shared_ptr<const PoolGeom>& g,
                      const Shape& out_sizes, bool backward) {
  autograd::RecordScope scope({&in});
  Tensor out = empty(out_sizes, in.dtype(), in.device());
  if (out.numel()) {
    if (in.numel() == 0)
      fill_(out, Scalar(0.0));
    else
      avg_pool_stub.get(in.device())(out, contiguous(in), *g, backward);
  }
  if (scope.rec) {
    scope.done();
    const Shape in_sizes = in.sizes();
    autograd::record(
        backward ? "AvgPool2DBackwardBackward0" : "AvgPool2DBackward0", {&in}, out,
        [g, in_sizes, backward](autograd::LambdaNode&, autograd::variable_list&& gr)
            -> autograd::variable_list { return {avg_pool_apply(gr[0], g, in_sizes, !backward)}; });
  }
  return out;
}

std::pair<Tensor, Tensor> max_pool(const Tensor& x, int64_t nsp, const Shape& kernel,
                                   const Shape& stride, const Shape& padding, const Shape& dilation,
                                   bool ceil_mode, const std::string& op) {
  EMBER_TRACE(
      "aten::max_pool(Tensor self, int nsp, int[] kernel, int[] stride, int[] padding, int[] "
      "dilation, bool ceil_mode, str op) -> (Tensor, Tensor)",
      max_pool, x, nsp, kernel, stride, padding, dilation, ceil_mode, op);
  check_input(x, nsp, op);
  auto g = sliding_geom(x, nsp, kernel, stride, padding, dilation, ceil_mode, false, false, op);
  return max_pool_impl(x, nsp, g, "MaxPool2DWithIndicesBackward0");
}

Tensor avg_pool(const Tensor& x, int64_t nsp, const Shape& kernel, const Shape& stride,
                const Shape& padding, bool ceil_mode, bool count_include_pad,
                std::optional<int64_t> divisor_override, const std::string& op) {
  EMBER_TRACE(
      "aten::avg_pool(Tensor self, int nsp, int[] kernel, int[] stride, int[] padding, bool "
      "ceil_mode, bool count_include_pad, int? divisor_override, str op) -> Tensor",
      avg_pool, x, nsp, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override,
      op);
  check_input(x, nsp, op);
  Shape dil;
  for (int64_t i = 0; i < nsp; ++i) dil.push_back(1);
  auto g =
      sliding_geom(x, nsp, kernel, stride, padding, dil, ceil_mode, true, count_include_pad, op);
  if (divisor_override) {
    EMBER_CHECK(*divisor_override != 0, op, ": divisor_override must be non-zero");
    for (auto& s : g->h.scale) s = 1.0;
    for (auto& s : g->w.scale) s = 1.0;
    g->scale = 1.0 / double(*divisor_override);
  }
  return avg_pool_apply(x, g, out_shape(x, nsp, *g), false);
}

Tensor adaptive_avg_pool(const Tensor& x, int64_t nsp, const Shape& output_size,
                         const std::string& op) {
  EMBER_TRACE("aten::adaptive_avg_pool(Tensor self, int nsp, int[] output_size, str op) -> Tensor",
              adaptive_avg_pool, x, nsp, output_size, op);
  check_input(x, nsp, op);
  auto g = adaptive_geom(x, nsp, output_size, op);
  // Every output size 1 (global average pooling, ResNet's head) is a mean over the pooled
  // dims, as in PyTorch (whose grad_fn is then MeanBackward1 too): the reduction engine's
  // vectorized rows instead of one window per plane (0.71 -> 0.03 ms for 8x512x7x7).
  if (is_floating(x.dtype()) &&
      std::all_of(output_size.begin(), output_size.end(), [](int64_t v) { return v == 1; })) {
    Shape dims;
    for (int64_t i = 1; i <= nsp; ++i) dims.push_back(-i);
    return mean(x, dims, true);
  }
  return avg_pool_apply(x, g, out_shape(x, nsp, *g), false);
}

std::pair<Tensor, Tensor> adaptive_max_pool(const Tensor& x, int64_t nsp, const Shape& output_size,
                                            const std::string& op) {
  EMBER_TRACE(
      "aten::adaptive_max_pool(Tensor self, int nsp, int[] output_size, str op) -> (Tensor, "
      "Tensor)",
      adaptive_max_pool, x, nsp, output_size, op);
  check_input(x, nsp, op);
  auto g = adaptive_geom(x, nsp, output_size, op);
  return max_pool_impl(x, nsp, g, "AdaptiveMaxPool2DBackward0");
}

Tensor max_unpool(const Tensor& x, const Tensor& indices, int64_t nsp, const Shape& output_size,
                  const std::string& op) {
  EMBER_TRACE(
      "aten::max_unpool(Tensor self, Tensor indices, int nsp, int[] output_size, str op) -> Tensor",
      max_unpool, x, indices, nsp, output_size, op);
  check_input(x, nsp, op);
  EMBER_CHECK(indices.dtype() == DType::Int64, op, ": expected indices to have dtype int64, got ",
              dtype_name(indices.dtype()));
  EMBER_CHECK(indices.sizes() == x.sizes(), op, ": expected indices of the input's shape ",
              shape_str(x.sizes()), ", got ", shape_str(indices.sizes()));
  check_len(output_size, nsp, op, "output_size");
  Shape lead(x.sizes().begin(), x.sizes().end() - nsp);
  int64_t planes = 1, pin = 1, pout = 1;
  for (int64_t v : lead) planes *= v;
  for (int64_t i = 0; i < nsp; ++i) {
    pin *= x.sizes()[x.dim() - nsp + i];
    pout = checked_mul(pout, output_size[i], op.c_str());
  }
  if (indices.numel()) {
    auto host = [](const Tensor& t) { return *to_device(t, Device()).data<int64_t>(); };
    const int64_t lo = host(amin(indices)), hi = host(amax(indices));
    EMBER_CHECK(lo >= 0 && hi < pout, op, ": found an invalid max index ", lo < 0 ? lo : hi,
                " (output planes have ", pout, " elements, output_size=", shape_str(output_size),
                ")");
  }
  Shape os = lead;
  for (int64_t v : output_size) os.push_back(v);
  Tensor base = zeros(Shape{planes, pout}, x.dtype(), x.device());
  Tensor r = scatter(base, 1, reshape(indices, Shape{planes, pin}), reshape(x, Shape{planes, pin}));
  return view(r, os);
}

}  // namespace ember
