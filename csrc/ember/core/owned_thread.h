// A std::thread that knows which process started it.
//
// Note [Threads across fork]
// A DataLoader worker is fork()ed from a process whose objects may own threads (a
// BatchPrefetcher, a process group's worker, a TCPStore server). The child inherits the objects
// but not the threads. If the child destroys such an object (its garbage collector runs, or the
// dataset holds one), joining the handle hangs or throws std::system_error, and a throw from a
// destructor aborts the child. So the handle records the pid that started the thread; in any
// other process join() and detach() forget the handle without touching the pthread, the thread
// having never existed there. The mutexes and condition variables those threads waited on
// are in the same state: glibc's pthread_cond_destroy waits for the parent's waiters, forever
// in the child. ProcessLocal<T> holds such an object and destroys it only in the process that
// made it; a child leaks it (one object per fork()ed child that drops it).
#pragma once
#include <unistd.h>

#include <new>
#include <thread>
#include <utility>

namespace ember {

class OwnedThread {
 public:
  OwnedThread() = default;
  template <typename F>
  explicit OwnedThread(F&& f) : t_(std::forward<F>(f)), owner_(::getpid()) {}
  OwnedThread(OwnedThread&&) = default;
  OwnedThread& operator=(OwnedThread&& o) noexcept {
    if (this != &o) {
      forget_if_foreign();
      t_ = std::move(o.t_);
      owner_ = o.owner_;
    }
    return *this;
  }
  ~OwnedThread() { forget_if_foreign(); }

  bool joinable() const { return t_.joinable() && owner_ == ::getpid(); }
  std::thread::id get_id() const { return t_.get_id(); }
  void join() {
    if (!forget_if_foreign() && t_.joinable()) t_.join();
  }
  void detach() {
    if (!forget_if_foreign() && t_.joinable()) t_.detach();
  }

 private:
  // True (and the handle emptied) when the thread was started by another process.
  bool forget_if_foreign() {
    if (!t_.joinable() || owner_ == ::getpid()) return false;
    new (&t_) std::thread();  // drop the stale pthread handle without a call on it
    return true;
  }
  std::thread t_;
  pid_t owner_ = 0;
};

/// A T on the heap that is destroyed only by the process that created it (see above).
template <typename T>
class ProcessLocal {
 public:
  ProcessLocal() : p_(new T()), owner_(::getpid()) {}
  ProcessLocal(const ProcessLocal&) = delete;
  ProcessLocal& operator=(const ProcessLocal&) = delete;
  ~ProcessLocal() {
    if (owner_ == ::getpid()) delete p_;
  }
  T& operator*() const { return *p_; }
  T* operator->() const { return p_; }

 private:
  T* p_;
  pid_t owner_;
};

}  // namespace ember
