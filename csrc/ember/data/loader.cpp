#include "ember/data/loader.h"

#include <cstring>

#include "ember/data/pinned.h"
#include "ember/data/shared_memory.h"
#include "ember/ops/index.h"
#include "ember/ops/join.h"

namespace ember::data {
namespace {

// True when dims 1.. of `t` are laid out contiguously (a row is one block).
bool rows_contiguous(const Tensor& t) {
  int64_t expected = 1;
  for (int64_t d = t.dim() - 1; d >= 1; --d) {
    if (t.sizes()[d] != 1 && t.strides()[d] != expected) return false;
    expected = checked_mul(expected, t.sizes()[d], "gather_rows");
  }
  return true;
}

Tensor alloc(const Shape& sizes, DType dtype, BatchMemory mem) {
  switch (mem) {
    case BatchMemory::Shared:
      return empty_shared(sizes, dtype);
    case BatchMemory::Pinned:
      return empty_pinned(sizes, dtype);
    default:
      return empty(sizes, dtype);
  }
}

}  // namespace

Tensor gather_rows(const Tensor& src, const Tensor& idx, BatchMemory mem) {
  EMBER_CHECK(src.dim() >= 1,
              "gather_rows: expected a tensor with at least one dimension, got a 0-d tensor");
  EMBER_CHECK(src.device().type == DeviceType::CPU && idx.device().type == DeviceType::CPU,
              "gather_rows: expected CPU tensors");
  EMBER_CHECK_TYPE(idx.dtype() == DType::Int64 && idx.dim() == 1,
                   "gather_rows: indices must be a 1-D int64 tensor, got ", dtype_name(idx.dtype()),
                   " of shape ", shape_str(idx.sizes()));
  const int64_t n = src.sizes()[0], b = idx.sizes()[0];
  Shape out_sizes = src.sizes();
  out_sizes[0] = b;
  if (!rows_contiguous(src)) {
    Tensor g = index_select(src, 0, idx);
    Tensor out = alloc(out_sizes, src.dtype(), mem);
    // index_select's result is contiguous: one copy into the output.
    if (g.numel()) std::memcpy(out.data_ptr(), g.data_ptr(), size_t(g.numel()) * g.element_size());
    return out;
  }
  Tensor out = alloc(out_sizes, src.dtype(), mem);
  const int64_t es = src.element_size();
  const int64_t row_elems = b ? out.numel() / b : 0;
  const size_t row_bytes = size_t(checked_mul(row_elems, es, "gather_rows"));
  // Any in-range row start lies inside the source's (valid) extent, so the offset
  // products below are bounded by the storage size.
  const int64_t stride0_bytes = checked_mul(src.strides()[0], es, "gather_rows");
  const char* base = src.data_ptr();
  char* dst = out.data_ptr();
  const int64_t* ip = idx.data<int64_t>();
  const int64_t istride = idx.strides()[0];
  for (int64_t i = 0; i < b; ++i) {
    int64_t j = ip[i * istride];
    if (j < 0) j += n;
    EMBER_CHECK_INDEX(j >= 0 && j < n, "index ", ip[i * istride],
                      " is out of bounds for dimension 0 with size ", n);
    std::memcpy(dst + size_t(i) * row_bytes, base + j * stride0_bytes, row_bytes);
  }
  return out;
}

Tensor stack_batch(const std::vector<Tensor>& tensors, bool shared) {
  EMBER_CHECK(!tensors.empty(), "stack expects a non-empty TensorList");
  if (!shared) return stack(tensors, 0);
  const Tensor& t0 = tensors[0];
  bool simple = t0.device().type == DeviceType::CPU;
  for (const Tensor& t : tensors) {
    simple = simple && t.dtype() == t0.dtype() && t.sizes() == t0.sizes() && t.is_contiguous() &&
             t.device().type == DeviceType::CPU && !t.impl()->requires_grad;
  }
  if (!simple) {  // ember's stack checks and promotes; then move the result into shared memory
    Tensor r = stack(tensors, 0);
    share_memory_(r);
    return r;
  }
  Shape sizes;
  sizes.push_back(int64_t(tensors.size()));
  for (int64_t s : t0.sizes()) sizes.push_back(s);
  Tensor out = empty_shared(sizes, t0.dtype());
  const size_t bytes = size_t(t0.numel()) * t0.element_size();
  char* dst = out.data_ptr();
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (bytes) std::memcpy(dst + i * bytes, tensors[i].data_ptr(), bytes);
  }
  return out;
}

BatchPrefetcher::BatchPrefetcher(std::vector<Tensor> fields, Tensor indices, int64_t batch_size,
                                 bool drop_last, int64_t depth, bool pinned)
    : fields_(std::move(fields)),
      indices_(std::move(indices)),
      batch_size_(batch_size),
      depth_(depth),
      mem_(pinned ? BatchMemory::Pinned : BatchMemory::Normal) {
  EMBER_CHECK_VALUE(batch_size > 0, "BatchPrefetcher: batch_size should be positive, got ",
                    batch_size);
  EMBER_CHECK_VALUE(depth > 0, "BatchPrefetcher: depth should be positive, got ", depth);
  EMBER_CHECK_TYPE(indices_.dtype() == DType::Int64 && indices_.dim() == 1,
                   "BatchPrefetcher: indices must be a 1-D int64 tensor");
  for (const Tensor& f : fields_) {
    EMBER_CHECK(f.dim() >= 1 && f.device().type == DeviceType::CPU,
                "BatchPrefetcher: every field must be a CPU tensor with at least one dimension");
  }
  const int64_t n = indices_.sizes()[0];
  num_batches_ = drop_last ? n / batch_size : (n + batch_size - 1) / batch_size;
  thread_ = OwnedThread([this] { run(); });
}

BatchPrefetcher::~BatchPrefetcher() {
  // In a fork()ed child the thread does not exist and mu_ may have been held by it at the
  // fork: nothing to stop (Note [Threads across fork]).
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> g(*mu_);
    stop_ = true;
  }
  cv_->notify_all();
  if (thread_.joinable()) thread_.join();
}

void BatchPrefetcher::run() {
  const int64_t n = indices_.sizes()[0];
  for (int64_t bi = 0; bi < num_batches_; ++bi) {
    {
      std::unique_lock<std::mutex> lk(*mu_);
      cv_->wait(lk, [&] { return stop_ || int64_t(ready_.size()) < depth_; });
      if (stop_) return;
    }
    std::vector<Tensor> batch;
    try {
      const int64_t start = bi * batch_size_;
      const int64_t len = std::min(batch_size_, n - start);
      Tensor idx = make_view(indices_, Shape{len}, Shape{indices_.strides()[0]},
                             indices_.storage_offset() + start * indices_.strides()[0]);
      batch.reserve(fields_.size());
      for (const Tensor& f : fields_) batch.push_back(gather_rows(f, idx, mem_));
    } catch (...) {
      std::lock_guard<std::mutex> g(*mu_);
      error_ = std::current_exception();
      error_at_ = bi;
      cv_->notify_all();
      return;
    }
    std::lock_guard<std::mutex> g(*mu_);
    ready_.push_back(std::move(batch));
    cv_->notify_all();
  }
}

std::optional<std::vector<Tensor>> BatchPrefetcher::next() {
  std::unique_lock<std::mutex> lk(*mu_);
  if (consumed_ >= num_batches_) return std::nullopt;
  cv_->wait(lk, [&] { return !ready_.empty() || (error_ && error_at_ == consumed_); });
  if (ready_.empty()) {
    consumed_ = num_batches_;  // the epoch ends with the error
    std::rethrow_exception(error_);
  }
  std::vector<Tensor> b = std::move(ready_.front());
  ready_.pop_front();
  ++consumed_;
  cv_->notify_all();
  return b;
}

}  // namespace ember::data
