// See Note [Autocast policy] in autocast.h.
#include "ember/ops/autocast.h"

#include <atomic>
#include <cmath>
#include <cstring>
#include <string_view>
#include <unordered_map>

#include "ember/autograd/grad_mode.h"
#include "ember/autograd/node.h"
#include "ember/core/error.h"
#include "ember/core/half.h"
#include "ember/core/parallel.h"
#include "ember/kernels/dispatch.h"
#include "ember/ops/ops.h"
#include "ember/ops/reduce.h"
#include "ember/ops/view.h"

namespace ember::autocast {

namespace {

// The op lists, as data. Names are the front-ends' op names.
struct PolicyRow {
  const char* op;
  Category category;
};
constexpr PolicyRow kPolicy[] = {
    // Lower precision (float16 / bfloat16).
    {"matmul", Category::LowerPrecision},
    {"mm", Category::LowerPrecision},
    {"bmm", Category::LowerPrecision},
    {"addmm", Category::LowerPrecision},
    {"baddbmm", Category::LowerPrecision},
    {"addmv", Category::LowerPrecision},
    {"mv", Category::LowerPrecision},
    {"linear", Category::LowerPrecision},
    {"convolution", Category::LowerPrecision},
    // scaled_dot_product_attention is PyTorch-listed here too, but ember's attention
    // kernels take float32/float64 only: its front-ends consult the table and, while
    // it is not listed, run in the input dtype.
    // Float32.
    {"softmax", Category::Float32},
    {"log_softmax", Category::Float32},
    {"layer_norm", Category::Float32},
    {"group_norm", Category::Float32},
    {"batch_norm", Category::Float32},
    {"nll_loss", Category::Float32},
    {"cross_entropy", Category::Float32},
    {"mse_loss", Category::Float32},
    {"l1_loss", Category::Float32},
    {"smooth_l1_loss", Category::Float32},
    {"huber_loss", Category::Float32},
    {"binary_cross_entropy", Category::Float32},
    {"binary_cross_entropy_with_logits", Category::Float32},
    {"exp", Category::Float32},
    {"expm1", Category::Float32},
    {"log", Category::Float32},
    {"log2", Category::Float32},
    {"log10", Category::Float32},
    {"log1p", Category::Float32},
    {"reciprocal", Category::Float32},
    {"rsqrt", Category::Float32},
    {"acos", Category::Float32},
    {"asin", Category::Float32},
    {"cosh", Category::Float32},
    {"sinh", Category::Float32},
    {"tan", Category::Float32},
    {"pow", Category::Float32},
    {"sum", Category::Float32},
    {"mean", Category::Float32},
    {"prod", Category::Float32},
    {"cumsum", Category::Float32},
    {"cumprod", Category::Float32},
    // Promote to the widest floating input.
    {"cat", Category::Promote},
    {"stack", Category::Promote},
    {"addcmul", Category::Promote},
    {"addcdiv", Category::Promote},
    {"atan2", Category::Promote},
    {"dot", Category::Promote},
};

const std::unordered_map<std::string_view, Category>& policy() {
  static const auto* m = [] {
    auto* t = new std::unordered_map<std::string_view, Category>();
    for (const auto& r : kPolicy) t->emplace(r.op, r.category);
    return t;
  }();
  return *m;
}

// Note: keyed by the source impl; holds the source alive too so that the key
// cannot be reused by another tensor while cached.
struct CacheEntry {
  Tensor source, cast;
};
thread_local std::unordered_map<const TensorImpl*, CacheEntry> t_cache;

bool lower_eligible(const Tensor& t) {
  return t.defined() && is_floating(t.dtype()) && t.dtype() != DType::Float64;
}

bool is_leaf_requiring_grad(const Tensor& t) {
  return t.impl()->requires_grad && autograd::is_leaf(t);
}

Tensor cast_lower(const Tensor& t, DType to) {
  if (!lower_eligible(t) || t.dtype() == to) return t;
  State& s = state();
  bool cacheable =
      s.cache_enabled && s.nesting > 0 && is_leaf_requiring_grad(t) && t.dtype() == DType::Float32;
  if (cacheable) {
    auto it = t_cache.find(t.impl());
    if (it != t_cache.end() && it->second.cast.dtype() == to) return it->second.cast;
  }
  Tensor out = to_dtype(t, to);
  if (cacheable) t_cache[t.impl()] = {t, out};
  return out;
}

}  // namespace

namespace {
std::vector<Tensor> cast_by_category(Category c, std::vector<Tensor> out);
}  // namespace

State& state() {
  thread_local State s = [] {
    State st;
    st.dtype[int(DeviceType::CPU)] = DType::BFloat16;
    st.dtype[int(DeviceType::CUDA)] = DType::Float16;
    return st;
  }();
  return s;
}

std::vector<std::pair<const char*, Category>> policy_rows() {
  std::vector<std::pair<const char*, Category>> rows;
  for (const auto& r : kPolicy) rows.emplace_back(r.op, r.category);
  return rows;
}

Category category_of(const char* op) {
  auto it = policy().find(op);
  return it == policy().end() ? Category::None : it->second;
}

std::vector<Tensor> autocast_inputs(const char* op, std::initializer_list<Tensor> tensors) {
  return autocast_inputs(category_of(op), tensors);
}

std::vector<Tensor> autocast_inputs(Category c, std::initializer_list<Tensor> tensors) {
  return cast_by_category(c, std::vector<Tensor>(tensors.begin(), tensors.end()));
}

std::vector<Tensor> autocast_list(const char* op, const std::vector<Tensor>& tensors) {
  return cast_by_category(category_of(op), tensors);
}

namespace {
std::vector<Tensor> cast_by_category(Category c, std::vector<Tensor> out) {
  State& s = state();
  if (c == Category::None || s.exclude) return out;
  // The device type of the op: the first defined tensor's.
  DeviceType dt = DeviceType::CPU;
  bool found = false;
  for (auto& t : out)
    if (t.defined()) {
      dt = t.device().type;
      found = true;
      break;
    }
  if (!found || !s.enabled[int(dt)]) return out;
  switch (c) {
    case Category::LowerPrecision:
      for (auto& t : out)
        if (t.defined() && t.device().type == dt) t = cast_lower(t, s.dtype[int(dt)]);
      break;
    case Category::Float32:
      for (auto& t : out)
        if (t.defined() && t.device().type == dt &&
            (t.dtype() == DType::Float16 || t.dtype() == DType::BFloat16))
          t = to_dtype(t, DType::Float32);
      break;
    case Category::Promote: {
      DType widest = DType::Float16;
      bool any = false;
      for (auto& t : out)
        if (t.defined() && is_floating(t.dtype())) {
          widest = any ? promote_types(widest, t.dtype()) : t.dtype();
          any = true;
        }
      if (any)
        for (auto& t : out)
          if (t.defined() && is_floating(t.dtype()) && t.dtype() != widest) t = to_dtype(t, widest);
      break;
    }
    case Category::None:
      break;
  }
  return out;
}
}  // namespace

bool is_enabled(DeviceType t) { return state().enabled[int(t)]; }
void set_enabled(DeviceType t, bool on) { state().enabled[int(t)] = on; }
DType get_dtype(DeviceType t) { return state().dtype[int(t)]; }
void set_dtype(DeviceType t, DType d) {
  if (t == DeviceType::CPU)
    EMBER_CHECK(d == DType::BFloat16 || d == DType::Float16,
                "In CPU autocast, but the target dtype is not supported: ", dtype_name(d),
                ". CPU Autocast only supports dtypes of ember.bfloat16, ember.float16 currently.");
  else
    EMBER_CHECK(d == DType::BFloat16 || d == DType::Float16,
                "In CUDA autocast, but the target dtype is not supported: ", dtype_name(d),
                ". CUDA Autocast only supports dtypes of ember.float16, ember.bfloat16 currently.");
  state().dtype[int(t)] = d;
}
void clear_cache() { t_cache.clear(); }
int64_t cache_size() { return int64_t(t_cache.size()); }

// ---------------------------------------------------------------- GradScaler

namespace {

template <typename T>
bool unscale_contiguous(T* p, int64_t n, float inv) {
  std::atomic<bool> bad{false};
  parallel_for(0, n, 32768, [&](int64_t b, int64_t e) {
    bool local = false;
    for (int64_t i = b; i < e; ++i) {
      float v = float(p[i]);
      local |= !std::isfinite(v);
      p[i] = T(v * inv);
    }
    if (local) bad.store(true, std::memory_order_relaxed);
  });
  return bad.load();
}

template <>
bool unscale_contiguous<double>(double* p, int64_t n, float inv) {
  std::atomic<bool> bad{false};
  double dinv = inv;
  parallel_for(0, n, 32768, [&](int64_t b, int64_t e) {
    bool local = false;
    for (int64_t i = b; i < e; ++i) {
      local |= !std::isfinite(p[i]);
      p[i] *= dinv;
    }
    if (local) bad.store(true, std::memory_order_relaxed);
  });
  return bad.load();
}

void check_scalar_f32(const Tensor& t, const char* op, const char* what) {
  EMBER_CHECK(t.defined() && t.numel() == 1, op, ": ", what, " must be a one-element tensor");
  EMBER_CHECK(t.dtype() == DType::Float32, op, ": ", what, " must be a float32 tensor, got ",
              dtype_name(t.dtype()));
}

// _amp_update_scale_ on a device, without a sync (as PyTorch's one-thread kernel): the CPU
// path's decisions as elementwise selections on the device scalars. The products are formed
// in double and rounded to float, as the CPU's float(s * factor).
void update_scale_on_device(const Tensor& scale, const Tensor& growth_tracker,
                            const Tensor& found_inf, double growth_factor, double backoff_factor,
                            int64_t growth_interval) {
  autograd::GradModeGuard no_grad(false);
  using B = BinaryOp;
  const Shape shape = scale.sizes();
  Tensor s64 = to_dtype(scale, DType::Float64);
  Tensor found = binary(B::ne, reshape(found_inf, shape), wrap_scalar(Scalar(0.0)));
  Tensor successful =
      binary(B::add, reshape(growth_tracker, shape), wrap_scalar(Scalar(int64_t(1))));
  Tensor grow = binary(B::logical_and, unary(UnaryOp::logical_not, found),
                       binary(B::eq, successful, wrap_scalar(Scalar(growth_interval))));
  Tensor grown = to_dtype(binary(B::mul, s64, wrap_scalar(Scalar(growth_factor))), DType::Float32);
  Tensor backed =
      to_dtype(binary(B::mul, s64, wrap_scalar(Scalar(backoff_factor))), DType::Float32);
  Tensor grown_ok = binary(B::logical_and, grow, unary(UnaryOp::isfinite, grown));  // never inf
  Tensor new_scale = where(found, backed, where(grown_ok, grown, scale));
  Tensor new_tracker =
      where(binary(B::logical_or, found, grow), wrap_scalar(Scalar(int64_t(0))), successful);
  copy_(scale, new_scale);
  copy_(growth_tracker, reshape(to_dtype(new_tracker, DType::Int32), growth_tracker.sizes()));
}

}  // namespace

void amp_foreach_non_finite_check_and_unscale_(const std::vector<Tensor>& grads,
                                               const Tensor& found_inf, const Tensor& inv_scale) {
  const char* op = "_amp_foreach_non_finite_check_and_unscale_";
  check_scalar_f32(found_inf, op, "found_inf");
  check_scalar_f32(inv_scale, op, "inv_scale");
  EMBER_CHECK(found_inf.device() == inv_scale.device(), op,
              ": found_inf and inv_scale must be on the same device");
  if (grads.empty()) return;
  bool cpu_scalars = found_inf.device().is_cpu();
  float inv = cpu_scalars ? *inv_scale.data<float>() : 0.f;
  bool bad = false;
  Tensor found_dev;  // accumulated on the grads' device when it is not the CPU
  for (const Tensor& g : grads) {
    if (!g.defined()) continue;
    EMBER_CHECK(is_floating(g.dtype()), op, ": grads must be floating point, got ",
                dtype_name(g.dtype()));
    EMBER_CHECK(g.device() == found_inf.device(), op, ": a grad on ", g.device().str(),
                " while found_inf is on ", found_inf.device().str());
    if (g.device().is_cpu() && g.is_contiguous()) {
      bool b = dispatch_floating(g.dtype(), op, [&](auto tag) {
        using T = typename decltype(tag)::type;
        return unscale_contiguous<T>(g.data<T>(), g.numel(), inv);
      });
      bad |= b;
      g.bump_version(op);
    } else {
      // Strided (or device) grads: the same two steps through the elementwise ops.
      Tensor nonfinite = unary(UnaryOp::logical_not, all(unary(UnaryOp::isfinite, g)));
      if (g.device().is_cpu()) {  // g, and so nonfinite, on the CPU: a host read is fine
        bad |= *nonfinite.data<bool>();
        binary_(BinaryOp::mul, g, to_dtype(inv_scale, g.dtype()));
      } else {
        // On a device: no sync. The flag stays on the device, and the product is the CPU
        // contiguous path's: float(v) * inv rounded to T for the 16-bit floats (opmath, as
        // PyTorch's kernel), in T itself for float32 and float64.
        Tensor f = to_dtype(nonfinite, DType::Float32);
        found_dev = found_dev.defined() ? binary(BinaryOp::maximum, found_dev, f) : f;
        if (g.dtype() == DType::Float32 || g.dtype() == DType::Float64)
          binary_(BinaryOp::mul, g, to_dtype(inv_scale, g.dtype()));
        else
          copy_(g, binary(BinaryOp::mul, to_dtype(g, DType::Float32), inv_scale));
      }
    }
  }
  if (cpu_scalars) {
    if (bad) {
      *found_inf.data<float>() = 1.f;
      found_inf.bump_version(op);
    }
  } else if (found_dev.defined()) {
    copy_(found_inf, binary(BinaryOp::maximum, found_inf, reshape(found_dev, found_inf.sizes())));
  }
}

Tensor& amp_update_scale_(Tensor& scale, const Tensor& growth_tracker, const Tensor& found_inf,
                          double growth_factor, double backoff_factor, int64_t growth_interval) {
  const char* op = "_amp_update_scale_";
  check_scalar_f32(scale, op, "scale");
  check_scalar_f32(found_inf, op, "found_inf");
  EMBER_CHECK(growth_tracker.defined() && growth_tracker.numel() == 1 &&
                  growth_tracker.dtype() == DType::Int32,
              op, ": growth_tracker must be a one-element int32 tensor");
  EMBER_CHECK(growth_interval > 0, op, ": growth_interval must be positive, got ", growth_interval);
  EMBER_CHECK(growth_tracker.device() == scale.device() && found_inf.device() == scale.device(), op,
              ": scale, growth_tracker and found_inf must be on one device, got ",
              scale.device().str(), ", ", growth_tracker.device().str(), " and ",
              found_inf.device().str());
  if (!scale.device().is_cpu()) {
    update_scale_on_device(scale, growth_tracker, found_inf, growth_factor, backoff_factor,
                           growth_interval);
    return scale;
  }
  float& s = *scale.data<float>();
  int32_t& tracker = *growth_tracker.data<int32_t>();
  if (*found_inf.data<float>() != 0.f) {
    s = float(s * backoff_factor);
    tracker = 0;
  } else {
    int32_t successful = tracker + 1;
    if (successful == growth_interval) {
      float grown = float(s * growth_factor);
      if (std::isfinite(grown)) s = grown;  // never grow to inf
      tracker = 0;
    } else {
      tracker = successful;
    }
  }
  scale.bump_version(op);
  growth_tracker.bump_version(op);
  return scale;
}

}  // namespace ember::autocast
