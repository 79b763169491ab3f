// Shared-memory storage for DataLoader workers: a Storage whose bytes live in
// an anonymous memfd, so a batch crosses a process boundary by passing the fd.
#pragma once
#include <cstddef>

#include "ember/core/tensor.h"

namespace ember::data {

// Note [Shared-memory storage]
// A shared storage is an mmap(MAP_SHARED) of a memfd sized with posix_fallocate,
// so that exhausting memory fails here with a clear error instead of a SIGBUS on
// first touch. The storage keeps its fd open (to be shared again; torch's
// file_descriptor strategy does the same) and closes it when freed. Pickling
// (python/ember/utils/data/_utils/reduction.py) sends the fd over a Unix socket;
// the receiver maps the same pages: no bytes are copied, and nothing outlives
// the processes holding it (no names in /dev/shm to leak).

/// A new contiguous CPU tensor in shared memory.
Tensor empty_shared(const Shape& sizes, DType dtype);
/// Moves `t`'s storage into shared memory in place (every view sees it); no-op when
/// it is already shared or on a non-CPU device.
void share_memory_(const Tensor& t);
/// True when `t`'s storage is shared memory made here.
bool is_shared(const Tensor& t);
/// The fd behind a shared tensor's storage (owned by the storage).
int shared_fd(const Tensor& t);
/// A tensor over a shared storage received as `fd` (taken over: closed with the storage).
Tensor from_shared_fd(int fd, size_t nbytes, DType dtype, const Shape& sizes, const Shape& strides,
                      int64_t offset);

}  // namespace ember::data
