#include "ember/distributed/reducer.h"

#include <algorithm>
#include <map>
#include <unordered_set>

#include "ember/autograd/engine.h"
#include "ember/autograd/functions.h"
#include "ember/autograd/grad_mode.h"
#include "ember/ops/factory.h"
#include "ember/ops/join.h"
#include "ember/ops/ops.h"
#include "ember/ops/view.h"

namespace ember::distributed {

// Note [DDP reducer]
// DistributedDataParallel averages gradients across processes while backward still runs,
// as PyTorch's reducer does:
// - The parameters are split into buckets (flat buffers of one dtype and device): at first in
//   reverse parameter order (gradients of the last layers arrive first), the first bucket
//   small (1 MiB) so that communication starts early, the others up to bucket_cap_mb (25).
// - Each parameter has a post-accumulate-grad hook (autograd/node.h): when its .grad is
//   final for this backward, the hook copies it into its bucket, scaled by 1/world size
//   (with gradient_as_bucket_view the .grad *is* the bucket's view, so nothing is copied
//   from the second step on). When the last gradient of a bucket arrives, the bucket's
//   all-reduce starts (asynchronously, on the group's queue thread) while backward goes on
//   with the next layers. Buckets start in index order on every rank, so the collectives
//   always match.
// - When every bucket has started, a callback queued on the engine (queue_callback) runs at
//   the end of backward: it waits for the buckets and copies the averages back into .grad.
// - After the first step the buckets are rebuilt once in the order the gradients actually
//   arrived (rank 0's order, broadcast), unless find_unused_parameters (whose order may
//   change every step).
// - find_unused_parameters: after forward, the graph is searched from the outputs; the
//   parameters it does not reach are marked ready at once (zeros in the bucket), and a map of
//   the parameters used on this rank is all-reduced, so a parameter no rank used keeps its
//   .grad untouched. static_graph: the first step only counts the hook calls per parameter
//   and reduces everything at its end; later steps mark a parameter ready after that many
//   calls (a parameter used twice, e.g. activation checkpointing, works) and its unused
//   parameters without a graph search.
// - no_sync: DDP does not call prepare_for_backward, so the hooks do nothing and gradients
//   accumulate locally; the next synchronized backward reduces the sum.
// - A comm hook replaces the all-reduce of a bucket; the built-in ones (ALLREDUCE,
//   FP16_COMPRESS) run here in C++, a Python hook through CommHook (python/ddp.cpp).

std::pair<std::vector<std::vector<int64_t>>, std::vector<int64_t>>
compute_bucket_assignment_by_size(const std::vector<Tensor>& tensors,
                                  const std::vector<int64_t>& limits,
                                  const std::vector<int64_t>& order) {
  EMBER_CHECK_VALUE(!limits.empty(), "compute_bucket_assignment_by_size: no bucket size limit");
  std::vector<int64_t> idx = order;
  if (idx.empty())
    for (size_t i = 0; i < tensors.size(); ++i) idx.push_back(int64_t(i));
  EMBER_CHECK_VALUE(idx.size() == tensors.size(),
                    "compute_bucket_assignment_by_size: the order names ", idx.size(),
                    " tensors but ", tensors.size(), " were given");
  struct Acc {
    std::vector<int64_t> indices;
    int64_t bytes = 0;
    size_t limit_i = 0;
  };
  std::map<std::pair<int, std::string>, Acc> open;
  std::vector<std::pair<std::vector<int64_t>, int64_t>> out;
  for (int64_t i : idx) {
    EMBER_CHECK_INDEX(i >= 0 && size_t(i) < tensors.size(),
                      "compute_bucket_assignment_by_size: tensor index ", i, " out of range");
    const Tensor& t = tensors[size_t(i)];
    auto key = std::make_pair(int(t.dtype()), t.device().str());
    Acc& a = open[key];
    a.indices.push_back(i);
    a.bytes += t.numel() * t.element_size();
    int64_t limit = limits[std::min(a.limit_i, limits.size() - 1)];
    if (a.bytes >= limit) {
      out.push_back({a.indices, limit});
      a.indices.clear();
      a.bytes = 0;
      a.limit_i = std::min(a.limit_i + 1, limits.size() - 1);
    }
  }
  for (auto& [k, a] : open)
    if (!a.indices.empty())
      out.push_back({a.indices, limits[std::min(a.limit_i, limits.size() - 1)]});
  if (order.empty())
    std::stable_sort(out.begin(), out.end(), [](auto& a, auto& b) {
      return *std::min_element(a.first.begin(), a.first.end()) <
             *std::min_element(b.first.begin(), b.first.end());
    });
  std::vector<std::vector<int64_t>> buckets;
  std::vector<int64_t> sizes;
  for (auto& [b, l] : out) {
    buckets.push_back(b);
    sizes.push_back(l);
  }
  return {buckets, sizes};
}

void broadcast_coalesced(ProcessGroup& pg, const std::vector<Tensor>& tensors, int64_t buffer_size,
                         int src) {
  autograd::GradModeGuard no_grad(false);
  std::map<std::pair<int, std::string>, std::pair<std::vector<Tensor>, int64_t>> open;
  auto flush = [&](std::vector<Tensor>& ts) {
    if (ts.empty()) return;
    std::vector<Tensor> flat;
    for (auto& t : ts) flat.push_back(reshape(contiguous(t), {t.numel()}));
    Tensor buf = flat.size() == 1 ? clone(flat[0]) : cat(flat, 0);
    OpOptions o;
    o.root = src;
    o.async_op = false;
    pg.broadcast(buf, o)->wait();
    if (pg.rank() != src) {
      int64_t off = 0;
      for (auto& t : ts) {
        copy_(t, reshape(narrow(buf, 0, off, t.numel()), t.sizes()));
        off += t.numel();
      }
    }
    ts.clear();
  };
  // Flushed in the order the groups fill up: the same on every rank.
  for (const Tensor& t : tensors) {
    auto key = std::make_pair(int(t.dtype()), t.device().str());
    auto& [ts, bytes] = open[key];
    int64_t nb = t.numel() * t.element_size();
    if (!ts.empty() && bytes + nb > buffer_size) {
      flush(ts);
      bytes = 0;
    }
    ts.push_back(t);
    bytes += nb;
  }
  for (auto& [k, v] : open) flush(v.first);
}

// ---- Reducer ---------------------------------------------------------------------------------

namespace {

Tensor grad_of(const Tensor& p) {
  auto* m = autograd::meta(p);
  return m ? m->grad : Tensor();
}

void set_grad(const Tensor& p, const Tensor& g) { autograd::materialize_meta(p)->grad = g; }

bool aliases(const Tensor& a, const Tensor& b) {
  return a.defined() && b.defined() && a.storage() == b.storage() &&
         a.storage_offset() == b.storage_offset() && a.sizes() == b.sizes() &&
         a.strides() == b.strides();
}

}  // namespace

Reducer::Reducer(std::vector<Tensor> params, std::vector<std::vector<int64_t>> bucket_indices,
                 std::vector<int64_t> per_bucket_limits, std::shared_ptr<ProcessGroup> pg,
                 Options opts)
    : params_(std::move(params)), pg_(std::move(pg)), opts_(std::move(opts)) {
  EMBER_CHECK_VALUE(pg_, "Reducer: no process group");
  for (size_t i = 0; i < params_.size(); ++i) {
    EMBER_CHECK(autograd::requires_grad(params_[i]) && autograd::is_leaf(params_[i]),
                "DistributedDataParallel: ", param_name(int64_t(i)),
                " must be a leaf tensor that requires grad");
  }
  ready_this_iteration_.assign(params_.size(), 0);
  local_used_ = zeros({int64_t(params_.size())}, DType::Int32);
  hooks_seen_.assign(params_.size(), 0);
  initialize_buckets(bucket_indices, per_bucket_limits);
}

Reducer::~Reducer() {
  for (auto& a : hook_alive_) *a = false;
}

std::string Reducer::param_name(int64_t i) const {
  if (size_t(i) < opts_.param_names.size() && !opts_.param_names[size_t(i)].empty())
    return "parameter " + std::to_string(i) + " (" + opts_.param_names[size_t(i)] + ")";
  return "parameter " + std::to_string(i);
}

void Reducer::install_hooks() {
  std::weak_ptr<Reducer> weak = weak_from_this();
  for (size_t i = 0; i < params_.size(); ++i) {
    autograd::PostAccumulateGradHook h;
    int64_t index = int64_t(i);
    h.fn = [weak, index](const Tensor&) {
      if (auto r = weak.lock()) r->autograd_hook(index);
    };
    hook_alive_.push_back(h.alive);
    autograd::materialize_meta(params_[i])->post_accumulate_hooks.push_back(h);
  }
}

void Reducer::initialize_buckets(const std::vector<std::vector<int64_t>>& indices,
                                 const std::vector<int64_t>& limits) {
  autograd::GradModeGuard no_grad(false);
  std::vector<Bucket> fresh;
  std::vector<std::pair<size_t, size_t>> loc(params_.size(), {SIZE_MAX, SIZE_MAX});
  for (size_t b = 0; b < indices.size(); ++b) {
    const auto& vars = indices[b];
    EMBER_CHECK_VALUE(!vars.empty(), "DistributedDataParallel: bucket ", b, " is empty");
    Bucket bk;
    int64_t total = 0;
    const Tensor& first = params_.at(size_t(vars[0]));
    for (int64_t v : vars) {
      EMBER_CHECK_INDEX(v >= 0 && size_t(v) < params_.size(),
                        "DistributedDataParallel: ", "bucket ", b, " names parameter ", v, " of ",
                        params_.size());
      EMBER_CHECK_VALUE(loc[size_t(v)].first == SIZE_MAX,
                        "DistributedDataParallel: ", param_name(v), " is in two buckets");
      const Tensor& p = params_[size_t(v)];
      EMBER_CHECK_TYPE(p.dtype() == first.dtype() && p.device() == first.device(),
                       "DistributedDataParallel: a bucket mixes dtypes or devices (", param_name(v),
                       ")");
      total += p.numel();
    }
    bk.gradients = zeros({total}, first.dtype(), first.device());
    int64_t off = 0;
    for (size_t k = 0; k < vars.size(); ++k) {
      const Tensor& p = params_[size_t(vars[k])];
      bk.variables.push_back(vars[k]);
      bk.offsets.push_back(off);
      bk.lengths.push_back(p.numel());
      Tensor view = reshape(narrow(bk.gradients, 0, off, p.numel()), p.sizes());
      bk.views_in.push_back(view);
      loc[size_t(vars[k])] = {b, k};
      if (opts_.gradient_as_bucket_view) {
        Tensor g = grad_of(p);
        if (g.defined() && !aliases(g, view)) {
          copy_(view, g);
          set_grad(p, view);
        }
      }
      off += p.numel();
    }
    bk.views_out = bk.views_in;
    bk.pending = vars.size();
    bk.size_limit = b < limits.size() ? limits[b] : opts_.bucket_bytes_cap;
    fresh.push_back(std::move(bk));
  }
  for (size_t i = 0; i < params_.size(); ++i)
    EMBER_CHECK_VALUE(loc[i].first != SIZE_MAX, "DistributedDataParallel: ", param_name(int64_t(i)),
                      " is in no bucket");
  buckets_ = std::move(fresh);
  locator_ = std::move(loc);
}

std::vector<std::vector<int64_t>> Reducer::bucket_indices() const {
  std::vector<std::vector<int64_t>> out;
  for (auto& b : buckets_) out.push_back(b.variables);
  return out;
}

std::vector<bool> Reducer::globally_unused() const {
  std::vector<bool> out(params_.size(), false);
  if (!global_used_.defined()) return out;
  Tensor g = to_device(global_used_, Device());
  for (size_t i = 0; i < params_.size(); ++i) out[i] = g.data<int32_t>()[i] == 0;
  return out;
}

void Reducer::reset_bucket_counting() {
  next_bucket_ = 0;
  for (auto& b : buckets_) {
    b.pending = b.variables.size();
    b.work.reset();
    b.hook_handle.reset();
    b.compressed = Tensor();
  }
  std::fill(ready_this_iteration_.begin(), ready_this_iteration_.end(), 0);
}

void Reducer::ensure_prior_reduction_finished() {
  if (!require_finalize_) return;
  std::string missing;
  for (size_t i = 0; i < params_.size(); ++i)
    if (!ready_this_iteration_[i]) missing += " " + std::to_string(i);
  std::string names;
  for (size_t i = 0; i < params_.size() && !opts_.param_names.empty(); ++i)
    if (!ready_this_iteration_[i] && i < opts_.param_names.size())
      names += (names.empty() ? "" : ", ") + opts_.param_names[i];
  raise(ErrorKind::Runtime,
        "Expected to have finished reduction in the prior iteration before starting a new one. "
        "This error indicates that your module has parameters that were not used in producing "
        "loss. You can enable unused parameter detection by passing the keyword argument "
        "`find_unused_parameters=True` to `ember.nn.parallel.DistributedDataParallel`, and by "
        "making sure all `forward` function outputs participate in calculating loss.\n"
        "If you already have done the above, then the distributed data parallel module wasn't "
        "able to locate the output tensors in the return value of your module's `forward` "
        "function.\nParameter indices which did not receive grad for rank ",
        pg_->rank(), ":", missing,
        names.empty() ? "" : "\nParameters which did not receive grad: ", names);
}

void Reducer::prepare_for_forward() {
  std::lock_guard<std::recursive_mutex> g(mu_);
  ++num_iterations_;
}

void Reducer::prepare_for_backward(const std::vector<Tensor>& outputs) {
  std::lock_guard<std::recursive_mutex> g(mu_);
  ensure_prior_reduction_finished();
  expect_hooks_ = true;
  finalize_queued_ = false;
  marked_unused_ = false;
  reset_bucket_counting();
  if (static_first()) std::fill(hooks_seen_.begin(), hooks_seen_.end(), 0);
  if (static_after_first()) hooks_left_ = hooks_seen_;
  if (dynamic_find_unused()) {
    unused_.clear();
    search_unused_parameters(outputs);
  }
}

void Reducer::search_unused_parameters(const std::vector<Tensor>& outputs) {
  std::unordered_set<autograd::Node*> seen;
  std::vector<autograd::Node*> stack;
  for (const Tensor& o : outputs) {
    if (!o.defined() || !autograd::requires_grad(o)) continue;
    autograd::Edge e = autograd::gradient_edge(o);
    if (e.fn && seen.insert(e.fn.get()).second) stack.push_back(e.fn.get());
  }
  while (!stack.empty()) {
    autograd::Node* n = stack.back();
    stack.pop_back();
    for (auto& e : n->next_edges)
      if (e.fn && seen.insert(e.fn.get()).second) stack.push_back(e.fn.get());
  }
  for (size_t i = 0; i < params_.size(); ++i) {
    auto* m = autograd::meta(params_[i]);
    std::shared_ptr<autograd::Node> acc = m ? m->grad_accumulator.lock() : nullptr;
    if (!acc || !seen.count(acc.get())) unused_.push_back(int64_t(i));
  }
}

void Reducer::autograd_hook(int64_t i) {
  std::lock_guard<std::recursive_mutex> g(mu_);
  autograd::GradModeGuard no_grad(false);
  if (dynamic_find_unused() || static_first())
    if (grad_of(params_[size_t(i)]).defined()) local_used_.data<int32_t>()[i] = 1;
  if (!expect_hooks_) return;  // no_sync(), or a backward DDP did not prepare
  if (static_first()) {
    if (hooks_seen_[size_t(i)]++ == 0 && should_rebuild()) rebuilt_order_.push_back(i);
    if (!finalize_queued_) {
      finalize_queued_ = true;
      std::weak_ptr<Reducer> weak = weak_from_this();
      autograd::queue_callback([weak] {
        if (auto r = weak.lock()) r->finalize_backward();
      });
    }
    return;
  }
  if (!marked_unused_) {
    marked_unused_ = true;
    for (int64_t u : unused_) mark_variable_ready(u);
  }
  if (static_after_first()) {
    EMBER_CHECK(hooks_left_[size_t(i)] > 0,
                "DistributedDataParallel(static_graph=True): ", param_name(i),
                " received more gradients than in the first iteration. Your "
                "training graph has changed in this iteration, which static_graph=True does not "
                "allow.");
    if (--hooks_left_[size_t(i)] > 0) return;
  }
  if (should_rebuild()) rebuilt_order_.push_back(i);
  mark_variable_ready(i);
}

double Reducer::divide_factor() {
  if (forward_work_ && !static_world_size_) {
    forward_work_->wait();
    std::vector<Tensor> r = forward_work_->result();
    EMBER_CHECK(!r.empty(), "DistributedDataParallel: the join work handle has no result");
    Tensor c = to_dtype(to_device(r[0], Device()), DType::Float64);
    double n = *c.data<double>();
    return n > 0 ? n : double(pg_->size());
  }
  return double(pg_->size());
}

void Reducer::mark_variable_ready(int64_t i) {
  EMBER_CHECK(!ready_this_iteration_[size_t(i)],
              "Expected to mark a variable ready only once. This error is caused by one of the "
              "following reasons: 1) Use of a module parameter outside the `forward` function. "
              "Please make sure model parameters are not shared across multiple concurrent "
              "forward-backward passes, or try to use _set_static_graph() as a workaround if "
              "this module graph does not change during training loop. 2) Reused parameters in "
              "multiple reentrant backward passes. For example, if you use multiple `checkpoint` "
              "functions to wrap the same part of your model, it would result in the same set of "
              "parameters been used by different reentrant backward passes multiple times, and "
              "hence marking a variable ready multiple times. DDP does not support such use "
              "cases in default; you can try static_graph=True as a workaround. Parameter at "
              "index ",
              i, " (", param_name(i), ") has been marked as ready twice.");
  ready_this_iteration_[size_t(i)] = 1;
  require_finalize_ = true;
  auto [b, k] = locator_[size_t(i)];
  Bucket& bk = buckets_[b];
  const Tensor& p = params_[size_t(i)];
  Tensor view = bk.views_in[k];
  Tensor grad = grad_of(p);
  bool scale = !comm_hook_ && builtin_ == BuiltinCommHook::ALLREDUCE;
  double div = scale ? divide_factor() : 1.0;
  if (grad.defined()) {
    EMBER_CHECK(grad.sizes() == p.sizes() && grad.dtype() == p.dtype(),
                "DistributedDataParallel: the gradient of ", param_name(i), " has shape ",
                shape_str(grad.sizes()), " and dtype ", dtype_name(grad.dtype()),
                "; expected the parameter's");
    if (!aliases(grad, view)) {
      if (scale)
        binary_out(BinaryOp::mul, grad, wrap_scalar(Scalar(1.0 / div)), view);
      else
        copy_(view, grad);
      if (opts_.gradient_as_bucket_view) set_grad(p, view);
    } else if (scale) {
      binary_(BinaryOp::mul, view, wrap_scalar(Scalar(1.0 / div)));
    }
  } else {
    fill_(view, Scalar(0.0));
  }
  if (--bk.pending == 0) mark_bucket_ready(b);
}

void Reducer::mark_bucket_ready(size_t) {
  for (; next_bucket_ < buckets_.size() && buckets_[next_bucket_].pending == 0; ++next_bucket_)
    launch_bucket(buckets_[next_bucket_], next_bucket_);
  if (next_bucket_ < buckets_.size()) return;
  if (dynamic_find_unused() || static_first()) {
    global_used_ = to_device(local_used_, params_[0].device(), /*copy=*/true);
    OpOptions o;
    local_used_work_ = pg_->allreduce(global_used_, o);
  }
  if (!finalize_queued_) {
    finalize_queued_ = true;
    std::weak_ptr<Reducer> weak = weak_from_this();
    autograd::queue_callback([weak] {
      if (auto r = weak.lock()) r->finalize_backward();
    });
  }
}

void Reducer::launch_bucket(Bucket& bk, size_t index) {
  OpOptions o;  // SUM, async
  if (comm_hook_) {
    GradBucket gb;
    gb.index = index;
    gb.buffer = bk.gradients;
    gb.gradients = bk.views_in;
    for (int64_t v : bk.variables) gb.parameters.push_back(params_[size_t(v)]);
    gb.is_last = index + 1 == buckets_.size();
    bk.hook_handle = comm_hook_->run(gb);
  } else if (builtin_ == BuiltinCommHook::FP16_COMPRESS) {
    bk.compressed = to_dtype(bk.gradients, DType::Float16, /*copy=*/true);
    binary_(BinaryOp::div, bk.compressed, wrap_scalar(Scalar(double(pg_->size()))));
    bk.work = pg_->allreduce(bk.compressed, o);
  } else {
    bk.work = pg_->allreduce(bk.gradients, o);
  }
}

void Reducer::delay_all_reduce() {
  // static_graph's first step: every parameter is ready now; unused ones are those whose
  // hook never ran.
  unused_.clear();
  for (size_t i = 0; i < params_.size(); ++i)
    if (hooks_seen_[i] == 0) unused_.push_back(int64_t(i));
  for (size_t i = 0; i < params_.size(); ++i) mark_variable_ready(int64_t(i));
}

void Reducer::finalize_backward() {
  std::lock_guard<std::recursive_mutex> g(mu_);
  autograd::GradModeGuard no_grad(false);
  if (static_first()) delay_all_reduce();
  expect_hooks_ = false;
  require_finalize_ = false;
  std::exception_ptr err;
  // Wait for every bucket first (so none is left in flight when one fails).
  std::vector<Tensor> results(buckets_.size());
  for (size_t b = 0; b < buckets_.size(); ++b) {
    Bucket& bk = buckets_[b];
    try {
      if (comm_hook_) {
        results[b] = comm_hook_->wait(bk.hook_handle);
        bk.hook_handle.reset();
        EMBER_CHECK(results[b].defined() && results[b].numel() == bk.gradients.numel(),
                    "DistributedDataParallel: the comm hook's result for bucket ", b, " has ",
                    results[b].defined() ? results[b].numel() : 0,
                    " elements; expected the bucket's ", bk.gradients.numel());
      } else if (bk.work) {
        bk.work->wait();
        bk.work.reset();
        if (bk.compressed.defined()) {
          copy_(bk.gradients, bk.compressed);
          bk.compressed = Tensor();
        }
        results[b] = bk.gradients;
      }
    } catch (...) {
      if (!err) err = std::current_exception();
    }
  }
  if (local_used_work_) {
    try {
      local_used_work_->wait();
    } catch (...) {
      if (!err) err = std::current_exception();
    }
    local_used_work_.reset();
  }
  if (err) std::rethrow_exception(err);
  std::vector<bool> unused_everywhere = (dynamic_find_unused() || static_first())
                                            ? globally_unused()
                                            : std::vector<bool>(params_.size(), false);
  for (size_t b = 0; b < buckets_.size(); ++b) {
    Bucket& bk = buckets_[b];
    Tensor res = results[b];
    bool in_place = res.defined() && res.storage() == bk.gradients.storage() &&
                    res.storage_offset() == bk.gradients.storage_offset();
    if (res.defined() && !in_place && opts_.gradient_as_bucket_view) {
      copy_(bk.gradients, reshape(res, bk.gradients.sizes()));
      in_place = true;
    }
    for (size_t k = 0; k < bk.variables.size(); ++k) {
      int64_t v = bk.variables[k];
      if (unused_everywhere[size_t(v)]) continue;  // no rank used it: .grad stays as it was
      Tensor out =
          in_place ? bk.views_in[k]
                   : reshape(narrow(reshape(res, {res.numel()}), 0, bk.offsets[k], bk.lengths[k]),
                             params_[size_t(v)].sizes());
      const Tensor& p = params_[size_t(v)];
      Tensor grad = grad_of(p);
      if (opts_.gradient_as_bucket_view) {
        if (!aliases(grad, out)) set_grad(p, out);
      } else if (grad.defined()) {
        copy_(grad, out);
      } else {
        set_grad(p, clone(out));
      }
    }
  }
  if (dynamic_find_unused() || static_first()) fill_(local_used_, Scalar(int64_t(0)));
  if (should_rebuild() && !rebuilt_order_.empty()) {
    // Parameters without a gradient this step go last, so the order is a permutation.
    std::vector<char> in(params_.size(), 0);
    for (int64_t v : rebuilt_order_) in[size_t(v)] = 1;
    for (size_t i = 0; i < params_.size(); ++i)
      if (!in[i]) rebuilt_order_.push_back(int64_t(i));
  }
}

bool Reducer::rebuild_buckets() {
  std::lock_guard<std::recursive_mutex> g(mu_);
  ensure_prior_reduction_finished();
  if (!should_rebuild() || rebuilt_order_.empty()) return false;
  EMBER_CHECK(rebuilt_order_.size() == params_.size(),
              "DistributedDataParallel: expected the rebuilt order to name every parameter (",
              params_.size(), "), it names ", rebuilt_order_.size());
  // Every rank takes rank 0's order, so the buckets (and their collectives) match.
  Tensor order = int64_tensor(rebuilt_order_, Device());
  Tensor dev = to_device(order, params_[0].device());
  OpOptions o;
  o.root = 0;
  o.async_op = false;
  pg_->broadcast(dev, o)->wait();
  order = to_device(dev, Device());
  std::vector<int64_t> ord(order.data<int64_t>(), order.data<int64_t>() + order.numel());
  auto [idx, limits] = compute_bucket_assignment_by_size(
      params_, {opts_.first_bucket_bytes, opts_.bucket_bytes_cap}, ord);
  initialize_buckets(idx, limits);
  has_rebuilt_ = true;
  rebuilt_order_.clear();
  return true;
}

void Reducer::push_all_rebuilt_params() {
  std::lock_guard<std::recursive_mutex> g(mu_);
  if (!should_rebuild() || !rebuilt_order_.empty()) return;
  for (size_t i = 0; i < params_.size(); ++i) rebuilt_order_.push_back(int64_t(i));
}

void Reducer::register_comm_hook(std::shared_ptr<CommHook> hook) {
  std::lock_guard<std::recursive_mutex> g(mu_);
  EMBER_CHECK(!comm_hook_ && builtin_ == BuiltinCommHook::ALLREDUCE,
              "register_comm_hook or register_builtin_comm_hook can only be called once.");
  comm_hook_ = std::move(hook);
}

void Reducer::register_builtin_comm_hook(BuiltinCommHook kind) {
  std::lock_guard<std::recursive_mutex> g(mu_);
  EMBER_CHECK(!comm_hook_ && builtin_ == BuiltinCommHook::ALLREDUCE,
              "register_comm_hook or register_builtin_comm_hook can only be called once.");
  builtin_ = kind;
}

void Reducer::set_forward_pass_work_handle(std::shared_ptr<Work> work,
                                           bool divide_by_initial_world_size) {
  std::lock_guard<std::recursive_mutex> g(mu_);
  forward_work_ = std::move(work);
  static_world_size_ = divide_by_initial_world_size;
}

void Reducer::run_join_shadow() {
  std::lock_guard<std::recursive_mutex> g(mu_);
  autograd::GradModeGuard no_grad(false);
  OpOptions o;
  std::vector<std::shared_ptr<Work>> works;
  std::vector<std::shared_ptr<void>> handles;
  for (size_t b = 0; b < buckets_.size(); ++b) {
    Bucket& bk = buckets_[b];
    Tensor z = zeros(bk.gradients.sizes(), bk.gradients.dtype(), bk.gradients.device());
    if (comm_hook_) {
      GradBucket gb;
      gb.index = b;
      gb.buffer = z;
      int64_t off = 0;
      for (size_t k = 0; k < bk.variables.size(); ++k) {
        const Tensor& p = params_[size_t(bk.variables[k])];
        gb.gradients.push_back(reshape(narrow(z, 0, off, p.numel()), p.sizes()));
        gb.parameters.push_back(p);
        off += p.numel();
      }
      gb.is_last = b + 1 == buckets_.size();
      handles.push_back(comm_hook_->run(gb));
    } else if (builtin_ == BuiltinCommHook::FP16_COMPRESS) {
      works.push_back(pg_->allreduce(to_dtype(z, DType::Float16, true), o));
    } else {
      works.push_back(pg_->allreduce(z, o));
    }
  }
  for (auto& w : works) w->wait();
  for (auto& h : handles) comm_hook_->wait(h);
  if (dynamic_find_unused()) {
    Tensor z = zeros({int64_t(params_.size())}, DType::Int32, params_[0].device());
    pg_->allreduce(z, o)->wait();
  }
}

std::vector<GradBucket> Reducer::grad_buckets() {
  std::lock_guard<std::recursive_mutex> g(mu_);
  std::vector<GradBucket> out;
  for (size_t b = 0; b < buckets_.size(); ++b) {
    GradBucket gb;
    gb.index = b;
    gb.buffer = buckets_[b].gradients;
    gb.gradients = buckets_[b].views_in;
    for (int64_t v : buckets_[b].variables) gb.parameters.push_back(params_[size_t(v)]);
    gb.is_last = b + 1 == buckets_.size();
    out.push_back(gb);
  }
  return out;
}

}  // namespace ember::distributed
