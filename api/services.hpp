// What a RESP session needs from its node: shards, clock, policies, clients, settings.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "bound_leases.hpp"
#include "client_registry.hpp"
#include "clock.hpp"
#include "policy_registry.hpp"
#include "resp_parser.hpp"
#include "routing.hpp"
#include "shard_pool.hpp"

namespace fg {

struct NodeSettings {
  std::string version = "0.1.0";
  std::string run_id;
  std::string bind = "127.0.0.1";
  int port = 6380;
  int native_port = 0;               // 0: no native listener
  int admin_port = 0;                // 0: no admin HTTP
  std::string requirepass;           // empty: no AUTH needed
  int64_t timeout_s = 0;             // idle client timeout, 0 = never
  size_t max_batch_commands = 1024;  // commands taken from one read into one batch
  ParserLimits parser;
  std::string config_file;
  int64_t start_ms = 0;
  int io_threads = 1;
  int shard_threads = 1;
  // Cluster mode (routing != null): how a client reaches a key another node owns.
  // kAuto: -MOVED once the client has asked for the topology (CLUSTER SLOTS or SHARDS),
  // else forwarded; kAlways: always -MOVED; kNever: always forwarded.
  enum class Redirect { kAuto, kAlways, kNever } redirect = Redirect::kAuto;
  int64_t forward_timeout_ms = 2000;
};

struct NodeCounters {
  std::atomic<uint64_t> commands{0};
  std::atomic<uint64_t> protocol_errors{0};
  std::atomic<uint64_t> dropped_slow{0};     // clients dropped for not reading replies
  std::atomic<uint64_t> dropped_timeout{0};  // idle or half-sent command timeouts
  std::atomic<uint64_t> forwarded{0};        // commands sent to their slot's owner
  std::atomic<uint64_t> forward_failures{0};
  std::atomic<uint64_t> moved{0};               // -MOVED redirections answered
  std::atomic<uint64_t> forwards_served{0};     // commands run for other nodes
  std::atomic<uint64_t> fail_open{0};           // answered "allowed" with no copy reachable
  std::atomic<uint64_t> fail_closed{0};         // answered "denied" with no copy reachable
  std::atomic<uint64_t> unavailable{0};         // answered an error with no copy reachable
  std::atomic<uint64_t> connections_closed{0};  // both faces; drives the memory trim
};

struct Services {
  ShardPool* shards = nullptr;
  const Clock* clock = nullptr;
  PolicyRegistry* policies = nullptr;
  class PolicyStore* policy_store = nullptr;  // null: FG.POLICY changes are refused
  ClientRegistry* clients = nullptr;
  RoutingHub* routing = nullptr;  // null: not a cluster
  class Cluster* cluster = nullptr;
  BoundLeases* bound = nullptr;  // null: FG.ACQUIRE ... BOUND is refused
  // Runs RESP commands on the node's behalf (renewing and releasing BOUND leases),
  // replies discarded. Null in tests that do not need it.
  std::function<void(std::string commands)> run_background;
  NodeSettings settings;
  NodeCounters counters;
};

}  // namespace fg
