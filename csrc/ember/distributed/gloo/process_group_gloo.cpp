// The "gloo" backend: ember's process group on Gloo (Debian's libgloo), built as the
// optional module _C_gloo when CMake finds Gloo. See Note [Gloo backend].
#include <gloo/allgather.h>
#include <gloo/allgatherv.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/alltoallv.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/gather.h>
#include <gloo/reduce.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/scatter.h>
#include <gloo/transport/tcp/device.h>

#include <dirent.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "ember/distributed/gloo/process_group_gloo.h"
#include "ember/distributed/gloo/reductions.h"
#include "ember/ops/join.h"
#include "ember/ops/ops.h"
#include "ember/ops/view.h"

namespace ember::distributed {

// Note [Gloo backend]
// One Gloo context per group: a TCP device bound to this process's address (GLOO_SOCKET_IFNAME
// names an interface instead) and a full mesh of pairs made through the group's store (Gloo's
// rendezvous reads and writes it through GlooStoreAdapter). Collectives run Gloo's own
// algorithms (ring all-reduce, ...) on the tensors' memory, in place where the tensor is
// contiguous (a staged copy where it is not), one after another on the group's queue thread
// (an op whose caller waits at once runs on the caller instead, Note in launch()); each
// collective takes the next tag, which every rank assigns in the same (issue) order, so
// collectives in flight never mix. send/recv post Gloo unbound buffers with the user's tag as
// the slot (collective slots carry a prefix byte, so the two never meet) and wait in
// Work.wait. The reductions are plain loops per dtype that the compiler vectorizes;
// float16/bfloat16 add in float. AVG is SUM followed by a division (Gloo has no AVG), and
// reduce_scatter is an all-reduce of the concatenated inputs of which each rank keeps its
// part (Gloo's reduce-scatter is an old-style algorithm that allocates per call).
// A Gloo error (a peer closed its connection, or the op's timeout passed) fails the work
// with the explanation of Note [Naming the failing rank].

using gloo_reductions::reduce_fn;

namespace {

class GlooStoreAdapter : public gloo::rendezvous::Store {
 public:
  explicit GlooStoreAdapter(std::shared_ptr<distributed::Store> s) : s_(std::move(s)) {}
  void set(const std::string& key, const std::vector<char>& data) override {
    s_->set(key, Bytes(data.begin(), data.end()));
  }
  std::vector<char> get(const std::string& key) override {
    Bytes b = s_->get(key);
    return std::vector<char>(b.begin(), b.end());
  }
  void wait(const std::vector<std::string>& keys) override { s_->wait(keys); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& t) override {
    s_->wait(keys, t);
  }

 private:
  std::shared_ptr<distributed::Store> s_;
};

template <typename T>
struct TypeTag {
  using type = T;
};

template <typename F>
void with_dtype(DType dt, F&& f) {
  switch (dt) {
#define EMBER_GLOO_CASE(c, n, p, k) \
  case DType::n:                    \
    return f(TypeTag<c>{});
    EMBER_FORALL_DTYPES(EMBER_GLOO_CASE)
#undef EMBER_GLOO_CASE
    default:
      EMBER_CHECK(false, "gloo: unsupported dtype");
  }
}

void check_cpu(const Tensor& t, const char* op) {
  check_tensor(t, op);
  EMBER_CHECK(t.device().is_cpu(), op, ": the gloo backend takes CPU tensors, got one on ",
              t.device().str(), " (use the nccl backend for GPU tensors)");
}

// AVG = SUM / size, in place (integers truncate, as NCCL's average).
void divide_by(const Tensor& t, int size) {
  EMBER_CHECK_TYPE(t.dtype() != DType::Bool, "ReduceOp.AVG is not defined for bool tensors");
  if (is_floating(t.dtype()))
    binary_(BinaryOp::div, t, scalar_tensor(Scalar(double(size)), t.dtype()));
  else
    copy_(t, div_rounding(t, scalar_tensor(Scalar(int64_t(size)), t.dtype()), "trunc"));
}

}  // namespace

// Note [Gloo event loop priority]
// Gloo's TCP device runs one event-loop thread (epoll, level-triggered). When a user thread
// holds a pair's lock (every send and posted receive takes it), the loop's try_lock fails and
// it returns to epoll_wait, which reports the same ready socket at once: the loop spins until
// the lock is free. With two ranks on two cores, the spinning loops take the cores the ranks'
// own threads need to post the next message, and a 1 KiB all-reduce waited for the scheduler's
// tick (measured here: per-call median 2.9-3.8 ms; PyTorch's newer Gloo 0.6-1.1 ms). The loop
// thread runs at a lower priority (nice EMBER_GLOO_LOOP_NICE, default 10; 0 leaves it alone):
// when it has real work the cores are usually free and it runs at once; when it spins, the
// scheduler prefers the threads doing the work (median 0.4-0.5 ms, in the same rounds).
namespace {

std::vector<long> thread_ids() {
  std::vector<long> ids;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') ids.push_back(std::strtol(e->d_name, nullptr, 10));
    closedir(d);
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

int loop_nice() {
  const char* v = std::getenv("EMBER_GLOO_LOOP_NICE");
  if (!v || !*v) return 10;
  char* end = nullptr;
  long n = std::strtol(v, &end, 10);
  EMBER_CHECK_VALUE(end && *end == '\0' && n >= 0 && n <= 19,
                    "EMBER_GLOO_LOOP_NICE must be an integer from 0 to 19, got '", v, "'");
  return int(n);
}

// Lowers the priority of the threads started since `before` was taken: Gloo's loop thread, the
// only thread CreateDevice starts (Debian's Gloo does not name it, so it is found by difference).
// A thread another Python thread happened to start in that window would be lowered too; the
// cost is that thread's priority, never a wrong result.
void lower_new_threads(const std::vector<long>& before, int nice) {
  if (nice == 0) return;
  for (long tid : thread_ids())
    if (!std::binary_search(before.begin(), before.end(), tid))
      if (getpriority(PRIO_PROCESS, id_t(tid)) < nice)  // never raises a priority
        setpriority(PRIO_PROCESS, id_t(tid), nice);     // best effort: a failure changes nothing
}

}  // namespace

ProcessGroupGloo::ProcessGroupGloo(std::shared_ptr<Store> store, int rank, int size,
                                   const BackendOptions& opts)
    : ProcessGroup(std::move(store), rank, size, opts.timeout) {
  gloo::transport::tcp::attr attr;
  const char* iface = std::getenv("GLOO_SOCKET_IFNAME");
  if (iface && *iface)
    attr.iface = iface;
  else
    attr.hostname = opts.local_address.empty() ? std::string("127.0.0.1") : opts.local_address;
  const int nice = loop_nice();
  try {
    const std::vector<long> before = thread_ids();
    device_ = gloo::transport::tcp::CreateDevice(attr);
    lower_new_threads(before, nice);
    auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, size);
    ctx->setTimeout(timeout_);
    GlooStoreAdapter adapter(store_);
    ctx->connectFullMesh(adapter, device_);
    ctx_ = ctx;
  } catch (const DistError&) {
    throw;
  } catch (const std::exception& e) {
    raise_dist(DistErrorKind::Backend, "[Rank ", rank, "] gloo: connecting the group failed (",
               iface && *iface ? "interface " + std::string(iface) : "address " + attr.hostname,
               "): ", e.what());
  }
  // The device describes itself as "tcp, pci=, iface=lo, speed=-1, addr=[127.0.0.1]".
  address_ = device_->str();
  size_t at = address_.find("addr=[");
  if (at != std::string::npos) {
    size_t end = address_.find(']', at);
    address_ = address_.substr(at + 6, end == std::string::npos ? end : end - at - 6);
  }
  start_responder();
}

ProcessGroupGloo::~ProcessGroupGloo() { shutdown(); }

Millis ProcessGroupGloo::op_timeout(const OpOptions& o) const {
  return o.timeout.count() > 0 ? o.timeout : timeout_;
}

void ProcessGroupGloo::run(const char* op, int64_t seq, const std::function<void()>& body) {
  try {
    body();
  } catch (const gloo::Exception& e) {
    std::rethrow_exception(failure(op, seq, e.what()));
  }
}

std::shared_ptr<Work> ProcessGroupGloo::allreduce(const Tensor& t, const OpOptions& o) {
  check_cpu(t, "all_reduce");
  check_reduce_op(o.op, t.dtype(), "all_reduce");
  int64_t seq = issue("all_reduce");
  uint32_t tag = next_tag_++;
  auto st = std::make_shared<Staged>(t);
  auto ctx = ctx_;
  Millis to = op_timeout(o);
  ReduceOp rop = o.op;
  return launch(
      std::make_shared<Work>("all_reduce", std::vector<Tensor>{t}),
      [this, ctx, st, rop, tag, seq, to] {
        run("all_reduce", seq, [&] {
          const Tensor& b = st->buf;
          if (size_ > 1 && b.numel() > 0) {
            gloo::AllreduceOptions opts(ctx);
            with_dtype(b.dtype(), [&](auto tt) {
              using T = typename decltype(tt)::type;
              opts.setOutput(b.data<T>(), size_t(b.numel()));
              opts.setReduceFunction(reduce_fn<T>(rop));
            });
            opts.setTag(tag);
            opts.setTimeout(to);
            gloo::allreduce(opts);
          }
          if (rop == ReduceOp::AVG) divide_by(b, size_);
          st->write_back();
        });
      },
      o.async_op);
}

std::shared_ptr<Work> ProcessGroupGloo::broadcast(const Tensor& t, const OpOptions& o) {
  check_cpu(t, "broadcast");
  check_rank(o.root, size_, "broadcast", "root");
  int64_t seq = issue("broadcast");
  uint32_t tag = next_tag_++;
  auto st = std::make_shared<Staged>(t);
  auto ctx = ctx_;
  Millis to = op_timeout(o);
  int root = o.root;
  return launch(
      std::make_shared<Work>("broadcast", std::vector<Tensor>{t}),
      [this, ctx, st, root, tag, seq, to] {
        run("broadcast", seq, [&] {
          const Tensor& b = st->buf;
          if (size_ > 1 && b.numel() > 0) {
            gloo::BroadcastOptions opts(ctx);
            with_dtype(b.dtype(), [&](auto tt) {
              using T = typename decltype(tt)::type;
              opts.setOutput(b.data<T>(), size_t(b.numel()));
            });
            opts.setRoot(root);
            opts.setTag(tag);
            opts.setTimeout(to);
            gloo::broadcast(opts);
          }
          if (rank_ != root) st->write_back();
        });
      },
      o.async_op);
}

std::shared_ptr<Work> ProcessGroupGloo::reduce(const Tensor& t, const OpOptions& o) {
  check_cpu(t, "reduce");
  check_rank(o.root, size_, "reduce", "root");
  check_reduce_op(o.op, t.dtype(), "reduce");
  int64_t seq = issue("reduce");
  uint32_t tag = next_tag_++;
  auto st = std::make_shared<Staged>(t);
  auto ctx = ctx_;
  Millis to = op_timeout(o);
  OpOptions oo = o;
  return launch(
      std::make_shared<Work>("reduce", std::vector<Tensor>{t}),
      [this, ctx, st, oo, tag, seq, to] {
        run("reduce", seq, [&] {
          // Gloo uses the buffer as scratch space: non-roots keep their input (on a copy).
          Tensor b = rank_ == oo.root ? st->buf : clone(st->buf);
          if (size_ > 1 && b.numel() > 0) {
            gloo::ReduceOptions opts(ctx);
            with_dtype(b.dtype(), [&](auto tt) {
              using T = typename decltype(tt)::type;
              opts.setOutput(b.data<T>(), size_t(b.numel()));
              opts.setReduceFunction(reduce_fn<T>(oo.op));
            });
            opts.setRoot(oo.root);
            opts.setTag(tag);
            opts.setTimeout(to);
            gloo::reduce(opts);
          }
          if (rank_ == oo.root) {
            if (oo.op == ReduceOp::AVG) divide_by(b, size_);
            st->write_back();
          }
        });
      },
      o.async_op);
}

std::shared_ptr<Work> ProcessGroupGloo::allgather(const std::vector<Tensor>& outs, const Tensor& in,
                                                  const OpOptions& o) {
  check_cpu(in, "all_gather");
  EMBER_CHECK_VALUE(int(outs.size()) == size_,
                    "all_gather: the output list must have one tensor per rank of the group: "
                    "got ",
                    outs.size(), " for a group of ", size_);
  check_same_meta(outs, in, "all_gather", "tensor_list");
  int64_t seq = issue("all_gather");
  uint32_t tag = next_tag_++;
  Tensor src = contiguous(in);
  auto ctx = ctx_;
  Millis to = op_timeout(o);
  return launch(
      std::make_shared<Work>("all_gather", outs),
      [this, ctx, src, outs, tag, seq, to] {
        run("all_gather", seq, [&] {
          int64_t n = src.numel();
          Tensor flat = empty({n * size_}, src.dtype());
          if (size_ > 1 && n > 0) {
            gloo::AllgatherOptions opts(ctx);
            with_dtype(src.dtype(), [&](auto tt) {
              using T = typename decltype(tt)::type;
              opts.setInput(src.data<T>(), size_t(n));
              opts.setOutput(flat.data<T>(), size_t(n * size_));
            });
            opts.setTag(tag);
            opts.setTimeout(to);
            gloo::allgather(opts);
          } else if (n > 0) {
            copy_(flat, reshape(src, {n}));
          }
          for (int r = 0; r < size_; ++r)
            copy_(outs[r], reshape(narrow(flat, 0, r * n, n), outs[r].sizes()));
        });
      },
      o.async_op);
}

std::shared_ptr<Work> ProcessGroupGloo::allgather_into_tensor(const Tensor& out, const Tensor& in,
                                                              const OpOptions& o) {
  check_cpu(in, "all_gather_into_tensor");
  check_cpu(out, "all_gather_into_tensor");
  EMBER_CHECK_TYPE(out.dtype() == in.dtype(), "all_gather_into_tensor: output dtype ",
                   dtype_name(out.dtype()), " does not match the input's ", dtype_name(in.dtype()));
  EMBER_CHECK_VALUE(out.numel() == in.numel() * size_,
                    "output tensor size must be equal to world_size times input tensor size "
                    "(all_gather_into_tensor: output ",
                    shape_str(out.sizes()), ", input ", shape_str(in.sizes()), ", world size ",
                    size_, ")");
  int64_t seq = issue("all_gather_into_tensor");
  uint32_t tag = next_tag_++;
  Tensor src = contiguous(in);
  auto st = std::make_shared<Staged>(out);
  auto ctx = ctx_;
  Millis to = op_timeout(o);
  return launch(
      std::make_shared<Work>("all_gather_into_tensor", std::vector<Tensor>{out}),
      [this, ctx, src, st, tag, seq, to] {
        run("all_gather_into_tensor", seq, [&] {
          int64_t n = src.numel();
          if (size_ > 1 && n > 0) {
            gloo::AllgatherOptions opts(ctx);
            with_dtype(src.dtype(), [&](auto tt) {
              using T = typename decltype(tt)::type;
              opts.setInput(src.data<T>(), size_t(n));
              opts.setOutput(st->buf.data<T>(), size_t(n * size_));
            });
            opts.setTag(tag);
            opts.setTimeout(to);
            gloo::allgather(opts);
          } else if (n > 0) {
            copy_(reshape(st->buf, {n}), reshape(src, {n}));
          }
          st->write_back();
        });
      },
      o.async_op);
}

std::shared_ptr<Work> ProcessGroupGloo::gather(const std::vector<Tensor>& outs, const Tensor& in,
                                               const OpOptions& o) {
  check_cpu(in, "gather");
  check_rank(o.root, size_, "gather", "root");
  if (rank_ == o.root) {
    EMBER_CHECK_VALUE(int(outs.size()) == size_,
                      "gather: the root's gather_list must have one tensor per rank of the group: "
                      "got ",
                      outs.size(), " for a group of ", size_);
    check_same_meta(outs, in, "gather", "gather_list");
  } else {
    EMBER_CHECK_VALUE(outs.empty(), "gather: gather_list must be empty (None) on rank ", rank_,
                      ", which is not the root (", o.root, ")");
  }
  int64_t seq = issue("gather");
  uint32_t tag = next_tag_++;
  Tensor src = contiguous(in);
  auto ctx = ctx_;
  Millis to = op_timeout(o);
  int root = o.root;
  return launch(
      std::make_shared<Work>("gather", outs),
      [this, ctx, src, outs, root, tag, seq, to] {
        run("gather", seq, [&] {
          int64_t n = src.numel();
          Tensor flat;
          if (rank_ == root) flat = empty({n * size_}, src.dtype());
          if (size_ > 1 && n > 0) {
            gloo::GatherOptions opts(ctx);
            with_dtype(src.dtype(), [&](auto tt) {
              using T = typename decltype(tt)::type;
              opts.setInput(src.data<T>(), size_t(n));
              if (rank_ == root) opts.setOutput(flat.data<T>(), size_t(n * size_));
            });
            opts.setRoot(root);
            opts.setTag(tag);
            opts.setTimeout(to);
            gloo::gather(opts);
          } else if (n > 0 && rank_ == root) {
            copy_(flat, reshape(src, {n}));
          }
          if (rank_ == root)
            for (int r = 0; r < size_; ++r)
              copy_(outs[r], reshape(narrow(flat, 0, r * n, n), outs[r].sizes()));
        });
      },
      o.async_op);
}

std::shared_ptr<Work> ProcessGroupGloo::scatter(const Tensor& out, const std::vector<Tensor>& ins,
                                                const OpOptions& o) {
  check_cpu(out, "scatter");
  check_rank(o.root, size_, "scatter", "root");
  if (rank_ == o.root) {
    EMBER_CHECK_VALUE(int(ins.size()) == size_,
                      "scatter: the root's scatter_list must have one tensor per rank of the "
                      "group: got ",
                      ins.size(), " for a group of ", size_);
    check_same_meta(ins, out, "scatter", "scatter_list");
  } else {
    EMBER_CHECK_VALUE(ins.empty(), "scatter: scatter_list must be empty (None) on rank ", rank_,
                      ", which is not the root (", o.root, ")");
  }
  int64_t seq = issue("scatter");
  uint32_t tag = next_tag_++;
  std::vector<Tensor> srcs;
  for (auto& t : ins) srcs.push_back(contiguous(t));
  auto st = std::make_shared<Staged>(out);
  auto ctx = ctx_;
  Millis to = op_timeout(o);
  int root = o.root;
  return launch(
      std::make_shared<Work>("scatter", std::vector<Tensor>{out}),
      [this, ctx, srcs, st, root, tag, seq, to] {
        run("scatter", seq, [&] {
          int64_t n = st->buf.numel();
          if (size_ > 1 && n > 0) {
            gloo::ScatterOptions opts(ctx);
            with_dtype(st->buf.dtype(), [&](auto tt) {
              using T = typename decltype(tt)::type;
              if (rank_ == root) {
                std::vector<T*> ptrs;
                for (auto& s : srcs) ptrs.push_back(s.template data<T>());
                opts.setInputs(ptrs, size_t(n));
              }
              opts.setOutput(st->buf.data<T>(), size_t(n));
            });
            opts.setRoot(root);
            opts.setTag(tag);
            opts.setTimeout(to);
            gloo::scatter(opts);
          } else if (n > 0) {
            copy_(st->buf, srcs[rank_]);
          }
          st->write_back();
        });
      },
      o.async_op);
}

// reduce_scatter: all-reduce the concatenation, keep this rank's part (Note [Gloo backend]).
std::shared_ptr<Work> ProcessGroupGloo::reduce_scatter_flat(const char* op, const Tensor& out,
                                                            Tensor flat, const OpOptions& o) {
  int64_t seq = issue(op);
  uint32_t tag = next_tag_++;
  auto st = std::make_shared<Staged>(out);
  auto ctx = ctx_;
  Millis to = op_timeout(o);
  ReduceOp rop = o.op;
  return launch(
      std::make_shared<Work>(op, std::vector<Tensor>{out}),
      [this, op, ctx, flat, st, rop, tag, seq, to] {
        run(op, seq, [&] {
          int64_t n = st->buf.numel();
          if (size_ > 1 && n > 0) {
            gloo::AllreduceOptions opts(ctx);
            with_dtype(flat.dtype(), [&](auto tt) {
              using T = typename decltype(tt)::type;
              opts.setOutput(flat.data<T>(), size_t(flat.numel()));
              opts.setReduceFunction(reduce_fn<T>(rop));
            });
            opts.setTag(tag);
            opts.setTimeout(to);
            gloo::allreduce(opts);
          }
          if (n > 0) copy_(reshape(st->buf, {n}), narrow(flat, 0, rank_ * n, n));
          if (rop == ReduceOp::AVG) divide_by(st->buf, size_);
          st->write_back();
        });
      },
      o.async_op);
}

std::shared_ptr<Work> ProcessGroupGloo::reduce_scatter(const Tensor& out,
                                                       const std::vector<Tensor>& ins,
                                                       const OpOptions& o) {
  check_cpu(out, "reduce_scatter");
  check_reduce_op(o.op, out.dtype(), "reduce_scatter");
  EMBER_CHECK_VALUE(int(ins.size()) == size_,
                    "reduce_scatter: the input list must have one tensor per rank of the group: "
                    "got ",
                    ins.size(), " for a group of ", size_);
  check_same_meta(ins, out, "reduce_scatter", "input_list");
  std::vector<Tensor> flat;
  for (auto& t : ins) flat.push_back(reshape(contiguous(t), {t.numel()}));
  return reduce_scatter_flat("reduce_scatter", out, cat(flat, 0), o);
}

std::shared_ptr<Work> ProcessGroupGloo::reduce_scatter_tensor(const Tensor& out, const Tensor& in,
                                                              const OpOptions& o) {
  check_cpu(out, "reduce_scatter_tensor");
  check_cpu(in, "reduce_scatter_tensor");
  check_reduce_op(o.op, out.dtype(), "reduce_scatter_tensor");
  EMBER_CHECK_TYPE(out.dtype() == in.dtype(), "reduce_scatter_tensor: output dtype ",
                   dtype_name(out.dtype()), " does not match the input's ", dtype_name(in.dtype()));
  EMBER_CHECK_VALUE(in.numel() == out.numel() * size_,
                    "input tensor must be the same size as output size times world size "
                    "(reduce_scatter_tensor: input ",
                    shape_str(in.sizes()), ", output ", shape_str(out.sizes()), ", world size ",
                    size_, ")");
  return reduce_scatter_flat("reduce_scatter_tensor", out, reshape(clone(in), {in.numel()}), o);
}

std::shared_ptr<Work> ProcessGroupGloo::alltoall_base(const Tensor& out, const Tensor& in,
                                                      const std::vector<int64_t>& out_splits,
                                                      const std::vector<int64_t>& in_splits,
                                                      const OpOptions& o) {
  check_cpu(out, "all_to_all_single");
  check_cpu(in, "all_to_all_single");
  EMBER_CHECK_TYPE(out.dtype() == in.dtype(), "all_to_all_single: output dtype ",
                   dtype_name(out.dtype()), " does not match the input's ", dtype_name(in.dtype()));
  auto counts = [&](const Tensor& t, const std::vector<int64_t>& splits, const char* what) {
    int64_t rows = t.dim() ? t.size(0) : 1;
    int64_t row = rows ? t.numel() / rows : 0;
    std::vector<int64_t> c(static_cast<size_t>(size_));
    if (splits.empty()) {
      EMBER_CHECK_VALUE(rows % size_ == 0, "all_to_all_single: the ", what, "'s first dimension (",
                        rows, ") must divide evenly among ", size_,
                        " ranks when no split sizes are given");
      for (auto& x : c) x = rows / size_ * row;
    } else {
      EMBER_CHECK_VALUE(int(splits.size()) == size_, "all_to_all_single: ", what,
                        "_split_sizes must have one entry per rank (", size_, "), got ",
                        splits.size());
      int64_t total = 0;
      for (size_t i = 0; i < splits.size(); ++i) {
        EMBER_CHECK_VALUE(splits[i] >= 0, "all_to_all_single: negative split size");
        c[i] = splits[i] * row;
        total += splits[i];
      }
      EMBER_CHECK_VALUE(total == rows, "all_to_all_single: ", what, "_split_sizes sum to ", total,
                        " but the ", what, " has ", rows, " rows");
    }
    return c;
  };
  std::vector<int64_t> in_c = counts(in, in_splits, "input");
  std::vector<int64_t> out_c = counts(out, out_splits, "output");
  return alltoallv("all_to_all_single", {out}, {in}, in_c, out_c, o);
}

std::shared_ptr<Work> ProcessGroupGloo::alltoall(const std::vector<Tensor>& outs,
                                                 const std::vector<Tensor>& ins,
                                                 const OpOptions& o) {
  EMBER_CHECK_VALUE(int(outs.size()) == size_ && int(ins.size()) == size_,
                    "all_to_all: the input and output lists must have one tensor per rank (", size_,
                    "), got ", ins.size(), " and ", outs.size());
  std::vector<int64_t> in_c, out_c;
  for (int r = 0; r < size_; ++r) {
    check_cpu(ins[r], "all_to_all");
    check_cpu(outs[r], "all_to_all");
    EMBER_CHECK_TYPE(ins[r].dtype() == ins[0].dtype() && outs[r].dtype() == ins[0].dtype(),
                     "all_to_all: all tensors must have the same dtype");
    in_c.push_back(ins[r].numel());
    out_c.push_back(outs[r].numel());
  }
  return alltoallv("all_to_all", outs, ins, in_c, out_c, o);
}

std::shared_ptr<Work> ProcessGroupGloo::alltoallv(const char* op, const std::vector<Tensor>& outs,
                                                  const std::vector<Tensor>& ins,
                                                  std::vector<int64_t> in_c,
                                                  std::vector<int64_t> out_c, const OpOptions& o) {
  int64_t seq = issue(op);
  uint32_t tag = next_tag_++;
  std::vector<Tensor> flat_in;
  for (auto& t : ins) flat_in.push_back(reshape(contiguous(t), {t.numel()}));
  Tensor src = flat_in.size() == 1 ? flat_in[0] : cat(flat_in, 0);
  auto ctx = ctx_;
  Millis to = op_timeout(o);
  DType dt = ins[0].dtype();
  return launch(
      std::make_shared<Work>(op, outs),
      [this, op, ctx, src, outs, in_c, out_c, dt, tag, seq, to] {
        run(op, seq, [&] {
          int64_t total = 0;
          for (auto c : out_c) total += c;
          Tensor dst = empty({total}, dt);
          if (size_ > 1) {
            gloo::AlltoallvOptions opts(ctx);
            with_dtype(dt, [&](auto tt) {
              using T = typename decltype(tt)::type;
              opts.setInput(src.data<T>(), in_c);
              opts.setOutput(dst.data<T>(), out_c);
            });
            opts.setTag(tag);
            opts.setTimeout(to);
            gloo::alltoallv(opts);
          } else if (total > 0) {
            copy_(dst, src);
          }
          int64_t off = 0;
          if (outs.size() == 1) {
            if (total > 0) copy_(outs[0], reshape(dst, outs[0].sizes()));
            return;
          }
          for (size_t r = 0; r < outs.size(); ++r) {
            copy_(outs[r], reshape(narrow(dst, 0, off, out_c[r]), outs[r].sizes()));
            off += out_c[r];
          }
        });
      },
      o.async_op);
}

std::shared_ptr<Work> ProcessGroupGloo::barrier(const OpOptions& o) {
  int64_t seq = issue("barrier");
  uint32_t tag = next_tag_++;
  auto ctx = ctx_;
  Millis to = op_timeout(o);
  return launch(
      std::make_shared<Work>("barrier"),
      [this, ctx, tag, seq, to] {
        run("barrier", seq, [&] {
          if (size_ == 1) return;
          gloo::BarrierOptions opts(ctx);
          opts.setTag(tag);
          opts.setTimeout(to);
          gloo::barrier(opts);
        });
      },
      o.async_op);
}

// ---- point to point ----

namespace {

struct GlooP2PWork : Work {
  std::unique_ptr<gloo::transport::UnboundBuffer> buf;
  std::shared_ptr<Staged> staged;
  bool is_send;
  Millis timeout;
  ProcessGroupGloo* pg;  // for the failure message (kept alive by `group`)
  std::shared_ptr<ProcessGroup> group;
  int peer;
  GlooP2PWork(std::string op, Tensor t, bool send, Millis to)
      : Work(std::move(op), {std::move(t)}), is_send(send), timeout(to) {}
  bool wait(Millis t) override {
    {
      std::lock_guard<std::mutex> g(mu_);
      if (done_) {
        if (error_) std::rethrow_exception(error_);
        return true;
      }
    }
    Millis limit = t.count() > 0 ? t : timeout;
    std::exception_ptr err;
    try {
      int r = -1;
      if (is_send) {
        buf->waitSend(&r, limit);
      } else {
        buf->waitRecv(&r, limit);
        staged->write_back();
        set_source_rank(r);
      }
    } catch (const gloo::Exception& e) {
      // A wait with its own (short) limit, as monitored_barrier's, fails at once; otherwise
      // the others are asked who is gone (Note [Naming the failing rank]).
      if (t.count() > 0)
        err = std::make_exception_ptr(DistError(
            DistErrorKind::Backend, "[Rank " + std::to_string(pg->rank()) + "] " + op_ +
                                        (peer >= 0 ? " with rank " + std::to_string(peer) : "") +
                                        " did not complete within " + std::to_string(t.count()) +
                                        " ms: " + e.what()));
      else
        err = pg->p2p_failure(op_, peer, e.what());
    } catch (...) {
      err = std::current_exception();
    }
    finish(err);
    if (err) std::rethrow_exception(err);
    return true;
  }
};

}  // namespace

std::exception_ptr ProcessGroupGloo::p2p_failure(const std::string& op, int peer,
                                                 const std::string& what) {
  return failure(op + (peer >= 0 ? " with rank " + std::to_string(peer) : std::string()), 0, what);
}

std::shared_ptr<Work> ProcessGroupGloo::send(const Tensor& t, int dst, int tag) {
  check_cpu(t, "send");
  check_rank(dst, size_, "send", "destination");
  EMBER_CHECK_VALUE(dst != rank_, "send: a process cannot send to itself (rank ", rank_, ")");
  EMBER_CHECK_VALUE(tag >= 0, "send: tag must be non-negative, got ", tag);
  EMBER_CHECK(!closed_, "send: the process group was destroyed");
  auto st = std::make_shared<Staged>(t);
  auto w = std::make_shared<GlooP2PWork>("send", t, true, timeout_);
  w->staged = st;
  w->pg = this;
  w->group = shared_from_this();
  w->peer = dst;
  w->buf = ctx_->createUnboundBuffer(st->buf.data_ptr(),
                                     size_t(st->buf.numel()) * size_t(st->buf.element_size()));
  w->buf->send(dst, uint64_t(tag));
  return w;
}

std::shared_ptr<Work> ProcessGroupGloo::recv(const Tensor& t, int src, int tag) {
  check_cpu(t, "recv");
  if (src >= 0) {
    check_rank(src, size_, "recv", "source");
    EMBER_CHECK_VALUE(src != rank_, "recv: a process cannot receive from itself (rank ", rank_,
                      ")");
  }
  EMBER_CHECK_VALUE(tag >= 0, "recv: tag must be non-negative, got ", tag);
  EMBER_CHECK(!closed_, "recv: the process group was destroyed");
  auto st = std::make_shared<Staged>(t);
  auto w = std::make_shared<GlooP2PWork>("recv", t, false, timeout_);
  w->staged = st;
  w->pg = this;
  w->group = shared_from_this();
  w->peer = src;
  w->buf = ctx_->createUnboundBuffer(st->buf.data_ptr(),
                                     size_t(st->buf.numel()) * size_t(st->buf.element_size()));
  if (src >= 0) {
    w->buf->recv(src, uint64_t(tag));
  } else {
    std::vector<int> all;
    for (int r = 0; r < size_; ++r)
      if (r != rank_) all.push_back(r);
    w->buf->recv(all, uint64_t(tag));
  }
  return w;
}

std::shared_ptr<ProcessGroup> make_gloo_group(std::shared_ptr<Store> store, int rank, int size,
                                              const BackendOptions& opts) {
  return std::make_shared<ProcessGroupGloo>(std::move(store), rank, size, opts);
}

}  // namespace ember::distributed
