// Lua scripts (EVAL, EVALSHA, their _RO forms, SCRIPT LOAD|EXISTS|FLUSH) with Redis's
// semantics: Lua 5.1, KEYS and ARGV, redis.call and the rest of the redis.* API, Redis's
// conversions between Lua values and replies, cjson and bit, and a sandbox. A script runs
// on the shards that hold its keys, atomically: the shards it may touch are held by the
// running thread for the whole run (ShardHost), and its commands run on them directly.
// What replicas get is what the commands changed, never the script.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "data_cmd.hpp"
#include "result.hpp"
#include "script_cache.hpp"
#include "script_host.hpp"

namespace fg {

struct ScriptLimits {
  int64_t budget_ms = 5;            // a run longer than this is aborted and undone
  size_t memory_bytes = 64u << 20;  // each Lua state's heap
  // What clients may still make the node hold (maxmemory-clients less what they hold; read
  // from shard threads). A run grows its state's heap by at most that, or kMinRunRoom, so
  // scripts cannot take the node past the cap by more than kMinRunRoom per shard. Null: no
  // cap.
  std::function<int64_t()> memory_room;
  static constexpr int64_t kMinRunRoom = 1 << 20;
  // Each user's share of the script cache (accounts.hpp; null: none).
  const Accounts* accounts = nullptr;
};

struct ScriptCounters {
  std::atomic<uint64_t> runs{0};
  std::atomic<uint64_t> errors{0};       // runs answered with an error
  std::atomic<uint64_t> over_budget{0};  // runs aborted past their budget (and undone)
  std::atomic<uint64_t> not_kept{0};     // EVALs run but not cached: the cache was full
};

// What redis.call may run of a command, as the command registry says (script_callable):
// its arity in Redis's convention (0: the node does not know it), and the data op it runs
// (kNone: not allowed from a script; TIME and PING the engine answers itself).
struct ScriptCallable {
  int arity = 0;
  DataCmd data = DataCmd::kNone;
};

class ScriptEngine : public ScriptHost {
 public:
  // `callable`: what a script may call, by name (case-insensitive). `shards`: the pool's
  // shard count. `cluster`: keys outside the script's slot are refused as Redis Cluster
  // refuses them. `cache`: where scripts are kept (cluster-wide).
  using Callable = ScriptCallable (*)(std::string_view name);
  // What PUBLISH (shard false) and SPUBLISH (true) from a script do: deliver, and answer
  // how many heard it. Called on the shard's thread.
  using Publish =
      std::function<int64_t(bool shard, std::string_view channel, std::string_view message)>;
  ScriptEngine(size_t shards, bool cluster, ScriptLimits limits, Callable callable,
               ScriptCache& cache);
  ~ScriptEngine() override;

  void run(ShardOp& op, const Step& step, int64_t now_ns) override;
  // How scripts publish (set before any script runs; unset: PUBLISH is refused).
  void set_publish(Publish p) { publish_ = std::move(p); }

  // SCRIPT LOAD: the script's SHA1, once it compiles and is kept; else Redis's compile
  // error text, or the cache's.
  Result<std::string> load(std::string_view body, const ScriptCache::Owner& owner = {});
  bool exists(std::string_view sha) const;  // case-insensitive, as Redis
  void flush();                             // SCRIPT FLUSH (cluster-wide)
  size_t scripts() const;
  size_t cache_bytes() const;
  const ScriptCounters& counters() const { return counters_; }
  // How long the longest script running now has run (0: none runs), read from any thread:
  // a run far past its budget means the node is stuck (the admin port's /healthz says so).
  int64_t longest_run_ns() const;
  // Bytes the shards' Lua heaps hold, as of each one's last run (INFO used_memory_vm_eval).
  int64_t heap_bytes() const;
  const ScriptLimits& limits() const { return limits_; }

  struct State;  // one Lua state per shard (used only by whoever holds that shard)

 private:
  size_t shards_;
  bool cluster_;
  ScriptLimits limits_;
  Callable callable_;
  Publish publish_;
  ScriptCache& cache_;
  mutable std::mutex mu_;                               // guards loader_
  std::vector<std::unique_ptr<State>> states_;          // by shard
  std::unique_ptr<std::atomic<int64_t>[]> started_ns_;  // by shard: its run's start, 0 none
  std::unique_ptr<std::atomic<int64_t>[]> heap_bytes_;  // by shard: its heap after its last run
  std::unique_ptr<State> loader_;                       // SCRIPT LOAD's compile check (under mu_)
  ScriptCounters counters_;
};

// A script's first line `#!lua [flags=f1,f2,…]` (Redis 7's shebang): without one a script
// runs as EVAL always ran (compat); with one, its flags say what it may do. `length`: the
// bytes of the line before its line feed (the line feed stays, so line numbers hold).
struct ScriptFlags {
  bool compat = true;
  bool no_writes = false;
  bool no_cluster = false;
  bool allow_cross_slot = false;  // (allow-oom and allow-stale are accepted: nothing here
                                  // refuses a script for memory, and no copy is stale)
  size_t length = 0;
};
// Redis's error text when the line is not one Redis would accept.
Result<ScriptFlags> parse_shebang(std::string_view body);

// The SHA1 of `data` as 40 lower-case hex digits (redis.sha1hex, script names).
std::string sha1_hex(std::string_view data);

}  // namespace fg
