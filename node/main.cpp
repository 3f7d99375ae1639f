// The floodgate executable: flags and config, then shards (CAF), then the RESP listener.
#include <malloc.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <caf/all.hpp>
#include <csignal>
#include <ctime>
#include <filesystem>
#include <future>
#include <iostream>
#include <random>
#include <sstream>

#include "admin_http.hpp"
#include "book.hpp"
#include "cluster.hpp"
#include "command_table.hpp"
#include "config.hpp"
#include "forwarding.hpp"
#include "lease_upkeep.hpp"
#include "policy_store.hpp"
#include "script_engine.hpp"
#include "server.hpp"
#include "snapshotter.hpp"

namespace {
// A certificate that expires within two weeks is said at start and at each reload (and
// /metrics has the date for alerts: floodgate_tls_certificate_expiry_timestamp_seconds).
void warn_if_expiring(const fg::TlsContexts& tls) {
  const int64_t left_s = tls.expires_at_s() - static_cast<int64_t>(std::time(nullptr));
  if (tls.expires_at_s() > 0 && left_s < 14 * 86400) {
    spdlog::warn("the TLS certificate expires in {} hours: renew it and send SIGHUP",
                 left_s / 3600);
  }
}

std::string random_run_id() {
  std::random_device rd;
  static const char* hex = "0123456789abcdef";
  std::string s(40, '0');
  for (char& c : s) c = hex[rd() % 16];
  return s;
}

std::string first_word(const std::string& s) {
  std::istringstream in(s);
  std::string w;
  in >> w;
  return w;
}

std::string seeds_text(const std::vector<std::string>& seeds) {
  std::string out;
  for (const auto& s : seeds) out += (out.empty() ? "" : ",") + s;
  return out;
}

// The value after `flag` ("--config FILE" or "--config=FILE"), read before the flags are
// parsed: the file gives the base the flags then override.
std::string pre_scan(int argc, char** argv, const std::string& flag) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == flag && i + 1 < argc) return argv[i + 1];
    if (a.rfind(flag + "=", 0) == 0) return a.substr(flag.size() + 1);
  }
  return "";
}

uint64_t file_mtime_ms(const std::string& path) {
  std::error_code ec;
  const auto t = std::filesystem::last_write_time(path, ec);
  if (ec) return 0;
  const auto sys = std::chrono::time_point_cast<std::chrono::milliseconds>(
      t - std::filesystem::file_time_type::clock::now() + std::chrono::system_clock::now());
  return static_cast<uint64_t>(std::max<int64_t>(0, sys.time_since_epoch().count()));
}

fg::PolicyFile policy_file(const fg::NodeConfig& cfg) {
  fg::PolicyFile f;
  f.policies = cfg.policies;
  f.patterns = cfg.patterns;
  f.overrides = cfg.overrides;
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  // Client buffers of a MB and more come and go with connections. A fixed mmap threshold
  // keeps them out of the heap (glibc would otherwise raise it after the first free and
  // keep that memory), so what a burst of big or half-sent commands took comes back.
  mallopt(M_MMAP_THRESHOLD, 256 * 1024);
  fg::NodeConfig cfg;
  // Settings: defaults, then the file, then flags given on the command line.
  const std::string check_file = pre_scan(argc, argv, "--check-config");
  const std::string config_file =
      check_file.empty() ? pre_scan(argc, argv, "--config") : check_file;
  try {
    if (!config_file.empty()) fg::load_config_file(config_file, cfg);
  } catch (const fg::ConfigError& e) {
    std::cerr << "floodgate: bad config: " << e.what() << "\n";
    return 2;
  }
  CLI::App app{"floodgate: a rate-limiter node that speaks the Redis protocol (RESP)"};
  app.set_version_flag("--version", std::string("floodgate ") + FLOODGATE_VERSION);
  std::string unused_file;
  app.add_option("--config", unused_file, "YAML config file (settings and named policies)");
  app.add_option("--check-config", unused_file,
                 "Validate this config file (with the flags given) and exit: 0 good, 2 bad");
  app.add_option("--bind", cfg.bind, "Addresses to listen on, space-separated")
      ->capture_default_str();
  app.add_option("--port", cfg.port, "RESP port (0 picks a free one)")->capture_default_str();
  app.add_option("--native-port", cfg.native_port,
                 "Native-protocol port (default: RESP port + 1000; 0 turns it off)")
      ->check(CLI::Range(0, 65535));
  app.add_option("--admin-port", cfg.admin_port,
                 "Admin HTTP port: /metrics, /healthz, /readyz, /cluster, status page "
                 "(default: RESP port + 2000; 0 turns it off)")
      ->check(CLI::Range(0, 65535));
  app.add_option("--admin-bind", cfg.admin_bind,
                 "Address of the admin HTTP port (default: the first --bind address)");
  app.add_option("--admin-token-file", cfg.admin_token_file,
                 "File holding a bearer token that /cluster, /status and the status page "
                 "require (/metrics, /healthz and /readyz stay open); re-read on SIGHUP");
  app.add_option("--tls-port", cfg.tls_port,
                 "RESP over TLS on this port (0: none); with it, --port 0 turns plain RESP off")
      ->check(CLI::Range(0, 65535));
  app.add_flag("--tls-native", cfg.tls_native, "The native port speaks TLS only");
  app.add_flag("--tls-cluster", cfg.tls_cluster,
               "Peer links between nodes over mutual TLS (every node needs it)");
  app.add_option("--tls-cert-file", cfg.tls.cert_file,
                 "This node's certificate (PEM; a chain may follow); re-read on SIGHUP");
  app.add_option("--tls-key-file", cfg.tls.key_file, "Its private key (PEM); re-read on SIGHUP");
  app.add_option("--tls-key-file-pass", cfg.tls.key_file_pass, "The key file's passphrase");
  app.add_option("--tls-client-cert-file", cfg.tls.client_cert_file,
                 "The certificate shown when connecting to peers (default: --tls-cert-file)");
  app.add_option("--tls-client-key-file", cfg.tls.client_key_file,
                 "Its private key (default: --tls-key-file)");
  app.add_option("--tls-ca-cert-file", cfg.tls.ca_cert_file,
                 "CA certificates (PEM) that sign clients' and peers' certificates");
  app.add_option("--tls-ca-cert-dir", cfg.tls.ca_cert_dir,
                 "A directory of CA certificates (OpenSSL's hashed names)");
  std::string auth_clients;
  app.add_option("--tls-auth-clients", auth_clients,
                 "Clients must show a certificate: yes (default), no, or optional")
      ->check(CLI::IsMember({"yes", "no", "optional"}));
  app.add_option("--tls-protocols", cfg.tls.protocols,
                 "TLS versions accepted, e.g. \"TLSv1.2 TLSv1.3\" (the default)");
  app.add_option("--tls-ciphers", cfg.tls.ciphers, "TLS 1.2 ciphers (OpenSSL's list syntax)");
  app.add_option("--tls-ciphersuites", cfg.tls.ciphersuites, "TLS 1.3 cipher suites");
  app.add_flag("--tls-prefer-server-ciphers", cfg.tls.prefer_server_ciphers,
               "Choose the cipher by this node's preference, not the client's");
  app.add_option("--requirepass", cfg.requirepass,
                 "The default user's password (clients AUTH with it)");
  app.add_option("--user", cfg.users,
                 "An ACL user, as \"name rules...\" in Redis's words (repeatable; "
                 "node/README.md, Users)");
  app.add_option("--aclfile", cfg.aclfile,
                 "A file of ACL users (\"user name rules...\" lines), read at start, on "
                 "SIGHUP and on ACL LOAD");
  app.add_option("--maxclients", cfg.maxclients, "Most simultaneous client connections")
      ->capture_default_str();
  app.add_option("--maxmemory-clients", cfg.maxmemory_clients,
                 "Most bytes all client connections' buffers may hold together; past it the "
                 "biggest clients are disconnected (0 = no cap)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 50));
  app.add_option("--timeout", cfg.timeout_s, "Close clients idle this many seconds (0 = never)")
      ->capture_default_str();
  app.add_option("--query-deadline-ms", cfg.query_deadline_ms,
                 "Drop a client whose half-sent command is not complete after this")
      ->check(CLI::Range(int64_t{1}, int64_t{86'400'000}))
      ->capture_default_str();
  app.add_option("--output-timeout-ms", cfg.output_timeout_ms,
                 "Drop a client that has not read its replies after this")
      ->check(CLI::Range(int64_t{1}, int64_t{86'400'000}))
      ->capture_default_str();
  app.add_option("--script-time-limit-ms", cfg.script_time_limit_ms,
                 "A Lua script running longer is aborted and its writes undone")
      ->check(CLI::Range(int64_t{1}, int64_t{60'000}))
      ->capture_default_str();
  app.add_option("--script-memory-limit", cfg.script_memory_limit,
                 "Bytes each Lua state (one per shard) may hold")
      ->check(CLI::Range(size_t{1} << 20, size_t{1} << 34))
      ->capture_default_str();
  app.add_option("--script-cache-max-scripts", cfg.script_cache_max_scripts,
                 "How many scripts the cluster-wide script cache keeps")
      ->check(CLI::Range(size_t{1}, size_t{50'000}))
      ->capture_default_str();
  app.add_option("--script-cache-max-bytes", cfg.script_cache_max_bytes,
                 "How many bytes of script bodies the cluster-wide script cache keeps")
      ->check(CLI::Range(size_t{1024}, size_t{16} << 20))
      ->capture_default_str();
  app.add_option("--max-query-bytes", cfg.max_query_bytes, "Largest single command, in bytes")
      ->capture_default_str();
  app.add_option("--proto-max-bulk-len", cfg.proto_max_bulk_len,
                 "Largest single argument, in bytes")
      ->capture_default_str();
  app.add_option("--shards", cfg.shards, "Shard actors (default: one per shard thread, at most 64)")
      ->check(CLI::Range(0, 64));
  app.add_option("--io-threads", cfg.io_threads, "Network threads (default: half the cores)");
  app.add_option("--shard-threads", cfg.shard_threads,
                 "Threads running shard actors (default: half the cores)");
  app.add_option("--max-keys", cfg.max_keys, "Most limiter keys the node holds")
      ->capture_default_str();
  app.add_option("--dir", cfg.dir,
                 "Directory of the state snapshot: saved every --save-interval-ms, on SAVE/BGSAVE "
                 "and at shutdown, loaded at start (none: state lives in memory only)");
  app.add_option("--dbfilename", cfg.dbfilename, "The snapshot's file name in --dir")
      ->capture_default_str();
  app.add_option("--save-interval-ms", cfg.save_interval_ms,
                 "With --dir, save the state this often (0: only at shutdown and on SAVE/BGSAVE)")
      ->check(CLI::Range(int64_t{0}, int64_t{7} * 86'400'000))
      ->capture_default_str();
  app.add_option("--log-level", cfg.log_level, "trace, debug, info, warn, error or off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}))
      ->capture_default_str();
  std::string seeds;
  app.add_flag("--cluster-enabled", cfg.cluster_enabled,
               "Run as a cluster member (gossip, slot table, routing)");
  app.add_option("--cluster-port", cfg.cluster_port,
                 "Cluster bus port, UDP gossip and TCP peer links (default: RESP port + 10000)")
      ->check(CLI::Range(1, 65535));
  app.add_option("--cluster-announce-host", cfg.cluster_announce_host,
                 "Address peers and clients use to reach this node (default: first --bind)");
  app.add_option("--seeds", seeds, "Cluster bus addresses to join through: host:port,...");
  app.add_option("--cluster-secret-file", cfg.cluster_secret_file,
                 "File with the cluster secret (one line; a second while rotating): gossip is "
                 "sealed with it, peer links prove it, nodes believe no others; re-read on "
                 "SIGHUP");
  app.add_option("--node-id", cfg.node_id, "This node's id (default: 40 random hex digits)");
  app.add_option("--cluster-redirect", cfg.cluster_redirect,
                 "Keys owned elsewhere: auto (-MOVED for clients that asked for the "
                 "topology, else forwarded), moved, or forward")
      ->check(CLI::IsMember({"auto", "moved", "forward"}));
  app.add_option("--cluster-empty-grace-ms", cfg.cluster_empty_grace_ms,
                 "A slot this node gains with no reachable copy of its state answers its "
                 "policies' fail mode this long before it is served from empty (0: at once)")
      ->check(CLI::Range(int64_t{0}, int64_t{3'600'000}))
      ->capture_default_str();
  app.add_option("--cluster-forward-timeout-ms", cfg.cluster_forward_timeout_ms,
                 "A forwarded command's deadline; past it the client gets -TRYAGAIN")
      ->check(CLI::Range(int64_t{1}, int64_t{600'000}))
      ->capture_default_str();
  app.add_option("--cluster-replicas", cfg.cluster_replicas,
                 "Copies of each slot's state in the cluster, the owner's included")
      ->check(CLI::Range(1, 5))
      ->capture_default_str();
  app.add_option("--replication-lag-ms", cfg.replication_lag_ms,
                 "Changes reach the replicas within this (at most 1000)")
      ->check(CLI::Range(int64_t{1}, int64_t{1000}))
      ->capture_default_str();
  app.add_option("--replication-sync-timeout-ms", cfg.replication_sync_timeout_ms,
                 "How long a synchronous reply waits for a replica")
      ->check(CLI::Range(int64_t{1}, int64_t{600'000}))
      ->capture_default_str();
  app.add_option("--data-replication", cfg.data_replication,
                 "The data commands' writes (INCR, SET, ...): async, or sync (answered once a "
                 "replica holds them); a key pattern whose policy says sync makes its keys sync")
      ->check(CLI::IsMember({"async", "sync"}))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  if (!auth_clients.empty()) fg::parse_tls_auth_clients(auth_clients, cfg.tls.auth_clients);
  if (!seeds.empty()) {
    cfg.seeds.clear();
    if (!fg::parse_seeds(seeds, cfg.seeds)) {
      std::cerr << "floodgate: --seeds: expected host:port[,host:port...], got '" << seeds << "'\n";
      return 2;
    }
  }
  if (const std::string why = fg::check_dbfilename(cfg.dbfilename); !why.empty()) {
    std::cerr << "floodgate: --dbfilename: " << why << "\n";
    return 2;
  }
  if (!cfg.node_id.empty()) {
    const std::string why = fg::check_node_id(cfg.node_id);
    if (!why.empty()) {
      std::cerr << "floodgate: --node-id: " << why << "\n";
      return 2;
    }
  }
  const std::string bind_host = first_word(cfg.bind);
  if (cfg.cluster_enabled && (bind_host == "0.0.0.0" || bind_host == "::") &&
      cfg.cluster_announce_host.empty()) {
    std::cerr << "floodgate: binding " << bind_host
              << " needs --cluster-announce-host (the address peers and clients use)\n";
    return 2;
  }
  fg::AclBook acl(fg::acl_catalog(), fg::SystemClock::process());
  if (!cfg.users.empty() && !cfg.aclfile.empty()) {
    std::cerr << "floodgate: users (--user) and aclfile cannot both be set\n";
    return 2;
  }
  if (const std::string why = fg::load_users(cfg, acl); !why.empty()) {
    std::cerr << "floodgate: " << why << "\n";
    return 2;
  }
  if (!check_file.empty()) {
    if (cfg.tls.configured() || cfg.tls_port > 0 || cfg.tls_native || cfg.tls_cluster) {
      fg::TlsContexts probe;  // (the certificate files are part of what is checked)
      std::string why;
      if (!probe.load(cfg.tls, why)) {
        std::cerr << "floodgate: " << why << "\n";
        return 2;
      }
    }
    std::cout << "floodgate: " << check_file << " is a valid config (" << cfg.policies.size()
              << " policies, " << cfg.patterns.size() << " key patterns, " << cfg.overrides.size()
              << " overrides, " << acl.users().size() << " users)\n";
    return 0;
  }
  fg::resolve_defaults(cfg);
  spdlog::set_level(spdlog::level::from_str(cfg.log_level));

  // Shard actors run on CAF's scheduler; keep idle workers from spinning on a shared box.
  caf::actor_system_config caf_cfg;
  caf_cfg.set("scheduler.max-threads", static_cast<size_t>(cfg.shard_threads));
  // Batches run in place on the I/O threads whenever a shard is idle, so a shard thread
  // mostly waits: after a short spin it sleeps until a message wakes it (CAF notifies a
  // sleeping worker), never in 50 us naps, and wakes on its own only to look for work to
  // steal.
  caf_cfg.set("work-stealing.moderate-poll-attempts", static_cast<size_t>(0));
  caf_cfg.set("work-stealing.relaxed-sleep-duration",
              caf::timespan{std::chrono::milliseconds(100)});
  caf_cfg.set("logger.verbosity", caf::atom("quiet"));
  caf::actor_system system{caf_cfg};

  fg::SystemClock& clock = fg::SystemClock::process();
  fg::PolicyRegistry policies;
  // The node id comes first: it signs this node's writes to the cluster-wide policy book.
  if (cfg.cluster_enabled && cfg.node_id.empty()) cfg.node_id = random_run_id();
  fg::Book book(cfg.node_id.empty() ? "standalone" : cfg.node_id);
  fg::PolicyStore policy_store(book, policies, clock);
  if (!cfg.config_file.empty()) {
    policy_store.load_file(policy_file(cfg), file_mtime_ms(cfg.config_file));
  }
  fg::ClientRegistry clients(cfg.maxclients, cfg.maxmemory_clients);
  fg::Services svc;
  svc.clock = &clock;
  svc.policies = &policies;
  svc.policy_store = &policy_store;
  svc.clients = &clients;
  svc.settings.run_id = random_run_id();
  fg::BoundLeases bound(svc.settings.run_id.substr(0, 12));
  svc.bound = &bound;
  svc.settings.bind = cfg.bind;
  svc.acl = &acl;
  if (!cfg.aclfile.empty()) {
    svc.acl_load = [users = cfg, &acl] {  // (a copy: the path and requirepass never change)
      const std::string why = fg::load_users(users, acl);
      if (why.empty()) spdlog::info("users reloaded from {} (ACL LOAD)", users.aclfile);
      return why;
    };
  }
  svc.settings.timeout_s = cfg.timeout_s;
  svc.settings.data_sync = cfg.data_replication == "sync";  // (standalone: nothing to wait for)
  svc.settings.parser.max_bulk_len = cfg.proto_max_bulk_len;
  svc.settings.config_file = cfg.config_file;
  svc.settings.start_ms = clock.now_ns() / 1'000'000;
  svc.settings.io_threads = cfg.io_threads;
  svc.settings.shard_threads = cfg.shard_threads;

  fg::ShardPoolConfig pool_cfg;
  pool_cfg.shards = cfg.shards;
  pool_cfg.max_keys = cfg.max_keys;
  pool_cfg.cluster = cfg.cluster_enabled;
  // (the engine outlives the shards that call it)
  fg::ScriptLimits script_limits;
  script_limits.budget_ms = cfg.script_time_limit_ms;
  script_limits.memory_bytes = cfg.script_memory_limit;
  fg::ScriptCache script_cache(book, clock, cfg.script_cache_max_scripts,
                               cfg.script_cache_max_bytes);
  fg::ScriptEngine scripts(
      pool_cfg.shards, cfg.cluster_enabled, script_limits,
      [](std::string_view name) {
        const fg::CommandSpec* c = fg::find_command(name);
        return c ? c->arity : 0;
      },
      script_cache);
  auto pool = std::make_unique<fg::ShardPool>(system, pool_cfg, &clock);
  svc.shards = pool.get();
  pool->attach_scripts(&scripts);
  svc.scripts = &scripts;

  // Persistence: the snapshot is read before any port opens, so nothing is answered from
  // state the node is about to replace (node/README.md, Persistence).
  std::unique_ptr<fg::Snapshotter> snapshots;
  std::vector<fg::EntrySnapshot> restored;  // cluster mode: merged at their owners later
  uint64_t restored_epoch = 0;              // (the table epoch they were saved under)
  if (!cfg.dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(cfg.dir, ec);
    if (ec) {
      std::cerr << "floodgate: cannot use dir " << cfg.dir << ": " << ec.message() << "\n";
      return 2;
    }
    fg::SnapshotterConfig sc;
    sc.path = (std::filesystem::path(cfg.dir) / cfg.dbfilename).string();
    sc.node_id = cfg.cluster_enabled ? cfg.node_id : "standalone";
    sc.cluster = cfg.cluster_enabled;
    snapshots = std::make_unique<fg::Snapshotter>(sc, *pool, book, clock);
    std::string why;
    if (!snapshots->lock(why)) {
      std::cerr << "floodgate: " << why << "\n";
      return 2;
    }
    fg::SnapshotData d;
    switch (snapshots->load(d, why)) {
      case fg::Snapshotter::Loaded::kNone:
        spdlog::info("no snapshot at {}: starting empty", sc.path);
        break;
      case fg::Snapshotter::Loaded::kRefused:
        spdlog::error("snapshot {} refused: {}; starting empty", sc.path, why);
        break;
      case fg::Snapshotter::Loaded::kLoaded: {
        const size_t settings = book.merge(d.book);
        spdlog::info("loaded {} keys from {} (saved {} s ago); {} settings-book entries came back",
                     d.entries.size(), sc.path, (clock.now_ns() / 1'000'000 - d.saved_at_ms) / 1000,
                     settings);
        if (cfg.cluster_enabled) {
          restored = std::move(d.entries);  // (their owners are known once a table is)
          restored_epoch = d.epoch;
        } else {
          auto job = std::make_shared<fg::MergeJob>();
          job->fresh.set();  // (a node starting: every slot starts from nothing)
          std::promise<void> merged;
          job->done = [&merged](fg::MergeJob&) { merged.set_value(); };
          pool->merge(job, std::move(d.entries));
          merged.get_future().wait();
        }
        break;
      }
    }
    svc.snapshots = snapshots.get();
    svc.settings.dir = std::filesystem::absolute(cfg.dir).string();
    svc.settings.dbfilename = cfg.dbfilename;
    svc.settings.save_interval_s = cfg.save_interval_ms / 1000;
  }

  fg::ConnectionLimits limits;
  limits.max_query_bytes = cfg.max_query_bytes;
  limits.query_deadline_ms = cfg.query_deadline_ms;
  limits.output_timeout_ms = cfg.output_timeout_ms;
  limits.timeout_s = cfg.timeout_s;
  fg::Server server(svc, limits, cfg.io_threads);
  // TLS: the contexts every TLS door and peer link takes (node/README.md, "TLS").
  fg::TlsContexts tls;
  const bool tls_used = cfg.tls_port > 0 || cfg.tls_native || cfg.tls_cluster;
  if (tls_used || cfg.tls.configured()) {
    std::string why;
    if (!tls.load(cfg.tls, why)) {
      std::cerr << "floodgate: " << why << "\n";
      return 2;
    }
    if (!tls_used) {
      spdlog::warn("TLS certificates given, but no tls-port, tls-native or tls-cluster uses them");
    }
    svc.tls = &tls;
    server.set_tls(&tls);
    spdlog::info("TLS certificate: {}", fg::describe_certificate(cfg.tls.cert_file));
    warn_if_expiring(tls);
  }
  // Plain RESP, unless `port: 0` with a TLS port (TLS only, as redis-server).
  const bool plain = !(cfg.port == 0 && cfg.tls_port > 0);
  try {
    if (plain) server.listen(cfg.bind, cfg.port);
  } catch (const std::exception& e) {
    std::cerr << "floodgate: cannot listen on " << cfg.bind << " port " << cfg.port << ": "
              << e.what() << "\n";
    return 1;
  }
  if (cfg.tls_port > 0) {
    try {
      server.listen_tls(cfg.bind, cfg.tls_port);
    } catch (const std::exception& e) {
      std::cerr << "floodgate: cannot listen on " << cfg.bind << " TLS port " << cfg.tls_port
                << ": " << e.what() << "\n";
      return 1;
    }
  }
  // The port the other defaults count from, and the one clients are sent to: the TLS port
  // when there is no plain one, or when the cluster speaks TLS.
  const int client_port =
      !plain || (cfg.tls_cluster && server.tls_port() > 0) ? server.tls_port() : server.port();
  const int base_port = plain ? server.port() : server.tls_port();
  svc.settings.port = server.port();
  svc.settings.tls_port = server.tls_port();
  svc.lanes = server.lanes();
  if (cfg.native_port != 0) {
    // Default: RESP port + 1000 (with --port 0, a free port as well).
    const int want = cfg.native_port > 0      ? cfg.native_port
                     : cfg.port == 0 && plain ? 0
                                              : base_port + 1000;
    try {
      server.listen_native(cfg.bind, want, cfg.tls_native);
    } catch (const std::exception& e) {
      std::cerr << "floodgate: cannot listen on " << cfg.bind << " native port " << want << ": "
                << e.what() << "\n";
      return 1;
    }
    svc.settings.native_port = server.native_port();
  }

  // (declared before the cluster, which holds a pointer to it)
  fg::BusKey bus_key([] { return fg::SystemClock::process().now_ns() / 1'000'000; });
  std::unique_ptr<fg::Cluster> cluster;
  std::unique_ptr<fg::ClusterForwarder> forwarder;
  if (cfg.cluster_enabled) {
    fg::ClusterConfig cc;
    cc.node_id = cfg.node_id;
    cc.bind_host = bind_host;
    cc.announce_host = cfg.cluster_announce_host.empty() ? cc.bind_host : cfg.cluster_announce_host;
    cc.resp_port = client_port;
    if (cfg.tls_cluster) cc.tls = &tls;
    cc.native_port = server.native_port();
    cc.port = cfg.cluster_port ? cfg.cluster_port : base_port + 10000;
    cc.seeds = cfg.seeds;
    cc.replicas = static_cast<size_t>(cfg.cluster_replicas);
    cc.replication_lag_ms = cfg.replication_lag_ms;
    cc.sync_timeout_ms = cfg.replication_sync_timeout_ms;
    cc.empty_grace_ms = cfg.cluster_empty_grace_ms;
    if (!cfg.cluster_secret_file.empty()) {
      std::string why;
      const auto secrets = fg::BusKey::read_file(cfg.cluster_secret_file, why);
      if (!secrets || !bus_key.set(*secrets, why)) {
        std::cerr << "floodgate: " << why << "\n";
        return 2;
      }
      cc.bus_key = &bus_key;
    }
    cluster = std::make_unique<fg::Cluster>(cc, *pool);
    cluster->share_book(&book);
    if (!restored.empty()) cluster->restore(std::move(restored), restored_epoch);
    if (snapshots) {
      snapshots->set_epoch_source([c = cluster.get()] { return c->routing().get()->epoch; });
    }
    svc.routing = &cluster->routing();
    svc.cluster = cluster.get();
    svc.settings.redirect = cfg.cluster_redirect == "moved" ? fg::NodeSettings::Redirect::kAlways
                            : cfg.cluster_redirect == "forward" ? fg::NodeSettings::Redirect::kNever
                                                                : fg::NodeSettings::Redirect::kAuto;
    svc.settings.forward_timeout_ms = cfg.cluster_forward_timeout_ms;
    forwarder = std::make_unique<fg::ClusterForwarder>(*cluster);
    svc.forwarder = forwarder.get();
    fg::serve_forwards(*cluster, svc);
    try {
      cluster->start();
    } catch (const std::exception& e) {
      std::cerr << "floodgate: cannot use cluster port " << cc.port << " on " << cc.bind_host
                << ": " << e.what() << "\n";
      return 1;
    }
    if (cfg.cluster_secret_file.empty()) {
      spdlog::warn(
          "no cluster-secret-file: any process that reaches bus port {} is believed (it can join, "
          "declare nodes dead, take slots), and a stale node of another cluster gossiping to "
          "this address merges the two (node/README.md, Security)",
          cc.port);
    }
    spdlog::info("cluster node {} on bus port {}, seeds: {}", cc.node_id, cc.port,
                 cfg.seeds.empty() ? std::string("none") : seeds_text(cfg.seeds));
  }

  // Thousands of connections closing leave their buffers free in the middle of malloc's
  // heaps, where glibc does not return them by itself: hand those pages back.
  asio::steady_timer trim_timer(server.main_context());
  uint64_t closed_at_trim = 0;
  std::function<void()> trim = [&] {
    trim_timer.expires_after(std::chrono::seconds(1));
    trim_timer.async_wait([&](asio::error_code ec) {
      if (ec) return;
      const uint64_t closed = svc.counters.connections_closed.load(std::memory_order_relaxed);
      if (closed - closed_at_trim >= 64) {
        malloc_trim(0);
        closed_at_trim = closed;
      }
      trim();
    });
  };
  trim();
  // Periodic saves (a save already under way is not doubled).
  asio::steady_timer save_timer(server.main_context());
  std::function<void()> save_tick = [&] {
    save_timer.expires_after(std::chrono::milliseconds(cfg.save_interval_ms));
    save_timer.async_wait([&](asio::error_code ec) {
      if (ec) return;
      snapshots->save();
      save_tick();
    });
  };
  if (snapshots && cfg.save_interval_ms > 0) save_tick();
  // BOUND leases: renewed by this node while their connection lives (api/core/lease_upkeep).
  asio::steady_timer renew_timer(server.main_context());
  std::function<void()> renew = [&] {
    renew_timer.expires_after(std::chrono::milliseconds(100));
    renew_timer.async_wait([&](asio::error_code ec) {
      if (ec) return;
      fg::renew_bound_leases(svc, clock.now_ns() / 1'000'000);
      renew();
    });
  };
  renew();

  fg::AdminCounters admin_counters;
  std::unique_ptr<fg::AdminHttp> admin;
  if (cfg.admin_port != 0) {
    const int want = cfg.admin_port > 0       ? cfg.admin_port
                     : cfg.port == 0 && plain ? 0
                                              : base_port + 2000;
    admin = std::make_unique<fg::AdminHttp>(svc, cluster.get(), admin_counters);
    if (!cfg.admin_token_file.empty()) {
      std::string why;
      const auto token = fg::read_admin_token(cfg.admin_token_file, why);
      if (!token) {
        std::cerr << "floodgate: " << why << "\n";
        return 2;
      }
      admin->set_token(*token);
    }
    try {
      admin->start(cfg.admin_bind.empty() ? bind_host : cfg.admin_bind, want);
    } catch (const std::exception& e) {
      std::cerr << "floodgate: " << e.what() << "\n";
      return 1;
    }
    svc.settings.admin_port = admin->port();
  }

  // SIGHUP: read the config file again; policies, key patterns, overrides and the log
  // level change at once (the rest of the file takes effect at the next start).
  asio::signal_set hangup(server.main_context(), SIGHUP);
  // The users, replaced whole: the aclfile's (read again), or the config file's `users`
  // (`from_file`; flags stay as given). Connections of users that are gone or disabled
  // close at their next command.
  auto reload_users = [&](const std::vector<std::string>* from_file) {
    fg::NodeConfig u;
    u.requirepass = cfg.requirepass;
    u.aclfile = cfg.aclfile;
    u.users = from_file && !from_file->empty() ? *from_file : cfg.users;
    if (const std::string why = fg::load_users(u, acl); !why.empty()) {
      spdlog::error("SIGHUP: {}; keeping the users in force", why);
    } else {
      spdlog::info("users reloaded ({})", cfg.aclfile.empty() ? "config" : cfg.aclfile);
    }
  };
  std::function<void()> on_hangup = [&] {
    hangup.async_wait([&](const asio::error_code& ec, int) {
      if (ec) return;
      if (cluster && !cfg.cluster_secret_file.empty()) {  // (rotation: gossip/README.md)
        std::string why;
        const auto secrets = fg::BusKey::read_file(cfg.cluster_secret_file, why);
        if (secrets && bus_key.set(*secrets, why)) {
          spdlog::info("cluster secret reloaded from {} ({} secret(s))", cfg.cluster_secret_file,
                       secrets->size());
        } else {
          spdlog::error("SIGHUP: {}; keeping the cluster secret in force", why);
        }
      }
      if (admin && !cfg.admin_token_file.empty()) {  // (a rotated token, in force at once)
        std::string why;
        if (const auto token = fg::read_admin_token(cfg.admin_token_file, why)) {
          admin->set_token(*token);
        } else {
          spdlog::error("SIGHUP: {}; keeping the admin token in force", why);
        }
      }
      if (svc.tls) {  // renewed certificates: new connections take them, open ones keep theirs
        std::string why;
        if (tls.load(cfg.tls, why)) {
          tls.counters.reloads.fetch_add(1, std::memory_order_relaxed);
          spdlog::info("TLS certificate reloaded: {}", fg::describe_certificate(cfg.tls.cert_file));
          warn_if_expiring(tls);
        } else {
          tls.counters.reload_failures.fetch_add(1, std::memory_order_relaxed);
          spdlog::error("SIGHUP: {}; keeping the TLS certificates in force", why);
        }
      }
      if (!cfg.aclfile.empty()) reload_users(nullptr);
      if (cfg.config_file.empty()) {
        if (cfg.admin_token_file.empty() && cfg.cluster_secret_file.empty() &&
            cfg.aclfile.empty() && !svc.tls) {
          spdlog::warn("SIGHUP: no --config file to reload");
        }
      } else {
        fg::NodeConfig fresh;
        try {
          fg::load_config_file(cfg.config_file, fresh);
          const size_t n = policy_store.reload_file(policy_file(fresh));
          if (cfg.aclfile.empty()) reload_users(&fresh.users);
          if (fresh.log_level != cfg.log_level) {
            cfg.log_level = fresh.log_level;
            spdlog::set_level(spdlog::level::from_str(cfg.log_level));
          }
          admin_counters.reloads_ok.fetch_add(1);
          spdlog::info("config reloaded from {}: {} policy entries changed cluster-wide",
                       cfg.config_file, n);
        } catch (const fg::ConfigError& e) {
          admin_counters.reloads_failed.fetch_add(1);
          spdlog::error("config reload refused, keeping the running settings: {}", e.what());
        }
      }
      on_hangup();
    });
  };
  on_hangup();

  // SIGINT/SIGTERM (or SHUTDOWN): stop accepting, save, close, exit 0.
  asio::signal_set signals(server.main_context(), SIGINT, SIGTERM);
  std::atomic<bool> stopping{false};
  std::atomic<bool> save_on_exit{true};
  signals.async_wait([&](const asio::error_code&, int sig) {
    spdlog::info("signal {} received, shutting down", sig);
    stopping = true;
  });
  svc.shutdown = [&](bool save) {
    spdlog::info("SHUTDOWN{} received, shutting down", save ? "" : " NOSAVE");
    save_on_exit = save;
    stopping = true;
  };
  std::signal(SIGPIPE, SIG_IGN);

  server.run();
  spdlog::info(
      "floodgate {} ready: RESP on {} port {}, TLS port {}, native port {}{}, admin port {} ({} "
      "io threads, {} shards on {} threads, {} policies)",
      svc.settings.version, cfg.bind, server.port(), server.tls_port(), server.native_port(),
      cfg.tls_native ? " (TLS)" : "", admin ? admin->port() : 0, cfg.io_threads, cfg.shards,
      cfg.shard_threads, policies.snapshot()->policies.size());
  while (!stopping) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  save_timer.cancel();
  // A cluster node saves before it hands its slots over; a standalone one once no client can
  // change anything any more.
  auto final_save = [&] {
    if (!snapshots || !save_on_exit) return;
    std::string why;
    if (!snapshots->save_and_wait(why))
      spdlog::error("the state was not saved at shutdown: {}", why);
  };
  if (cluster) final_save();
  if (cluster) {
    // Hand this node's slots (and their state) to the others before going.
    const bool clean = cluster->leave(std::chrono::milliseconds(3000));
    if (!clean) spdlog::warn("left the cluster before every slot's state was handed over");
  }
  renew_timer.cancel();
  trim_timer.cancel();
  hangup.cancel();
  if (admin) admin->stop();
  server.stop();
  if (!cluster) final_save();
  if (cluster) cluster->stop();
  pool.reset();
  return 0;
}
