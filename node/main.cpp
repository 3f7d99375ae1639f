// The floodgate executable: flags and config, then one Node (node.hpp) until a signal or
// SHUTDOWN stops it.
#include <malloc.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <asio.hpp>
#include <caf/all.hpp>
#include <csignal>
#include <iostream>
#include <thread>

#include "command_table.hpp"
#include "config.hpp"
#include "node.hpp"

namespace {

constexpr int kStopDeadlineS = 60;  // a stop that takes longer ends the process anyway
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
  app.add_option_function<std::string>(
         "--maxmemory-clients",
         [&cfg](const std::string& v) {
           cfg.maxmemory_clients = fg::parse_size(v);
           if (cfg.maxmemory_clients < 0) {
             throw CLI::ValidationError("--maxmemory-clients",
                                        "'" + v + "' is not a size such as 64mb, or bytes");
           }
         },
         "Most bytes all client connections' buffers may hold together, as bytes or a size "
         "such as 64mb; past it the biggest clients are disconnected (0 = no cap)")
      ->type_name("SIZE")
      ->default_str("0");
  app.add_option_function<std::vector<std::string>>(
         "--client-output-buffer-limit",
         [&cfg](const std::vector<std::string>& v) {
           for (const std::string& s : v) {
             if (const std::string why = fg::apply_output_limits(s, cfg.output_limits);
                 !why.empty()) {
               throw CLI::ValidationError("--client-output-buffer-limit", why);
             }
           }
         },
         "\"class hard soft seconds\" as Redis's (class normal or pubsub; sizes such as 64mb): "
         "a client whose replies pass hard, or stay past soft that long, is closed "
         "(repeatable; default \"normal 0 0 0\": none)")
      ->type_name("TEXT");
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
  app.add_option("--io-idle-poll-us", cfg.io_idle_poll_us,
                 "Microseconds an I/O thread out of work keeps polling before it sleeps "
                 "(0: sleeps at once; trades CPU for wake-ups, node/README.md)")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
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
  app.add_flag("--cluster-bus-legacy", cfg.cluster_bus_legacy,
               "During a rolling upgrade from a version whose peer links do not name their "
               "receiver nor tag their frames: speak to and believe such nodes too");
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
  const std::string bind_host = fg::first_bind_address(cfg.bind);
  if (cfg.cluster_enabled && (bind_host == "0.0.0.0" || bind_host == "::") &&
      cfg.cluster_announce_host.empty()) {
    std::cerr << "floodgate: binding " << bind_host
              << " needs --cluster-announce-host (the address peers and clients use)\n";
    return 2;
  }
  if (!cfg.users.empty() && !cfg.aclfile.empty()) {
    std::cerr << "floodgate: users (--user) and aclfile cannot both be set\n";
    return 2;
  }
  if (!check_file.empty()) {
    fg::AclBook acl(fg::acl_catalog(), fg::SystemClock::process());  // (the node loads its own)
    if (const std::string why = fg::load_users(cfg, acl); !why.empty()) {
      std::cerr << "floodgate: " << why << "\n";
      return 2;
    }
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

  // SIGHUP reloads; SIGINT, SIGTERM and SHUTDOWN stop the node: it saves, hands its slots
  // over, closes and the process exits 0. (Signals that come while it starts wait here.)
  asio::io_context signal_io;
  asio::signal_set hangup(signal_io, SIGHUP);
  asio::signal_set signals(signal_io, SIGINT, SIGTERM);
  std::signal(SIGPIPE, SIG_IGN);
  fg::Node node(std::move(cfg), system);
  std::string why;
  if (const int code = node.start(why); code != 0) {
    std::cerr << "floodgate: " << why << "\n";
    return code;
  }
  std::function<void()> on_hangup = [&] {
    hangup.async_wait([&](const asio::error_code& ec, int) {
      if (ec) return;
      node.reload();
      on_hangup();
    });
  };
  on_hangup();
  signals.async_wait([&](const asio::error_code& ec, int sig) {
    if (ec) return;
    spdlog::info("signal {} received, shutting down", sig);
    node.request_stop();
  });
  while (!node.stop_requested()) signal_io.run_for(std::chrono::milliseconds(50));
  // A node whose shard is stuck (a C call no budget can stop) could never finish stopping:
  // past the deadline, or at a second signal, the process ends at once.
  std::thread([] {
    std::this_thread::sleep_for(std::chrono::seconds(kStopDeadlineS));
    spdlog::error("still stopping after {} s: exiting now", kStopDeadlineS);
    std::_Exit(1);
  }).detach();
  signals.async_wait([](const asio::error_code& ec, int sig) {
    if (ec) return;
    spdlog::error("signal {} received while stopping: exiting now", sig);
    std::_Exit(1);
  });
  std::thread second([&signal_io] { signal_io.run(); });
  node.stop();
  signal_io.stop();
  second.join();
  return 0;
}
