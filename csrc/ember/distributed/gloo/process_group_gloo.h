// The "gloo" backend (Note [Gloo backend] in process_group_gloo.cpp). Compiled into the
// optional module _C_gloo only: the core library never links Gloo.
#pragma once
#include "ember/distributed/process_group.h"

namespace gloo {
class Context;
namespace transport {
class Device;
}
}  // namespace gloo

namespace ember::distributed {

class ProcessGroupGloo : public ProcessGroup {
 public:
  ProcessGroupGloo(std::shared_ptr<Store> store, int rank, int size, const BackendOptions& opts);
  ~ProcessGroupGloo() override;
  std::string backend_name() const override { return "gloo"; }
  std::string engine_address() const override { return address_; }

  std::shared_ptr<Work> broadcast(const Tensor& t, const OpOptions& o) override;
  std::shared_ptr<Work> allreduce(const Tensor& t, const OpOptions& o) override;
  std::shared_ptr<Work> reduce(const Tensor& t, const OpOptions& o) override;
  std::shared_ptr<Work> allgather(const std::vector<Tensor>& outs, const Tensor& in,
                                  const OpOptions& o) override;
  std::shared_ptr<Work> allgather_into_tensor(const Tensor& out, const Tensor& in,
                                              const OpOptions& o) override;
  std::shared_ptr<Work> gather(const std::vector<Tensor>& outs, const Tensor& in,
                               const OpOptions& o) override;
  std::shared_ptr<Work> scatter(const Tensor& out, const std::vector<Tensor>& ins,
                                const OpOptions& o) override;
  std::shared_ptr<Work> reduce_scatter(const Tensor& out, const std::vector<Tensor>& ins,
                                       const OpOptions& o) override;
  std::shared_ptr<Work> reduce_scatter_tensor(const Tensor& out, const Tensor& in,
                                              const OpOptions& o) override;
  std::shared_ptr<Work> alltoall_base(const Tensor& out, const Tensor& in,
                                      const std::vector<int64_t>& out_splits,
                                      const std::vector<int64_t>& in_splits,
                                      const OpOptions& o) override;
  std::shared_ptr<Work> alltoall(const std::vector<Tensor>& outs, const std::vector<Tensor>& ins,
                                 const OpOptions& o) override;
  std::shared_ptr<Work> send(const Tensor& t, int dst, int tag) override;
  std::shared_ptr<Work> recv(const Tensor& t, int src, int tag) override;
  std::shared_ptr<Work> barrier(const OpOptions& o) override;

  /// The error of a failed send/recv with `peer`.
  std::exception_ptr p2p_failure(const std::string& op, int peer, const std::string& what);

 private:
  Millis op_timeout(const OpOptions& o) const;
  /// Runs `body`, turning a Gloo error into the group's failure (Note [Naming the failing rank]).
  void run(const char* op, int64_t seq, const std::function<void()>& body);
  std::shared_ptr<Work> reduce_scatter_flat(const char* op, const Tensor& out, Tensor flat,
                                            const OpOptions& o);
  std::shared_ptr<Work> alltoallv(const char* op, const std::vector<Tensor>& outs,
                                  const std::vector<Tensor>& ins, std::vector<int64_t> in_c,
                                  std::vector<int64_t> out_c, const OpOptions& o);
  std::shared_ptr<gloo::transport::Device> device_;
  std::shared_ptr<gloo::Context> ctx_;
  std::string address_;
  uint32_t next_tag_ = 0;
};

std::shared_ptr<ProcessGroup> make_gloo_group(std::shared_ptr<Store> store, int rank, int size,
                                              const BackendOptions& opts);

}  // namespace ember::distributed
