#include "ember/distributed/process_group.h"

#include <algorithm>
#include <cctype>

#include "ember/ops/join.h"
#include "ember/ops/ops.h"
#include "ember/ops/view.h"

namespace ember::distributed {

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM:
      return "SUM";
    case ReduceOp::AVG:
      return "AVG";
    case ReduceOp::PRODUCT:
      return "PRODUCT";
    case ReduceOp::MIN:
      return "MIN";
    case ReduceOp::MAX:
      return "MAX";
    case ReduceOp::BAND:
      return "BAND";
    case ReduceOp::BOR:
      return "BOR";
    case ReduceOp::BXOR:
      return "BXOR";
    case ReduceOp::PREMUL_SUM:
      return "PREMUL_SUM";
  }
  return "?";
}

// ---- Work ------------------------------------------------------------------------------------

Work::Work(std::string op, std::vector<Tensor> outputs)
    : op_(std::move(op)), outputs_(std::move(outputs)) {}

bool Work::is_completed() {
  std::lock_guard<std::mutex> g(mu_);
  return done_;
}

bool Work::is_success() {
  std::lock_guard<std::mutex> g(mu_);
  EMBER_CHECK(done_, "Work.is_success: the operation (", op_, ") has not completed yet");
  return !error_;
}

bool Work::wait(Millis timeout) {
  std::unique_lock<std::mutex> lk(mu_);
  if (timeout.count() > 0) {
    if (!cv_.wait_for(lk, timeout, [&] { return done_; }))
      raise_dist(DistErrorKind::Backend, "Work.wait: ", op_, " did not complete within ",
                 timeout.count(), " ms");
  } else {
    cv_.wait(lk, [&] { return done_; });
  }
  if (error_) std::rethrow_exception(error_);
  return true;
}

std::exception_ptr Work::exception() {
  std::lock_guard<std::mutex> g(mu_);
  return error_;
}

std::vector<Tensor> Work::result() {
  std::lock_guard<std::mutex> g(mu_);
  return outputs_;
}

int Work::source_rank() {
  std::lock_guard<std::mutex> g(mu_);
  EMBER_CHECK(done_ && source_rank_ >= 0,
              "source_rank: only a completed recv from any source has a source rank");
  return source_rank_;
}

void Work::set_source_rank(int r) {
  std::lock_guard<std::mutex> g(mu_);
  source_rank_ = r;
}

void Work::finish(std::exception_ptr error) {
  std::vector<std::function<void()>> cbs;
  {
    std::lock_guard<std::mutex> g(mu_);
    if (done_) return;
    done_ = true;
    error_ = error;
    cbs.swap(callbacks_);
  }
  cv_.notify_all();
  for (auto& cb : cbs) cb();
}

void Work::then(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> g(mu_);
    if (!done_) {
      callbacks_.push_back(std::move(fn));
      return;
    }
  }
  fn();
}

std::shared_ptr<Work> completed_work(std::string op, std::vector<Tensor> outputs) {
  auto w = std::make_shared<Work>(std::move(op), std::move(outputs));
  w->finish();
  return w;
}

// ---- ProcessGroup ----------------------------------------------------------------------------

ProcessGroup::ProcessGroup(std::shared_ptr<Store> store, int rank, int size, Millis timeout)
    : store_(std::move(store)), rank_(rank), size_(size), timeout_(timeout) {
  EMBER_CHECK_VALUE(size > 0, "process group: world size must be positive, got ", size);
  EMBER_CHECK_VALUE(rank >= 0 && rank < size, "process group: rank ", rank,
                    " is out of range for world size ", size);
}

ProcessGroup::~ProcessGroup() {
  shutdown();
  if (worker_.joinable()) {
    // The last reference can be dropped by a queued body on the worker itself; the
    // worker then finishes on the queue object alone.
    if (worker_.get_id() == std::this_thread::get_id())
      worker_.detach();
    else
      worker_.join();
  }
}

void ProcessGroup::shutdown() {
  if (closed_.exchange(true)) return;
  {
    std::lock_guard<std::mutex> g(queue_->mu);
    queue_->stop = true;
  }
  queue_->cv.notify_all();
  if (responder_store_) responder_store_->interrupt();
  if (responder_.joinable()) responder_.join();
}

int64_t ProcessGroup::issue(const char* op) {
  EMBER_CHECK(!closed_, op, ": the process group was destroyed (destroy_process_group)");
  std::lock_guard<std::mutex> g(op_mu_);
  last_op_ = op;
  return ++seq_;
}

std::shared_ptr<Work> ProcessGroup::launch(std::shared_ptr<Work> work, std::function<void()> body,
                                           bool async_op) {
  EMBER_CHECK(!closed_, work->op(), ": the process group was destroyed (destroy_process_group)");
  OpQueue& q = *queue_;
  {
    std::unique_lock<std::mutex> lk(q.mu);
    if (!async_op && q.items.empty() && q.busy == 0) {
      // The caller waits at once and nothing is in flight: run here, without a thread hop.
      ++q.busy;
      lk.unlock();
      std::exception_ptr err;
      try {
        body();
      } catch (...) {
        err = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> g(q.mu);
        --q.busy;
      }
      q.cv.notify_all();
      work->finish(err);
      return work;
    }
    if (!worker_.joinable()) worker_ = OwnedThread([q = queue_] { q->loop(); });
    auto self = shared_from_this();  // the group outlives what it has queued
    q.items.push_back([self, work, body = std::move(body)] {
      try {
        body();
        work->finish();
      } catch (...) {
        work->finish(std::current_exception());
      }
    });
  }
  q.cv.notify_all();
  return work;
}

void ProcessGroup::OpQueue::loop() {
  std::unique_lock<std::mutex> lk(mu);
  for (;;) {
    // An inline operation (busy without a queued body) runs first: ops start in issue order.
    cv.wait(lk, [&] { return (!items.empty() && busy == 0) || (stop && items.empty()); });
    if (items.empty()) return;
    std::function<void()> f = std::move(items.front());
    items.pop_front();
    ++busy;
    lk.unlock();
    f();
    f = nullptr;  // may drop the last reference to the group (see the destructor)
    lk.lock();
    --busy;
    cv.notify_all();
  }
}

void ProcessGroup::start_responder() {
  if (size_ == 1) return;
  responder_store_ = store_->clone();
  responder_store_->set_timeout(Millis(0));
  responder_ = OwnedThread([this, st = responder_store_] { responder_loop(st); });
}

void ProcessGroup::responder_loop(std::shared_ptr<Store> st) {
  for (int64_t round = 1; !closed_; ++round) {
    std::string key = "ember_diag/" + std::to_string(round);
    try {
      st->wait({key}, Millis(0));
      std::string answer;
      {
        std::lock_guard<std::mutex> g(op_mu_);
        answer = std::to_string(seq_.load()) + " " + last_op_;
      }
      st->set(key + "/" + std::to_string(rank_), to_bytes(answer));
    } catch (...) {
      return;  // interrupted by shutdown, or the store is gone
    }
  }
}

std::string ProcessGroup::explain_failure(int64_t seq, Millis grace) {
  if (size_ == 1) return "";
  std::string my_op;
  {
    std::lock_guard<std::mutex> g(op_mu_);
    my_op = last_op_;
  }
  std::vector<std::string> parts;
  try {
    std::shared_ptr<Store> st = store_->clone_with_timeout(std::max(grace, Millis(1000)));
    int64_t round = st->add("ember_diag/rounds", 1);
    std::string base = "ember_diag/" + std::to_string(round);
    st->set(base, {});
    auto deadline = std::chrono::steady_clock::now() + grace;
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      std::string key = base + "/" + std::to_string(r);
      auto left = std::chrono::duration_cast<Millis>(deadline - std::chrono::steady_clock::now());
      std::string answer;
      bool answered = false;
      try {
        st->wait({key}, std::max(left, Millis(1)));
        answer = to_string(st->get(key));
        answered = true;
      } catch (const DistError& e) {
        if (e.dist_kind() == DistErrorKind::Network) throw;
      }
      if (!answered) {
        parts.push_back("rank " + std::to_string(r) + " did not answer within " +
                        std::to_string(grace.count()) +
                        " ms: its process is gone (it exited, raised or was killed) or is stopped");
        continue;
      }
      size_t sp = answer.find(' ');
      int64_t their = std::stoll(answer.substr(0, sp));
      std::string op = sp == std::string::npos ? "" : answer.substr(sp + 1);
      if (seq > 0 && their < seq)
        parts.push_back("rank " + std::to_string(r) + " has not called it: " +
                        (their == 0 ? std::string("it has issued no collective on this group")
                                    : "the last collective it issued on this group is #" +
                                          std::to_string(their) + " (" + op + ")"));
      else if (seq > 0 && their == seq && op != my_op)
        parts.push_back("rank " + std::to_string(r) + " called " + op + " as collective #" +
                        std::to_string(seq) + " (mismatched collectives)");
      else if (seq > 0 && their > seq)
        parts.push_back("rank " + std::to_string(r) + " is already at collective #" +
                        std::to_string(their) + " (" + op + ")");
    }
  } catch (const std::exception& e) {
    parts.push_back(std::string("could not ask the other ranks through the store (") + e.what() +
                    "); the process hosting it (rank 0 or the launcher) may be gone");
  }
  std::string out;
  for (auto& p : parts) out += (out.empty() ? "" : "; ") + p;
  if (!out.empty()) out[0] = char(std::toupper(static_cast<unsigned char>(out[0])));
  return out;
}

std::exception_ptr ProcessGroup::failure(const std::string& op, int64_t seq,
                                         const std::string& what) {
  Millis grace = std::min(Millis(3000), std::max(timeout_ / 2, Millis(500)));
  std::string why = explain_failure(seq, grace);
  std::string msg = "[Rank " + std::to_string(rank_) + "] " + op;
  if (seq > 0)
    msg += " (collective #" + std::to_string(seq) + " on this " + backend_name() + " group)";
  msg += " failed: " + what;
  if (!why.empty()) msg += ". " + why;
  return std::make_exception_ptr(DistError(DistErrorKind::Backend, msg));
}

std::shared_ptr<Work> ProcessGroup::allreduce_coalesced(const std::vector<Tensor>& ts,
                                                        const OpOptions& o) {
  // One flat buffer per call: a single collective whatever the number of tensors.
  EMBER_CHECK(!ts.empty(), "allreduce_coalesced: got an empty list of tensors");
  for (auto& t : ts) {
    check_tensor(t, "allreduce_coalesced");
    EMBER_CHECK_TYPE(t.dtype() == ts[0].dtype() && t.device() == ts[0].device(),
                     "allreduce_coalesced: all tensors must have the same dtype and device");
  }
  std::vector<Tensor> flat;
  for (auto& t : ts) flat.push_back(reshape(contiguous(t), {t.numel()}));
  Tensor buf = cat(flat, 0);
  OpOptions inner = o;
  inner.async_op = true;
  auto w = allreduce(buf, inner);
  auto out = std::make_shared<Work>("allreduce_coalesced", ts);
  std::vector<Tensor> dst = ts;
  w->then([w, out, buf, dst] {
    std::exception_ptr e = w->exception();
    if (!e) {
      try {
        int64_t off = 0;
        for (auto& t : dst) {
          copy_(t, reshape(narrow(buf, 0, off, t.numel()), t.sizes()));
          off += t.numel();
        }
      } catch (...) {
        e = std::current_exception();
      }
    }
    out->finish(e);
  });
  if (!o.async_op) out->wait();
  return out;
}

// ---- checks ----------------------------------------------------------------------------------

void check_tensor(const Tensor& t, const char* op) {
  EMBER_CHECK_TYPE(t.defined(), op, ": expected a Tensor, got None");
}

void check_same_meta(const std::vector<Tensor>& ts, const Tensor& ref, const char* op,
                     const char* what) {
  for (size_t i = 0; i < ts.size(); ++i) {
    check_tensor(ts[i], op);
    EMBER_CHECK_TYPE(ts[i].dtype() == ref.dtype(), op, ": ", what, "[", i, "] has dtype ",
                     dtype_name(ts[i].dtype()), " but the input has ", dtype_name(ref.dtype()));
    EMBER_CHECK_VALUE(ts[i].sizes() == ref.sizes(), op, ": ", what, "[", i, "] has shape ",
                      shape_str(ts[i].sizes()), " but the input has shape ",
                      shape_str(ref.sizes()));
    EMBER_CHECK_VALUE(ts[i].device() == ref.device(), op, ": ", what, "[", i, "] is on ",
                      ts[i].device().str(), " but the input is on ", ref.device().str());
  }
}

void check_rank(int r, int size, const char* op, const char* what) {
  EMBER_CHECK_VALUE(r >= 0 && r < size, op, ": invalid ", what, " rank ", r,
                    " (the group has ranks 0 to ", size - 1, ")");
}

void check_reduce_op(ReduceOp op, DType dtype, const char* op_name) {
  bool bitwise = op == ReduceOp::BAND || op == ReduceOp::BOR || op == ReduceOp::BXOR;
  EMBER_CHECK_TYPE(!bitwise || is_integral(dtype, true), op_name, ": ReduceOp.", reduce_op_name(op),
                   " needs an integer or bool tensor, got ", dtype_name(dtype));
  EMBER_CHECK_VALUE(op != ReduceOp::PREMUL_SUM, op_name,
                    ": ReduceOp.PREMUL_SUM is only supported by the nccl backend");
}

Staged::Staged(const Tensor& t) : orig(t), buf(t.is_contiguous() ? t : contiguous(t)) {}

void Staged::write_back() const {
  if (!buf.is_same(orig)) copy_(orig, buf);
}

// ---- engine registry -------------------------------------------------------------------------

namespace {
std::mutex& registry_mu() {
  static std::mutex mu;
  return mu;
}
std::map<std::string, BackendFactory>& registry() {
  static auto* r = new std::map<std::string, BackendFactory>();
  return *r;
}
}  // namespace

void register_backend(const std::string& name, BackendFactory f) {
  std::lock_guard<std::mutex> g(registry_mu());
  registry()[name] = std::move(f);
}

bool backend_registered(const std::string& name) {
  std::lock_guard<std::mutex> g(registry_mu());
  return registry().count(name) > 0;
}

std::shared_ptr<ProcessGroup> create_process_group(const std::string& name,
                                                   std::shared_ptr<Store> store, int rank, int size,
                                                   const BackendOptions& opts) {
  BackendFactory f;
  {
    std::lock_guard<std::mutex> g(registry_mu());
    auto it = registry().find(name);
    EMBER_CHECK_VALUE(it != registry().end(), "Invalid backend: '", name,
                      "' is not available in this build of ember");
    f = it->second;
  }
  return f(std::move(store), rank, size, opts);
}

}  // namespace ember::distributed
