// The DataLoader's C++ hot path for map-style datasets of tensors: gather a
// whole index batch per field, collate, and prefetch on a background thread.
#pragma once
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "ember/core/owned_thread.h"
#include "ember/core/tensor.h"

namespace ember::data {

/// Where a gathered batch is allocated: ordinary, shared (a worker hands it over) or
/// pinned (Note [Pinned staging]) memory.
enum class BatchMemory { Normal, Shared, Pinned };

/// Rows `idx` (int64, 1-D, negative wraps) of `src` along dim 0 as one contiguous
/// [len(idx), *src.shape[1:]] tensor: one strided gather (a memcpy per row when the
/// rows are contiguous). IndexError for an index out of range.
Tensor gather_rows(const Tensor& src, const Tensor& idx, BatchMemory mem = BatchMemory::Normal);

/// default_collate for tensors: stacks along a new dim 0 (ember's stack, with its
/// size and dtype errors); `shared`: into shared memory (in DataLoader workers).
Tensor stack_batch(const std::vector<Tensor>& tensors, bool shared);

// Note [Batch prefetcher]
// One background thread walks the epoch's index tensor in batch_size slices and
// gathers every field of each batch (into pinned memory when asked: the batches are
// then staged for a fast host-to-device copy), keeping at most `depth` finished batches
// queued. next() waits (the binding releases the GIL) for the next batch in order.
// An error in the thread (a bad index) is re-thrown by next() at the batch where it
// happened. Destruction stops and joins the thread, so abandoning an epoch midway
// leaves nothing running.
class BatchPrefetcher {
 public:
  BatchPrefetcher(std::vector<Tensor> fields, Tensor indices, int64_t batch_size, bool drop_last,
                  int64_t depth, bool pinned = false);
  ~BatchPrefetcher();
  BatchPrefetcher(const BatchPrefetcher&) = delete;
  BatchPrefetcher& operator=(const BatchPrefetcher&) = delete;

  /// The next batch (one tensor per field), or nullopt at the end of the epoch.
  std::optional<std::vector<Tensor>> next();
  int64_t num_batches() const { return num_batches_; }

 private:
  void run();

  std::vector<Tensor> fields_;
  Tensor indices_;
  int64_t batch_size_, num_batches_, depth_;
  BatchMemory mem_;
  int64_t consumed_ = 0;
  ProcessLocal<std::mutex> mu_;  // Note [Threads across fork]
  ProcessLocal<std::condition_variable> cv_;
  std::deque<std::vector<Tensor>> ready_;
  std::exception_ptr error_;
  int64_t error_at_ = -1;
  bool stop_ = false;
  OwnedThread thread_;
};

}  // namespace ember::data
