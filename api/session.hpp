// One RESP connection's protocol state, with no sockets: bytes in, batches out to the
// shards, reply bytes back in request order. The node's connection moves bytes; this
// decides what they mean.
#pragma once
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "client_registry.hpp"
#include "forward.hpp"
#include "request_metrics.hpp"
#include "resp_parser.hpp"
#include "resp_writer.hpp"
#include "services.hpp"
#include "shard_op.hpp"

namespace fg {

// How a shard op's result becomes a reply.
enum class ReplyKind : uint8_t { kThrottle, kDecision, kInteger, kAcquire, kLeaseCount };

struct ProcessResult {
  size_t consumed = 0;     // input bytes the caller may drop once the batch (if any) is done
  bool submitted = false;  // ops or forwards were added: submit, wait, then complete()
  bool close = false;      // after writing the output, close the connection
  bool stalled = false;    // stopped before a command whose slot's state is still arriving:
                           // call process() again shortly
};

class Session {
 public:
  Session(Services& svc, std::shared_ptr<ClientInfo> client);

  // Parses commands from `data` (unconsumed input). Local commands are answered at once;
  // keyed ones are appended to `batch` (which may already hold other sessions' ops). When
  // none were added, the replies are already in output(). Otherwise the caller submits the
  // batch and calls complete() once the shards are done. Stops at the end of the input,
  // at max_batch_commands, before a command that changes the session or reads shard
  // state (HELLO, AUTH, QUIT, DBSIZE, INFO) when keyed work is pending, and at a protocol
  // error.
  // In cluster mode, commands for slots other nodes own are appended to `forwards`
  // (which may hold other sessions' calls) unless the client is sent -MOVED.
  ProcessResult process(const char* data, size_t len, Batch& batch,
                        ForwardList* forwards = nullptr);

  // After the batch (and its forwards) are done: appends every reply of the last
  // process() call, in order.
  void complete(const Batch& batch, const ForwardList* forwards = nullptr);

  // This session runs commands another node forwarded after `hops` hops: it never
  // answers -MOVED, and forwards again (a slot that moved meanwhile) only while
  // hops < kMaxForwardHops.
  void set_forwarded(uint32_t hops) {
    forwarded_ = true;
    hops_ = hops;
  }
  // The client asked for the cluster's topology: it can follow -MOVED.
  void set_cluster_aware() { cluster_aware_ = true; }
  // Cluster mode: also sends the current command to every other member of the table;
  // their integer replies are added to this command's own (FG.HEARTBEAT).
  void add_fanout(const std::vector<std::string_view>& args);
  // The routing snapshot in force (cluster mode only), refreshed once per process().
  const Routing* routing() const { return routing_.get(); }

  std::string& output() { return out_; }
  bool command_in_progress() const { return parser_.in_progress(); }
  int proto() const { return proto_; }
  ClientInfo& client() { return *client_; }

  // --- used by command handlers ---
  RespWriter local();  // writer for an immediate reply
  ShardOp& add_op(OpCode code, ReplyKind kind, std::string_view key);
  ShardOp& add_broadcast(OpCode code, ReplyKind kind);
  Services& svc() { return svc_; }
  // Keeps `s` alive until this read's replies are written; returns a view of it.
  std::string_view keep(std::string s) { return arena_.emplace_back(std::move(s)); }
  // The policies in force, fetched once per process() call rather than once per command.
  const PolicySet& policies();
  void set_proto(int p);
  void set_authenticated(bool a) { authenticated_ = a; }
  bool authenticated() const { return authenticated_; }
  void request_close() { close_ = true; }

 private:
  enum class SlotType : uint8_t { kLocal, kOp, kForward };
  struct Slot {
    SlotType type;
    ReplyKind kind;
    uint16_t cmd;    // the command's id for metrics (its place in the command table)
    uint32_t index;  // op index; start offset in local_; forward group
    uint32_t len;    // length in local_; command number within the forward group
  };
  void count(const Slot& s, RequestResult r, int64_t latency_us);
  enum class Route { kHere, kAnswered };
  Route route(const std::vector<std::string_view>& args, uint32_t slot);
  // Appends `args` to this read's forward group for `node`: (group, command number).
  std::pair<uint32_t, uint32_t> forward_to(const RouteNode& node,
                                           const std::vector<std::string_view>& args);
  void end_local_slot(size_t start);
  // The key's state cannot be reached: the command's policy says what to answer
  // (on_unavailable), else `error`. Writes to `w`.
  void unavailable(RespWriter& w, const LimitSpec* policy, const std::string& error);
  // The named policy a limiter command uses, if any (FG.TAKE/PEEK/ACQUIRE key policy ...).
  const LimitSpec* policy_of(const std::vector<std::string_view>& args);

  Services& svc_;
  std::shared_ptr<ClientInfo> client_;
  RespParser parser_;
  std::vector<std::string_view> args_;
  std::deque<std::string> arena_;
  Batch* batch_ = nullptr;
  std::shared_ptr<const PolicySet> policies_;
  std::shared_ptr<const Routing> routing_;
  uint64_t routing_version_ = 0;
  uint16_t cur_slot_ = 0;
  ForwardList* forwards_ = nullptr;
  std::vector<uint32_t> groups_;  // forward groups of this process(): index in *forwards_
  struct Addend {
    uint32_t slot, group, item;
  };
  std::vector<Addend> addends_;  // fanned-out replies to add to a slot's integer
  std::vector<std::pair<uint32_t, LimitSpec>> forward_policies_;  // forwarded slot -> policy
  bool forwarded_ = false;
  uint32_t hops_ = 0;  // forwards this session's commands have already taken
  bool cluster_aware_ = false;
  std::vector<Slot> slots_;
  std::string local_;
  std::string out_;
  int proto_ = 2;
  bool authenticated_;
  bool close_ = false;
  uint16_t cur_cmd_ = 0;
  int64_t arrived_ns_ = 0;  // when this read's commands were parsed (steady clock)
};

}  // namespace fg
