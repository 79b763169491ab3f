// Process-wide backend switches that Python sets and kernels read: the
// torch.backends.cuda.matmul / torch.backends.cudnn flags, the float32 matmul
// precision and use_deterministic_algorithms. They live in the core library so
// that _C (which binds them) and _C_cuda (whose kernels read them) see one copy.
#pragma once
#include <atomic>

namespace ember {

/// torch.set_float32_matmul_precision: "highest" (IEEE float32 products), "high" and
/// "medium" (TF32 tensor cores allowed on CUDA).
enum class Float32MatmulPrecision : int { Highest = 0, High = 1, Medium = 2 };

struct BackendFlags {
  std::atomic<int> float32_matmul_precision{int(Float32MatmulPrecision::Highest)};
  /// torch.backends.cuda.matmul.allow_{fp16,bf16}_reduced_precision_reduction (default
  /// True): cuBLAS may reduce 16-bit products in 16-bit precision.
  std::atomic<bool> allow_fp16_reduced_precision_reduction{true};
  std::atomic<bool> allow_bf16_reduced_precision_reduction{true};
  /// torch.backends.cudnn.{enabled, benchmark, deterministic, allow_tf32}.
  std::atomic<bool> cudnn_enabled{true};
  std::atomic<bool> cudnn_benchmark{false};
  std::atomic<bool> cudnn_deterministic{false};
  std::atomic<bool> cudnn_allow_tf32{true};
  /// torch.backends.mkldnn.enabled: CPU convolutions may use oneDNN where it is loaded.
  std::atomic<bool> mkldnn_enabled{true};
  /// torch.use_deterministic_algorithms(mode, warn_only=).
  std::atomic<bool> deterministic_algorithms{false};
  std::atomic<bool> deterministic_warn_only{false};

  bool matmul_allow_tf32() const {
    return float32_matmul_precision.load(std::memory_order_relaxed) !=
           int(Float32MatmulPrecision::Highest);
  }
};

/// The one instance (core/flags.cpp).
BackendFlags& backend_flags();

/// For a kernel with no deterministic implementation: raises PyTorch's RuntimeError when
/// use_deterministic_algorithms(True) is on without warn_only (core/flags.cpp).
void check_nondeterministic_allowed(const char* op);

}  // namespace ember
