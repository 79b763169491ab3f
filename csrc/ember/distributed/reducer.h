// The gradient reducer behind DistributedDataParallel (PyTorch's c10d::Reducer design):
// buckets, autograd hooks, overlap of communication with backward, rebuild after the first
// step. See Note [DDP reducer] in reducer.cpp.
#pragma once
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "ember/distributed/process_group.h"

namespace ember::distributed {

/// PyTorch's compute_bucket_assignment_by_size: tensors grouped by (dtype, device), walked in
/// `order` (default: index order), a bucket closing when its bytes reach its limit (the first
/// limit for each group's first bucket, then the next ones, the last repeating). Returns the
/// buckets (lists of tensor indices) and each bucket's limit; without `order` the buckets are
/// sorted by their smallest index.
std::pair<std::vector<std::vector<int64_t>>, std::vector<int64_t>>
compute_bucket_assignment_by_size(const std::vector<Tensor>& tensors,
                                  const std::vector<int64_t>& bucket_size_limits,
                                  const std::vector<int64_t>& order = {});

/// Broadcasts `tensors` from `src`, flattened into buffers of at most `buffer_size` bytes
/// per dtype and device (PyTorch's _broadcast_coalesced); waits.
void broadcast_coalesced(ProcessGroup& pg, const std::vector<Tensor>& tensors, int64_t buffer_size,
                         int src);

/// One bucket as a comm hook sees it (PyTorch's GradBucket).
struct GradBucket {
  size_t index = 0;
  Tensor buffer;                  // the flat gradients (the hook may replace it: set_buffer)
  std::vector<Tensor> gradients;  // views of `buffer` shaped like the parameters
  std::vector<Tensor> parameters;
  bool is_last = false;
};

/// A communication hook: run() starts reducing a bucket and returns a handle, wait() waits
/// for it and returns the reduced flat buffer. The Python binding implements it for
/// DistributedDataParallel.register_comm_hook.
struct CommHook {
  virtual ~CommHook() = default;
  virtual std::shared_ptr<void> run(GradBucket& bucket) = 0;
  virtual Tensor wait(const std::shared_ptr<void>& handle) = 0;
};

/// The comm hooks built into the reducer (no Python on the hot path).
enum class BuiltinCommHook { ALLREDUCE, FP16_COMPRESS };

class Reducer : public std::enable_shared_from_this<Reducer> {
 public:
  struct Options {
    int64_t bucket_bytes_cap = 25 * 1024 * 1024;
    int64_t first_bucket_bytes = 1024 * 1024;
    bool find_unused_parameters = false;
    bool gradient_as_bucket_view = false;
    bool static_graph = false;
    std::vector<std::string> param_names;  // for messages
  };
  Reducer(std::vector<Tensor> params, std::vector<std::vector<int64_t>> bucket_indices,
          std::vector<int64_t> per_bucket_limits, std::shared_ptr<ProcessGroup> pg, Options opts);
  ~Reducer();
  /// Registers the autograd hooks (a separate step: they capture a weak pointer to this).
  void install_hooks();

  /// Called by DDP before a forward pass that will be followed by a synchronized backward.
  void prepare_for_forward();
  /// Called by DDP after the forward pass: `outputs` are searched for unused parameters when
  /// find_unused_parameters is set (or in the first step of a static graph).
  void prepare_for_backward(const std::vector<Tensor>& outputs);
  /// Rebuilds the buckets in gradient-arrival order once, after the first step (rank 0's
  /// order, broadcast); true when it did.
  bool rebuild_buckets();
  /// Makes the next rebuild possible on a rank that ran no backward (join).
  void push_all_rebuilt_params();
  void register_comm_hook(std::shared_ptr<CommHook> hook);
  void register_builtin_comm_hook(BuiltinCommHook kind);
  /// Join: the gradients are divided by the number of ranks still training, read from `work`
  /// (an all-reduce of ones), unless `divide_by_initial_world_size`.
  void set_forward_pass_work_handle(std::shared_ptr<Work> work, bool divide_by_initial_world_size);
  /// Join: on a rank out of inputs, the collectives a training rank's backward issues
  /// (one per bucket, then the used-parameter map), with zeros.
  void run_join_shadow();
  /// The current buckets as the comm hook sees them (tests, DDP internals).
  std::vector<GradBucket> grad_buckets();
  std::vector<std::vector<int64_t>> bucket_indices() const;
  /// True when the last backward skipped a parameter on every rank (it kept its .grad).
  std::vector<bool> globally_unused() const;
  int64_t num_iterations() const { return num_iterations_; }
  bool has_rebuilt_buckets() const { return has_rebuilt_; }

 private:
  struct Bucket {
    Tensor gradients;
    std::vector<int64_t> variables;
    std::vector<int64_t> offsets, lengths;
    std::vector<Tensor> views_in;   // views of `gradients` shaped like the parameters
    std::vector<Tensor> views_out;  // views of the reduced result
    size_t pending = 0;
    int64_t size_limit = 0;
    std::shared_ptr<Work> work;         // the built-in path
    std::shared_ptr<void> hook_handle;  // a Python comm hook
    Tensor compressed;                  // FP16_COMPRESS's buffer
  };
  void initialize_buckets(const std::vector<std::vector<int64_t>>& indices,
                          const std::vector<int64_t>& limits);
  void autograd_hook(int64_t index);
  void mark_variable_ready(int64_t index);
  void mark_bucket_ready(size_t b);
  void launch_bucket(Bucket& bucket, size_t index);
  void finalize_backward();
  void delay_all_reduce();
  void search_unused_parameters(const std::vector<Tensor>& outputs);
  void ensure_prior_reduction_finished();
  void reset_bucket_counting();
  double divide_factor();
  std::string param_name(int64_t i) const;
  bool static_first() const { return opts_.static_graph && num_iterations_ <= 1; }
  bool static_after_first() const { return opts_.static_graph && num_iterations_ > 1; }
  bool dynamic_find_unused() const { return opts_.find_unused_parameters && !opts_.static_graph; }
  bool should_rebuild() const {
    return !has_rebuilt_ && (opts_.static_graph || !opts_.find_unused_parameters);
  }

  std::vector<Tensor> params_;
  std::shared_ptr<ProcessGroup> pg_;
  Options opts_;
  std::recursive_mutex mu_;
  std::vector<Bucket> buckets_;
  std::vector<std::pair<size_t, size_t>> locator_;  // param -> (bucket, position)
  std::vector<std::shared_ptr<bool>> hook_alive_;
  size_t next_bucket_ = 0;
  bool expect_hooks_ = false;
  bool require_finalize_ = false;
  bool finalize_queued_ = false;
  bool marked_unused_ = false;
  std::vector<int64_t> unused_;
  std::vector<char> ready_this_iteration_;
  Tensor local_used_;  // int32 per parameter
  std::shared_ptr<Work> local_used_work_;
  Tensor global_used_;
  std::vector<int64_t> hooks_seen_;  // static graph: hook calls per parameter in step 1
  std::vector<int64_t> hooks_left_;  // static graph: calls left this step
  std::vector<int64_t> rebuilt_order_;
  bool has_rebuilt_ = false;
  int64_t num_iterations_ = 0;
  std::shared_ptr<CommHook> comm_hook_;
  BuiltinCommHook builtin_ = BuiltinCommHook::ALLREDUCE;
  std::shared_ptr<Work> forward_work_;
  bool static_world_size_ = true;
};

}  // namespace ember::distributed
