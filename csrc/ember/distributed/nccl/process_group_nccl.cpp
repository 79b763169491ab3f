// The "nccl" backend: ember's process group on NCCL for CUDA tensors, compiled into _C_cuda
// and registered when that module loads. See Note [NCCL at run time].
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <list>
#include <mutex>
#include <thread>

#include "ember/backends/cuda/cuda_backend.h"
#include "ember/core/owned_thread.h"
#include "ember/distributed/process_group.h"
#include "ember/ops/factory.h"
#include "ember/ops/join.h"
#include "ember/ops/ops.h"
#include "ember/ops/view.h"

#if defined(__has_include)
#if __has_include(<nccl.h>)
#include <nccl.h>
#define EMBER_HAVE_NCCL_H 1
#endif
#endif

namespace ember::distributed {

// Note [NCCL at run time]
// NCCL is never linked: libnccl.so.2 (from the nvidia-nccl-cu* wheel, which ember.cuda preloads,
// or the CUDA toolkit) is opened with dlopen when the first "nccl" group is made, and its
// entry points are resolved into a table; nccl.h is included for its types only (without it
// at build time the backend is compiled out and "nccl" is not registered). A group owns one
// communicator (rank 0 makes the unique id and publishes it through the store) and one
// communication stream on its device. An operation records an event on the caller's current
// stream, makes the communication stream wait for it, enqueues the NCCL call and records an
// end event: Work.wait() makes the current stream wait for that event (the host does not
// block), as in PyTorch. The Work keeps its tensors alive until a watchdog thread sees the end
// event complete; the watchdog also finishes the Work for Futures and, past the group's
// timeout, aborts the communicator and fails the Work with Note [Naming the failing rank]'s
// explanation. Results that need reshaping (all_gather's list, gather, scatter, all_to_all)
// are copied on the current stream after it waited for the end event.

#ifdef EMBER_HAVE_NCCL_H

namespace {

struct NcclApi {
  bool ok = false;
  std::string error;
  decltype(&ncclGetVersion) GetVersion = nullptr;
  decltype(&ncclGetUniqueId) GetUniqueId = nullptr;
  decltype(&ncclCommInitRank) CommInitRank = nullptr;
  decltype(&ncclCommDestroy) CommDestroy = nullptr;
  decltype(&ncclCommAbort) CommAbort = nullptr;
  decltype(&ncclCommGetAsyncError) CommGetAsyncError = nullptr;
  decltype(&ncclGetErrorString) GetErrorString = nullptr;
  decltype(&ncclAllReduce) AllReduce = nullptr;
  decltype(&ncclBroadcast) Broadcast = nullptr;
  decltype(&ncclReduce) Reduce = nullptr;
  decltype(&ncclAllGather) AllGather = nullptr;
  decltype(&ncclReduceScatter) ReduceScatter = nullptr;
  decltype(&ncclSend) Send = nullptr;
  decltype(&ncclRecv) Recv = nullptr;
  decltype(&ncclGroupStart) GroupStart = nullptr;
  decltype(&ncclGroupEnd) GroupEnd = nullptr;
};

const NcclApi& nccl() {
  static NcclApi api = [] {
    NcclApi a;
    void* h = nullptr;
    for (const char* name : {"libnccl.so.2", "libnccl.so"}) {
      h = dlopen(name, RTLD_NOW | RTLD_GLOBAL);
      if (h) break;
    }
    if (!h) {
      a.error = "libnccl.so.2 was not found (pip install nvidia-nccl-cu13, or install NCCL)";
      return a;
    }
    bool all = true;
    auto sym = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, name));
      if (!fn) {
        all = false;
        a.error = std::string("libnccl lacks ") + name;
      }
    };
    sym(a.GetVersion, "ncclGetVersion");
    sym(a.GetUniqueId, "ncclGetUniqueId");
    sym(a.CommInitRank, "ncclCommInitRank");
    sym(a.CommDestroy, "ncclCommDestroy");
    sym(a.CommAbort, "ncclCommAbort");
    sym(a.CommGetAsyncError, "ncclCommGetAsyncError");
    sym(a.GetErrorString, "ncclGetErrorString");
    sym(a.AllReduce, "ncclAllReduce");
    sym(a.Broadcast, "ncclBroadcast");
    sym(a.Reduce, "ncclReduce");
    sym(a.AllGather, "ncclAllGather");
    sym(a.ReduceScatter, "ncclReduceScatter");
    sym(a.Send, "ncclSend");
    sym(a.Recv, "ncclRecv");
    sym(a.GroupStart, "ncclGroupStart");
    sym(a.GroupEnd, "ncclGroupEnd");
    a.ok = all;
    return a;
  }();
  return api;
}

void check_nccl(ncclResult_t r, const char* what) {
  if (r != ncclSuccess)
    raise_dist(DistErrorKind::Backend, "NCCL error in ", what, ": ", nccl().GetErrorString(r));
}

void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    raise_dist(DistErrorKind::Backend, "CUDA error in ", what, ": ", cudaGetErrorString(e));
}

ncclDataType_t nccl_dtype(DType dt, const char* op) {
  switch (dt) {
    case DType::Bool:
    case DType::UInt8:
      return ncclUint8;
    case DType::Int8:
      return ncclInt8;
    case DType::Int32:
      return ncclInt32;
    case DType::Int64:
      return ncclInt64;
    case DType::Float16:
      return ncclFloat16;
    case DType::BFloat16:
      return ncclBfloat16;
    case DType::Float32:
      return ncclFloat32;
    case DType::Float64:
      return ncclFloat64;
    default:
      raise(ErrorKind::Type, op, ": the nccl backend does not support dtype ", dtype_name(dt));
  }
}

ncclRedOp_t nccl_op(ReduceOp op, DType dt, const char* name) {
  if (dt == DType::Bool && (op == ReduceOp::SUM || op == ReduceOp::AVG)) return ncclMax;  // or
  if (dt == DType::Bool && op == ReduceOp::PRODUCT) return ncclMin;                       // and
  switch (op) {
    case ReduceOp::SUM:
      return ncclSum;
    case ReduceOp::PRODUCT:
      return ncclProd;
    case ReduceOp::MIN:
      return ncclMin;
    case ReduceOp::MAX:
      return ncclMax;
    case ReduceOp::AVG:
      return ncclAvg;
    default:
      raise(ErrorKind::Value, name, ": Cannot use ReduceOp.", reduce_op_name(op), " with NCCL");
  }
}

struct DeviceGuard {
  int prev = -1;
  explicit DeviceGuard(int d) {
    cudaGetDevice(&prev);
    if (prev != d) cudaSetDevice(d);
  }
  ~DeviceGuard() {
    int cur = -1;
    cudaGetDevice(&cur);
    if (prev >= 0 && cur != prev) cudaSetDevice(prev);
  }
};

struct NcclWork : Work {
  cudaEvent_t end = nullptr;
  int device = 0;
  bool blocking = false;  // barrier: the host waits too
  int64_t seq = 0;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  std::vector<Tensor> keep;
  std::function<void()> after;  // post-processing on the current stream, once
  bool after_done = false;
  NcclWork(std::string op, std::vector<Tensor> outs) : Work(std::move(op), std::move(outs)) {}
  ~NcclWork() override {
    if (end) cudaEventDestroy(end);
  }
  bool wait(Millis timeout) override {
    {
      std::lock_guard<std::mutex> g(mu_);
      if (error_) std::rethrow_exception(error_);
    }
    DeviceGuard guard(device);
    if (timeout.count() > 0 || blocking) {
      auto deadline = std::chrono::steady_clock::now() + timeout;
      while (cudaEventQuery(end) == cudaErrorNotReady) {
        {
          std::lock_guard<std::mutex> g(mu_);
          if (error_) std::rethrow_exception(error_);
        }
        if (timeout.count() > 0 && std::chrono::steady_clock::now() > deadline)
          raise_dist(DistErrorKind::Backend, "Work.wait: ", op_, " did not complete within ",
                     timeout.count(), " ms");
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    }
    check_cuda(cudaStreamWaitEvent(cuda::current_stream(device), end, 0), "Work.wait");
    std::function<void()> f;
    {
      std::lock_guard<std::mutex> g(mu_);
      if (!after_done) {
        after_done = true;
        f = std::move(after);
      }
    }
    if (f) f();
    return true;
  }
  void synchronize() override { wait(Millis(0)); }
};

class ProcessGroupNCCL : public ProcessGroup {
 public:
  ProcessGroupNCCL(std::shared_ptr<Store> store, int rank, int size, const BackendOptions& o)
      : ProcessGroup(std::move(store), rank, size, o.timeout) {
    const NcclApi& api = nccl();
    if (!api.ok) raise_dist(DistErrorKind::Backend, "the nccl backend is unavailable: ", api.error);
    device_ = o.device_index >= 0 ? o.device_index : cuda::current_device();
    EMBER_CHECK(device_ < cuda::device_count(), "nccl: device ", device_, " does not exist (",
                cuda::device_count(), " visible)");
    DeviceGuard guard(device_);
    ncclUniqueId id;
    if (rank == 0) {
      check_nccl(api.GetUniqueId(&id), "ncclGetUniqueId");
      store_->set("nccl_unique_id", Bytes(reinterpret_cast<uint8_t*>(&id),
                                          reinterpret_cast<uint8_t*>(&id) + sizeof(id)));
    } else {
      Bytes b = store_->get("nccl_unique_id");
      EMBER_CHECK(b.size() == sizeof(id), "nccl: malformed unique id in the store");
      std::memcpy(&id, b.data(), sizeof(id));
    }
    check_nccl(api.CommInitRank(&comm_, size, id, rank), "ncclCommInitRank");
    check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    int v = 0;
    api.GetVersion(&v);
    address_ = "cuda:" + std::to_string(device_) + " (NCCL " + std::to_string(v) + ")";
    watchdog_ = OwnedThread([this] { watch(); });
    start_responder();
  }
  ~ProcessGroupNCCL() override {
    stop_ = true;
    if (watchdog_.joinable()) watchdog_.join();
    shutdown();
    if (comm_) nccl().CommDestroy(comm_);
    if (stream_) cudaStreamDestroy(stream_);
  }
  std::string backend_name() const override { return "nccl"; }
  std::string engine_address() const override { return address_; }

  std::shared_ptr<Work> allreduce(const Tensor& t, const OpOptions& o) override {
    check(t, "all_reduce");
    auto st = std::make_shared<Staged>(t);
    ncclRedOp_t op = nccl_op(o.op, t.dtype(), "all_reduce");
    ncclDataType_t dt = nccl_dtype(t.dtype(), "all_reduce");
    return enqueue(
        "all_reduce", {t}, {st->buf},
        [=](cudaStream_t s) {
          check_nccl(nccl().AllReduce(st->buf.data_ptr(), st->buf.data_ptr(), size_t(t.numel()), dt,
                                      op, comm_, s),
                     "ncclAllReduce");
        },
        [st] { st->write_back(); });
  }
  std::shared_ptr<Work> broadcast(const Tensor& t, const OpOptions& o) override {
    check(t, "broadcast");
    check_rank(o.root, size_, "broadcast", "root");
    auto st = std::make_shared<Staged>(t);
    ncclDataType_t dt = nccl_dtype(t.dtype(), "broadcast");
    int root = o.root;
    return enqueue(
        "broadcast", {t}, {st->buf},
        [=](cudaStream_t s) {
          check_nccl(nccl().Broadcast(st->buf.data_ptr(), st->buf.data_ptr(), size_t(t.numel()), dt,
                                      root, comm_, s),
                     "ncclBroadcast");
        },
        [st] { st->write_back(); });
  }
  std::shared_ptr<Work> reduce(const Tensor& t, const OpOptions& o) override {
    check(t, "reduce");
    check_rank(o.root, size_, "reduce", "root");
    auto st = std::make_shared<Staged>(t);
    ncclRedOp_t op = nccl_op(o.op, t.dtype(), "reduce");
    ncclDataType_t dt = nccl_dtype(t.dtype(), "reduce");
    int root = o.root;
    return enqueue(
        "reduce", {t}, {st->buf},
        [=](cudaStream_t s) {
          check_nccl(nccl().Reduce(st->buf.data_ptr(), st->buf.data_ptr(), size_t(t.numel()), dt,
                                   op, root, comm_, s),
                     "ncclReduce");
        },
        [st] { st->write_back(); });
  }
  std::shared_ptr<Work> allgather(const std::vector<Tensor>& outs, const Tensor& in,
                                  const OpOptions& o) override {
    check(in, "all_gather");
    EMBER_CHECK_VALUE(int(outs.size()) == size_,
                      "all_gather: the output list must have one "
                      "tensor per rank (",
                      size_, "), got ", outs.size());
    check_same_meta(outs, in, "all_gather", "tensor_list");
    Tensor src = contiguous(in);
    Tensor flat = empty({in.numel() * size_}, in.dtype(), in.device());
    ncclDataType_t dt = nccl_dtype(in.dtype(), "all_gather");
    int64_t n = in.numel();
    return enqueue(
        "all_gather", outs, {src, flat},
        [=](cudaStream_t s) {
          check_nccl(nccl().AllGather(src.data_ptr(), flat.data_ptr(), size_t(n), dt, comm_, s),
                     "ncclAllGather");
        },
        [=] {
          for (int r = 0; r < size_; ++r)
            copy_(outs[r], reshape(narrow(flat, 0, r * n, n), outs[r].sizes()));
        });
  }
  std::shared_ptr<Work> allgather_into_tensor(const Tensor& out, const Tensor& in,
                                              const OpOptions& o) override {
    check(in, "all_gather_into_tensor");
    check(out, "all_gather_into_tensor");
    EMBER_CHECK_VALUE(out.numel() == in.numel() * size_ && out.dtype() == in.dtype(),
                      "output tensor size must be equal to world_size times input tensor size");
    Tensor src = contiguous(in);
    auto st = std::make_shared<Staged>(out);
    ncclDataType_t dt = nccl_dtype(in.dtype(), "all_gather_into_tensor");
    int64_t n = in.numel();
    return enqueue(
        "all_gather_into_tensor", {out}, {src, st->buf},
        [=](cudaStream_t s) {
          check_nccl(nccl().AllGather(src.data_ptr(), st->buf.data_ptr(), size_t(n), dt, comm_, s),
                     "ncclAllGather");
        },
        [st] { st->write_back(); });
  }
  std::shared_ptr<Work> gather(const std::vector<Tensor>& outs, const Tensor& in,
                               const OpOptions& o) override {
    check(in, "gather");
    check_rank(o.root, size_, "gather", "root");
    if (rank_ == o.root) check_same_meta(outs, in, "gather", "gather_list");
    Tensor src = contiguous(in);
    int root = o.root;
    int64_t n = in.numel();
    Tensor flat = rank_ == root ? empty({n * size_}, in.dtype(), in.device()) : Tensor();
    ncclDataType_t dt = nccl_dtype(in.dtype(), "gather");
    size_t esz = size_t(in.element_size());
    return enqueue(
        "gather", outs, {src, flat},
        [=](cudaStream_t s) {
          check_nccl(nccl().GroupStart(), "ncclGroupStart");
          if (rank_ == root) {
            for (int r = 0; r < size_; ++r)
              check_nccl(
                  nccl().Recv(flat.data_ptr() + size_t(r * n) * esz, size_t(n), dt, r, comm_, s),
                  "ncclRecv");
          }
          check_nccl(nccl().Send(src.data_ptr(), size_t(n), dt, root, comm_, s), "ncclSend");
          check_nccl(nccl().GroupEnd(), "ncclGroupEnd");
        },
        [=] {
          if (rank_ == root)
            for (int r = 0; r < size_; ++r)
              copy_(outs[r], reshape(narrow(flat, 0, r * n, n), outs[r].sizes()));
        });
  }
  std::shared_ptr<Work> scatter(const Tensor& out, const std::vector<Tensor>& ins,
                                const OpOptions& o) override {
    check(out, "scatter");
    check_rank(o.root, size_, "scatter", "root");
    if (rank_ == o.root) check_same_meta(ins, out, "scatter", "scatter_list");
    std::vector<Tensor> srcs;
    for (auto& t : ins) srcs.push_back(contiguous(t));
    auto st = std::make_shared<Staged>(out);
    int root = o.root;
    ncclDataType_t dt = nccl_dtype(out.dtype(), "scatter");
    size_t n = size_t(out.numel());
    std::vector<Tensor> keep = srcs;
    keep.push_back(st->buf);
    return enqueue(
        "scatter", {out}, keep,
        [=](cudaStream_t s) {
          check_nccl(nccl().GroupStart(), "ncclGroupStart");
          if (rank_ == root)
            for (int r = 0; r < size_; ++r)
              check_nccl(nccl().Send(srcs[r].data_ptr(), n, dt, r, comm_, s), "ncclSend");
          check_nccl(nccl().Recv(st->buf.data_ptr(), n, dt, root, comm_, s), "ncclRecv");
          check_nccl(nccl().GroupEnd(), "ncclGroupEnd");
        },
        [st] { st->write_back(); });
  }
  std::shared_ptr<Work> reduce_scatter(const Tensor& out, const std::vector<Tensor>& ins,
                                       const OpOptions& o) override {
    check(out, "reduce_scatter");
    check_same_meta(ins, out, "reduce_scatter", "input_list");
    EMBER_CHECK_VALUE(int(ins.size()) == size_,
                      "reduce_scatter: the input list must have one "
                      "tensor per rank (",
                      size_, "), got ", ins.size());
    std::vector<Tensor> flat;
    for (auto& t : ins) flat.push_back(reshape(contiguous(t), {t.numel()}));
    return reduce_scatter_impl("reduce_scatter", out, cat(flat, 0), o);
  }
  std::shared_ptr<Work> reduce_scatter_tensor(const Tensor& out, const Tensor& in,
                                              const OpOptions& o) override {
    check(out, "reduce_scatter_tensor");
    check(in, "reduce_scatter_tensor");
    EMBER_CHECK_VALUE(in.numel() == out.numel() * size_ && in.dtype() == out.dtype(),
                      "input tensor must be the same size as output size times world size");
    return reduce_scatter_impl("reduce_scatter_tensor", out, reshape(contiguous(in), {in.numel()}),
                               o);
  }
  std::shared_ptr<Work> alltoall_base(const Tensor& out, const Tensor& in,
                                      const std::vector<int64_t>& out_splits,
                                      const std::vector<int64_t>& in_splits,
                                      const OpOptions& o) override {
    check(out, "all_to_all_single");
    check(in, "all_to_all_single");
    auto counts = [&](const Tensor& t, const std::vector<int64_t>& sp) {
      int64_t rows = t.dim() ? t.size(0) : 1, row = rows ? t.numel() / rows : 0;
      std::vector<int64_t> c(size_t(size_), 0);
      for (int r = 0; r < size_; ++r) c[r] = (sp.empty() ? rows / size_ : sp.at(size_t(r))) * row;
      return c;
    };
    return alltoallv("all_to_all_single", {out}, {in}, counts(in, in_splits),
                     counts(out, out_splits));
  }
  std::shared_ptr<Work> alltoall(const std::vector<Tensor>& outs, const std::vector<Tensor>& ins,
                                 const OpOptions& o) override {
    EMBER_CHECK_VALUE(int(outs.size()) == size_ && int(ins.size()) == size_,
                      "all_to_all: one tensor per rank in each list");
    std::vector<int64_t> ic, oc;
    for (int r = 0; r < size_; ++r) {
      check(ins[r], "all_to_all");
      check(outs[r], "all_to_all");
      ic.push_back(ins[r].numel());
      oc.push_back(outs[r].numel());
    }
    return alltoallv("all_to_all", outs, ins, ic, oc);
  }
  std::shared_ptr<Work> send(const Tensor& t, int dst, int) override {
    check(t, "send");
    check_rank(dst, size_, "send", "destination");
    Tensor src = contiguous(t);
    ncclDataType_t dt = nccl_dtype(t.dtype(), "send");
    return enqueue(
        "send", {t}, {src},
        [=](cudaStream_t s) {
          check_nccl(nccl().Send(src.data_ptr(), size_t(src.numel()), dt, dst, comm_, s),
                     "ncclSend");
        },
        nullptr, /*collective=*/false);
  }
  std::shared_ptr<Work> recv(const Tensor& t, int src, int) override {
    check(t, "recv");
    EMBER_CHECK_VALUE(src >= 0, "recv: the nccl backend needs a source rank (no recv from any)");
    check_rank(src, size_, "recv", "source");
    auto st = std::make_shared<Staged>(t);
    ncclDataType_t dt = nccl_dtype(t.dtype(), "recv");
    auto w = enqueue(
        "recv", {t}, {st->buf},
        [=](cudaStream_t s) {
          check_nccl(nccl().Recv(st->buf.data_ptr(), size_t(st->buf.numel()), dt, src, comm_, s),
                     "ncclRecv");
        },
        [st] { st->write_back(); }, /*collective=*/false);
    w->set_source_rank(src);
    return w;
  }
  std::shared_ptr<Work> barrier(const OpOptions& o) override {
    Tensor one = ones({1}, DType::Float32, Device(DeviceType::CUDA, device_));
    auto w = std::static_pointer_cast<NcclWork>(enqueue(
        "barrier", {}, {one},
        [=](cudaStream_t s) {
          check_nccl(
              nccl().AllReduce(one.data_ptr(), one.data_ptr(), 1, ncclFloat32, ncclSum, comm_, s),
              "ncclAllReduce");
        },
        nullptr));
    w->blocking = true;
    return w;
  }

 private:
  void check(const Tensor& t, const char* op) {
    check_tensor(t, op);
    EMBER_CHECK(t.device().is_cuda(), op, ": the nccl backend takes CUDA tensors, got one on ",
                t.device().str(), " (use the gloo backend for CPU tensors)");
    int idx = t.device().index < 0 ? cuda::current_device() : t.device().index;
    EMBER_CHECK(idx == device_, op, ": the tensor is on cuda:", idx,
                " but this process's group "
                "uses cuda:",
                device_,
                " (init_process_group(device_id=...) or "
                "ember.cuda.set_device picks it)");
  }

  std::shared_ptr<Work> enqueue(const char* op, std::vector<Tensor> outs, std::vector<Tensor> keep,
                                std::function<void(cudaStream_t)> body, std::function<void()> after,
                                bool collective = true) {
    int64_t seq = collective ? issue(op) : 0;
    EMBER_CHECK(!closed_, op, ": the process group was destroyed");
    DeviceGuard guard(device_);
    auto w = std::make_shared<NcclWork>(op, outs);
    w->device = device_;
    w->keep = std::move(keep);
    w->keep.insert(w->keep.end(), outs.begin(), outs.end());
    w->after = std::move(after);
    cudaEvent_t start;
    check_cuda(cudaEventCreateWithFlags(&start, cudaEventDisableTiming), "cudaEventCreate");
    check_cuda(cudaEventCreateWithFlags(&w->end, cudaEventDisableTiming), "cudaEventCreate");
    cudaStream_t cur = cuda::current_stream(device_);
    check_cuda(cudaEventRecord(start, cur), "cudaEventRecord");
    check_cuda(cudaStreamWaitEvent(stream_, start, 0), "cudaStreamWaitEvent");
    cudaEventDestroy(start);
    {
      std::lock_guard<std::mutex> g(comm_mu_);
      body(stream_);
    }
    check_cuda(cudaEventRecord(w->end, stream_), "cudaEventRecord");
    w->seq = seq;
    {
      std::lock_guard<std::mutex> g(works_mu_);
      works_.push_back(w);
    }
    return w;
  }

  std::shared_ptr<Work> reduce_scatter_impl(const char* op, const Tensor& out, Tensor flat,
                                            const OpOptions& o) {
    auto st = std::make_shared<Staged>(out);
    ncclRedOp_t rop = nccl_op(o.op, out.dtype(), op);
    ncclDataType_t dt = nccl_dtype(out.dtype(), op);
    size_t n = size_t(out.numel());
    return enqueue(
        op, {out}, {flat, st->buf},
        [=](cudaStream_t s) {
          check_nccl(
              nccl().ReduceScatter(flat.data_ptr(), st->buf.data_ptr(), n, dt, rop, comm_, s),
              "ncclReduceScatter");
        },
        [st] { st->write_back(); });
  }

  std::shared_ptr<Work> alltoallv(const char* op, std::vector<Tensor> outs, std::vector<Tensor> ins,
                                  std::vector<int64_t> ic, std::vector<int64_t> oc) {
    std::vector<Tensor> flat_in;
    for (auto& t : ins) flat_in.push_back(reshape(contiguous(t), {t.numel()}));
    Tensor src = flat_in.size() == 1 ? flat_in[0] : cat(flat_in, 0);
    int64_t total = 0;
    for (auto c : oc) total += c;
    Tensor dst = empty({total}, ins[0].dtype(), ins[0].device());
    ncclDataType_t dt = nccl_dtype(ins[0].dtype(), op);
    size_t esz = size_t(ins[0].element_size());
    return enqueue(
        op, outs, {src, dst},
        [=](cudaStream_t s) {
          check_nccl(nccl().GroupStart(), "ncclGroupStart");
          int64_t io = 0, oo = 0;
          for (int r = 0; r < size_; ++r) {
            check_nccl(
                nccl().Send(src.data_ptr() + size_t(io) * esz, size_t(ic[r]), dt, r, comm_, s),
                "ncclSend");
            check_nccl(
                nccl().Recv(dst.data_ptr() + size_t(oo) * esz, size_t(oc[r]), dt, r, comm_, s),
                "ncclRecv");
            io += ic[r];
            oo += oc[r];
          }
          check_nccl(nccl().GroupEnd(), "ncclGroupEnd");
        },
        [=] {
          if (outs.size() == 1) {
            copy_(outs[0], reshape(dst, outs[0].sizes()));
            return;
          }
          int64_t off = 0;
          for (size_t r = 0; r < outs.size(); ++r) {
            copy_(outs[r], reshape(narrow(dst, 0, off, oc[r]), outs[r].sizes()));
            off += oc[r];
          }
        });
  }

  // Finishes completed works (Futures) and fails those past the timeout.
  void watch() {
    while (!stop_) {
      std::vector<std::shared_ptr<NcclWork>> done, late;
      {
        std::lock_guard<std::mutex> g(works_mu_);
        auto now = std::chrono::steady_clock::now();
        for (auto it = works_.begin(); it != works_.end();) {
          cudaError_t q = cudaEventQuery((*it)->end);
          if (q == cudaSuccess) {
            done.push_back(*it);
            it = works_.erase(it);
          } else if (now - (*it)->started > timeout_) {
            late.push_back(*it);
            it = works_.erase(it);
          } else {
            ++it;
          }
        }
      }
      for (auto& w : done) {
        w->keep.clear();
        w->finish();
      }
      if (!late.empty()) {
        ncclResult_t async = ncclSuccess;
        nccl().CommGetAsyncError(comm_, &async);
        nccl().CommAbort(comm_);
        comm_ = nullptr;
        for (auto& w : late)
          w->finish(failure(
              w->op(), w->seq,
              "timed out after " + std::to_string(timeout_.count()) + " ms" +
                  (async != ncclSuccess ? std::string(" (") + nccl().GetErrorString(async) + ")"
                                        : std::string())));
        std::lock_guard<std::mutex> g(works_mu_);
        for (auto& w : works_) w->finish(failure(w->op(), w->seq, "the communicator was aborted"));
        works_.clear();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  int device_ = 0;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  std::string address_;
  std::mutex comm_mu_, works_mu_;
  std::list<std::shared_ptr<NcclWork>> works_;
  OwnedThread watchdog_;
  std::atomic<bool> stop_{false};
};

std::shared_ptr<ProcessGroup> make_nccl_group(std::shared_ptr<Store> store, int rank, int size,
                                              const BackendOptions& o) {
  return std::make_shared<ProcessGroupNCCL>(std::move(store), rank, size, o);
}

// Registered when _C_cuda loads.
const bool g_nccl_registered = (register_backend("nccl", &make_nccl_group), true);

}  // namespace

#endif  // EMBER_HAVE_NCCL_H

}  // namespace ember::distributed
