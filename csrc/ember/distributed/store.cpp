#include "ember/distributed/store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

namespace ember::distributed {

void raise_wait_timeout(Millis timeout, const std::vector<std::string>& keys) {
  std::string ks;
  for (size_t i = 0; i < keys.size(); ++i) ks += (i ? ", " : "") + keys[i];
  raise_dist(DistErrorKind::Store, "wait timeout after ", timeout.count(), "ms, keys: ", ks);
}

namespace {

int64_t parse_int(const Bytes& v, const std::string& key) {
  std::string s = to_string(v);
  char* end = nullptr;
  errno = 0;
  long long x = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno)
    raise_dist(DistErrorKind::Store, "add: the value at key '", key,
               "' is not an integer: it holds ", s.size(), " bytes");
  return x;
}

[[noreturn]] void raise_interrupted() {
  raise_dist(DistErrorKind::Store, "store wait interrupted (the store handle was closed)");
}

}  // namespace

std::vector<Bytes> Store::multi_get(const std::vector<std::string>& keys) {
  std::vector<Bytes> out;
  out.reserve(keys.size());
  for (auto& k : keys) out.push_back(get(k));
  return out;
}

void Store::multi_set(const std::vector<std::string>& keys, const std::vector<Bytes>& values) {
  EMBER_CHECK_VALUE(keys.size() == values.size(), "multi_set: got ", keys.size(), " keys and ",
                    values.size(), " values");
  for (size_t i = 0; i < keys.size(); ++i) set(keys[i], values[i]);
}

// ---- HashStore -------------------------------------------------------------------------------

HashStore::HashStore() : st_(std::make_shared<State>()) {}

void HashStore::set(const std::string& key, const Bytes& value) {
  std::lock_guard<std::mutex> lk(st_->mu);
  st_->map[key] = value;
  st_->cv.notify_all();
}

void HashStore::wait_locked(std::unique_lock<std::mutex>& lk, const std::vector<std::string>& keys,
                            Millis timeout) {
  auto ready = [&] {
    if (interrupted_) return true;
    for (auto& k : keys)
      if (!st_->map.count(k)) return false;
    return true;
  };
  bool ok =
      timeout.count() <= 0 ? (st_->cv.wait(lk, ready), true) : st_->cv.wait_for(lk, timeout, ready);
  if (interrupted_) raise_interrupted();
  if (!ok) raise_wait_timeout(timeout, keys);
}

Bytes HashStore::get(const std::string& key) {
  std::unique_lock<std::mutex> lk(st_->mu);
  wait_locked(lk, {key}, timeout());
  return st_->map[key];
}

int64_t HashStore::add(const std::string& key, int64_t delta) {
  std::lock_guard<std::mutex> lk(st_->mu);
  auto it = st_->map.find(key);
  int64_t v = (it == st_->map.end() ? 0 : parse_int(it->second, key)) + delta;
  st_->map[key] = to_bytes(std::to_string(v));
  st_->cv.notify_all();
  return v;
}

Bytes HashStore::compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) {
  std::lock_guard<std::mutex> lk(st_->mu);
  auto it = st_->map.find(key);
  if (it == st_->map.end()) {
    if (!expected.empty()) return expected;
    st_->map[key] = desired;
    st_->cv.notify_all();
    return desired;
  }
  if (it->second == expected) {
    it->second = desired;
    st_->cv.notify_all();
  }
  return it->second;
}

bool HashStore::delete_key(const std::string& key) {
  std::lock_guard<std::mutex> lk(st_->mu);
  return st_->map.erase(key) > 0;
}

bool HashStore::check(const std::vector<std::string>& keys) {
  std::lock_guard<std::mutex> lk(st_->mu);
  for (auto& k : keys)
    if (!st_->map.count(k)) return false;
  return true;
}

int64_t HashStore::num_keys() {
  std::lock_guard<std::mutex> lk(st_->mu);
  return int64_t(st_->map.size());
}

void HashStore::wait(const std::vector<std::string>& keys, Millis timeout) {
  std::unique_lock<std::mutex> lk(st_->mu);
  wait_locked(lk, keys, timeout);
}

void HashStore::append(const std::string& key, const Bytes& value) {
  std::lock_guard<std::mutex> lk(st_->mu);
  Bytes& v = st_->map[key];
  v.insert(v.end(), value.begin(), value.end());
  st_->cv.notify_all();
}

std::shared_ptr<Store> HashStore::clone() {
  auto s = std::shared_ptr<HashStore>(new HashStore(st_));
  s->set_timeout(timeout());
  return s;
}

void HashStore::interrupt() {
  std::lock_guard<std::mutex> lk(st_->mu);
  interrupted_ = true;
  st_->cv.notify_all();
}

// ---- PrefixStore -----------------------------------------------------------------------------

PrefixStore::PrefixStore(std::string prefix, std::shared_ptr<Store> store)
    : Store(store ? store->timeout() : kDefaultTimeout),
      prefix_(std::move(prefix)),
      store_(std::move(store)) {
  EMBER_CHECK_VALUE(store_, "PrefixStore: the underlying store is None");
}

std::vector<std::string> PrefixStore::keys(const std::vector<std::string>& ks) const {
  std::vector<std::string> out;
  out.reserve(ks.size());
  for (auto& k : ks) out.push_back(key(k));
  return out;
}

void PrefixStore::set(const std::string& k, const Bytes& v) { store_->set(key(k), v); }

Bytes PrefixStore::get(const std::string& k) {
  // The waiting part honours this handle's timeout, not the underlying store's.
  store_->wait({key(k)}, timeout());
  return store_->get(key(k));
}

int64_t PrefixStore::add(const std::string& k, int64_t d) { return store_->add(key(k), d); }

Bytes PrefixStore::compare_set(const std::string& k, const Bytes& e, const Bytes& d) {
  return store_->compare_set(key(k), e, d);
}

bool PrefixStore::delete_key(const std::string& k) { return store_->delete_key(key(k)); }

bool PrefixStore::check(const std::vector<std::string>& ks) { return store_->check(keys(ks)); }

void PrefixStore::wait(const std::vector<std::string>& ks, Millis timeout) {
  store_->wait(keys(ks), timeout);
}

void PrefixStore::append(const std::string& k, const Bytes& v) { store_->append(key(k), v); }

std::vector<Bytes> PrefixStore::multi_get(const std::vector<std::string>& ks) {
  store_->wait(keys(ks), timeout());
  return store_->multi_get(keys(ks));
}

void PrefixStore::multi_set(const std::vector<std::string>& ks, const std::vector<Bytes>& vs) {
  store_->multi_set(keys(ks), vs);
}

std::shared_ptr<Store> PrefixStore::clone() {
  auto s = std::make_shared<PrefixStore>(prefix_, store_->clone());
  s->set_timeout(timeout());
  return s;
}

std::shared_ptr<Store> PrefixStore::clone_with_timeout(Millis timeout) {
  auto s = std::make_shared<PrefixStore>(prefix_, store_->clone_with_timeout(timeout));
  s->set_timeout(timeout);
  return s;
}

// ---- FileStore -------------------------------------------------------------------------------
// The file is a log of records: [u8 op][u32 key length][key][u32 value length][value] with op
// 0 = set, 1 = delete. Every operation opens the file, takes flock(LOCK_EX), reads the records
// appended since its last visit into the cache, appends its own and closes the file.

namespace {

const char* kFileStoreCleanupKey = "\x01ember_filestore_cleanup";

void write_all(int fd, const void* p, size_t n, const std::string& path) {
  const char* c = static_cast<const char*>(p);
  while (n) {
    ssize_t w = ::write(fd, c, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0)
      raise_dist(DistErrorKind::Store, "FileStore: writing ", path, " failed: ", strerror(errno));
    c += w;
    n -= size_t(w);
  }
}

}  // namespace

struct FileStore::Locked {
  FileStore& s;
  int fd;
  Locked(FileStore& store) : s(store) {
    for (;;) {
      fd = ::open(s.path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
      if (fd < 0)
        raise_dist(DistErrorKind::Store, "FileStore: cannot open ", s.path_, ": ", strerror(errno));
      while (flock(fd, LOCK_EX) != 0) {
        if (errno != EINTR) {
          int e = errno;
          ::close(fd);
          raise_dist(DistErrorKind::Store, "FileStore: flock on ", s.path_,
                     " failed: ", strerror(e));
        }
      }
      // The last worker of an earlier job may have unlinked the file between our open and
      // flock: then start over on the new file.
      struct stat a, b;
      if (fstat(fd, &a) == 0 && stat(s.path_.c_str(), &b) == 0 && a.st_ino == b.st_ino &&
          a.st_dev == b.st_dev)
        break;
      ::close(fd);
    }
    sync();
  }
  ~Locked() {
    flock(fd, LOCK_UN);
    ::close(fd);
  }
  void sync() {
    struct stat st;
    if (fstat(fd, &st) != 0)
      raise_dist(DistErrorKind::Store, "FileStore: stat ", s.path_, ": ", strerror(errno));
    int64_t size = st.st_size;
    if (size < s.pos_) {  // a new file: forget the old one
      s.cache_.clear();
      s.pos_ = 0;
    }
    if (size == s.pos_) return;
    std::vector<char> buf(size_t(size - s.pos_));
    size_t got = 0;
    while (got < buf.size()) {
      ssize_t r = ::pread(fd, buf.data() + got, buf.size() - got, off_t(s.pos_ + int64_t(got)));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) raise_dist(DistErrorKind::Store, "FileStore: reading ", s.path_, " failed");
      got += size_t(r);
    }
    size_t i = 0;
    auto u32 = [&](uint32_t& v) {
      if (i + 4 > buf.size()) return false;
      std::memcpy(&v, buf.data() + i, 4);
      i += 4;
      return true;
    };
    while (i < buf.size()) {
      size_t start = i;
      uint8_t op = uint8_t(buf[i++]);
      uint32_t kl = 0, vl = 0;
      if (!u32(kl) || i + kl > buf.size()) {
        i = start;
        break;
      }
      std::string key(buf.data() + i, kl);
      i += kl;
      if (!u32(vl) || i + vl > buf.size()) {
        i = start;
        break;
      }
      if (op == 0)
        s.cache_[key] = Bytes(buf.begin() + i, buf.begin() + i + vl);
      else
        s.cache_.erase(key);
      i += vl;
    }
    s.pos_ += int64_t(i);
  }
  void record(uint8_t op, const std::string& key, const Bytes& value) {
    uint32_t kl = uint32_t(key.size()), vl = uint32_t(value.size());
    std::vector<char> rec(9 + key.size() + value.size());
    char* w = rec.data();
    *w++ = char(op);
    std::memcpy(w, &kl, 4);
    std::memcpy(w + 4, key.data(), key.size());
    w += 4 + key.size();
    std::memcpy(w, &vl, 4);
    if (!value.empty()) std::memcpy(w + 4, value.data(), value.size());
    if (lseek(fd, 0, SEEK_END) < 0)
      raise_dist(DistErrorKind::Store, "FileStore: seek ", s.path_, ": ", strerror(errno));
    write_all(fd, rec.data(), rec.size(), s.path_);
    sync();
  }
};

FileStore::FileStore(std::string path, int num_workers)
    : FileStore(std::move(path), num_workers, true) {}

FileStore::FileStore(std::string path, int num_workers, bool registered)
    : path_(std::move(path)), num_workers_(num_workers), registered_(registered) {
  EMBER_CHECK_VALUE(!path_.empty(), "FileStore: the file name is empty");
  if (registered_) add(kFileStoreCleanupKey, 1);
}

FileStore::~FileStore() {
  if (!registered_) return;
  try {
    std::lock_guard<std::mutex> g(mu_);
    Locked f(*this);
    auto it = cache_.find(kFileStoreCleanupKey);
    int64_t left = (it == cache_.end() ? 0 : parse_int(it->second, kFileStoreCleanupKey)) - 1;
    f.record(0, kFileStoreCleanupKey, to_bytes(std::to_string(left)));
    if (num_workers_ > 0 && left <= 0) ::unlink(path_.c_str());
  } catch (...) {  // never throw from a destructor (the file may be gone already)
  }
}

void FileStore::set(const std::string& key, const Bytes& value) {
  std::lock_guard<std::mutex> g(mu_);
  Locked f(*this);
  f.record(0, key, value);
}

Bytes FileStore::get(const std::string& key) {
  wait({key}, timeout());
  std::lock_guard<std::mutex> g(mu_);
  Locked f(*this);
  auto it = cache_.find(key);
  if (it == cache_.end()) raise_wait_timeout(timeout(), {key});  // deleted meanwhile
  return it->second;
}

int64_t FileStore::add(const std::string& key, int64_t delta) {
  std::lock_guard<std::mutex> g(mu_);
  Locked f(*this);
  auto it = cache_.find(key);
  int64_t v = (it == cache_.end() ? 0 : parse_int(it->second, key)) + delta;
  f.record(0, key, to_bytes(std::to_string(v)));
  return v;
}

Bytes FileStore::compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) {
  std::lock_guard<std::mutex> g(mu_);
  Locked f(*this);
  auto it = cache_.find(key);
  if (it == cache_.end()) {
    if (!expected.empty()) return expected;
    f.record(0, key, desired);
    return desired;
  }
  if (it->second != expected) return it->second;
  f.record(0, key, desired);
  return desired;
}

bool FileStore::delete_key(const std::string& key) {
  std::lock_guard<std::mutex> g(mu_);
  Locked f(*this);
  if (!cache_.count(key)) return false;
  f.record(1, key, {});
  return true;
}

bool FileStore::check(const std::vector<std::string>& keys) {
  std::lock_guard<std::mutex> g(mu_);
  Locked f(*this);
  for (auto& k : keys)
    if (!cache_.count(k)) return false;
  return true;
}

int64_t FileStore::num_keys() {
  std::lock_guard<std::mutex> g(mu_);
  Locked f(*this);
  return int64_t(cache_.size()) - int64_t(cache_.count(kFileStoreCleanupKey));
}

void FileStore::wait(const std::vector<std::string>& keys, Millis timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  auto pause = std::chrono::milliseconds(1);
  for (;;) {
    if (interrupted_) raise_interrupted();
    if (check(keys)) return;
    if (timeout.count() > 0 && std::chrono::steady_clock::now() >= deadline)
      raise_wait_timeout(timeout, keys);
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(20));
  }
}

void FileStore::append(const std::string& key, const Bytes& value) {
  std::lock_guard<std::mutex> g(mu_);
  Locked f(*this);
  Bytes v = cache_.count(key) ? cache_[key] : Bytes();
  v.insert(v.end(), value.begin(), value.end());
  f.record(0, key, v);
}

std::shared_ptr<Store> FileStore::clone() {
  auto s = std::shared_ptr<FileStore>(new FileStore(path_, num_workers_, false));
  s->set_timeout(timeout());
  return s;
}

}  // namespace ember::distributed
