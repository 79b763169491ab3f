// CUDA kernels of the fused multi-tensor optimizer steps (kernels/stubs/optim.h, Note [Fused
// optimizer steps]): sgd, adam/adamw, adamax, nadam, radam, rmsprop, adagrad, adadelta.
//
// Note [CUDA multi-tensor apply]
// As PyTorch's multi_tensor_apply: one launch covers many tensors. The host walks the
// tensors of one dtype and cuts each into chunks of kChunk elements; a launch's kernel
// arguments carry a table (MultiTensorTable, ~3.3 KiB) of up to kMaxTensors tensors
// (their param / grad / state pointers, numel and up to three per-tensor scalars such as
// Adam's step size) and of up to kMaxBlocks (tensor, chunk) pairs, one per CUDA block.
// A table that fills up is launched and a new one started (a tensor may continue in the
// next launch). Block b updates chunk chunk_of[b] of tensor tensor_of[b], its threads
// striding over the chunk (coalesced). No host synchronization, no device buffers.
// When a parameter appears twice (OptimTensors::serial), every tensor gets its own
// launch, in order, as the CPU runs them one after another.
//
// Each element is updated with the CPU kernel's formula in opmath_t (float for 16-bit
// and float32 params, double for float64), with state rounded through the storage type
// exactly where the CPU's store() rounds it. The per-tensor coefficients are computed on
// the host in double as the CPU kernel does (e.g. 1 / bc2_sqrt) and converted to opmath
// in the kernel. nvcc may contract a * b + c into an FMA where the CPU build does not, so
// results can differ from the CPU's in the last bit of the opmath type.
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "ember/backends/cuda/cuda_backend.h"
#include "ember/backends/cuda/cuda_check.h"
#include "ember/kernels/dispatch.h"
#include "ember/kernels/functors.h"
#include "ember/kernels/registration.h"
#include "ember/kernels/stubs/optim.h"

namespace ember::cuda {
namespace {

constexpr int kMaxTensors = 24;
constexpr int kMaxBlocks = 320;
constexpr int64_t kChunk = 65536;
constexpr int kOptimThreads = 512;
constexpr int kLists = 5;  // params, grads, state[0..2]

struct MultiTensorTable {
  void* ptr[kLists][kMaxTensors];
  int64_t numel[kMaxTensors];
  double sc[3][kMaxTensors];
  unsigned char tensor_of[kMaxBlocks];
  int32_t chunk_of[kMaxBlocks];
};
static_assert(sizeof(MultiTensorTable) <= 4096, "kernel argument table too large");

template <typename M>
__device__ __forceinline__ M sqrt_(M x) {
  return sqrt(x);
}
template <>
__device__ __forceinline__ float sqrt_(float x) {
  return sqrtf(x);
}
template <typename M>
__device__ __forceinline__ M abs_(M x) {
  return fabs(x);
}
template <>
__device__ __forceinline__ float abs_(float x) {
  return fabsf(x);
}

/// PyTorch's lerp (fn::Lerp, shared with torch.lerp and the CPU optimizers).
template <typename M>
__device__ __forceinline__ M lerp_(M self, M end, M w) {
  return fn::Lerp{}(self, end, w);
}
/// max that propagates NaN from either side (the CPU's max_nan).
template <typename M>
__device__ __forceinline__ M max_nan(M a, M b) {
  M r = a > b ? a : b;
  r = a != a ? a : r;
  return b != b ? b : r;
}
/// Stores v rounded to T at dst[k] and returns the stored value in opmath (the CPU's store()).
template <typename T, typename M>
__device__ __forceinline__ M store(T* dst, int64_t k, M v) {
  const T t = T(v);
  dst[k] = t;
  return M(t);
}

/// The CPU's GradPrep: maximize sign, L2 decay folded into the gradient, decoupled decay factor.
struct Prep {
  double sign, l2, p_scale;
  bool use_l2;
  Prep(bool maximize, double weight_decay, bool decoupled, double lr)
      : sign(maximize ? -1.0 : 1.0),
        l2(decoupled ? 0.0 : weight_decay),
        p_scale(decoupled && weight_decay != 0 ? 1.0 - lr * weight_decay : 1.0),
        use_l2(weight_decay != 0 && !decoupled) {}
};

/// The element's gradient as every update reads it (the CPU's grad_at), in opmath.
template <typename T, typename M>
__device__ __forceinline__ M grad_at(const Prep& prep, const T* p, const T* g, int64_t k) {
  M gk = M(prep.sign) * M(g[k]);
  if (prep.use_l2) gk = gk + M(prep.l2) * M(p[k]);
  return gk;
}

/// The pointers of one tensor and its per-tensor scalars, as a kernel body sees them.
template <typename T>
struct Slot {
  T* p;
  const T* g;
  T* s0;
  T* s1;
  T* s2;
  double sc0, sc1, sc2;
};

template <typename T, typename Op>
__global__ void __launch_bounds__(kOptimThreads) multi_tensor_kernel(MultiTensorTable tab, Op op) {
  const int t = tab.tensor_of[blockIdx.x];
  const int64_t lo = int64_t(tab.chunk_of[blockIdx.x]) * kChunk;
  const int64_t hi = min(tab.numel[t], lo + kChunk);
  const Slot<T> s{static_cast<T*>(tab.ptr[0][t]),
                  static_cast<const T*>(tab.ptr[1][t]),
                  static_cast<T*>(tab.ptr[2][t]),
                  static_cast<T*>(tab.ptr[3][t]),
                  static_cast<T*>(tab.ptr[4][t]),
                  tab.sc[0][t],
                  tab.sc[1][t],
                  tab.sc[2][t]};
  for (int64_t k = lo + threadIdx.x; k < hi; k += blockDim.x) op.template apply<T>(s, k);
}

/// Runs `op` over every element of every tensor of `t` (Note [CUDA multi-tensor apply]);
/// `scalars(i)` gives tensor i's three per-tensor scalars.
template <typename Op, typename Scalars>
void multi_tensor_apply(const OptimTensors& t, const char* name, const Op& op,
                        const Scalars& scalars) {
  const size_t n = t.params.size();
  std::vector<bool> done(n, false);
  const cudaStream_t stream = current_stream();
  for (size_t first = 0; first < n; ++first) {
    if (done[first]) continue;
    const DType dtype = t.params[first].dtype();
    dispatch_floating(dtype, name, [&](auto tag) {
      using T = typename decltype(tag)::type;
      MultiTensorTable tab{};
      int ntensors = 0, nblocks = 0;
      auto launch = [&]() {
        if (nblocks > 0) {
          multi_tensor_kernel<T, Op><<<unsigned(nblocks), kOptimThreads, 0, stream>>>(tab, op);
          EMBER_CUDA_CHECK(cudaGetLastError());
        }
        ntensors = 0;
        nblocks = 0;
      };
      auto add_tensor = [&](size_t i) {
        auto ptr_of = [&](const std::vector<Tensor>& list) -> void* {
          return list.empty() ? nullptr : list[i].data_ptr();
        };
        tab.ptr[0][ntensors] = ptr_of(t.params);
        tab.ptr[1][ntensors] = ptr_of(t.grads);
        for (int k = 0; k < 3; ++k) tab.ptr[2 + k][ntensors] = ptr_of(t.state[k]);
        tab.numel[ntensors] = t.params[i].numel();
        const std::array<double, 3> sc = scalars(i);
        for (int k = 0; k < 3; ++k) tab.sc[k][ntensors] = sc[size_t(k)];
        ++ntensors;
      };
      for (size_t i = first; i < n; ++i) {
        if (done[i] || t.params[i].dtype() != dtype) continue;
        done[i] = true;
        const int64_t numel = t.params[i].numel();
        if (numel == 0) continue;
        if (ntensors == kMaxTensors) launch();
        add_tensor(i);
        const int64_t chunks = (numel + kChunk - 1) / kChunk;
        for (int64_t c = 0; c < chunks; ++c) {
          if (nblocks == kMaxBlocks) {
            launch();
            add_tensor(i);
          }
          tab.tensor_of[nblocks] = static_cast<unsigned char>(ntensors - 1);
          tab.chunk_of[nblocks] = int32_t(c);
          ++nblocks;
        }
        if (t.serial) launch();  // a repeated param: tensors one after another, in order
      }
      launch();
    });
  }
}

std::array<double, 3> no_scalars(size_t) { return {0.0, 0.0, 0.0}; }

// ---- SGD (state[0]: momentum buffers; sc0: 1 for a buffer initialized this step) ----------

struct SgdOp {
  Prep prep;
  double lr, mom, damp;
  bool has_buf, nesterov;
  template <typename T>
  __device__ __forceinline__ void apply(const Slot<T>& s, int64_t k) const {
    using M = opmath_t<T>;
    const M pk = M(s.p[k]);
    M d = grad_at<T, M>(prep, s.p, s.g, k);
    if (has_buf) {
      const M b = store(s.s0, k, s.sc0 != 0 ? d : M(mom) * M(s.s0[k]) + M(damp) * d);
      d = nesterov ? d + M(mom) * b : b;
    }
    s.p[k] = T(pk - M(lr) * d);
  }
};

void sgd_kernel(const OptimTensors& t, const SgdArgs& a) {
  const SgdOp op{Prep(a.maximize, a.weight_decay, false, a.lr),
                 a.lr,
                 a.momentum,
                 1.0 - a.dampening,
                 !t.state[0].empty(),
                 a.nesterov};
  multi_tensor_apply(t, "sgd_step_", op, [&](size_t i) {
    return std::array<double, 3>{op.has_buf && a.first[i] ? 1.0 : 0.0, 0.0, 0.0};
  });
}

// ---- Adam / AdamW (state: exp_avg, exp_avg_sq, max_exp_avg_sq; sc: step_size, 1/bc2_sqrt) --

struct AdamOp {
  Prep prep;
  double w1, b2, w2, eps;
  bool amsgrad;
  template <typename T>
  __device__ __forceinline__ void apply(const Slot<T>& s, int64_t k) const {
    using M = opmath_t<T>;
    const M pk = M(s.p[k]) * M(prep.p_scale);
    const M gk = grad_at<T, M>(prep, s.p, s.g, k);
    const M mk = store(s.s0, k, lerp_(M(s.s0[k]), gk, M(w1)));
    M vk = store(s.s1, k, M(b2) * M(s.s1[k]) + M(w2) * gk * gk);
    if (amsgrad) vk = store(s.s2, k, max_nan(M(s.s2[k]), vk));
    const M denom = sqrt_(vk) * M(s.sc1) + M(eps);
    s.p[k] = T(pk - M(s.sc0) * (mk / denom));
  }
};

void adam_kernel(const OptimTensors& t, const AdamArgs& a) {
  const AdamOp op{Prep(a.maximize, a.weight_decay, a.decoupled, a.lr),
                  1.0 - a.beta1,
                  a.beta2,
                  1.0 - a.beta2,
                  a.eps,
                  a.amsgrad};
  multi_tensor_apply(t, "adam_step_", op, [&](size_t i) {
    return std::array<double, 3>{a.step_size[i], 1.0 / a.bc2_sqrt[i], 0.0};
  });
}

// ---- Adamax (state: exp_avg, exp_inf; sc0: clr) --------------------------------------------

struct AdamaxOp {
  Prep prep;
  double w1, b2, eps;
  template <typename T>
  __device__ __forceinline__ void apply(const Slot<T>& s, int64_t k) const {
    using M = opmath_t<T>;
    const M pk = M(s.p[k]);
    const M gk = grad_at<T, M>(prep, s.p, s.g, k);
    const M mk = store(s.s0, k, lerp_(M(s.s0[k]), gk, M(w1)));
    const M uk = store(s.s1, k, max_nan(M(s.s1[k]) * M(b2), abs_(gk) + M(eps)));
    s.p[k] = T(pk - M(s.sc0) * (mk / uk));
  }
};

void adamax_kernel(const OptimTensors& t, const AdamaxArgs& a) {
  const AdamaxOp op{Prep(a.maximize, a.weight_decay, false, 0.0), 1.0 - a.beta1, a.beta2, a.eps};
  multi_tensor_apply(t, "adamax_step_", op,
                     [&](size_t i) { return std::array<double, 3>{a.clr[i], 0.0, 0.0}; });
}

// ---- NAdam (state: exp_avg, exp_avg_sq; sc: 1/bc2, coef_grad, coef_avg) ---------------------

struct NAdamOp {
  Prep prep;
  double w1, b2, w2, eps;
  template <typename T>
  __device__ __forceinline__ void apply(const Slot<T>& s, int64_t k) const {
    using M = opmath_t<T>;
    const M pk = M(s.p[k]) * M(prep.p_scale);
    const M gk = grad_at<T, M>(prep, s.p, s.g, k);
    const M mk = store(s.s0, k, lerp_(M(s.s0[k]), gk, M(w1)));
    const M vk = store(s.s1, k, M(b2) * M(s.s1[k]) + M(w2) * gk * gk);
    const M inv_denom = M(1) / (sqrt_(vk * M(s.sc0)) + M(eps));
    s.p[k] = T(pk + M(s.sc1) * (gk * inv_denom) + M(s.sc2) * (mk * inv_denom));
  }
};

void nadam_kernel(const OptimTensors& t, const NAdamArgs& a) {
  const NAdamOp op{Prep(a.maximize, a.weight_decay, a.decoupled, a.lr), 1.0 - a.beta1, a.beta2,
                   1.0 - a.beta2, a.eps};
  multi_tensor_apply(t, "nadam_step_", op, [&](size_t i) {
    return std::array<double, 3>{1.0 / a.bc2[i], a.coef_grad[i], a.coef_avg[i]};
  });
}

// ---- RAdam (state: exp_avg, exp_avg_sq; sc: lr / bc1, the rectified factor, rect > 0) ------

struct RAdamOp {
  Prep prep;
  double w1, b2, w2, eps;
  template <typename T>
  __device__ __forceinline__ void apply(const Slot<T>& s, int64_t k) const {
    using M = opmath_t<T>;
    const M pk = M(s.p[k]) * M(prep.p_scale);
    const M gk = grad_at<T, M>(prep, s.p, s.g, k);
    const M mk = store(s.s0, k, lerp_(M(s.s0[k]), gk, M(w1)));
    const M vk = store(s.s1, k, M(b2) * M(s.s1[k]) + M(w2) * gk * gk);
    if (s.sc2 != 0)
      s.p[k] = T(pk - M(s.sc1) * mk / (sqrt_(vk) + M(eps)));
    else
      s.p[k] = T(pk - M(s.sc0) * mk);
  }
};

void radam_kernel(const OptimTensors& t, const RAdamArgs& a) {
  const RAdamOp op{Prep(a.maximize, a.weight_decay, a.decoupled, a.lr), 1.0 - a.beta1, a.beta2,
                   1.0 - a.beta2, a.eps};
  multi_tensor_apply(t, "radam_step_", op, [&](size_t i) {
    return std::array<double, 3>{a.lr / a.bc1[i], a.lr / a.bc1[i] * a.bc2_sqrt[i] * a.rect[i],
                                 a.rect[i] > 0 ? 1.0 : 0.0};
  });
}

// ---- RMSprop (state: square_avg, momentum_buffer, grad_avg) ---------------------------------

struct RmspropOp {
  Prep prep;
  double lr, alpha, w, eps, mom;
  bool centered, momentum;
  template <typename T>
  __device__ __forceinline__ void apply(const Slot<T>& s, int64_t k) const {
    using M = opmath_t<T>;
    M pk = M(s.p[k]);
    const M gk = grad_at<T, M>(prep, s.p, s.g, k);
    const M sk = store(s.s0, k, M(alpha) * M(s.s0[k]) + M(w) * gk * gk);
    M avg;
    if (centered) {
      const M ak = store(s.s2, k, lerp_(M(s.s2[k]), gk, M(w)));
      avg = sqrt_(sk - ak * ak) + M(eps);
    } else {
      avg = sqrt_(sk) + M(eps);
    }
    if (momentum)
      pk = pk - M(lr) * store(s.s1, k, M(mom) * M(s.s1[k]) + gk / avg);
    else
      pk = pk - M(lr) * (gk / avg);
    s.p[k] = T(pk);
  }
};

void rmsprop_kernel(const OptimTensors& t, const RmspropArgs& a) {
  const RmspropOp op{Prep(a.maximize, a.weight_decay, false, a.lr),
                     a.lr,
                     a.alpha,
                     1.0 - a.alpha,
                     a.eps,
                     a.momentum,
                     a.centered,
                     a.momentum > 0};
  multi_tensor_apply(t, "rmsprop_step_", op, no_scalars);
}

// ---- Adagrad (state: sum; sc0: clr) ----------------------------------------------------------

struct AdagradOp {
  Prep prep;
  double eps;
  template <typename T>
  __device__ __forceinline__ void apply(const Slot<T>& s, int64_t k) const {
    using M = opmath_t<T>;
    const M pk = M(s.p[k]);
    const M gk = grad_at<T, M>(prep, s.p, s.g, k);
    const M sk = store(s.s0, k, M(s.s0[k]) + gk * gk);
    s.p[k] = T(pk - M(s.sc0) * (gk / (sqrt_(sk) + M(eps))));
  }
};

void adagrad_kernel(const OptimTensors& t, const AdagradArgs& a) {
  const AdagradOp op{Prep(a.maximize, a.weight_decay, false, 0.0), a.eps};
  multi_tensor_apply(t, "adagrad_step_", op,
                     [&](size_t i) { return std::array<double, 3>{a.clr[i], 0.0, 0.0}; });
}

// ---- Adadelta (state: square_avg, acc_delta) -------------------------------------------------

struct AdadeltaOp {
  Prep prep;
  double lr, rho, w, eps;
  template <typename T>
  __device__ __forceinline__ void apply(const Slot<T>& s, int64_t k) const {
    using M = opmath_t<T>;
    const M pk = M(s.p[k]);
    const M gk = grad_at<T, M>(prep, s.p, s.g, k);
    const M sk = store(s.s0, k, M(rho) * M(s.s0[k]) + M(w) * gk * gk);
    const M delta = sqrt_(M(s.s1[k]) + M(eps)) / sqrt_(sk + M(eps)) * gk;
    store(s.s1, k, M(rho) * M(s.s1[k]) + M(w) * delta * delta);
    s.p[k] = T(pk - M(lr) * delta);
  }
};

void adadelta_kernel(const OptimTensors& t, const AdadeltaArgs& a) {
  const AdadeltaOp op{Prep(a.maximize, a.weight_decay, false, 0.0), a.lr, a.rho, 1.0 - a.rho,
                      a.eps};
  multi_tensor_apply(t, "adadelta_step_", op, no_scalars);
}

}  // namespace

EMBER_REGISTER_KERNELS(CUDA, optim) {
  constexpr int cuda = int(DeviceType::CUDA);
  sgd_step_stub.fns[cuda] = &sgd_kernel;
  adam_step_stub.fns[cuda] = &adam_kernel;
  adamax_step_stub.fns[cuda] = &adamax_kernel;
  nadam_step_stub.fns[cuda] = &nadam_kernel;
  radam_step_stub.fns[cuda] = &radam_kernel;
  rmsprop_step_stub.fns[cuda] = &rmsprop_kernel;
  adagrad_step_stub.fns[cuda] = &adagrad_kernel;
  adadelta_step_stub.fns[cuda] = &adadelta_kernel;
}

}  // namespace ember::cuda
