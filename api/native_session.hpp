// One native-protocol connection's state, with no sockets (the node's NativeConnection
// moves the bytes): length-prefixed ClientFrames in, keyed requests into the I/O thread's
// batch, one ServerFrame per ClientFrame out, results in request order. The native client
// knows the topology, so a request for a slot another node owns is answered MOVED, never
// forwarded.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "client_registry.hpp"
#include "services.hpp"
#include "shard_op.hpp"

namespace floodgate::native {
class Topology;
}  // namespace floodgate::native

namespace fg::wire {
struct RequestView;
struct ResultView;
}  // namespace fg::wire

namespace fg {

constexpr uint32_t kNativeVersion = 1;
constexpr size_t kNativeMaxFrame = 16 << 20;

struct NativeProcessResult {
  size_t consumed = 0;     // input bytes the caller may drop once the batch (if any) is done
  bool submitted = false;  // ops were added: submit, wait, then complete()
  bool close = false;      // a framing error: write the output, then close
};

class NativeSession {
 public:
  NativeSession(Services& svc, std::shared_ptr<ClientInfo> client);
  ~NativeSession();

  // Takes whole frames from `data`. Requests served here become ops in `batch`; when none
  // were added the answers are already in output(), else call complete() once the shards
  // are done.
  NativeProcessResult process(const char* data, size_t len, Batch& batch);
  void complete(const Batch& batch);

  // The client asked for topology pushes and the node adopted a new table since the
  // last one it was sent: appends a push frame to output(). Returns whether it did.
  bool push_topology_if_changed();
  bool watches_topology() const { return watch_topology_; }

  std::string& output() { return out_; }

 private:
  struct Frame;
  void serve(Frame& f);
  void request(const wire::RequestView& req, Frame& f, size_t index);
  void fill_topology(floodgate::native::Topology& t) const;
  void finish(Frame& f, const Batch* batch);
  static void fill_result(const ShardOp& op, wire::ResultView& res);
  void unavailable(wire::ResultView& res, const LimitSpec* policy, int code,
                   std::string_view error);

  Services& svc_;
  std::shared_ptr<ClientInfo> client_;
  std::vector<std::unique_ptr<Frame>> frames_;  // of the current process() call
  size_t used_frames_ = 0;
  Batch* batch_ = nullptr;
  std::shared_ptr<const PolicySet> policies_;
  std::shared_ptr<const Routing> routing_;
  uint64_t routing_version_ = 0;
  uint64_t pushed_epoch_ = 0;
  bool watch_topology_ = false;
  bool authenticated_;
  std::string out_;
};

}  // namespace fg
