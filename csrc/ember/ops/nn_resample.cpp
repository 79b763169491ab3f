// Resampling front-ends (ops/nn_resample.h). Each is a composite of
// differentiable ember ops: padding and nearest/linear/cubic interpolation are
// separable, one index_select (and a weighted sum) per spatial dim with index and
// weight tables computed here as torch computes them; grid_sample gathers the
// four (or one) neighbours with weights that carry the gradient to the grid.
#include "ember/ops/nn_resample.h"
#include "ember/autograd/derivatives/formula.h"
#include "ember/jit/trace_hook.h"

#include <cmath>

#include "ember/autograd/grad_mode.h"
#include "ember/ops/factory.h"
#include "ember/ops/index.h"
#include "ember/ops/join.h"
#include "ember/ops/linalg.h"
#include "ember/ops/nn_pool.h"
#include "ember/ops/ops.h"
#include "ember/ops/view.h"

namespace ember {
namespace {

using B = BinaryOp;
using U = UnaryOp;

using namespace autograd::formula;  // S, plus, minus, mul, div, bin, un
Tensor num(double v) { return wrap_scalar(Scalar(v)); }

// A 1-d tensor of `v` in dtype `dt` on `dev`.
Tensor table(const std::vector<double>& v, DType dt, Device dev) {
  Tensor t = empty(Shape{int64_t(v.size())}, DType::Float64, Device());
  std::copy(v.begin(), v.end(), t.data<double>());
  return to_device(to_dtype(t, dt), dev);
}

// `w` (1-d) viewed to broadcast along dim d of an ndim-d tensor.
Tensor along(const Tensor& w, int64_t d, int64_t ndim) {
  Shape s;
  for (int64_t i = 0; i < ndim; ++i) s.push_back(i == d ? w.numel() : 1);
  return view(w, s);
}

std::string shape_of(const Tensor& t) { return shape_str(t.sizes()); }

}  // namespace

// ---- pad ---------------------------------------------------------------------------------------

Tensor pad(const Tensor& x, const Shape& p, const std::string& mode, std::optional<double> value) {
  EMBER_TRACE("aten::pad(Tensor self, int[] p, str mode, float? value) -> Tensor", pad, x, p, mode,
              value);
  EMBER_CHECK(p.size() % 2 == 0, "Padding length must be divisible by 2");
  const int64_t npad = int64_t(p.size()) / 2, nd = x.dim();
  EMBER_CHECK(npad <= nd, "Padding length should be less than or equal to two times the input ",
              "dimension but got padding length ", p.size(), " and input of dimension ", nd);
  if (mode == "constant") {
    Shape out_sizes = x.sizes();
    bool any_copy = true;
    for (int64_t i = 0; i < npad; ++i) {
      const int64_t d = nd - 1 - i, lo = p[2 * i], hi = p[2 * i + 1];
      const int64_t n = checked_add(x.sizes()[d], checked_add(lo, hi, "pad"), "pad");
      EMBER_CHECK(n >= 0, "pad: the input size ", x.sizes()[d], ", plus negative padding ", lo,
                  " and ", hi, " resulted in a negative output size, which is invalid. Check ",
                  "dimension ", d, " of your input of shape ", shape_of(x));
      out_sizes[d] = n;
      if (x.sizes()[d] + std::min<int64_t>(lo, 0) + std::min<int64_t>(hi, 0) <= 0) any_copy = false;
    }
    Tensor out = full(out_sizes, Scalar(value.value_or(0.0)), x.dtype(), x.device());
    if (any_copy && x.numel() > 0) {
      Tensor src = x, dst = out;
      for (int64_t i = 0; i < npad; ++i) {
        const int64_t d = nd - 1 - i, lo = p[2 * i], hi = p[2 * i + 1];
        const int64_t len = x.sizes()[d] + std::min<int64_t>(lo, 0) + std::min<int64_t>(hi, 0);
        src = narrow(src, d, std::max<int64_t>(-lo, 0), len);
        dst = narrow(dst, d, std::max<int64_t>(lo, 0), len);
      }
      copy_(dst, src);
    }
    return out;
  }
  EMBER_CHECK_KIND(ErrorKind::NotImplemented,
                   mode == "reflect" || mode == "replicate" || mode == "circular",
                   "pad: unrecognised padding mode '", mode,
                   "' (expected 'constant', 'reflect', 'replicate' or 'circular')");
  EMBER_CHECK(!value || *value == 0.0, "Padding mode \"", mode,
              "\" doesn't take in value argument");
  EMBER_CHECK_KIND(ErrorKind::NotImplemented,
                   npad >= 1 && npad <= 3 && (nd == npad + 1 || nd == npad + 2), "pad: ", mode,
                   " padding of the last ", npad, " dim(s) needs a ", npad + 1, "-D or ", npad + 2,
                   "-D input, but got input of shape ", shape_of(x),
                   " (only 2D, 3D, 4D, 5D padding with non-constant padding are supported)");
  Tensor r = x;
  for (int64_t i = 0; i < npad; ++i) {
    const int64_t d = nd - 1 - i, lo = p[2 * i], hi = p[2 * i + 1], n = x.sizes()[d];
    if (mode == "reflect")
      EMBER_CHECK(lo < n && hi < n, "pad: reflect padding (", lo, ", ", hi, ") at dimension ", d,
                  " must be less than that dimension's size ", n, " (input of shape ", shape_of(x),
                  ")");
    else if (mode == "circular")
      EMBER_CHECK(lo <= n && hi <= n, "pad: circular padding (", lo, ", ", hi, ") at dimension ", d,
                  " wraps around more than once: it must be at most that dimension's size ", n,
                  " (input of shape ", shape_of(x), ")");
    else
      EMBER_CHECK(n > 0 || (lo <= 0 && hi <= 0), "pad: replicate padding of an empty dimension ", d,
                  " (input of shape ", shape_of(x), ")");
    // checked, and the index built in a tensor: a huge padding (2**62) is an error or an
    // out-of-memory RuntimeError, not an overflow or a std::bad_alloc (found by tests/test_fuzz.py)
    const int64_t m = checked_add(checked_add(n, lo, "pad"), hi, "pad");
    EMBER_CHECK(m >= 0, "pad: the input size ", n, ", plus negative padding ", lo, " and ", hi,
                " resulted in a negative output size at dimension ", d);
    Tensor index = empty(Shape{m}, DType::Int64);
    int64_t* idx = index.data<int64_t>();
    for (int64_t o = 0; o < m; ++o) {
      int64_t s = o - lo;
      if (mode == "replicate")
        s = std::min(std::max<int64_t>(s, 0), n - 1);
      else if (mode == "reflect")
        s = s < 0 ? -s : (s >= n ? 2 * (n - 1) - s : s);
      else
        s = ((s % n) + n) % n;
      idx[o] = s;
    }
    r = index_select(r, d, to_device(index, x.device()));
  }
  return r;
}

// ---- interpolate -------------------------------------------------------------------------------

namespace {

// compute_scales_value: the user's scale (as 1/scale) or in/out.
double scale_value(const std::vector<double>& scales, size_t i, int64_t in, int64_t out) {
  if (i < scales.size() && scales[i] > 0) return 1.0 / scales[i];
  return double(in) / double(out);
}

double area_scale(int64_t in, int64_t out, bool align, const std::vector<double>& scales,
                  size_t i) {
  if (align) return out > 1 ? double(in - 1) / double(out - 1) : 0.0;
  return scale_value(scales, i, in, out);
}

double source_index(double scale, int64_t o, bool align, bool cubic) {
  if (align) return scale * double(o);
  const double s = scale * (double(o) + 0.5) - 0.5;
  return (!cubic && s < 0) ? 0.0 : s;
}

Tensor resample_dim(const Tensor& x, int64_t d, int64_t out, const std::string& mode, bool align,
                    const std::vector<double>& scales, size_t i) {
  const int64_t in = x.sizes()[d];
  const Device dev = x.device();
  if (mode == "nearest" || mode == "nearest-exact") {
    const bool exact = mode == "nearest-exact";
    // float arithmetic as torch's nearest_idx, so the chosen pixels agree exactly
    const float s = float(scale_value(scales, i, in, out));
    std::vector<int64_t> idx(static_cast<size_t>(out));
    for (int64_t o = 0; o < out; ++o) {
      int64_t k;
      if (!exact && in == out)
        k = o;
      else if (!exact && out == 2 * in && (i >= scales.size() || scales[i] <= 0))
        k = o >> 1;
      else
        k = int64_t(std::floor((float(o) + (exact ? 0.5f : 0.0f)) * s));
      idx[size_t(o)] = std::min(k, in - 1);
    }
    return index_select(x, d, int64_tensor(idx, dev));
  }
  const double scale = area_scale(in, out, align, scales, i);
  if (mode == "bicubic") {
    const double A = -0.75;
    std::vector<int64_t> taps[4];
    std::vector<double> ws[4];
    for (int64_t o = 0; o < out; ++o) {
      const double real = source_index(scale, o, align, true);
      const double fl = std::floor(real);
      const double tt = real - fl;
      const int64_t base = int64_t(fl);
      const double x1 = tt, x2 = 1.0 - tt;
      const double w0 = ((A * (x1 + 1) - 5 * A) * (x1 + 1) + 8 * A) * (x1 + 1) - 4 * A;
      const double w1 = ((A + 2) * x1 - (A + 3)) * x1 * x1 + 1;
      const double w2 = ((A + 2) * x2 - (A + 3)) * x2 * x2 + 1;
      const double w3 = ((A * (x2 + 1) - 5 * A) * (x2 + 1) + 8 * A) * (x2 + 1) - 4 * A;
      const double w[4] = {w0, w1, w2, w3};
      for (int k = 0; k < 4; ++k) {
        taps[k].push_back(std::min(std::max<int64_t>(base - 1 + k, 0), in - 1));
        ws[k].push_back(w[k]);
      }
    }
    Tensor r;
    for (int k = 0; k < 4; ++k) {
      Tensor term = mul(index_select(x, d, int64_tensor(taps[k], dev)),
                        along(table(ws[k], x.dtype(), dev), d, x.dim()));
      r = k ? plus(r, term) : term;
    }
    return r;
  }
  // linear, bilinear, trilinear: two taps per output position
  std::vector<int64_t> i0(static_cast<size_t>(out)), i1(static_cast<size_t>(out));
  std::vector<double> l0(static_cast<size_t>(out)), l1(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    const double real = source_index(scale, o, align, false);
    const int64_t k = std::min(int64_t(real), in - 1);
    i0[size_t(o)] = k;
    i1[size_t(o)] = k + (k < in - 1 ? 1 : 0);
    l1[size_t(o)] = real - double(k);
    l0[size_t(o)] = 1.0 - l1[size_t(o)];
  }
  return plus(
      mul(index_select(x, d, int64_tensor(i0, dev)), along(table(l0, x.dtype(), dev), d, x.dim())),
      mul(index_select(x, d, int64_tensor(i1, dev)), along(table(l1, x.dtype(), dev), d, x.dim())));
}

}  // namespace

Tensor interpolate(const Tensor& x, const Shape& size, const std::vector<double>& scales,
                   const std::string& mode, bool align) {
  EMBER_TRACE(
      "aten::interpolate(Tensor self, int[] size, float[] scales, str mode, bool align) -> Tensor",
      interpolate, x, size, scales, mode, align);
  const int64_t nd = x.dim(), nsp = nd - 2;
  EMBER_CHECK_KIND(ErrorKind::NotImplemented, nd >= 3 && nd <= 5,
                   "interpolate: expected a 3-D, 4-D or 5-D input (batch, channels, spatial...), ",
                   "but got input of shape ", shape_str(x.sizes()), " for mode '", mode, "'");
  const int64_t need = mode == "linear"                            ? 3
                       : (mode == "bilinear" || mode == "bicubic") ? 4
                       : mode == "trilinear"                       ? 5
                                                                   : 0;
  EMBER_CHECK_KIND(ErrorKind::NotImplemented, need == 0 || need == nd, "Got ", nd, "D input, but ",
                   mode, " mode needs ", need, "D input (input of shape ", shape_str(x.sizes()),
                   ")");
  EMBER_CHECK_KIND(ErrorKind::NotImplemented,
                   need || mode == "nearest" || mode == "nearest-exact" || mode == "area",
                   "interpolate: unknown mode '", mode, "' (expected nearest, nearest-exact, ",
                   "linear, bilinear, bicubic, trilinear or area)");
  EMBER_CHECK(is_floating(x.dtype()) || mode == "nearest" || mode == "nearest-exact", '"',
              "upsample_", mode, "\" not implemented for '", dtype_name(x.dtype()), "'");
  EMBER_CHECK(int64_t(size.size()) == nsp, "interpolate: expected ", nsp,
              " output sizes for input of shape ", shape_str(x.sizes()), ", got ", shape_str(size));
  for (int64_t i = 0; i < nsp; ++i)
    EMBER_CHECK(size[i] > 0 && x.sizes()[2 + i] > 0, "interpolate: input and output sizes ",
                "should be greater than 0, but got input of shape ", shape_str(x.sizes()),
                " and output size ", shape_str(size));
  {
    // The output's size first: interpolate(scale_factor=1e9) must fail naming the sizes,
    // before any per-position table is built (it was a bare std::bad_alloc).
    Shape out_shape = x.sizes();
    for (int64_t i = 0; i < nsp; ++i) out_shape[2 + i] = size[i];
    int64_t n = 1;
    for (int64_t v : out_shape)
      EMBER_CHECK(!__builtin_mul_overflow(n, v, &n), "interpolate: the output of shape ",
                  shape_str(out_shape), " has more elements than int64 can count");
    try {
      empty(out_shape, x.dtype(), x.device());  // freed at once; the allocator caches it
    } catch (const Error& e) {
      EMBER_ERROR("interpolate: cannot allocate the output of shape ", shape_str(out_shape),
                  " for input of shape ", shape_str(x.sizes()), ": ", e.what());
    }
  }
  if (mode == "area") {
    EMBER_CHECK_KIND(ErrorKind::NotImplemented, nsp <= 2,
                     "interpolate: mode 'area' supports 3-D and 4-D inputs");
    return adaptive_avg_pool(x, nsp, size, "interpolate");
  }
  Tensor r = x;
  for (int64_t i = 0; i < nsp; ++i)
    r = resample_dim(r, 2 + i, size[i], mode, align, scales, size_t(i));
  return r;
}

// ---- pixel shuffle ------------------------------------------------------------------------------

Tensor pixel_shuffle(const Tensor& x, int64_t r) {
  EMBER_TRACE("aten::pixel_shuffle(Tensor self, int reduction) -> Tensor", pixel_shuffle, x, r);
  EMBER_CHECK(x.dim() >= 3, "pixel_shuffle expects input to have at least 3 dimensions, but got ",
              "input with ", x.dim(), " dimension(s)");
  EMBER_CHECK(r > 0, "pixel_shuffle expects a positive upscale_factor, but got ", r);
  const int64_t nd = x.dim(), c = x.sizes()[nd - 3], h = x.sizes()[nd - 2], w = x.sizes()[nd - 1];
  // checked: a huge factor (2**63 - 1) is an error, not an overflow (found by tests/test_fuzz.py)
  const int64_t rr = checked_mul(r, r, "pixel_shuffle");
  EMBER_CHECK(c % rr == 0, "pixel_shuffle expects its input's 'channel' dimension to be ",
              "divisible by the square of upscale_factor, but input.size(-3)=", c,
              " is not divisible by ", rr);
  Shape lead(x.sizes().begin(), x.sizes().end() - 3);
  const int64_t nl = int64_t(lead.size());
  Shape s1 = lead;
  for (int64_t v : {c / rr, r, r, h, w}) s1.push_back(v);
  Shape perm;
  for (int64_t i = 0; i < nl; ++i) perm.push_back(i);
  for (int64_t v : {0, 3, 1, 4, 2}) perm.push_back(nl + v);
  Shape s2 = lead;
  for (int64_t v : {c / rr, checked_mul(h, r, "pixel_shuffle"), checked_mul(w, r, "pixel_shuffle")})
    s2.push_back(v);
  return reshape(permute(reshape(x, s1), perm), s2);
}

Tensor pixel_unshuffle(const Tensor& x, int64_t r) {
  EMBER_TRACE("aten::pixel_unshuffle(Tensor self, int reduction) -> Tensor", pixel_unshuffle, x, r);
  EMBER_CHECK(x.dim() >= 3, "pixel_unshuffle expects input to have at least 3 dimensions, but ",
              "got input with ", x.dim(), " dimension(s)");
  EMBER_CHECK(r > 0, "pixel_unshuffle expects a positive downscale_factor, but got ", r);
  const int64_t nd = x.dim(), c = x.sizes()[nd - 3], h = x.sizes()[nd - 2], w = x.sizes()[nd - 1];
  EMBER_CHECK(h % r == 0, "pixel_unshuffle expects height to be divisible by downscale_factor, ",
              "but input.size(-2)=", h, " is not divisible by ", r);
  EMBER_CHECK(w % r == 0, "pixel_unshuffle expects width to be divisible by downscale_factor, ",
              "but input.size(-1)=", w, " is not divisible by ", r);
  Shape lead(x.sizes().begin(), x.sizes().end() - 3);
  const int64_t nl = int64_t(lead.size());
  Shape s1 = lead;
  for (int64_t v : {c, h / r, r, w / r, r}) s1.push_back(v);
  Shape perm;
  for (int64_t i = 0; i < nl; ++i) perm.push_back(i);
  for (int64_t v : {0, 2, 4, 1, 3}) perm.push_back(nl + v);
  Shape s2 = lead;
  for (int64_t v :
       {checked_mul(c, checked_mul(r, r, "pixel_unshuffle"), "pixel_unshuffle"), h / r, w / r})
    s2.push_back(v);
  return reshape(permute(reshape(x, s1), perm), s2);
}

// ---- affine_grid / grid_sample --------------------------------------------------------------

namespace {

// torch's linspace_from_neg_one: [-1, 1] in `n` steps, scaled by (n-1)/n unless align.
Tensor base_coords(int64_t n, bool align, DType dt, Device dev) {
  if (n <= 1) return zeros(Shape{std::max<int64_t>(n, 0)}, dt, dev);
  Tensor r = linspace(-1.0, 1.0, n, dt, dev);
  if (!align) r = mul(r, num(double(n - 1) / double(n)));
  return r;
}

}  // namespace

Tensor affine_grid(const Tensor& theta, const Shape& size, bool align) {
  EMBER_TRACE("aten::affine_grid(Tensor theta, int[] size, bool align) -> Tensor", affine_grid,
              theta, size, align);
  EMBER_CHECK_VALUE(is_floating(theta.dtype()), "affine_grid: expected theta to have floating ",
                    "point type, but got ", dtype_name(theta.dtype()));
  EMBER_CHECK_KIND(ErrorKind::NotImplemented, size.size() == 4 || size.size() == 5,
                   "affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, ",
                   "respectively. Got size ", shape_str(size));
  for (int64_t v : size)
    EMBER_CHECK_VALUE(v > 0, "affine_grid: expected a non-zero, positive output size, got ",
                      shape_str(size));
  const bool two = size.size() == 4;
  const int64_t N = size[0];
  const int64_t r = two ? 2 : 3, c = two ? 3 : 4;
  EMBER_CHECK_VALUE(
      theta.dim() == 3 && theta.sizes()[0] == N && theta.sizes()[1] == r && theta.sizes()[2] == c,
      "Expected a batch of ", two ? "2D" : "3D", " affine matrices of shape Nx", r, "x", c,
      " for size ", shape_str(size), ". Got ", shape_str(theta.sizes()), ".");
  const DType dt = theta.dtype();
  const Device dev = theta.device();
  Tensor base;
  if (two) {
    const int64_t H = size[2], W = size[3];
    Tensor xs = expand(view(base_coords(W, align, dt, dev), Shape{1, W}), Shape{H, W});
    Tensor ys = expand(view(base_coords(H, align, dt, dev), Shape{H, 1}), Shape{H, W});
    base = view(stack({xs, ys, ones(Shape{H, W}, dt, dev)}, 2), Shape{1, H * W, 3});
  } else {
    const int64_t D = size[2], H = size[3], W = size[4];
    const Shape full3{D, H, W};
    Tensor xs = expand(view(base_coords(W, align, dt, dev), Shape{1, 1, W}), full3);
    Tensor ys = expand(view(base_coords(H, align, dt, dev), Shape{1, H, 1}), full3);
    Tensor zs = expand(view(base_coords(D, align, dt, dev), Shape{D, 1, 1}), full3);
    base = view(stack({xs, ys, zs, ones(full3, dt, dev)}, 3), Shape{1, D * H * W, 4});
  }
  Tensor g = matmul(base, transpose(theta, 1, 2));  // [N, P, r]
  Shape out{N};
  for (size_t i = 2; i < size.size(); ++i) out.push_back(size[i]);
  out.push_back(r);
  return view(g, out);
}

namespace {

Tensor no_grad_floor(const Tensor& t) {
  autograd::GradModeGuard g(false);
  return unary(U::floor, t);
}

// torch's reflect_coordinates over [twice_low / 2, twice_high / 2].
Tensor reflect(const Tensor& c, int64_t twice_low, int64_t twice_high) {
  if (twice_low == twice_high) return mul(c, num(0.0));
  const double mn = double(twice_low) / 2, span = double(twice_high - twice_low) / 2;
  Tensor in = unary(U::abs, minus(c, num(mn)));
  Tensor extra = binary(B::fmod, in, num(span));
  Tensor flips;
  {
    autograd::GradModeGuard g(false);
    flips = unary(U::floor, binary(B::div, in, num(span)));
  }
  Tensor even = binary(B::eq, binary(B::fmod, flips, num(2.0)), num(0.0));
  return where(even, plus(extra, num(mn)), minus(num(span + mn), extra));
}

Tensor clip(const Tensor& c, int64_t size) { return clamp(c, num(0.0), num(double(size - 1))); }

// 1 where (xi, yi) lies inside a w x h image, else 0, in xi's dtype.
Tensor logical_and_all(const Tensor& xi, const Tensor& yi, int64_t w, int64_t h) {
  Tensor m =
      binary(B::logical_and, binary(B::ge, xi, num(0.0)), binary(B::le, xi, num(double(w - 1))));
  m = binary(B::logical_and, m, binary(B::ge, yi, num(0.0)));
  m = binary(B::logical_and, m, binary(B::le, yi, num(double(h - 1))));
  return to_dtype(m, xi.dtype());
}

Tensor source_coord(const Tensor& g, int64_t size, const std::string& padding, bool align) {
  Tensor c =
      align ? mul(plus(g, num(1.0)), num(double(size - 1) / 2))
            : binary(B::div, minus(mul(plus(g, num(1.0)), num(double(size))), num(1.0)), num(2.0));
  if (padding == "border") return clip(c, size);
  if (padding == "reflection") {
    c = align ? reflect(c, 0, 2 * (size - 1)) : reflect(c, -1, 2 * size - 1);
    return clip(c, size);
  }
  return c;
}

}  // namespace

Tensor grid_sample(const Tensor& input, const Tensor& grid, const std::string& mode,
                   const std::string& padding_mode, bool align) {
  EMBER_TRACE(
      "aten::grid_sample(Tensor input, Tensor grid, str mode, str padding_mode, bool align) -> "
      "Tensor",
      grid_sample, input, grid, mode, padding_mode, align);
  EMBER_CHECK_VALUE(mode == "bilinear" || mode == "nearest" || mode == "bicubic",
                    "nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or ",
                    "'bicubic', but got: '", mode, "'");
  EMBER_CHECK_VALUE(
      padding_mode == "zeros" || padding_mode == "border" || padding_mode == "reflection",
      "nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', ",
      "or 'reflection', but got: '", padding_mode, "'");
  EMBER_CHECK_KIND(ErrorKind::NotImplemented, mode != "bicubic",
                   "grid_sample: mode 'bicubic' is not supported by ember yet");
  EMBER_CHECK_KIND(ErrorKind::NotImplemented, input.dim() == 4,
                   "grid_sample: only 4-D inputs (bilinear/nearest on images) are supported, got ",
                   "input of shape ", shape_str(input.sizes()));
  EMBER_CHECK(grid.dim() == 4 && grid.sizes()[3] == 2 && grid.sizes()[0] == input.sizes()[0],
              "grid_sample(): expected grid of shape [N, H_out, W_out, 2] with N = ",
              input.sizes()[0], " for input of shape ", shape_str(input.sizes()), ", but got ",
              "grid of shape ", shape_str(grid.sizes()));
  EMBER_CHECK(is_floating(input.dtype()) && input.dtype() == grid.dtype(),
              "grid_sample(): expected input and grid to have the same floating dtype, but got ",
              dtype_name(input.dtype()), " and ", dtype_name(grid.dtype()));
  for (int64_t d = 2; d < 4; ++d)
    EMBER_CHECK(input.sizes()[d] > 0, "grid_sample(): expected input to have non-empty spatial ",
                "dimensions, but input has sizes ", shape_str(input.sizes()));
  const int64_t N = input.sizes()[0], C = input.sizes()[1], H = input.sizes()[2],
                W = input.sizes()[3], Ho = grid.sizes()[1], Wo = grid.sizes()[2];
  Tensor ix = source_coord(select(grid, 3, 0), W, padding_mode, align);
  Tensor iy = source_coord(select(grid, 3, 1), H, padding_mode, align);
  Tensor flat = reshape(input, Shape{N, C, H * W});
  const bool zeros_pad = padding_mode == "zeros";
  // One tap: input at integer-valued coordinates (xi, yi) times weight, zero outside.
  // Non-finite coordinates (Note [grid_sample non-finite grids]): the gathered index of a
  // NaN is 0 (any valid one: its weight decides), never the cast of NaN (INT64_MIN, an
  // out-of-bounds gather). With zeros padding a NaN or infinite coordinate is outside the
  // image and contributes 0 (a NaN weight included); with border/reflection padding the
  // coordinate was clipped, so a NaN stays NaN and makes the output NaN.
  auto tap = [&](const Tensor& xi, const Tensor& yi, const Tensor& weight) {
    Tensor lin, inside, nan_xy;
    {
      autograd::GradModeGuard g(false);
      inside = to_dtype(logical_and_all(xi, yi, W, H), DType::Bool);
      nan_xy = binary(B::logical_or, unary(U::isnan, xi), unary(U::isnan, yi));
      Tensor xc = where(nan_xy, num(0.0), clip(xi, W)), yc = where(nan_xy, num(0.0), clip(yi, H));
      lin = to_dtype(plus(mul(yc, num(double(W))), xc), DType::Int64);
      lin = expand(view(lin, Shape{N, 1, Ho * Wo}), Shape{N, C, Ho * Wo});
    }
    Tensor vals = view(gather(flat, 2, lin), Shape{N, C, Ho, Wo});
    Tensor zero = zeros(Shape{}, xi.dtype(), xi.device());
    Tensor one = full(Shape{}, Scalar(1.0), xi.dtype(), xi.device());
    Tensor w;
    if (zeros_pad) {
      w = where(inside, weight.defined() ? weight : one, zero);
    } else {
      // Clipped coordinates are inside unless NaN; x0 + 1 past the edge has weight 0.
      Tensor keep = binary(B::logical_or, inside, nan_xy);
      w = where(keep, weight.defined() ? weight : one, zero);
      if (!weight.defined())
        w = where(nan_xy, full(Shape{}, Scalar(std::nan("")), xi.dtype(), xi.device()), w);
    }
    return mul(vals, unsqueeze(w, 1));
  };
  if (mode == "nearest") {
    Tensor xn, yn;
    {
      autograd::GradModeGuard g(false);
      xn = unary(U::round, ix);
      yn = unary(U::round, iy);
    }
    return tap(xn, yn, Tensor());
  }
  Tensor x0 = no_grad_floor(ix), y0 = no_grad_floor(iy);
  Tensor x1 = plus(x0, num(1.0)), y1 = plus(y0, num(1.0));
  Tensor wx1 = minus(ix, x0), wy1 = minus(iy, y0);
  Tensor wx0 = minus(num(1.0), wx1), wy0 = minus(num(1.0), wy1);
  return plus(plus(tap(x0, y0, mul(wx0, wy0)), tap(x1, y0, mul(wx1, wy0))),
              plus(tap(x0, y1, mul(wx0, wy1)), tap(x1, y1, mul(wx1, wy1))));
}

}  // namespace ember
