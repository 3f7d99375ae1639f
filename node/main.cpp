// The floodgate executable: flags and config, then shards (CAF), then the RESP listener.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <caf/all.hpp>
#include <csignal>
#include <iostream>
#include <random>
#include <sstream>

#include "cluster.hpp"
#include "config.hpp"
#include "forward.hpp"
#include "resp_writer.hpp"
#include "server.hpp"

namespace {

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

}  // namespace

int main(int argc, char** argv) {
  fg::NodeConfig cfg;
  CLI::App app{"floodgate: a rate-limiter node that speaks the Redis protocol (RESP)"};
  app.set_version_flag("--version", std::string("floodgate 0.1.0"));
  std::string config_file;
  int64_t query_deadline_ms = 0, output_timeout_ms = 0;
  app.add_option("--config", config_file, "YAML config file (settings and named policies)");
  app.add_option("--bind", cfg.bind, "Addresses to listen on, space-separated")
      ->capture_default_str();
  app.add_option("--port", cfg.port, "RESP port (0 picks a free one)")->capture_default_str();
  app.add_option("--native-port", cfg.native_port,
                 "Native-protocol port (default: RESP port + 1000; 0 turns it off)")
      ->check(CLI::Range(0, 65535));
  app.add_option("--requirepass", cfg.requirepass, "Password clients must AUTH with");
  app.add_option("--maxclients", cfg.maxclients, "Most simultaneous client connections")
      ->capture_default_str();
  app.add_option("--timeout", cfg.timeout_s, "Close clients idle this many seconds (0 = never)")
      ->capture_default_str();
  app.add_option(
      "--query-deadline-ms", query_deadline_ms,
      "Drop a client whose half-sent command is not complete after this (default 30000)");
  app.add_option("--output-timeout-ms", output_timeout_ms,
                 "Drop a client that has not read its replies after this (default 30000)");
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
  app.add_option("--log-level", cfg.log_level, "trace, debug, info, warn, error or off")
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
  app.add_option("--node-id", cfg.node_id, "This node's id (default: 40 random hex digits)");
  app.add_option("--cluster-redirect", cfg.cluster_redirect,
                 "Keys owned elsewhere: auto (-MOVED for clients that asked for the "
                 "topology, else forwarded), moved, or forward")
      ->check(CLI::IsMember({"auto", "moved", "forward"}));
  app.add_option("--cluster-replicas", cfg.cluster_replicas,
                 "Copies of each slot's state in the cluster, the owner's included")
      ->check(CLI::Range(1, 5))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  try {
    if (!config_file.empty()) {
      // The file gives the base; flags given on the command line win.
      fg::NodeConfig from_file;
      fg::load_config_file(config_file, from_file);
      auto given = [&](const char* flag) { return app.count(flag) > 0; };
      if (!given("--bind")) cfg.bind = from_file.bind;
      if (!given("--port")) cfg.port = from_file.port;
      if (!given("--native-port")) cfg.native_port = from_file.native_port;
      if (!given("--requirepass")) cfg.requirepass = from_file.requirepass;
      if (!given("--maxclients")) cfg.maxclients = from_file.maxclients;
      if (!given("--timeout")) cfg.timeout_s = from_file.timeout_s;
      if (!given("--max-query-bytes")) cfg.max_query_bytes = from_file.max_query_bytes;
      if (!given("--proto-max-bulk-len")) cfg.proto_max_bulk_len = from_file.proto_max_bulk_len;
      if (!given("--shards")) cfg.shards = from_file.shards;
      if (!given("--io-threads")) cfg.io_threads = from_file.io_threads;
      if (!given("--shard-threads")) cfg.shard_threads = from_file.shard_threads;
      if (!given("--max-keys")) cfg.max_keys = from_file.max_keys;
      if (!given("--log-level")) cfg.log_level = from_file.log_level;
      if (!given("--cluster-enabled")) cfg.cluster_enabled = from_file.cluster_enabled;
      if (!given("--cluster-port")) cfg.cluster_port = from_file.cluster_port;
      if (!given("--cluster-announce-host"))
        cfg.cluster_announce_host = from_file.cluster_announce_host;
      if (!given("--seeds")) cfg.seeds = from_file.seeds;
      if (!given("--node-id")) cfg.node_id = from_file.node_id;
      if (!given("--cluster-redirect")) cfg.cluster_redirect = from_file.cluster_redirect;
      if (!given("--cluster-replicas")) cfg.cluster_replicas = from_file.cluster_replicas;
      cfg.cluster_forward_timeout_ms = from_file.cluster_forward_timeout_ms;
      cfg.replication_lag_ms = from_file.replication_lag_ms;
      cfg.replication_sync_timeout_ms = from_file.replication_sync_timeout_ms;
      cfg.query_deadline_ms = from_file.query_deadline_ms;
      cfg.output_timeout_ms = from_file.output_timeout_ms;
      cfg.policies = from_file.policies;
      cfg.config_file = config_file;
    }
  } catch (const fg::ConfigError& e) {
    std::cerr << "floodgate: bad config: " << e.what() << "\n";
    return 2;
  }
  if (!seeds.empty() && !fg::parse_seeds(seeds, cfg.seeds)) {
    std::cerr << "floodgate: --seeds: expected host:port[,host:port...], got '" << seeds << "'\n";
    return 2;
  }
  if (!cfg.node_id.empty()) {
    const std::string why = fg::check_node_id(cfg.node_id);
    if (!why.empty()) {
      std::cerr << "floodgate: --node-id: " << why << "\n";
      return 2;
    }
  }
  if (query_deadline_ms > 0) cfg.query_deadline_ms = query_deadline_ms;
  if (output_timeout_ms > 0) cfg.output_timeout_ms = output_timeout_ms;
  fg::resolve_defaults(cfg);
  spdlog::set_level(spdlog::level::from_str(cfg.log_level));

  // Shard actors run on CAF's scheduler; keep idle workers from spinning on a shared box.
  caf::actor_system_config caf_cfg;
  caf_cfg.set("scheduler.max-threads", static_cast<size_t>(cfg.shard_threads));
  caf_cfg.set("work-stealing.moderate-poll-attempts", static_cast<size_t>(50));
  caf_cfg.set("logger.verbosity", caf::atom("quiet"));
  caf::actor_system system{caf_cfg};

  fg::SystemClock clock;
  fg::PolicyRegistry policies;
  policies.replace(cfg.policies);
  fg::ClientRegistry clients(cfg.maxclients);
  fg::Services svc;
  svc.clock = &clock;
  svc.policies = &policies;
  svc.clients = &clients;
  svc.settings.run_id = random_run_id();
  fg::BoundLeases bound(svc.settings.run_id.substr(0, 12));
  svc.bound = &bound;
  svc.settings.bind = cfg.bind;
  svc.settings.requirepass = cfg.requirepass;
  svc.settings.timeout_s = cfg.timeout_s;
  svc.settings.parser.max_bulk_len = cfg.proto_max_bulk_len;
  svc.settings.config_file = cfg.config_file;
  svc.settings.start_ms = clock.now_ns() / 1'000'000;
  svc.settings.io_threads = cfg.io_threads;
  svc.settings.shard_threads = cfg.shard_threads;

  fg::ShardPoolConfig pool_cfg;
  pool_cfg.shards = cfg.shards;
  pool_cfg.max_keys = cfg.max_keys;
  pool_cfg.cluster = cfg.cluster_enabled;
  auto pool = std::make_unique<fg::ShardPool>(system, pool_cfg, &clock);
  svc.shards = pool.get();

  fg::ConnectionLimits limits;
  limits.max_query_bytes = cfg.max_query_bytes;
  limits.query_deadline_ms = cfg.query_deadline_ms;
  limits.output_timeout_ms = cfg.output_timeout_ms;
  limits.timeout_s = cfg.timeout_s;
  fg::Server server(svc, limits, cfg.io_threads);
  try {
    server.listen(cfg.bind, cfg.port);
  } catch (const std::exception& e) {
    std::cerr << "floodgate: cannot listen on " << cfg.bind << " port " << cfg.port << ": "
              << e.what() << "\n";
    return 1;
  }
  svc.settings.port = server.port();
  if (cfg.native_port != 0) {
    // Default: RESP port + 1000 (with --port 0, a free port as well).
    const int want = cfg.native_port > 0 ? cfg.native_port
                     : cfg.port == 0     ? 0
                                         : server.port() + 1000;
    try {
      server.listen_native(cfg.bind, want);
    } catch (const std::exception& e) {
      std::cerr << "floodgate: cannot listen on " << cfg.bind << " native port " << want << ": "
                << e.what() << "\n";
      return 1;
    }
    svc.settings.native_port = server.native_port();
  }

  std::unique_ptr<fg::Cluster> cluster;
  if (cfg.cluster_enabled) {
    fg::ClusterConfig cc;
    cc.node_id = cfg.node_id.empty() ? random_run_id() : cfg.node_id;
    cc.bind_host = first_word(cfg.bind);
    cc.announce_host = cfg.cluster_announce_host.empty() ? cc.bind_host : cfg.cluster_announce_host;
    if (cc.bind_host == "0.0.0.0" || cc.bind_host == "::") {
      if (cfg.cluster_announce_host.empty()) {
        std::cerr << "floodgate: binding " << cc.bind_host
                  << " needs --cluster-announce-host (the address peers and clients use)\n";
        return 2;
      }
    }
    cc.resp_port = server.port();
    cc.native_port = server.native_port();
    cc.port = cfg.cluster_port ? cfg.cluster_port : server.port() + 10000;
    cc.seeds = cfg.seeds;
    cc.replicas = static_cast<size_t>(cfg.cluster_replicas);
    cc.replication_lag_ms = cfg.replication_lag_ms;
    cc.sync_timeout_ms = cfg.replication_sync_timeout_ms;
    cluster = std::make_unique<fg::Cluster>(cc, *pool);
    svc.routing = &cluster->routing();
    svc.cluster = cluster.get();
    svc.settings.redirect = cfg.cluster_redirect == "moved" ? fg::NodeSettings::Redirect::kAlways
                            : cfg.cluster_redirect == "forward" ? fg::NodeSettings::Redirect::kNever
                                                                : fg::NodeSettings::Redirect::kAuto;
    svc.settings.forward_timeout_ms = cfg.cluster_forward_timeout_ms;
    fg::serve_forwards(*cluster, svc);
    try {
      cluster->start();
    } catch (const std::exception& e) {
      std::cerr << "floodgate: cannot use cluster port " << cc.port << " on " << cc.bind_host
                << ": " << e.what() << "\n";
      return 1;
    }
    spdlog::info("cluster node {} on bus port {}, seeds: {}", cc.node_id, cc.port,
                 cfg.seeds.empty() ? std::string("none") : seeds_text(cfg.seeds));
  }

  // BOUND leases: renewed by this node while their connection lives (see api/bound_leases).
  svc.run_background = [&server, &cluster, &svc](std::string cmds) {
    fg::run_commands(server.main_context(), cluster.get(), svc, std::move(cmds));
  };
  asio::steady_timer renew_timer(server.main_context());
  std::function<void()> renew = [&] {
    renew_timer.expires_after(std::chrono::milliseconds(100));
    renew_timer.async_wait([&](asio::error_code ec) {
      if (ec) return;
      std::string cmds;
      for (const auto& [holder, ttl_ms] : bound.due(clock.now_ns() / 1'000'000)) {
        fg::RespWriter w(cmds, 2);
        w.array(3);
        w.bulk("FG.HEARTBEAT");
        w.bulk(holder);
        w.bulk(std::to_string(ttl_ms));
      }
      if (!cmds.empty()) svc.run_background(std::move(cmds));
      renew();
    });
  };
  renew();

  // SIGINT/SIGTERM: stop accepting, close, exit 0.
  asio::signal_set signals(server.main_context(), SIGINT, SIGTERM);
  std::atomic<bool> stopping{false};
  signals.async_wait([&](const asio::error_code&, int sig) {
    spdlog::info("signal {} received, shutting down", sig);
    stopping = true;
  });
  std::signal(SIGPIPE, SIG_IGN);

  server.run();
  spdlog::info(
      "floodgate {} ready: RESP on {} port {}, native port {} ({} io threads, {} shards on {} "
      "threads, {} policies)",
      svc.settings.version, cfg.bind, server.port(), server.native_port(), cfg.io_threads,
      cfg.shards, cfg.shard_threads, cfg.policies.size());
  while (!stopping) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (cluster) {
    // Hand this node's slots (and their state) to the others before going.
    const bool clean = cluster->leave(std::chrono::milliseconds(3000));
    if (!clean) spdlog::warn("left the cluster before every slot's state was handed over");
  }
  renew_timer.cancel();
  server.stop();
  svc.run_background = nullptr;
  if (cluster) cluster->stop();
  pool.reset();
  return 0;
}
