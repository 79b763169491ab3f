#include "ember/data/shared_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ember::data {
namespace {

struct ShmCtx {
  void* ptr;
  size_t map_bytes;
  int fd;
};

void shm_free(void* c) {
  auto* ctx = static_cast<ShmCtx*>(c);
  munmap(ctx->ptr, ctx->map_bytes);
  if (ctx->fd >= 0) close(ctx->fd);
  delete ctx;
}

// Maps `fd` (map_bytes long) and wraps it as a DataPtr that owns both.
DataPtr map_fd(int fd, size_t map_bytes) {
  void* p = mmap(nullptr, map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    int err = errno;
    close(fd);
    EMBER_CHECK(false, "shared memory: mmap of ", map_bytes, " bytes failed: ", std::strerror(err));
  }
  return DataPtr{p, new ShmCtx{p, map_bytes, fd}, &shm_free};
}

DataPtr alloc_shared(size_t nbytes) {
  size_t map_bytes = nbytes ? nbytes : 1;  // mmap rejects length 0
  int fd = memfd_create("ember_shm", MFD_CLOEXEC);
  EMBER_CHECK(fd >= 0, "shared memory: memfd_create failed: ", std::strerror(errno));
  int rc = posix_fallocate(fd, 0, off_t(map_bytes));
  if (rc != 0) {
    close(fd);
    EMBER_CHECK(
        false, "unable to allocate ", map_bytes, " bytes of shared memory (", std::strerror(rc),
        "). DataLoader workers hand batches over in shared memory (memfd): free some memory, "
        "lower batch_size, prefetch_factor or num_workers, or use num_workers=0.");
  }
  return map_fd(fd, map_bytes);
}

}  // namespace

Tensor empty_shared(const Shape& sizes, DType dtype) {
  int64_t numel = checked_numel(sizes);
  size_t nbytes = size_t(checked_mul(numel, int64_t(element_size(dtype)), "empty_shared"));
  DataPtr d = alloc_shared(nbytes);
  return from_blob(d, nbytes, Device(), dtype, sizes, contiguous_strides(sizes), 0);
}

bool is_shared(const Tensor& t) {
  return t.defined() && t.storage() && t.storage()->data.deleter == &shm_free;
}

void share_memory_(const Tensor& t) {
  EMBER_CHECK(t.defined(), "share_memory_: undefined tensor");
  if (t.device().type != DeviceType::CPU || is_shared(t)) return;
  StorageImpl& s = *t.storage();
  DataPtr fresh = alloc_shared(s.nbytes);
  if (s.nbytes) std::memcpy(fresh.ptr, s.data.ptr, s.nbytes);
  DataPtr old = s.data;
  s.data = fresh;
  if (old.deleter) old.deleter(old.ctx);
}

int shared_fd(const Tensor& t) {
  EMBER_CHECK(is_shared(t), "shared_fd: the tensor is not in shared memory (call share_memory_())");
  return static_cast<ShmCtx*>(t.storage()->data.ctx)->fd;
}

Tensor from_shared_fd(int fd, size_t nbytes, DType dtype, const Shape& sizes, const Shape& strides,
                      int64_t offset) {
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int err = errno;
    close(fd);
    EMBER_CHECK(false, "shared memory: fstat failed on a received fd: ", std::strerror(err));
  }
  size_t map_bytes = nbytes ? nbytes : 1;
  if (size_t(st.st_size) < map_bytes) {
    close(fd);
    EMBER_CHECK(false, "shared memory: the received segment has ", int64_t(st.st_size),
                " bytes but the tensor needs ", nbytes);
  }
  DataPtr d = map_fd(fd, map_bytes);
  return from_blob(d, nbytes, Device(), dtype, sizes, strides, offset);
}

}  // namespace ember::data
