// Commands sent to the node that owns their slot, on behalf of a client connected here
// (the "plain client sees one big limiter" path), and the owner's side that runs them.
#pragma once
#include <asio.hpp>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "shard_op.hpp"

namespace fg {

class Cluster;
struct Services;

// A command is forwarded at most this many times: once from the node a client talks to,
// once more if the slot moved on while it travelled. Tables that disagree longer than
// that get -TRYAGAIN rather than a loop.
constexpr uint32_t kMaxForwardHops = 2;

// One session's commands for one other node, from one read.
struct ForwardCall {
  std::string peer_addr;
  std::string node_id;
  int proto = 2;
  uint32_t hops = 1;  // including this one
  uint32_t count = 0;
  std::string cmds;  // whole RESP commands, back to back
  // Set when the call completes:
  bool ok = false;
  std::string replies;  // RESP replies back to back (ok)
  std::string error;    // why there are none (!ok)
};
using ForwardList = std::vector<ForwardCall>;

// Sends each call of `calls` (kept alive by the batch's sink); each completion ends with
// batch->finish_one(). The batch must already count them (ShardPool::submit's `extra`).
void send_forwards(Cluster& cluster, const BatchPtr& batch, ForwardList& calls, int64_t timeout_ms);

// Length of the first whole RESP value in [p, p+n), or 0 if there is none.
size_t resp_value_length(const char* p, size_t n, int depth = 0);

// Whether an op of `b` changed state that must be on a replica before it is answered: a
// policy with `replication: sync`, and every lease granted or released (a failover must
// never grant a permit twice).
bool needs_replica_ack(const Batch& b);
// Runs `then` (on the cluster thread) once the replicas hold the changes of `b`; ops whose
// change they did not acknowledge in time get status kNotReplicated.
void await_replicas(Cluster& cluster, const BatchPtr& b, std::function<void()> then);

// Runs forwarded commands on the node that owns their slots (peer request FORWARD).
void serve_forwards(Cluster& cluster, Services& svc);
// A client connection (RESP or native) closed: gives back every lease it took with BOUND,
// wherever their keys live.
void release_bound_leases(Services& svc, uint64_t client_id);
// Runs RESP commands on the node's own behalf on `io` (cluster: routed and fanned out like
// a client's); the replies are dropped.
void run_commands(asio::io_context& io, Cluster* cluster, Services& svc, std::string cmds);

}  // namespace fg
