// The process group interface every collective engine implements (Gloo, NCCL), the Work
// handle of an operation, and what they share: argument checks, the operation queue, and
// the explanation of a failure (Note [Naming the failing rank]).
#pragma once
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ember/core/owned_thread.h"
#include "ember/core/tensor.h"
#include "ember/distributed/store.h"

namespace ember::distributed {

/// PyTorch's ReduceOp (AVG on every backend here; PREMUL_SUM is NCCL's).
enum class ReduceOp : uint8_t { SUM, AVG, PRODUCT, MIN, MAX, BAND, BOR, BXOR, PREMUL_SUM };
const char* reduce_op_name(ReduceOp op);

/// The handle of one operation (PyTorch's Work): wait() blocks until it finished and
/// rethrows its error.
class Work {
 public:
  explicit Work(std::string op, std::vector<Tensor> outputs = {});
  virtual ~Work() = default;
  bool is_completed();
  bool is_success();
  /// Waits (without a limit when `timeout` is 0) and rethrows the operation's error;
  /// raises DistBackendError when `timeout` passes first. Returns true.
  virtual bool wait(Millis timeout = Millis(0));
  /// Device work: makes the current stream wait for it (no-op on the CPU).
  virtual void synchronize() {}
  std::exception_ptr exception();
  /// The tensors the operation wrote (PyTorch's Work.result()).
  std::vector<Tensor> result();
  /// The sender of a recv from any source.
  int source_rank();
  const std::string& op() const { return op_; }
  /// Marks the work done (with its error, if any) and wakes the waiters.
  void finish(std::exception_ptr error = nullptr);
  void set_source_rank(int r);
  /// Runs `fn` once the work is done (at once when it is).
  void then(std::function<void()> fn);

 protected:
  std::string op_;
  std::vector<Tensor> outputs_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  int source_rank_ = -1;
  std::exception_ptr error_;
  std::vector<std::function<void()>> callbacks_;
};

/// A work that is already done (an inline operation, or one with nothing to do).
std::shared_ptr<Work> completed_work(std::string op, std::vector<Tensor> outputs = {});

/// Per-call options: the reduction, the root and the timeout (0: the group's).
struct OpOptions {
  ReduceOp op = ReduceOp::SUM;
  int root = 0;
  Millis timeout{0};
  bool async_op = true;  // false: the caller waits at once, so the op may run inline
};

// Note [Naming the failing rank]
// When an operation fails (a peer closed its connections, or the timeout passed), the
// rank that saw it asks every other rank, through the store, how far it got: each group
// runs a responder thread on its own store handle that waits for a request round and
// answers with the number of collectives this process has issued on the group and the
// name of the last one. A rank that does not answer within a few seconds is gone (its
// process exited, was killed or is stopped); a rank that answers with a smaller count
// has not called the failing collective (it is late or hung in its own code); a rank at
// the same count whose last op differs called another collective. The message of the
// error names them ("rank 1 ..."), so a hung or dead peer is never an anonymous timeout.
// The responder costs nothing per operation: the counts are only read on failure.

/// A process group: `size` processes, this one `rank`, connected by a collective engine.
class ProcessGroup : public std::enable_shared_from_this<ProcessGroup> {
 public:
  ProcessGroup(std::shared_ptr<Store> store, int rank, int size, Millis timeout);
  virtual ~ProcessGroup();
  int rank() const { return rank_; }
  int size() const { return size_; }
  Millis timeout() const { return timeout_; }
  const std::shared_ptr<Store>& store() const { return store_; }
  virtual std::string backend_name() const = 0;
  /// The address this process's engine listens on ("127.0.0.1"; NCCL: its device), for tests.
  virtual std::string engine_address() const { return ""; }

  // The operations (PyTorch's ProcessGroup API, one tensor per process). Arguments are
  // checked here, on the caller, before anything is queued.
  virtual std::shared_ptr<Work> broadcast(const Tensor& t, const OpOptions& o) = 0;
  virtual std::shared_ptr<Work> allreduce(const Tensor& t, const OpOptions& o) = 0;
  virtual std::shared_ptr<Work> allreduce_coalesced(const std::vector<Tensor>& ts,
                                                    const OpOptions& o);
  virtual std::shared_ptr<Work> reduce(const Tensor& t, const OpOptions& o) = 0;
  virtual std::shared_ptr<Work> allgather(const std::vector<Tensor>& outs, const Tensor& in,
                                          const OpOptions& o) = 0;
  virtual std::shared_ptr<Work> allgather_into_tensor(const Tensor& out, const Tensor& in,
                                                      const OpOptions& o) = 0;
  /// `outs`: one tensor per rank on the root, empty elsewhere.
  virtual std::shared_ptr<Work> gather(const std::vector<Tensor>& outs, const Tensor& in,
                                       const OpOptions& o) = 0;
  /// `ins`: one tensor per rank on the root, empty elsewhere.
  virtual std::shared_ptr<Work> scatter(const Tensor& out, const std::vector<Tensor>& ins,
                                        const OpOptions& o) = 0;
  virtual std::shared_ptr<Work> reduce_scatter(const Tensor& out, const std::vector<Tensor>& ins,
                                               const OpOptions& o) = 0;
  virtual std::shared_ptr<Work> reduce_scatter_tensor(const Tensor& out, const Tensor& in,
                                                      const OpOptions& o) = 0;
  /// Splits along dim 0 (empty split lists: equal parts).
  virtual std::shared_ptr<Work> alltoall_base(const Tensor& out, const Tensor& in,
                                              const std::vector<int64_t>& out_splits,
                                              const std::vector<int64_t>& in_splits,
                                              const OpOptions& o) = 0;
  virtual std::shared_ptr<Work> alltoall(const std::vector<Tensor>& outs,
                                         const std::vector<Tensor>& ins, const OpOptions& o) = 0;
  virtual std::shared_ptr<Work> send(const Tensor& t, int dst, int tag) = 0;
  /// `src` -1: from any rank (Work.source_rank() tells which).
  virtual std::shared_ptr<Work> recv(const Tensor& t, int src, int tag) = 0;
  virtual std::shared_ptr<Work> barrier(const OpOptions& o) = 0;

  /// Stops the responder and the queue; operations afterwards raise. Idempotent.
  virtual void shutdown();
  /// How many collectives this process issued on the group, and the last one's name.
  int64_t sequence_number() const { return seq_.load(); }

  /// The explanation of Note [Naming the failing rank] for collective number `seq`:
  /// one sentence per rank that is gone, late, or in another collective ("" if none).
  std::string explain_failure(int64_t seq, Millis grace);

 protected:
  /// Counts a collective issued by this process (on the calling thread); returns its number.
  int64_t issue(const char* op);
  /// Starts the responder (call once the engine is connected).
  void start_responder();
  /// Runs `body` for `work`: on the queue's thread, or inline when the caller will wait
  /// at once and nothing is queued. The error `body` throws becomes the work's, wrapped
  /// by `fail` into the group's error message.
  std::shared_ptr<Work> launch(std::shared_ptr<Work> work, std::function<void()> body,
                               bool async_op);
  /// The error raised for a failed operation: "[Rank r] <op> (collective #n on the <backend>
  /// group) failed: <what>" + explain_failure.
  std::exception_ptr failure(const std::string& op, int64_t seq, const std::string& what);

  std::shared_ptr<Store> store_;
  int rank_, size_;
  Millis timeout_;
  std::atomic<int64_t> seq_{0};
  std::atomic<bool> closed_{false};

 private:
  void responder_loop(std::shared_ptr<Store> store);
  std::mutex op_mu_;  // last_op_
  std::string last_op_ = "none";
  // The operation queue: its own object, shared with the worker thread, because the last
  // reference to the group may be dropped by a body on that thread.
  struct OpQueue {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<std::function<void()>> items;
    int busy = 0;
    bool stop = false;
    void loop();
  };
  std::shared_ptr<OpQueue> queue_ = std::make_shared<OpQueue>();
  OwnedThread worker_;
  // the responder
  std::shared_ptr<Store> responder_store_;
  OwnedThread responder_;
};

// ---- argument checks shared by the engines (PyTorch's wording) ----

/// A dense tensor on the group's device kind; names the op.
void check_tensor(const Tensor& t, const char* op);
/// Every tensor has `ref`'s dtype and shape.
void check_same_meta(const std::vector<Tensor>& ts, const Tensor& ref, const char* op,
                     const char* what);
void check_rank(int r, int size, const char* op, const char* what);
/// Supported reductions for `dtype` (bitwise ops need integers).
void check_reduce_op(ReduceOp op, DType dtype, const char* op_name);

/// A contiguous tensor holding `t`'s data: `t` itself when contiguous, else a copy that
/// `write_back` copies into `t` after the operation.
struct Staged {
  Tensor orig, buf;
  Staged() = default;
  explicit Staged(const Tensor& t);
  void write_back() const;
};

// ---- engines ----

struct BackendOptions {
  Millis timeout{1800000};
  std::string local_address;  // the address this process's engine listens on ("" : default)
  std::string group_name;
  int device_index = -1;  // NCCL: the GPU of this process
};
using BackendFactory = std::function<std::shared_ptr<ProcessGroup>(
    std::shared_ptr<Store>, int rank, int size, const BackendOptions&)>;
/// Engines register themselves here when their module loads (_C_gloo: "gloo", _C_cuda:
/// "nccl").
void register_backend(const std::string& name, BackendFactory f);
bool backend_registered(const std::string& name);
std::shared_ptr<ProcessGroup> create_process_group(const std::string& name,
                                                   std::shared_ptr<Store> store, int rank, int size,
                                                   const BackendOptions& opts);

}  // namespace ember::distributed
