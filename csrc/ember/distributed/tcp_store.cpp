#include "ember/distributed/tcp_store.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <list>
#include <map>
#include <thread>

#include "ember/core/owned_thread.h"

namespace ember::distributed {

// Note [TCPStore protocol]
// Every message is [u32 length][u8 command or status][fields]; a string field is
// [u32 length][bytes], an integer a little-endian i64. A client sends one request at a
// time on its connection and reads its reply (a mutex per connection), so the server
// keeps no more than one pending request per client. The server is one thread polling the
// listening socket, the clients and an eventfd that stops it; the map lives in that
// thread only. WAIT, GET and MULTI_GET block on the server: the request is parked as a
// waiter until its keys are all set (answered at once) or its deadline passes (answered
// with TIMEOUT), so a waiting client costs no traffic. A client reads each reply with
// poll() on its socket and its interrupt eventfd, with a deadline of the request's own
// timeout plus a grace period: a server that died shows up as a closed connection
// (DistNetworkError), a hung one as that deadline.

namespace {

enum Cmd : uint8_t {
  PING = 0,
  SET,
  GET,
  ADD,
  CAS,
  DEL,
  CHECK,
  NUM_KEYS,
  WAIT,
  APPEND,
  MULTI_GET,
  MULTI_SET,
};
enum Status : uint8_t { OK = 0, TIMEOUT = 1, FAIL = 2 };
constexpr uint32_t kProtocolVersion = 0x656d6201;  // "emb" 1
constexpr Millis kReplyGrace{30000};
const char* kInitKey = "init/";

// ---- message building and parsing ----

struct Writer {
  Bytes b = Bytes(4);
  Writer& u8(uint8_t v) {
    b.push_back(v);
    return *this;
  }
  Writer& i64(int64_t v) {
    const uint8_t* p = reinterpret_cast<const uint8_t*>(&v);
    b.insert(b.end(), p, p + 8);
    return *this;
  }
  Writer& str(const void* data, size_t n) {
    uint32_t l = uint32_t(n);
    const uint8_t* p = reinterpret_cast<const uint8_t*>(&l);
    b.insert(b.end(), p, p + 4);
    const uint8_t* d = static_cast<const uint8_t*>(data);
    b.insert(b.end(), d, d + n);
    return *this;
  }
  Writer& str(const std::string& s) { return str(s.data(), s.size()); }
  Writer& str(const Bytes& s) { return str(s.data(), s.size()); }
  Writer& keys(const std::vector<std::string>& ks) {
    i64(int64_t(ks.size()));
    for (auto& k : ks) str(k);
    return *this;
  }
  Bytes done() {
    uint32_t l = uint32_t(b.size() - 4);
    std::memcpy(b.data(), &l, 4);
    return std::move(b);
  }
};

struct Reader {
  const uint8_t* p;
  size_t n, i = 0;
  Reader(const uint8_t* data, size_t size) : p(data), n(size) {}
  void need(size_t k) {
    if (i + k > n) throw std::runtime_error("TCPStore: malformed message");
  }
  uint8_t u8() {
    need(1);
    return p[i++];
  }
  int64_t i64() {
    need(8);
    int64_t v;
    std::memcpy(&v, p + i, 8);
    i += 8;
    return v;
  }
  Bytes bytes() {
    need(4);
    uint32_t l;
    std::memcpy(&l, p + i, 4);
    i += 4;
    need(l);
    Bytes b(p + i, p + i + l);
    i += l;
    return b;
  }
  std::string str() { return to_string(bytes()); }
  std::vector<std::string> keys() {
    int64_t k = i64();
    if (k < 0 || size_t(k) > n) throw std::runtime_error("TCPStore: malformed message");
    std::vector<std::string> ks;
    ks.reserve(size_t(k));
    for (int64_t j = 0; j < k; ++j) ks.push_back(str());
    return ks;
  }
};

void set_nodelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

std::string errno_str(int e) { return std::string(strerror(e)); }

struct AddrInfo {
  addrinfo* res = nullptr;
  ~AddrInfo() {
    if (res) freeaddrinfo(res);
  }
};

// Resolves host:port; `passive` with an empty or wildcard host gives the wildcard address.
void resolve(AddrInfo& ai, const std::string& host, int port, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  bool wildcard = host.empty() || host == "0.0.0.0" || host == "::" || host == "*";
  if (passive && wildcard) hints.ai_flags = AI_PASSIVE;
  std::string ps = std::to_string(port);
  int rc = getaddrinfo(passive && wildcard ? nullptr : host.c_str(), ps.c_str(), &hints, &ai.res);
  if (rc != 0)
    raise_dist(DistErrorKind::Network, "cannot resolve the address '", host,
               "': ", gai_strerror(rc));
}

std::string sockaddr_host(const sockaddr_storage& ss) {
  char buf[INET6_ADDRSTRLEN] = {0};
  if (ss.ss_family == AF_INET)
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(ss).sin_addr, buf, sizeof(buf));
  else if (ss.ss_family == AF_INET6)
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(ss).sin6_addr, buf, sizeof(buf));
  return buf;
}

int sockaddr_port(const sockaddr_storage& ss) {
  if (ss.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in&>(ss).sin_port);
  if (ss.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6&>(ss).sin6_port);
  return 0;
}

int listen_on(const std::string& host, int port) {
  AddrInfo ai;
  resolve(ai, host, port, true);
  int last = 0;
  for (addrinfo* a = ai.res; a; a = a->ai_next) {
    int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      last = errno;
      continue;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 2048) == 0) return fd;
    last = errno;
    close(fd);
  }
  raise_dist(DistErrorKind::Network, "The server socket has failed to listen on ",
             host.empty() ? std::string("*") : host, ":", port, " (",
             last == EADDRINUSE ? "EADDRINUSE: " : "", errno_str(last), ")");
}

int bound_port(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  return sockaddr_port(ss);
}

}  // namespace

int find_free_port(const std::string& host) {
  int fd = listen_on(host, 0);
  int port = bound_port(fd);
  close(fd);
  return port;
}

// ---- the server ----

class TCPStoreServer {
 public:
  TCPStoreServer(int listen_fd) : listen_fd_(listen_fd) {
    wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (wake_fd_ < 0) {
      close(listen_fd_);
      raise_dist(DistErrorKind::Network, "TCPStore: eventfd failed: ", errno_str(errno));
    }
    fcntl(listen_fd_, F_SETFL, fcntl(listen_fd_, F_GETFL) | O_NONBLOCK);
    port_ = bound_port(listen_fd_);
    thread_ = OwnedThread([this] { run(); });
  }
  ~TCPStoreServer() {
    stop_ = true;
    uint64_t one = 1;
    (void)!::write(wake_fd_, &one, 8);
    if (thread_.joinable()) thread_.join();
    for (auto& [fd, c] : clients_) close(fd);
    close(listen_fd_);
    close(wake_fd_);
  }
  int port() const { return port_; }

  /// The server of a multi-tenant port, if this process hosts one.
  static std::shared_ptr<TCPStoreServer> shared(int port, const std::string& host, int listen_fd) {
    static std::mutex mu;
    static std::map<int, std::weak_ptr<TCPStoreServer>> servers;
    std::lock_guard<std::mutex> g(mu);
    if (port != 0) {
      auto it = servers.find(port);
      if (it != servers.end())
        if (auto s = it->second.lock()) return s;
    }
    auto s = std::make_shared<TCPStoreServer>(listen_fd >= 0 ? listen_fd : listen_on(host, port));
    servers[s->port()] = s;
    return s;
  }

 private:
  struct Client {
    Bytes in, out;
    size_t out_pos = 0;
  };
  struct Waiter {
    int fd;
    uint8_t cmd;
    std::vector<std::string> keys;
    bool timed;
    std::chrono::steady_clock::time_point deadline;
  };

  void run() {
    std::vector<pollfd> pfds;
    while (!stop_) {
      pfds.clear();
      pfds.push_back({wake_fd_, POLLIN, 0});
      pfds.push_back({listen_fd_, POLLIN, 0});
      for (auto& [fd, c] : clients_)
        pfds.push_back({fd, short(POLLIN | (c.out_pos < c.out.size() ? POLLOUT : 0)), 0});
      int timeout_ms = -1;
      auto now = std::chrono::steady_clock::now();
      for (auto& w : waiters_)
        if (w.timed) {
          auto ms = std::chrono::duration_cast<Millis>(w.deadline - now).count() + 1;
          ms = std::max<int64_t>(ms, 0);
          if (timeout_ms < 0 || ms < timeout_ms) timeout_ms = int(std::min<int64_t>(ms, 1 << 30));
        }
      int rc = poll(pfds.data(), pfds.size(), timeout_ms);
      if (rc < 0 && errno != EINTR) break;
      if (stop_) break;
      if (rc > 0) {
        if (pfds[1].revents & POLLIN) accept_clients();
        for (size_t i = 2; i < pfds.size(); ++i) {
          int fd = pfds[i].fd;
          if (!clients_.count(fd)) continue;
          if (pfds[i].revents & (POLLERR | POLLHUP | POLLNVAL) && !(pfds[i].revents & POLLIN)) {
            drop(fd);
            continue;
          }
          if (pfds[i].revents & POLLIN && !read_client(fd)) continue;
          if (pfds[i].revents & POLLOUT) flush(fd);
        }
      }
      expire_waiters();
    }
  }

  void accept_clients() {
    for (;;) {
      int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) return;
      set_nodelay(fd);
      clients_[fd];
    }
  }

  void drop(int fd) {
    close(fd);
    clients_.erase(fd);
    waiters_.remove_if([fd](const Waiter& w) { return w.fd == fd; });
  }

  // Reads what is available and answers each complete request; false when the client left.
  bool read_client(int fd) {
    Client& c = clients_[fd];
    uint8_t buf[65536];
    for (;;) {
      ssize_t r = ::recv(fd, buf, sizeof(buf), 0);
      if (r > 0) {
        c.in.insert(c.in.end(), buf, buf + r);
        if (size_t(r) < sizeof(buf)) break;
        continue;
      }
      if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      if (r < 0 && errno == EINTR) continue;
      drop(fd);
      return false;
    }
    size_t off = 0;
    while (c.in.size() - off >= 4) {
      uint32_t len;
      std::memcpy(&len, c.in.data() + off, 4);
      if (c.in.size() - off - 4 < len) break;
      try {
        handle(fd, Reader(c.in.data() + off + 4, len));
      } catch (const std::exception&) {
        drop(fd);  // a malformed request: not one of our clients
        return false;
      }
      off += 4 + len;
    }
    c.in.erase(c.in.begin(), c.in.begin() + off);
    return true;
  }

  void reply(int fd, Bytes msg) {
    auto it = clients_.find(fd);
    if (it == clients_.end()) return;
    Client& c = it->second;
    c.out.insert(c.out.end(), msg.begin(), msg.end());
    flush(fd);
  }

  void flush(int fd) {
    Client& c = clients_[fd];
    while (c.out_pos < c.out.size()) {
      ssize_t w = ::send(fd, c.out.data() + c.out_pos, c.out.size() - c.out_pos, MSG_NOSIGNAL);
      if (w > 0) {
        c.out_pos += size_t(w);
        continue;
      }
      if (w < 0 && errno == EINTR) continue;
      if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      drop(fd);
      return;
    }
    c.out.clear();
    c.out_pos = 0;
  }

  bool have(const std::vector<std::string>& keys) const {
    for (auto& k : keys)
      if (!map_.count(k)) return false;
    return true;
  }

  void answer_wait(const Waiter& w) {
    Writer m;
    m.u8(OK);
    if (w.cmd == GET || w.cmd == MULTI_GET) {
      if (w.cmd == MULTI_GET) m.i64(int64_t(w.keys.size()));
      for (auto& k : w.keys) m.str(map_.at(k));
    }
    reply(w.fd, m.done());
  }

  void changed() {
    for (auto it = waiters_.begin(); it != waiters_.end();) {
      if (have(it->keys)) {
        Waiter w = *it;
        it = waiters_.erase(it);
        answer_wait(w);
      } else {
        ++it;
      }
    }
  }

  void expire_waiters() {
    auto now = std::chrono::steady_clock::now();
    for (auto it = waiters_.begin(); it != waiters_.end();) {
      if (it->timed && now >= it->deadline) {
        int fd = it->fd;
        it = waiters_.erase(it);
        reply(fd, Writer().u8(TIMEOUT).done());
      } else {
        ++it;
      }
    }
  }

  void park(int fd, uint8_t cmd, std::vector<std::string> keys, int64_t timeout_ms) {
    Waiter w{fd, cmd, std::move(keys), timeout_ms > 0, {}};
    if (have(w.keys)) return answer_wait(w);
    w.deadline = std::chrono::steady_clock::now() + Millis(timeout_ms);
    waiters_.push_back(std::move(w));
  }

  void handle(int fd, Reader r) {
    uint8_t cmd = r.u8();
    switch (cmd) {
      case PING:
        return reply(fd, Writer().u8(OK).i64(kProtocolVersion).done());
      case SET: {
        std::string k = r.str();
        map_[k] = r.bytes();
        reply(fd, Writer().u8(OK).done());
        return changed();
      }
      case GET: {
        std::string k = r.str();
        return park(fd, GET, {k}, r.i64());
      }
      case ADD: {
        std::string k = r.str();
        int64_t d = r.i64();
        auto it = map_.find(k);
        int64_t v = 0;
        if (it != map_.end()) {
          std::string s = to_string(it->second);
          char* end = nullptr;
          v = std::strtoll(s.c_str(), &end, 10);
          if (s.empty() || *end)
            return reply(fd, Writer()
                                 .u8(FAIL)
                                 .str("add: the value at key '" + k + "' is not an integer")
                                 .done());
        }
        v += d;
        map_[k] = to_bytes(std::to_string(v));
        reply(fd, Writer().u8(OK).i64(v).done());
        return changed();
      }
      case CAS: {
        std::string k = r.str();
        Bytes expected = r.bytes(), desired = r.bytes();
        auto it = map_.find(k);
        Bytes out;
        if (it == map_.end()) {
          out = expected.empty() ? desired : expected;
          if (expected.empty()) map_[k] = desired;
        } else {
          if (it->second == expected) it->second = desired;
          out = it->second;
        }
        reply(fd, Writer().u8(OK).str(out).done());
        return changed();
      }
      case DEL: {
        std::string k = r.str();
        bool erased = map_.erase(k) > 0;
        return reply(fd, Writer().u8(OK).u8(erased).done());
      }
      case CHECK:
        return reply(fd, Writer().u8(OK).u8(have(r.keys())).done());
      case NUM_KEYS:
        return reply(fd, Writer().u8(OK).i64(int64_t(map_.size())).done());
      case WAIT: {
        auto ks = r.keys();
        return park(fd, WAIT, std::move(ks), r.i64());
      }
      case APPEND: {
        std::string k = r.str();
        Bytes v = r.bytes();
        Bytes& cur = map_[k];
        cur.insert(cur.end(), v.begin(), v.end());
        reply(fd, Writer().u8(OK).done());
        return changed();
      }
      case MULTI_GET: {
        auto ks = r.keys();
        return park(fd, MULTI_GET, std::move(ks), r.i64());
      }
      case MULTI_SET: {
        int64_t n = r.i64();
        for (int64_t i = 0; i < n; ++i) {
          std::string k = r.str();
          map_[k] = r.bytes();
        }
        reply(fd, Writer().u8(OK).done());
        return changed();
      }
      default:
        throw std::runtime_error("TCPStore: unknown command");
    }
  }

  int listen_fd_, wake_fd_ = -1, port_ = 0;
  std::atomic<bool> stop_{false};
  OwnedThread thread_;
  std::map<int, Client> clients_;
  std::unordered_map<std::string, Bytes> map_;
  std::list<Waiter> waiters_;
};

// ---- the client ----

struct TCPStore::Conn {
  int fd = -1;
  int intr = -1;  // eventfd: interrupt() makes a blocked read return
  std::mutex mu;
  bool broken = false;
  std::string where;
  ~Conn() {
    if (fd >= 0) close(fd);
    if (intr >= 0) close(intr);
  }

  void connect_to(const std::string& host, int port, Millis timeout) {
    where = "(" + host + ", " + std::to_string(port) + ")";
    intr = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    auto deadline = std::chrono::steady_clock::now() + timeout;
    auto pause = Millis(10);
    int last = 0;
    for (;;) {
      AddrInfo ai;
      resolve(ai, host, port, false);
      for (addrinfo* a = ai.res; a; a = a->ai_next) {
        int s = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (s < 0) continue;
        if (::connect(s, a->ai_addr, a->ai_addrlen) == 0) {
          set_nodelay(s);
          fd = s;
          return;
        }
        last = errno;
        close(s);
      }
      if (std::chrono::steady_clock::now() + pause >= deadline)
        raise_dist(DistErrorKind::Network, "The client socket has timed out after ",
                   timeout.count(), "ms while trying to connect to ", where,
                   last ? " (last error: " + errno_str(last) + ")" : std::string(), ".");
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, Millis(500));
    }
  }

  [[noreturn]] void lost(const std::string& why) {
    broken = true;
    raise_dist(DistErrorKind::Network, "TCPStore: the connection to the server at ", where,
               " was lost (", why, "); the process hosting the store (rank 0 or the launcher) ",
               "may have exited");
  }

  // Waits until fd is readable; false on deadline.
  bool wait_readable(std::chrono::steady_clock::time_point deadline) {
    for (;;) {
      auto now = std::chrono::steady_clock::now();
      if (now >= deadline) return false;
      int ms = deadline == std::chrono::steady_clock::time_point::max()
                   ? -1
                   : int(std::min<int64_t>(
                         std::chrono::duration_cast<Millis>(deadline - now).count() + 1, 1 << 30));
      pollfd p[2] = {{fd, POLLIN, 0}, {intr, POLLIN, 0}};
      int rc = poll(p, 2, ms);
      if (rc < 0 && errno == EINTR) continue;
      if (rc < 0) lost(errno_str(errno));
      if (p[1].revents & POLLIN) {
        broken = true;
        raise_dist(DistErrorKind::Store, "store wait interrupted (the store handle was closed)");
      }
      if (p[0].revents) return true;
    }
  }

  void read_exact(uint8_t* out, size_t n, std::chrono::steady_clock::time_point deadline) {
    size_t got = 0;
    while (got < n) {
      if (!wait_readable(deadline)) {
        broken = true;
        raise_dist(DistErrorKind::Store, "TCPStore: no reply from the server at ", where,
                   " in time (it may be hung)");
      }
      ssize_t r = ::recv(fd, out + got, n - got, 0);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) continue;
      if (r <= 0) lost(r == 0 ? "closed by the server" : errno_str(errno));
      got += size_t(r);
    }
  }

  Bytes roundtrip(const Bytes& msg, Millis wait) {
    std::lock_guard<std::mutex> g(mu);
    if (broken)
      raise_dist(DistErrorKind::Network, "TCPStore: the connection to ", where,
                 " is unusable after an earlier error");
    size_t sent = 0;
    while (sent < msg.size()) {
      ssize_t w = ::send(fd, msg.data() + sent, msg.size() - sent, MSG_NOSIGNAL);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) lost(errno_str(errno));
      sent += size_t(w);
    }
    // A request that waits without a limit (timeout 0) waits for its reply without one too.
    auto deadline = wait.count() > 0 ? std::chrono::steady_clock::now() + wait + kReplyGrace
                                     : std::chrono::steady_clock::time_point::max();
    uint8_t lenb[4];
    read_exact(lenb, 4, deadline);
    uint32_t len;
    std::memcpy(&len, lenb, 4);
    Bytes body(len);
    read_exact(body.data(), len, deadline);
    return body;
  }
};

TCPStore::TCPStore(const TCPStoreOptions& o)
    : Store(o.timeout), host_(o.host), port_(o.port), world_size_(o.world_size) {
  EMBER_CHECK_VALUE(o.port >= 0 && o.port < 65536, "TCPStore: port must be in [0, 65535], got ",
                    o.port);
  if (o.is_master) {
    if (o.multi_tenant)
      server_ = TCPStoreServer::shared(o.port, o.host, o.master_listen_fd);
    else
      server_ = std::make_shared<TCPStoreServer>(
          o.master_listen_fd >= 0 ? o.master_listen_fd : listen_on(o.host, o.port));
    port_ = server_->port();
  } else {
    EMBER_CHECK_VALUE(o.port > 0, "TCPStore: a client needs the server's port (got 0)");
  }
  conn_ = std::make_unique<Conn>();
  conn_->connect_to(host_.empty() ? std::string("127.0.0.1") : host_, port_, o.timeout);
  Bytes r = request(Writer().u8(PING).done(), timeout(), {});
  Reader rd(r.data(), r.size());
  if (rd.i64() != kProtocolVersion)
    raise_dist(DistErrorKind::Network, "TCPStore: the server at ", conn_->where,
               " speaks another protocol (not an ember TCPStore)");
  if (o.world_size && o.wait_for_workers) wait_for_workers(*o.world_size);
}

TCPStore::TCPStore(std::string host, int port, Millis timeout)
    : Store(timeout), host_(std::move(host)), port_(port) {
  conn_ = std::make_unique<Conn>();
  conn_->connect_to(host_.empty() ? std::string("127.0.0.1") : host_, port_, timeout);
}

TCPStore::~TCPStore() = default;

void TCPStore::wait_for_workers(int world_size) {
  int64_t n = add(kInitKey, 1);
  if (n == world_size) set("init/done", {});
  if (!server_) return;
  try {
    wait({"init/done"}, timeout());
  } catch (const DistError&) {
    int64_t joined = add(kInitKey, 0);
    raise_dist(DistErrorKind::Store, "Timed out after ", timeout().count() / 1000,
               " seconds waiting for clients. ", joined, "/", world_size, " clients joined.");
  }
}

Bytes TCPStore::request(const Bytes& msg, Millis wait, const std::vector<std::string>& keys) {
  Bytes r = conn_->roundtrip(msg, wait);
  EMBER_CHECK(!r.empty(), "TCPStore: empty reply");
  if (r[0] == TIMEOUT) raise_wait_timeout(wait, keys);
  if (r[0] == FAIL) {
    Reader rd(r.data() + 1, r.size() - 1);
    raise_dist(DistErrorKind::Store, rd.str());
  }
  return Bytes(r.begin() + 1, r.end());
}

void TCPStore::set(const std::string& key, const Bytes& value) {
  request(Writer().u8(SET).str(key).str(value).done(), timeout(), {key});
}

Bytes TCPStore::get(const std::string& key) {
  Bytes r = request(Writer().u8(GET).str(key).i64(timeout().count()).done(), timeout(), {key});
  return Reader(r.data(), r.size()).bytes();
}

int64_t TCPStore::add(const std::string& key, int64_t delta) {
  Bytes r = request(Writer().u8(ADD).str(key).i64(delta).done(), timeout(), {key});
  return Reader(r.data(), r.size()).i64();
}

Bytes TCPStore::compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) {
  Bytes r = request(Writer().u8(CAS).str(key).str(expected).str(desired).done(), timeout(), {key});
  return Reader(r.data(), r.size()).bytes();
}

bool TCPStore::delete_key(const std::string& key) {
  Bytes r = request(Writer().u8(DEL).str(key).done(), timeout(), {key});
  return Reader(r.data(), r.size()).u8() != 0;
}

bool TCPStore::check(const std::vector<std::string>& keys) {
  Bytes r = request(Writer().u8(CHECK).keys(keys).done(), timeout(), keys);
  return Reader(r.data(), r.size()).u8() != 0;
}

int64_t TCPStore::num_keys() {
  Bytes r = request(Writer().u8(NUM_KEYS).done(), timeout(), {});
  return Reader(r.data(), r.size()).i64();
}

void TCPStore::wait(const std::vector<std::string>& keys, Millis timeout) {
  request(Writer().u8(WAIT).keys(keys).i64(timeout.count()).done(), timeout, keys);
}

void TCPStore::append(const std::string& key, const Bytes& value) {
  request(Writer().u8(APPEND).str(key).str(value).done(), timeout(), {key});
}

std::vector<Bytes> TCPStore::multi_get(const std::vector<std::string>& keys) {
  Bytes r =
      request(Writer().u8(MULTI_GET).keys(keys).i64(timeout().count()).done(), timeout(), keys);
  Reader rd(r.data(), r.size());
  int64_t n = rd.i64();
  std::vector<Bytes> out;
  for (int64_t i = 0; i < n; ++i) out.push_back(rd.bytes());
  return out;
}

void TCPStore::multi_set(const std::vector<std::string>& keys, const std::vector<Bytes>& values) {
  EMBER_CHECK_VALUE(keys.size() == values.size(), "multi_set: got ", keys.size(), " keys and ",
                    values.size(), " values");
  Writer w;
  w.u8(MULTI_SET).i64(int64_t(keys.size()));
  for (size_t i = 0; i < keys.size(); ++i) w.str(keys[i]).str(values[i]);
  request(w.done(), timeout(), keys);
}

std::shared_ptr<Store> TCPStore::clone() {
  return std::shared_ptr<Store>(new TCPStore(host_, port_, timeout()));
}

std::shared_ptr<Store> TCPStore::clone_with_timeout(Millis timeout) {
  return std::shared_ptr<Store>(new TCPStore(host_, port_, timeout));
}

void TCPStore::interrupt() {
  uint64_t one = 1;
  (void)!::write(conn_->intr, &one, 8);
}

std::string TCPStore::local_address() const {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (getsockname(conn_->fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "";
  return sockaddr_host(ss);
}

}  // namespace ember::distributed
