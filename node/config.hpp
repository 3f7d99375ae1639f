// Node configuration: defaults, then the YAML file (--config), then command-line flags.
#pragma once
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "policy_registry.hpp"
#include "services.hpp"
#include "tls_context.hpp"

namespace fg {

struct NodeConfig {
  std::string bind = "127.0.0.1";
  int port = 6380;
  int native_port = -1;            // native protocol; -1: RESP port + 1000, 0: off
  std::string requirepass;         // the default user's password
  std::vector<std::string> users;  // ACL users: "name rules..." (Redis's `user` lines)
  std::string aclfile;             // or: a file of "user name rules..." lines (ACL LOAD)
  size_t maxclients = 10000;
  int64_t maxmemory = 0;          // bytes the keyspace may hold (0: no cap)
  int64_t maxmemory_clients = 0;  // bytes all clients' buffers may hold together (0: no cap)
  // What one user may take of each node-wide cap (api/core/user_shares.hpp): a fraction,
  // and per-user numbers ("name keys=N bytes=SIZE ...").
  double user_share = 0.5;
  std::vector<std::string> user_limits;
  int64_t max_subscriptions = 100'000;  // channels, patterns, shard channels heard, node-wide
  OutputLimits output_limits;           // client-output-buffer-limit
  int64_t timeout_s = 0;                // close idle clients after this; 0 = never
  int64_t max_waiters = 10000;          // FG.TAKE ... WAIT: at once on this node
  int64_t max_waiters_per_key = 1000;   // ... and on one key
  int64_t query_deadline_ms = 30000;    // a half-received command must complete by then
  int64_t request_deadline_ms = 0;      // a deciding command that waited longer is refused
  int64_t output_timeout_ms = 30000;    // a client not reading its replies is dropped then
  // SLOWLOG keeps the commands slower than this many µs (< 0: none), at most max_len of them.
  int64_t slowlog_log_slower_than = 10'000;
  int64_t slowlog_max_len = 128;
  size_t max_query_bytes = 8 << 20;     // one buffered command, at most
  size_t proto_max_bulk_len = 1 << 20;  // one argument, at most
  size_t shards = 0;                    // 0: one per shard thread
  int io_threads = 0;                   // 0: half the cores, at least 1
  int shard_threads = 0;                // 0: half the cores, at least 1
  int io_idle_poll_us = 0;  // an I/O thread out of work polls this long before it sleeps
  size_t max_keys = 10'000'000;
  int64_t script_time_limit_ms = 5;       // a Lua script running longer is aborted and undone
  size_t script_memory_limit = 64 << 20;  // each Lua state's heap (one per shard)
  // The cluster-wide script cache's cap: it travels in the settings book, whole, to every
  // node that joins or misses a change, so it is kept small.
  size_t script_cache_max_scripts = 1000;
  size_t script_cache_max_bytes = 4 << 20;
  std::string log_level = "info";
  uint32_t notify_flags = 0;  // notify-keyspace-events (actors/key_events.hpp)
  std::string config_file;
  // Persistence (node/OPERATIONS.md): with a dir, state is saved to dir/dbfilename and loaded
  // at start; every save_interval_ms (0: only on shutdown and on demand).
  std::string dir;
  std::string dbfilename = "dump.fgs";
  int64_t save_interval_ms = 60'000;
  PolicyMap policies;
  std::map<std::string, std::string> patterns;      // key glob -> policy name
  std::map<std::string, PolicyOverride> overrides;  // key -> policy name or its own limit
  int admin_port = -1;                              // admin HTTP; -1: RESP port + 2000, 0: off
  // The gateway door (api/rls): Envoy's rate-limit service over gRPC.
  int rls_port = 0;        // 0: off
  std::string rls_config;  // envoyproxy/ratelimit YAML: a file or a directory
  bool rls_response_headers = false;
  std::string rls_user = "default";
  bool tls_rls = false;
  int64_t rls_maxclients = 1000;              // the gateway door's connections at once
  int64_t rls_max_keys_per_domain = 100'000;  // counters one domain may have made here
  int64_t rls_idle_timeout_ms = 600'000;      // a connection with no call this long: closed
  int64_t rlqs_slice_ms = 1000;               // a quota slice's life (RLQS)
  std::string rls_token_file;                 // set: callers send its bearer token
  std::string admin_bind;        // the admin port's address; empty: the first `bind` address
  std::string admin_token_file;  // set: /cluster, /status and / want its bearer token
  // TLS (node/OPERATIONS.md, "TLS"): the files, and where it is spoken.
  TlsFiles tls;
  int tls_port = 0;          // RESP over TLS; 0: none (with one, `port: 0` turns plain RESP off)
  bool tls_native = false;   // the native port speaks TLS only
  bool tls_cluster = false;  // peer links over mutual TLS
  // Cluster mode.
  bool cluster_enabled = false;
  int cluster_port = 0;               // 0: RESP port + 10000
  std::string cluster_announce_host;  // empty: the first --bind address
  std::string cluster_secret_file;    // set: gossip is sealed with its secret (gossip/)
  bool cluster_bus_legacy = false;    // speak to and believe the previous bus version (upgrades)
  std::vector<std::string> seeds;     // cluster bus addresses host:port
  std::string node_id;                // empty: random 40 hex digits
  std::string cluster_redirect = "auto";   // auto | moved | forward
  std::string data_replication = "async";  // the data commands' writes: async | sync
  int64_t cluster_forward_timeout_ms = kDefaultForwardTimeoutMs;
  // Quota slices of hot keys (api/core/hot_slices.hpp): takes a second of one key forwarded
  // past which this node slices it (0: never), and how long a slice lasts.
  int64_t slice_threshold = 1000;
  int64_t slice_ms = 100;
  int64_t cluster_empty_grace_ms = 10'000;     // no copy of a slot reachable: fail mode this long
  int cluster_replicas = 2;                    // copies of each slot's state, owner included
  int64_t replication_lag_ms = 5;              // Δ: changes reach replicas within this
  int64_t replication_sync_timeout_ms = 1000;  // a sync reply waits this long for a replica
};

// Replaces `book`'s users with the config's (users, or the aclfile read now; the default
// user takes requirepass unless defined there); or why nothing changed.
Status load_users(const NodeConfig& cfg, AclBook& book);

// Whether `name` can be the snapshot's file name (no directory in it), or why not.
Status check_dbfilename(const std::string& name);
// Whether `id` can be a node id (letters, digits, '-', '_', '.'; 1..64 chars), or why not.
Status check_node_id(const std::string& id);
// The first of `bind`'s space-separated addresses: the host the cluster bus and the
// admin port use.
std::string first_bind_address(const std::string& bind);
// Splits "a:1,b:2" (spaces allowed) into addresses; false if one is not host:port.
bool parse_seeds(const std::string& s, std::vector<std::string>& out);

struct ConfigError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Reads a YAML file into `cfg`. Unknown keys and bad values are errors naming key and line.
void load_config_file(const std::string& path, NodeConfig& cfg);

// "250ms", "30s", "1m", "2h", "1d" or a bare number of milliseconds.
bool parse_duration_ms(const std::string& s, int64_t& ms);

// Fills thread and shard counts left at 0 from the number of cores.
void resolve_defaults(NodeConfig& cfg);

}  // namespace fg
