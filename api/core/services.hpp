// What the request core, the doors and the commands need from their node: shards, clock,
// policies, clients, routing, the I/O lanes, settings and counters. The node fills it in;
// tests build one by hand.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "acl.hpp"
#include "bound_leases.hpp"
#include "client_registry.hpp"
#include "clock.hpp"
#include "hot_slices.hpp"
#include "key_waiters.hpp"
#include "live_value.hpp"
#include "output_limits.hpp"
#include "policy_registry.hpp"
#include "pubsub.hpp"
#include "request_metrics.hpp"
#include "resp_parser.hpp"
#include "result.hpp"
#include "routing.hpp"
#include "shard_pool.hpp"
#include "slow_log.hpp"
#include "wait_room.hpp"

namespace asio {
class io_context;
}  // namespace asio

namespace fg {

class IoBatcher;
class Cluster;
class TlsContexts;
class PolicyStore;
class ScriptEngine;
class Snapshotter;
class RlsRules;
class GatewayDoor;

constexpr int64_t kDefaultForwardTimeoutMs = 5000;

// What the doors and commands read of the node's settings (CONFIG GET reads the settings
// table instead: Services::config_values).
// The longest deadline request-deadline or FG.DEADLINE may state: a day.
constexpr int64_t kMaxDeadlineMs = 86'400'000;

struct NodeSettings {
  std::string version = FLOODGATE_VERSION;
  std::string run_id;
  std::string bind = "127.0.0.1";
  int port = 6380;                   // plain RESP; 0: none (TLS only)
  int native_port = 0;               // 0: no native listener
  OutputLimits output_limits;        // client-output-buffer-limit
  size_t max_batch_commands = 1024;  // commands taken from one read into one batch
  ParserLimits parser;
  // proto-max-bulk-len as CONFIG SET leaves it: each connection's parser takes it per read.
  LiveValue<size_t> max_bulk_len{size_t{1} << 20};
  std::string config_file;  // INFO's config_file ("": none)
  int64_t start_ms = 0;
  // Cluster mode (routing != null): how a RESP client reaches a key another node owns.
  // kAuto: -MOVED once the client has asked for the topology (CLUSTER SLOTS or SHARDS),
  // else forwarded; kAlways: always -MOVED; kNever: always forwarded.
  enum class Redirect { kAuto, kAlways, kNever } redirect = Redirect::kAuto;
  LiveValue<int64_t> forward_timeout_ms{kDefaultForwardTimeoutMs};  // (CONFIG SET)
  bool data_sync = false;                                           // data-replication: sync
  int64_t max_subscriptions = 100'000;  // all clients' subscriptions at once (0: none)
  // request-deadline: a deciding command that waited longer since it reached the host is
  // refused undecided (0: none); a connection may state its own (FG.DEADLINE).
  LiveValue<int64_t> request_deadline_ms{0};  // (CONFIG SET)
};

struct NodeCounters {
  std::atomic<uint64_t> commands{0};
  std::atomic<uint64_t> protocol_errors{0};
  std::atomic<uint64_t> dropped_slow{0};     // clients dropped for not reading replies
  std::atomic<uint64_t> dropped_timeout{0};  // idle or half-sent command timeouts
  std::atomic<uint64_t> forwarded{0};        // requests sent to their slot's owner
  // io-idle-poll-us: idle polls that found work, and those that ended in a sleep.
  std::atomic<uint64_t> idle_poll_hits{0};
  std::atomic<uint64_t> idle_poll_misses{0};
  std::atomic<uint64_t> forward_failures{0};
  std::atomic<uint64_t> moved{0};               // -MOVED redirections answered
  std::atomic<uint64_t> forwards_served{0};     // requests run for other nodes
  std::atomic<uint64_t> fail_open{0};           // answered "allowed" with no copy reachable
  std::atomic<uint64_t> fail_closed{0};         // answered "denied" with no copy reachable
  std::atomic<uint64_t> unavailable{0};         // answered an error with no copy reachable
  std::atomic<uint64_t> connections_closed{0};  // both doors; drives the memory trim
  std::atomic<uint64_t> past_deadline{0};       // deciding commands refused, late, undecided
};

// How forwarded requests leave this node: over the cluster's peer links in a node, straight
// into another in-process node in tests.
class Forwarder {
 public:
  virtual ~Forwarder() = default;
  // Sends a ForwardBatch to the node at `peer_addr`. `done(ok, body)` runs once, on any
  // thread: ok with the owner's ForwardOutcomes, or not with why ("timeout", ...).
  virtual void send(const std::string& peer_addr, std::string batch, int64_t timeout_ms,
                    std::function<void(bool ok, std::string body)> done) = 0;
};

// One I/O thread: its event loop and the batcher that gathers its flights. Work that is
// not a client's (forwarded requests, lease renewals) runs on a lane too.
struct Lane {
  asio::io_context* io = nullptr;
  IoBatcher* batcher = nullptr;
};

struct Services {
  ShardPool* shards = nullptr;
  const Clock* clock = nullptr;
  // Requests, latencies, decisions and most-denied keys of this node (/metrics, INFO).
  RequestMetrics* metrics = &RequestMetrics::get();
  ErrorStats errors;  // the error replies the RESP door sent (INFO errorstats)
  PolicyRegistry* policies = nullptr;
  PolicyStore* policy_store = nullptr;  // null: FG.POLICY changes are refused
  ClientRegistry* clients = nullptr;
  RoutingHub* routing = nullptr;     // null: not a cluster
  Cluster* cluster = nullptr;        // replica acknowledgements, INFO cluster
  TlsContexts* tls = nullptr;        // null: no TLS (its counters: INFO, /metrics)
  Forwarder* forwarder = nullptr;    // null: requests are never forwarded
  BoundLeases* bound = nullptr;      // null: BOUND leases are refused
  ScriptEngine* scripts = nullptr;   // null: EVAL and SCRIPT are refused
  AclBook* acl = nullptr;            // the users (always set)
  Accounts* accounts = nullptr;      // what each user holds of the node, and its caps
  Snapshotter* snapshots = nullptr;  // null: no `dir`, state is not saved (SAVE is refused)
  RlsRules* rls = nullptr;           // the gateway door's rules (FG.RLS); null: no rls-config
  GatewayDoor* gateway = nullptr;    // the gateway door (rls-port); null: none
  // SHUTDOWN: asks the node to stop as SIGTERM does (saving first when `save`); null: refused.
  std::function<void(bool save)> shutdown;
  // ACL LOAD: reads the users file again (or why not); empty: no ACL file.
  std::function<Status()> acl_load;
  std::vector<Lane> lanes;  // at least one when anything runs off a client's thread
  std::atomic<size_t> next_lane{0};
  NodeSettings settings;
  // CONFIG GET's answers: each setting the node's settings table shows, with its value in
  // force (set by the node; null: none).
  std::function<std::vector<std::pair<std::string, std::string>>()> config_values;
  // CONFIG SET of the node's own settings, as a whole: "" when done, else Redis's error.
  std::function<std::string(const std::vector<std::pair<std::string, std::string>>&)> config_set;
  std::function<std::string()> config_rewrite;  // CONFIG REWRITE: "" when done, else the error
  NodeCounters counters;
  PubSubHub pubsub;    // this node's subscribers
  KeyWaiters waiters;  // clients blocked on keys (BLPOP and its kin)
  WaitRoom wait_room;  // takes waiting for their admission (FG.TAKE ... WAIT)
  SlowLog slowlog;     // SLOWLOG (the RESP door's commands)
  HotSlices slices;    // quota slices of hot keys other nodes own (slice-threshold)

  // The lane for the next piece of background work (round robin).
  Lane& lane() { return lanes[next_lane.fetch_add(1, std::memory_order_relaxed) % lanes.size()]; }
};

}  // namespace fg
