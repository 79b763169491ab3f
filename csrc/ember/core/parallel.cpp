#include "ember/core/parallel.h"

#include <pthread.h>
#include <sched.h>
#include <strings.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ember/core/error.h"
#include "ember/core/tls.h"
#include "ember/core/warning.h"

namespace ember {

// Note [Thread pool and fork]
// Worker threads do not survive fork(). DataLoader workers fork, so the child
// must not wait on workers that no longer exist: an atfork handler forgets the
// pool in the child (leaking it on purpose) and the child builds a new one on
// first use.
namespace {

EMBER_TLS_FAST thread_local bool t_in_parallel = false;
void (*g_blas_hook)(int) = nullptr;

// The default thread count: EMBER_NUM_THREADS, else OMP_NUM_THREADS (which PyTorch
// honours too), else the number of cores. A process that shares the machine with
// others (pytest -n 2, DataLoader workers) sets one of them to avoid oversubscribing
// the cores, which makes fork-join waits cost a scheduler time slice each.
int default_threads() {
  for (const char* var : {"EMBER_NUM_THREADS", "OMP_NUM_THREADS"}) {
    if (const char* v = std::getenv(var)) {
      char* end = nullptr;
      long n = std::strtol(v, &end, 10);
      if (end != v && *end == '\0' && n > 0 && n < 4096) return int(n);
    }
  }
  unsigned n = std::thread::hardware_concurrency();
  return n ? int(n) : 1;
}
std::atomic<int> g_num_threads{0};

// Note [Spinning workers]
// A worker that blocks on the condition variable as soon as its task is done pays a
// futex wake-up (tens of microseconds on a loaded VM) at the start of the next
// parallel op, and the caller pays another waiting for the workers to finish. For
// the mid-sized ops of an eager loop that is most of the op: a sum of 256K floats on
// 2 threads took 25-42 us blocking and 20 us spinning (PyTorch, whose OpenMP threads
// spin too, 23-31 us), a sum of 1M floats 78-84 against 61-63 us. So workers and the
// waiting caller first spin for up to kSpinNs (with pause, and sched_yield every 64
// rounds so a thread that shares the core still runs), and only then block. As with
// OpenMP, OMP_WAIT_POLICY=passive turns spinning off.
constexpr int64_t kSpinNs = 50000;

int64_t spin_ns() {
  static const int64_t ns = [] {
    const char* v = std::getenv("OMP_WAIT_POLICY");
    return v && strcasecmp(v, "passive") == 0 ? int64_t(0) : kSpinNs;
  }();
  return ns;
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

/// Spins until ready() or for about spin_ns(); returns ready().
template <typename F>
bool spin_until(const F& ready) {
  const int64_t limit = spin_ns();
  if (limit <= 0) return ready();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 1;; ++i) {
    if (ready()) return true;
    if ((i & 63) != 0) {
      cpu_relax();
      continue;
    }
    const auto waited = std::chrono::steady_clock::now() - t0;
    if (std::chrono::duration_cast<std::chrono::nanoseconds>(waited).count() > limit)
      return ready();
    sched_yield();
  }
}

// Note [Thread pool start failure]
// Starting a thread can fail (RLIMIT_AS too small for another stack, a pids cgroup
// limit, RLIMIT_NPROC): std::thread's constructor then throws. The pool keeps the workers
// it did start and runs with them; tasks are claimed dynamically (work()), so any number
// of workers, zero included, completes every task. Throwing out of the constructor
// instead destroyed the mutex and condition variables under the started workers, and
// every later parallel op waited forever. pool_for() then rebuilds the pool with half the
// workers that started (leaving the exhausted resource some room for the ops' own memory),
// lowers the thread count to that and warns.
class ThreadPool {
 public:
  explicit ThreadPool(int n) {
    try {
      workers_.reserve(size_t(n));
      for (int i = 0; i < n; ++i) workers_.emplace_back([this, i] { loop(i); });
    } catch (const std::exception&) {  // std::system_error (EAGAIN) or std::bad_alloc
    }
  }
  ~ThreadPool() {
    {
      std::lock_guard<std::mutex> g(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
  }
  int size() const { return int(workers_.size()); }

  // Runs task(i) for i in [0, ntasks); the caller works too.
  void run(int ntasks, const std::function<void(int)>& task) {
    std::unique_lock<std::mutex> run_lock(run_mu_);
    {
      std::lock_guard<std::mutex> g(mu_);
      task_ = &task;
      ntasks_ = ntasks;
      next_ = 0;
      pending_ = ntasks;
      ++generation_;
    }
    cv_.notify_all();
    uint64_t gen;
    {
      std::lock_guard<std::mutex> g(mu_);
      gen = generation_;
    }
    work(gen);
    spin_until([this] { return pending_.load(std::memory_order_acquire) == 0; });
    std::unique_lock<std::mutex> g(mu_);
    done_cv_.wait(g, [this] { return pending_ == 0; });
    task_ = nullptr;
  }

 private:
  void loop(int) {
    uint64_t seen = 0;
    for (;;) {
      spin_until([&] {  // Note [Spinning workers]
        return stop_.load(std::memory_order_acquire) ||
               generation_.load(std::memory_order_acquire) != seen;
      });
      {
        std::unique_lock<std::mutex> g(mu_);
        cv_.wait(g, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
      }
      work(seen);
    }
  }

  // Claims tasks of generation `gen` until none are left. Claiming under the
  // lock keeps a late worker from running a finished generation's task.
  void work(uint64_t gen) {
    for (;;) {
      const std::function<void(int)>* task;
      int i;
      {
        std::lock_guard<std::mutex> g(mu_);
        if (generation_ != gen || next_ >= ntasks_) return;
        i = next_++;
        task = task_;
      }
      (*task)(i);
      std::lock_guard<std::mutex> g(mu_);
      if (--pending_ == 0) done_cv_.notify_one();
    }
  }

  std::vector<std::thread> workers_;
  std::mutex mu_, run_mu_;
  std::condition_variable cv_, done_cv_;
  const std::function<void(int)>* task_ = nullptr;
  int ntasks_ = 0;
  int next_ = 0;
  // Written under mu_; atomic so that spin_until may read them without it.
  std::atomic<int> pending_{0};
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stop_{false};
};

std::mutex g_pool_mu;
ThreadPool* g_pool = nullptr;

void forget_pool_in_child() { g_pool = nullptr; }
struct AtForkRegistrar {
  AtForkRegistrar() { pthread_atfork(nullptr, nullptr, &forget_pool_in_child); }
} g_atfork;

// The pool for `nthreads` threads (the caller and nthreads - 1 workers). When fewer
// workers start (Note [Thread pool start failure]) the thread count falls to what
// started, with a warning, and *started is set to it.
ThreadPool& pool_for(int nthreads, int* started) {
  std::lock_guard<std::mutex> g(g_pool_mu);
  *started = 0;
  if (!g_pool || g_pool->size() != nthreads - 1) {
    delete g_pool;
    g_pool = new ThreadPool(nthreads - 1);
    if (g_pool->size() != nthreads - 1) {
      // Whatever stopped the next thread (address space, processes) is exhausted now: keep
      // half the workers that started, so the ops themselves still find memory.
      const int keep = g_pool->size() / 2;
      delete g_pool;
      g_pool = new ThreadPool(keep);
      *started = g_pool->size() + 1;
      g_num_threads.store(*started);
    }
  }
  return *g_pool;
}

}  // namespace

int get_num_threads() {
  int n = g_num_threads.load();
  if (n > 0) return n;
  // Read once: hardware_concurrency() opens /sys/devices/system/cpu/online, a few
  // microseconds of system calls that every GEMM and parallel_for of a process that
  // never called set_num_threads paid (a 5-op MLP forward: ~6 us of 19).
  static const int fallback = default_threads();
  return fallback;
}

void set_num_threads(int n) {
  EMBER_CHECK(n > 0, "set_num_threads expects a positive integer, got ", n);
  g_num_threads.store(n);
  if (g_blas_hook) g_blas_hook(n);
}

void set_blas_threads_hook(void (*hook)(int)) {
  g_blas_hook = hook;
  if (hook) hook(get_num_threads());
}

bool in_parallel_region() { return t_in_parallel; }

void parallel_for(int64_t begin, int64_t end, int64_t grain,
                  const std::function<void(int64_t, int64_t)>& f) {
  int64_t n = end - begin;
  if (n <= 0) return;
  int nt = get_num_threads();
  grain = std::max<int64_t>(grain, 1);
  int64_t max_chunks = (n + grain - 1) / grain;
  int tasks = int(std::min<int64_t>(nt, max_chunks));
  if (tasks <= 1 || t_in_parallel) {
    f(begin, end);
    return;
  }
  int64_t chunk = (n + tasks - 1) / tasks;
  std::exception_ptr err;
  std::mutex err_mu;
  std::function<void(int)> task = [&](int i) {
    int64_t b = begin + i * chunk, e = std::min(end, b + chunk);
    if (b >= e) return;
    bool prev = t_in_parallel;
    t_in_parallel = true;
    try {
      f(b, e);
    } catch (...) {
      std::lock_guard<std::mutex> g(err_mu);
      if (!err) err = std::current_exception();
    }
    t_in_parallel = prev;
  };
  int started = 0;
  ThreadPool& pool = pool_for(nt, &started);
  if (started)
    warn("ember: could not start the " + std::to_string(nt - 1) +
         " worker threads the thread pool needs (a resource limit: RLIMIT_AS, RLIMIT_NPROC or "
         "a pids cgroup); running with " +
         std::to_string(started) + " threads. ember.set_num_threads(" + std::to_string(started) +
         ") silences this.");
  pool.run(tasks, task);
  if (err) std::rethrow_exception(err);
}

}  // namespace ember
