// What a RESP session needs from its node: shards, clock, policies, clients, settings.
#pragma once
#include <atomic>
#include <cstdint>
#include <map>
#include <string>

#include "client_registry.hpp"
#include "clock.hpp"
#include "policy_registry.hpp"
#include "resp_parser.hpp"
#include "shard_pool.hpp"

namespace fg {

struct NodeSettings {
  std::string version = "0.1.0";
  std::string run_id;
  std::string bind = "127.0.0.1";
  int port = 6380;
  std::string requirepass;           // empty: no AUTH needed
  int64_t timeout_s = 0;             // idle client timeout, 0 = never
  size_t max_batch_commands = 1024;  // commands taken from one read into one batch
  ParserLimits parser;
  std::string config_file;
  int64_t start_ms = 0;
  int io_threads = 1;
  int shard_threads = 1;
};

struct NodeCounters {
  std::atomic<uint64_t> commands{0};
  std::atomic<uint64_t> protocol_errors{0};
  std::atomic<uint64_t> dropped_slow{0};     // clients dropped for not reading replies
  std::atomic<uint64_t> dropped_timeout{0};  // idle or half-sent command timeouts
};

struct Services {
  ShardPool* shards = nullptr;
  const Clock* clock = nullptr;
  PolicyRegistry* policies = nullptr;
  ClientRegistry* clients = nullptr;
  NodeSettings settings;
  NodeCounters counters;
};

}  // namespace fg
