// Key-value stores for rendezvous: the Store interface and HashStore, PrefixStore,
// FileStore (TCPStore is in tcp_store.h). See Note [Stores].
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "ember/core/error.h"

namespace ember::distributed {

// Note [Stores]
// Processes of a job find each other through a small key-value store: rank 0 (or the
// launcher) hosts a TCPStore, a FileStore is a file on a shared file system, a HashStore
// lives in one process (threads, world size 1). The collective engines (Gloo's
// rendezvous, NCCL's unique id) exchange their addresses through it, and ember uses it to
// explain failures (Note [Naming the failing rank] in process_group.h). Every store call
// that waits honours the store's timeout and raises DistStoreError naming the keys; a
// store's clone() is a second handle on the same data (for TCPStore a second connection)
// so that a thread can block in wait() without holding up the others, and interrupt()
// makes the waits of one handle raise at once (how a background waiter is stopped).

using Millis = std::chrono::milliseconds;
using Bytes = std::vector<uint8_t>;

/// ember.distributed's error classes (DistError and its subclasses in Python, all
/// RuntimeErrors).
enum class DistErrorKind { Generic, Backend, Store, Network };

class DistError : public Error {
 public:
  DistError(DistErrorKind k, const std::string& msg)
      : Error(ErrorKind::Runtime, msg), dist_kind_(k) {}
  DistErrorKind dist_kind() const { return dist_kind_; }

 private:
  DistErrorKind dist_kind_;
};

template <typename... Args>
[[noreturn]] void raise_dist(DistErrorKind kind, const Args&... args) {
  throw DistError(kind, detail::str(args...));
}

/// "wait timeout after 100ms, keys: a, b" (PyTorch's TCPStore wording).
[[noreturn]] void raise_wait_timeout(Millis timeout, const std::vector<std::string>& keys);

inline Bytes to_bytes(const std::string& s) { return Bytes(s.begin(), s.end()); }
inline std::string to_string(const Bytes& b) { return std::string(b.begin(), b.end()); }

/// The interface every store implements (PyTorch's c10d::Store).
class Store {
 public:
  static constexpr Millis kDefaultTimeout{300000};
  explicit Store(Millis timeout = kDefaultTimeout) : timeout_ms_(timeout.count()) {}
  virtual ~Store() = default;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  virtual void set(const std::string& key, const Bytes& value) = 0;
  /// The value of `key`, waiting up to the timeout for it to be set.
  virtual Bytes get(const std::string& key) = 0;
  /// Adds `delta` to the integer stored (as decimal text) at `key` (0 when missing).
  virtual int64_t add(const std::string& key, int64_t delta) = 0;
  /// Sets `key` to `desired` if it holds `expected`, or if it is missing and `expected` is
  /// empty; returns the value the key holds afterwards (`expected` when it stays missing).
  virtual Bytes compare_set(const std::string& key, const Bytes& expected,
                            const Bytes& desired) = 0;
  virtual bool delete_key(const std::string& key) = 0;
  /// True when every key is set (does not wait).
  virtual bool check(const std::vector<std::string>& keys) = 0;
  virtual int64_t num_keys() = 0;
  /// Waits until every key is set; raises DistStoreError after `timeout`.
  virtual void wait(const std::vector<std::string>& keys, Millis timeout) = 0;
  void wait(const std::vector<std::string>& keys) { wait(keys, timeout()); }
  /// Appends to the value at `key` (creating it).
  virtual void append(const std::string& key, const Bytes& value) = 0;
  virtual std::vector<Bytes> multi_get(const std::vector<std::string>& keys);
  virtual void multi_set(const std::vector<std::string>& keys, const std::vector<Bytes>& values);
  /// A second handle on the same data whose blocking calls do not hold up this one.
  virtual std::shared_ptr<Store> clone() = 0;
  /// clone() with its own timeout (for TCPStore also the time allowed to connect).
  virtual std::shared_ptr<Store> clone_with_timeout(Millis timeout) {
    auto s = clone();
    s->set_timeout(timeout);
    return s;
  }
  /// Makes waits blocked in this handle raise now; the handle is unusable afterwards.
  virtual void interrupt() = 0;

  Millis timeout() const { return Millis(timeout_ms_.load()); }
  void set_timeout(Millis t) { timeout_ms_ = t.count(); }

 private:
  std::atomic<int64_t> timeout_ms_;
};

/// An in-process store (a map under a mutex); clones share the map.
class HashStore : public Store {
 public:
  HashStore();
  void set(const std::string& key, const Bytes& value) override;
  Bytes get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t delta) override;
  Bytes compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) override;
  bool delete_key(const std::string& key) override;
  bool check(const std::vector<std::string>& keys) override;
  int64_t num_keys() override;
  void wait(const std::vector<std::string>& keys, Millis timeout) override;
  void append(const std::string& key, const Bytes& value) override;
  std::shared_ptr<Store> clone() override;
  void interrupt() override;

 private:
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    std::unordered_map<std::string, Bytes> map;
  };
  explicit HashStore(std::shared_ptr<State> st) : st_(std::move(st)) {}
  void wait_locked(std::unique_lock<std::mutex>& lk, const std::vector<std::string>& keys,
                   Millis timeout);
  std::shared_ptr<State> st_;
  std::atomic<bool> interrupted_{false};
};

/// Every key of `store` under "<prefix>/".
class PrefixStore : public Store {
 public:
  PrefixStore(std::string prefix, std::shared_ptr<Store> store);
  void set(const std::string& key, const Bytes& value) override;
  Bytes get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t delta) override;
  Bytes compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) override;
  bool delete_key(const std::string& key) override;
  bool check(const std::vector<std::string>& keys) override;
  int64_t num_keys() override { return store_->num_keys(); }
  void wait(const std::vector<std::string>& keys, Millis timeout) override;
  void append(const std::string& key, const Bytes& value) override;
  std::vector<Bytes> multi_get(const std::vector<std::string>& keys) override;
  void multi_set(const std::vector<std::string>& keys, const std::vector<Bytes>& values) override;
  std::shared_ptr<Store> clone() override;
  std::shared_ptr<Store> clone_with_timeout(Millis timeout) override;
  void interrupt() override { store_->interrupt(); }
  const std::shared_ptr<Store>& underlying() const { return store_; }
  const std::string& prefix() const { return prefix_; }

 private:
  std::string key(const std::string& k) const { return prefix_ + "/" + k; }
  std::vector<std::string> keys(const std::vector<std::string>& ks) const;
  std::string prefix_;
  std::shared_ptr<Store> store_;
};

/// A store in a file (an append-only log of records under flock), for processes that share
/// a file system. With `num_workers` > 0 the last of that many instances to close deletes it.
class FileStore : public Store {
 public:
  FileStore(std::string path, int num_workers);
  ~FileStore() override;
  void set(const std::string& key, const Bytes& value) override;
  Bytes get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t delta) override;
  Bytes compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) override;
  bool delete_key(const std::string& key) override;
  bool check(const std::vector<std::string>& keys) override;
  int64_t num_keys() override;
  void wait(const std::vector<std::string>& keys, Millis timeout) override;
  void append(const std::string& key, const Bytes& value) override;
  std::shared_ptr<Store> clone() override;
  void interrupt() override { interrupted_ = true; }
  const std::string& path() const { return path_; }
  int num_workers() const { return num_workers_; }

 private:
  struct Locked;  // the open, flock'ed file with the log read up to its end
  FileStore(std::string path, int num_workers, bool registered);
  std::string path_;
  int num_workers_;
  bool registered_;
  std::mutex mu_;
  std::unordered_map<std::string, Bytes> cache_;
  int64_t pos_ = 0;
  std::atomic<bool> interrupted_{false};
};

}  // namespace ember::distributed
