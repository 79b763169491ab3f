// TCPStore: the store a job's processes reach over TCP (rank 0 or the launcher hosts it).
// See Note [TCPStore protocol] in tcp_store.cpp.
#pragma once
#include <optional>

#include "ember/distributed/store.h"

namespace ember::distributed {

class TCPStoreServer;

struct TCPStoreOptions {
  std::string host;
  int port = 0;            // the master's port; 0 lets the master pick a free one
  bool is_master = false;  // host the server in this process
  std::optional<int> world_size;
  bool wait_for_workers = true;
  bool multi_tenant = false;  // one server per port, shared by every TCPStore in the process
  int master_listen_fd = -1;  // a socket already listening (the master then serves it)
  Millis timeout = Store::kDefaultTimeout;
};

class TCPStore : public Store {
 public:
  explicit TCPStore(const TCPStoreOptions& opts);
  ~TCPStore() override;
  void set(const std::string& key, const Bytes& value) override;
  Bytes get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t delta) override;
  Bytes compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) override;
  bool delete_key(const std::string& key) override;
  bool check(const std::vector<std::string>& keys) override;
  int64_t num_keys() override;
  void wait(const std::vector<std::string>& keys, Millis timeout) override;
  void append(const std::string& key, const Bytes& value) override;
  std::vector<Bytes> multi_get(const std::vector<std::string>& keys) override;
  void multi_set(const std::vector<std::string>& keys, const std::vector<Bytes>& values) override;
  std::shared_ptr<Store> clone() override;
  std::shared_ptr<Store> clone_with_timeout(Millis timeout) override;
  void interrupt() override;

  const std::string& host() const { return host_; }
  /// The server's port (the one it picked when asked for port 0).
  int port() const { return port_; }
  std::optional<int> world_size() const { return world_size_; }
  bool is_master() const { return bool(server_); }
  /// The local address of this client's connection (the interface that reaches the server).
  std::string local_address() const;

 private:
  struct Conn;
  TCPStore(std::string host, int port, Millis timeout);  // clone(): a client only
  Bytes request(const Bytes& msg, Millis timeout, const std::vector<std::string>& keys);
  void wait_for_workers(int world_size);
  std::string host_;
  int port_ = 0;
  std::optional<int> world_size_;
  std::shared_ptr<TCPStoreServer> server_;
  std::unique_ptr<Conn> conn_;
};

/// A free TCP port on `host` (bound and released; another process may take it meanwhile).
int find_free_port(const std::string& host);

}  // namespace ember::distributed
