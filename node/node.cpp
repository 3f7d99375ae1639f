#include "node.hpp"

#include <malloc.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <future>
#include <random>

#include "command_table.hpp"
#include "errors.hpp"
#include "key_events.hpp"
#include "lease_upkeep.hpp"
#include "settings.hpp"
#include "state_file.hpp"

namespace fg {
namespace {

// How long past its budget a running script makes /healthz fail.
constexpr int64_t kStuckScriptGraceMs = 2000;
// How long an I/O thread may stay away from its loop (one handler that does not return)
// before /healthz and /readyz fail.
constexpr int64_t kStuckThreadMs = 3000;

// A certificate that expires within two weeks is said at start and at each reload (and
// /metrics has the date for alerts: floodgate_tls_certificate_expiry_timestamp_seconds).
void warn_if_expiring(const TlsContexts& tls) {
  const int64_t left_s = tls.expires_at_s() - static_cast<int64_t>(std::time(nullptr));
  if (tls.expires_at_s() > 0 && left_s < 14 * 86400) {
    spdlog::warn("the TLS certificate expires in {} hours: renew it and send SIGHUP",
                 left_s / 3600);
  }
}

// 40 hex digits, from the OS's randomness, or from `seed` (the simulator's).
std::string random_run_id(uint64_t seed = 0) {
  std::random_device rd;
  std::mt19937_64 seeded(seed);
  static const char* hex = "0123456789abcdef";
  std::string s(40, '0');
  for (char& c : s) c = hex[(seed ? seeded() : rd()) % 16];
  return s;
}

std::string seeds_text(const std::vector<std::string>& seeds) {
  std::string out;
  for (const auto& s : seeds) out += (out.empty() ? "" : ",") + s;
  return out;
}

uint64_t file_mtime_ms(const std::string& path) {
  std::error_code ec;
  const auto t = std::filesystem::last_write_time(path, ec);
  if (ec) return 0;
  const auto sys = std::chrono::time_point_cast<std::chrono::milliseconds>(
      t - std::filesystem::file_time_type::clock::now() + std::chrono::system_clock::now());
  return static_cast<uint64_t>(std::max<int64_t>(0, sys.time_since_epoch().count()));
}

PolicyFile policy_file(const NodeConfig& cfg) {
  PolicyFile f;
  f.policies = cfg.policies;
  f.patterns = cfg.patterns;
  f.overrides = cfg.overrides;
  return f;
}

// The node id comes first: it signs this node's writes to the cluster-wide policy book.
NodeConfig with_id(NodeConfig cfg, uint64_t seed) {
  if (cfg.cluster_enabled && cfg.node_id.empty()) cfg.node_id = random_run_id(seed);
  return cfg;
}

}  // namespace

Node::Node(NodeConfig cfg, caf::actor_system& system, const Clock& clock, NodeNets nets,
           NodeRun run)
    : cfg_(with_id(std::move(cfg), run.seed)),
      system_(system),
      clock_(clock),
      nets_(nets),
      run_(run),
      acl_(acl_catalog(), clock),
      book_(cfg_.node_id.empty() ? "standalone" : cfg_.node_id),
      policy_store_(book_, policies_, clock),
      clients_(cfg_.maxclients, cfg_.maxmemory_clients),
      bound_((svc_.settings.run_id = random_run_id(run.seed ? run.seed + 1 : 0)).substr(0, 12)),
      bus_key_([&clock] { return clock.now_ns() / 1'000'000; }) {}

Node::~Node() { stop(); }

int Node::fail(std::string& why, int code, std::string text) {
  why = std::move(text);
  return code;
}

int Node::start(std::string& why) {
  StartState st;
  st.bind_host = first_bind_address(cfg_.bind);
  // Each step: 0, or the exit code with `why`.
  for (auto step :
       {&Node::start_services, &Node::start_shards, &Node::start_storage, &Node::start_doors,
        &Node::start_cluster, &Node::start_admin, &Node::join_cluster, &Node::start_serving}) {
    if (const int code = (this->*step)(st, why); code != 0) return code;
  }
  return 0;
}

// The users, the policies, and what every door and command reaches through Services.
int Node::start_services(StartState& st, std::string& why) {
  if (const Status st = load_users(cfg_, acl_); !st) return fail(why, 2, st.error());
  if (!cfg_.config_file.empty()) {
    policy_store_.load_file(policy_file(cfg_), file_mtime_ms(cfg_.config_file));
  }
  svc_.clock = &clock_;
  svc_.metrics = &metrics_;
  svc_.policies = &policies_;
  svc_.policy_store = &policy_store_;
  svc_.clients = &clients_;
  svc_.bound = &bound_;
  svc_.settings.bind = cfg_.bind;
  svc_.acl = &acl_;
  svc_.accounts = accounts_.get();
  clients_.set_accounts(accounts_.get());
  svc_.wait_room.set_accounts(accounts_.get());
  accounts_->set_maxmemory(cfg_.maxmemory);
  svc_.settings.max_subscriptions = cfg_.max_subscriptions;
  for (const std::string& line : cfg_.user_limits) {
    if (Result<UserLimits> l = parse_user_limits(line)) user_limits_.push_back(*l);
  }
  apply_shares();
  acl_.set_on_change([this] {
    apply_shares();  // (a new or changed user's caps, before its connections look again)
    clients_.wake_all();
  });
  if (!cfg_.aclfile.empty()) {
    svc_.acl_load = [this] {  // (the path and requirepass never change)
      Status st = load_users(cfg_, acl_);
      if (st) spdlog::info("users reloaded from {} (ACL LOAD)", cfg_.aclfile);
      return st;
    };
  }
  svc_.settings.output_limits = cfg_.output_limits;
  svc_.settings.request_deadline_ms = cfg_.request_deadline_ms;
  svc_.slowlog.slower_than_us = cfg_.slowlog_log_slower_than;
  svc_.slices.configure(cfg_.slice_threshold, cfg_.slice_ms);
  svc_.slowlog.max_len = cfg_.slowlog_max_len;
  svc_.wait_room.set_limits(cfg_.max_waiters, cfg_.max_waiters_per_key);
  svc_.settings.data_sync = cfg_.data_replication == "sync";  // (standalone: nothing to wait for)
  svc_.settings.parser.max_bulk_len = cfg_.proto_max_bulk_len;
  svc_.settings.max_bulk_len = cfg_.proto_max_bulk_len;
  svc_.settings.config_file = cfg_.config_file;
  svc_.settings.start_ms = clock_.now_ns() / 1'000'000;
  if (!cfg_.rls_config.empty() || cfg_.rls_port != 0) {
    rls_rules_ = std::make_unique<RlsRules>(cfg_.rls_config);
    svc_.rls = rls_rules_.get();
    if (!cfg_.rls_config.empty()) {
      if (const Status st = rls_rules_->reload(); !st)
        return fail(why, 2, "rls-config: " + st.error());
      spdlog::info("rls-config: {} domain(s) from {}", rls_rules_->get()->domains.size(),
                   cfg_.rls_config);
    }
  }
  return 0;
}

// The script engine and the shards that run every keyed request.
int Node::start_shards(StartState& st, std::string& why) {
  ShardPoolConfig pool_cfg;
  pool_cfg.shards = cfg_.shards;
  pool_cfg.max_keys = cfg_.max_keys;
  // (A value built a piece at a time is held to what one SET could send: the smaller one.)
  pool_cfg.max_string_bytes = std::min(cfg_.proto_max_bulk_len, cfg_.max_query_bytes);
  pool_cfg.cluster = cfg_.cluster_enabled;
  pool_cfg.seed = run_.seed ? run_.seed + 2 : 0;
  pool_cfg.accounts = accounts_;
  // (the engine outlives the shards that call it)
  ScriptLimits script_limits;
  script_limits.budget_ms = cfg_.script_time_limit_ms;
  script_limits.memory_bytes = cfg_.script_memory_limit;
  script_limits.accounts = accounts_.get();
  if (cfg_.maxmemory_clients > 0) {  // (scripts' heaps stay within the clients' cap too)
    script_limits.memory_room = [this] { return clients_.max_memory() - clients_.memory(); };
  }
  script_cache_ = std::make_unique<ScriptCache>(book_, clock_, cfg_.script_cache_max_scripts,
                                                cfg_.script_cache_max_bytes);
  scripts_ = std::make_unique<ScriptEngine>(pool_cfg.shards, cfg_.cluster_enabled, script_limits,
                                            &script_callable, *script_cache_);
  pool_ = std::make_unique<ShardPool>(system_, pool_cfg, &clock_);
  svc_.shards = pool_.get();
  pool_->attach_scripts(scripts_.get());
  pool_->set_waiters(&svc_.waiters);
  svc_.scripts = scripts_.get();
  scripts_->set_publish([this](bool shard, std::string_view channel, std::string_view message) {
    return svc_.pubsub.publish_everywhere(shard ? ChannelKind::kShard : ChannelKind::kChannel,
                                          channel, message);
  });
  // Keyspace notifications: published by the shards as any PUBLISH, to every node.
  key_events().set_publish([this](std::string_view channel, std::string_view message) {
    return svc_.pubsub.publish_everywhere(ChannelKind::kChannel, channel, message) >= 0;
  });
  key_events().set_flags(cfg_.notify_flags);
  return 0;
}

int Node::start_storage(StartState& st, std::string& why) {
  // Persistence: the snapshot is read before any port opens, so nothing is answered from
  // state the node is about to replace (node/OPERATIONS.md, Persistence).
  if (!cfg_.dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(cfg_.dir, ec);
    if (ec) return fail(why, 2, "cannot use dir " + cfg_.dir + ": " + ec.message());
    SnapshotterConfig sc;
    sc.path = (std::filesystem::path(cfg_.dir) / cfg_.dbfilename).string();
    sc.node_id = cfg_.cluster_enabled ? cfg_.node_id : "standalone";
    sc.cluster = cfg_.cluster_enabled;
    sc.write_inline = run_.polled;
    snapshots_ = std::make_unique<Snapshotter>(sc, *pool_, book_, clock_);
    if (const Status st = snapshots_->lock(); !st) return fail(why, 2, st.error());
    SnapshotData d;
    const Result<Snapshotter::Loaded> loaded = snapshots_->load(d);
    switch (loaded ? *loaded : Snapshotter::Loaded::kNone) {
      case Snapshotter::Loaded::kNone:
        if (loaded) {
          spdlog::info("no snapshot at {}: starting empty", sc.path);
        } else {
          spdlog::error("snapshot {} refused: {}; starting empty", sc.path, loaded.error());
        }
        break;
      case Snapshotter::Loaded::kLoaded: {
        const size_t settings = book_.merge(d.book);
        spdlog::info("loaded {} keys from {} (saved {} s ago); {} settings-book entries came back",
                     d.entries.size(), sc.path,
                     (clock_.now_ns() / 1'000'000 - d.saved_at_ms) / 1000, settings);
        if (cfg_.cluster_enabled) {
          st.restored = std::move(d.entries);  // (their owners are known once a table is)
          st.restored_epoch = d.epoch;
        } else {
          auto job = std::make_shared<MergeJob>();
          job->fresh.set();  // (a node starting: every slot starts from nothing)
          std::promise<void> merged;
          job->done = [&merged](MergeJob&) { merged.set_value(); };
          pool_->merge(job, std::move(d.entries));
          merged.get_future().wait();
        }
        break;
      }
    }
    svc_.snapshots = snapshots_.get();
  }
  return 0;
}

// The client ports: RESP, RESP over TLS, native.
int Node::start_doors(StartState& st, std::string& why) {
  conn_limits_ = std::make_shared<ConnectionLimits>();
  conn_limits_->max_query_bytes = cfg_.max_query_bytes;
  conn_limits_->query_deadline_ms = cfg_.query_deadline_ms;
  conn_limits_->output_timeout_ms = cfg_.output_timeout_ms;
  conn_limits_->timeout_s = cfg_.timeout_s;
  server_ = std::make_unique<Server>(svc_, conn_limits_, cfg_.io_threads, run_.polled);
  server_->set_idle_poll(std::chrono::microseconds(cfg_.io_idle_poll_us));
  // TLS: the contexts every TLS door and peer link takes (node/OPERATIONS.md, "TLS").
  const bool tls_used =
      cfg_.tls_port > 0 || cfg_.tls_native || cfg_.tls_cluster || (cfg_.tls_rls && cfg_.rls_port);
  if (tls_used || cfg_.tls.configured()) {
    if (const Status st = tls_.load(cfg_.tls); !st) return fail(why, 2, st.error());
    if (!tls_used) {
      spdlog::warn(
          "TLS certificates given, but no tls-port, tls-native, tls-cluster or tls-rls uses them");
    }
    svc_.tls = &tls_;
    server_->set_tls(&tls_);
    spdlog::info("TLS certificate: {}", describe_certificate(cfg_.tls.cert_file));
    warn_if_expiring(tls_);
  }
  // Plain RESP, unless `port: 0` with a TLS port (TLS only, as redis-server).
  st.plain = !(cfg_.port == 0 && cfg_.tls_port > 0);
  try {
    if (st.plain) server_->listen(cfg_.bind, cfg_.port);
  } catch (const std::exception& e) {
    return fail(
        why, 1,
        "cannot listen on " + cfg_.bind + " port " + std::to_string(cfg_.port) + ": " + e.what());
  }
  if (cfg_.tls_port > 0) {
    try {
      server_->listen_tls(cfg_.bind, cfg_.tls_port);
    } catch (const std::exception& e) {
      return fail(why, 1,
                  "cannot listen on " + cfg_.bind + " TLS port " + std::to_string(cfg_.tls_port) +
                      ": " + e.what());
    }
  }
  // The port the other defaults count from, and the one clients are sent to: the TLS port
  // when there is no plain one, or when the cluster speaks TLS.
  st.client_port = !st.plain || (cfg_.tls_cluster && server_->tls_port() > 0) ? server_->tls_port()
                                                                              : server_->port();
  st.base_port = st.plain ? server_->port() : server_->tls_port();
  svc_.settings.port = server_->port();
  svc_.lanes = server_->lanes();
  if (cfg_.native_port != 0) {
    // Default: RESP port + 1000 (with --port 0, a free port as well).
    const int want = cfg_.native_port > 0         ? cfg_.native_port
                     : cfg_.port == 0 && st.plain ? 0
                                                  : st.base_port + 1000;
    try {
      server_->listen_native(cfg_.bind, want, cfg_.tls_native);
    } catch (const std::exception& e) {
      return fail(why, 1,
                  "cannot listen on " + cfg_.bind + " native port " + std::to_string(want) + ": " +
                      e.what());
    }
    svc_.settings.native_port = server_->native_port();
  }
  if (cfg_.rls_port != 0 && !run_.polled) {
    GatewayOptions o;
    o.response_headers = cfg_.rls_response_headers;
    o.user = cfg_.rls_user;
    o.max_clients = cfg_.rls_maxclients;
    o.handshake_ms = cfg_.query_deadline_ms;
    o.idle_ms = cfg_.rls_idle_timeout_ms;
    o.max_keys_per_domain = cfg_.rls_max_keys_per_domain;
    o.rlqs_slice_ms = cfg_.rlqs_slice_ms;
    if (cfg_.tls_rls && !(tls_.active())) {
      return fail(why, 2, "tls-rls needs the node's TLS (tls-cert-file, tls-key-file and a CA)");
    }
    if (cfg_.rls_config.empty()) {
      spdlog::warn("rls-port without rls-config: every descriptor is answered OK (no limits)");
    }
    rls_ = std::make_unique<GatewayDoor>(svc_, *rls_rules_, std::move(o), svc_.lanes.size());
    svc_.gateway = rls_.get();
    if (!cfg_.rls_token_file.empty()) {
      const auto token = read_admin_token(cfg_.rls_token_file);  // (the same file format)
      if (!token) return fail(why, 2, "rls-token-file: " + token.error());
      rls_->set_token(*token);
    }
    try {
      server_->listen_rls(cfg_.bind, cfg_.rls_port, cfg_.tls_rls);
    } catch (const std::exception& e) {
      return fail(why, 1,
                  "rls-port " + std::to_string(cfg_.rls_port) + ": cannot listen on " + cfg_.bind +
                      ": " + e.what());
    }
  }
  return 0;
}

// Cluster mode: the member, its forwarder (joined later, by join_cluster).
int Node::start_cluster(StartState& st, std::string& why) {
  if (cfg_.cluster_enabled) {
    ClusterConfig cc;
    cc.node_id = cfg_.node_id;
    cc.bind_host = st.bind_host;
    cc.announce_host =
        cfg_.cluster_announce_host.empty() ? cc.bind_host : cfg_.cluster_announce_host;
    cc.resp_port = st.client_port;
    if (cfg_.tls_cluster) cc.tls = &tls_;
    cc.native_port = server_->native_port();
    cc.port = cfg_.cluster_port ? cfg_.cluster_port : st.base_port + 10000;
    cluster_port_ = cc.port;
    cc.seeds = cfg_.seeds;
    cc.replicas = static_cast<size_t>(cfg_.cluster_replicas);
    cc.replication_lag_ms = cfg_.replication_lag_ms;
    cc.sync_timeout_ms = cfg_.replication_sync_timeout_ms;
    cc.empty_grace_ms = cfg_.cluster_empty_grace_ms;
    cc.clock = &clock_;
    cc.peer_net = nets_.peers;
    cc.datagrams = nets_.datagrams;
    cc.seed = run_.seed ? run_.seed + 3 : 0;
    cc.polled = run_.polled;
    cc.membership.accept_unaddressed = cfg_.cluster_bus_legacy;
    bus_key_.set_legacy(cfg_.cluster_bus_legacy);
    if (!cfg_.cluster_secret_file.empty()) {
      const auto secrets = BusKey::read_file(cfg_.cluster_secret_file);
      if (!secrets) return fail(why, 2, secrets.error());
      if (const Status st = bus_key_.set(*secrets); !st) return fail(why, 2, st.error());
      cc.bus_key = &bus_key_;
    }
    cluster_ = std::make_unique<Cluster>(cc, *pool_);
    cluster_->share_book(&book_);
    if (!st.restored.empty()) cluster_->restore(std::move(st.restored), st.restored_epoch);
    if (snapshots_) {
      snapshots_->set_epoch_source([c = cluster_.get()] { return c->routing().get()->epoch; });
    }
    svc_.routing = &cluster_->routing();
    svc_.cluster = cluster_.get();
    svc_.settings.redirect = cfg_.cluster_redirect == "moved"     ? NodeSettings::Redirect::kAlways
                             : cfg_.cluster_redirect == "forward" ? NodeSettings::Redirect::kNever
                                                                  : NodeSettings::Redirect::kAuto;
    svc_.settings.forward_timeout_ms = cfg_.cluster_forward_timeout_ms;
    forwarder_ = std::make_unique<ClusterForwarder>(*cluster_);
    svc_.forwarder = forwarder_.get();
    serve_forwards(*cluster_, svc_);
    carry_publishes(*cluster_, svc_);
  }
  return 0;
}

// The node's timers, and the admin HTTP port.
int Node::start_admin(StartState& st, std::string& why) {
  trim_timer_ = std::make_unique<SteadyTimer>(server_->main_context());
  save_timer_ = std::make_unique<SteadyTimer>(server_->main_context());
  renew_timer_ = std::make_unique<SteadyTimer>(server_->main_context());
  schedule_trim();
  if (snapshots_ && cfg_.save_interval_ms > 0) schedule_save();
  schedule_renew();
  if (rls_rules_) {
    rls_timer_ = std::make_unique<SteadyTimer>(server_->main_context());
    schedule_rls();
  }
  if (!run_.polled) {
    history_ = std::make_unique<NodeHistory>(
        svc_, cluster_.get(), cluster_ ? cluster_->config().node_id : std::string("standalone"));
    history_timer_ = std::make_unique<SteadyTimer>(server_->main_context());
    history_->tick();
    schedule_history();
    if (cluster_) {
      // (answered on the cluster thread, from the rings and counters: no shard is asked)
      cluster_->on_request(
          kPeerReport, [h = history_.get()](uint32_t, std::string body, PeerRespond respond) {
            respond(PeerStatus::kOk, h->report(ReportAsk::decode(body)).encode(), {});
          });
    }
  }

  if (cfg_.admin_port != 0 && !run_.polled) {
    const int want = cfg_.admin_port > 0          ? cfg_.admin_port
                     : cfg_.port == 0 && st.plain ? 0
                                                  : st.base_port + 2000;
    admin_ = std::make_unique<AdminHttp>(svc_, cluster_.get(), admin_counters_);
    admin_->set_history(history_.get());
    admin_->set_health_check([engine = scripts_.get(), server = server_.get()]() -> std::string {
      // A thread that does not come back to its loop serves none of its clients.
      if (std::string why = server->stuck_thread(kStuckThreadMs); !why.empty()) return why;
      // A script is stopped by its budget at the next instruction; one still running long
      // after it is stuck inside a single C call, and so is its shard.
      const int64_t ms = engine ? engine->longest_run_ns() / 1'000'000 : 0;
      const int64_t budget_ms = engine ? engine->limits().budget_ms : 0;
      if (ms <= budget_ms + kStuckScriptGraceMs) return "";
      return "a script has run for " + std::to_string(ms) + " ms (script-time-limit " +
             std::to_string(budget_ms) + " ms)";
    });
    if (!cfg_.admin_token_file.empty()) {
      const auto token = read_admin_token(cfg_.admin_token_file);
      if (!token) return fail(why, 2, token.error());
      admin_->set_token(*token);
    }
    try {
      admin_->start(cfg_.admin_bind.empty() ? st.bind_host : cfg_.admin_bind, want);
    } catch (const std::exception& e) {
      return fail(why, 1, e.what());
    }
  }
  return 0;
}

int Node::join_cluster(StartState& st, std::string& why) {
  // The cluster is joined last: a node that cannot open one of its ports never shows up
  // in the others' membership (and a node started again under the same id after such a
  // failure is not taken for one that came and went).
  if (cluster_) {
    try {
      cluster_->start();
    } catch (const std::exception& e) {
      return fail(why, 1,
                  "cannot use cluster port " + std::to_string(cluster_port_) + " on " +
                      st.bind_host + ": " + e.what());
    }

    if (cfg_.cluster_secret_file.empty()) {
      spdlog::warn(
          "no cluster-secret-file: any process that reaches bus port {} is believed (it can join, "
          "declare nodes dead, take slots), and a stale node of another cluster gossiping to "
          "this address merges the two (node/OPERATIONS.md, Security)",
          cluster_port_);
    }
    spdlog::info("cluster node {} on bus port {}, seeds: {}", cfg_.node_id, cluster_port_,
                 cfg_.seeds.empty() ? std::string("none") : seeds_text(cfg_.seeds));
  }
  return 0;
}

int Node::start_serving(StartState& st, std::string& why) {
  // CONFIG GET answers the settings in force: the ports bound, the dir as a full path.
  {
    std::lock_guard<std::mutex> lock(shown_mu_);
    shown_ = cfg_;
    shown_.port = svc_.settings.port;
    shown_.tls_port = server_->tls_port();
    shown_.native_port = svc_.settings.native_port;
    shown_.admin_port = admin_ ? admin_->port() : 0;
    shown_.rls_port = rls_ ? server_->rls_port() : 0;
    if (cluster_) shown_.cluster_port = cluster_port_;
    if (!cfg_.dir.empty()) shown_.dir = std::filesystem::absolute(cfg_.dir).string();
  }
  svc_.config_values = [this] {
    std::lock_guard<std::mutex> lock(shown_mu_);
    return config_values(shown_);
  };
  svc_.config_set = [this](const std::vector<std::pair<std::string, std::string>>& pairs) {
    return config_set(pairs);
  };
  svc_.config_rewrite = [this] { return config_rewrite(); };
  svc_.shutdown = [this](bool save) {
    spdlog::info("SHUTDOWN{} received, shutting down", save ? "" : " NOSAVE");
    request_stop(save);
  };
  server_->run();
  started_ = true;
  spdlog::info(
      "floodgate {} ready: RESP on {} port {}, TLS port {}, native port {}{}, admin port {} ({} "
      "io threads, {} shards on {} threads, {} policies)",
      svc_.settings.version, cfg_.bind, server_->port(), server_->tls_port(),
      server_->native_port(), cfg_.tls_native ? " (TLS)" : "", admin_port(), cfg_.io_threads,
      cfg_.shards, cfg_.shard_threads, policies_.snapshot()->policies.size());
  return 0;
}

// Thousands of connections closing leave their buffers free in the middle of malloc's
// heaps, where glibc does not return them by itself: hand those pages back. The trim walks
// every arena (tens of milliseconds on a large heap), so it runs on a thread of its own,
// never on the I/O thread whose clients would wait for it (one at a time; a polled node,
// the simulator's, trims in place).
void Node::schedule_history() {
  history_timer_->expires_after(std::chrono::seconds(1));
  history_timer_->async_wait([this](asio::error_code ec) {
    if (ec) return;
    history_->tick();
    schedule_history();
  });
}

void Node::schedule_trim() {
  trim_timer_->expires_after(std::chrono::seconds(1));
  trim_timer_->async_wait([this](asio::error_code ec) {
    if (ec) return;
    const uint64_t closed = svc_.counters.connections_closed.load(std::memory_order_relaxed);
    const bool idle = !trimming_.valid() ||
                      trimming_.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
    if (closed - closed_at_trim_ >= 64 && idle) {
      if (run_.polled)
        malloc_trim(0);
      else
        trimming_ = std::async(std::launch::async, [] { malloc_trim(0); });
      closed_at_trim_ = closed;
    }
    schedule_trim();
  });
}

// Periodic saves (a save already under way is not doubled).
void Node::schedule_save() {
  save_timer_->expires_after(std::chrono::milliseconds(cfg_.save_interval_ms));
  save_timer_->async_wait([this](asio::error_code ec) {
    if (ec) return;
    snapshots_->save();
    schedule_save();
  });
}

// BOUND leases: renewed by this node while their connection lives (api/core/lease_upkeep).
void Node::schedule_renew() {
  renew_timer_->expires_after(std::chrono::milliseconds(100));
  renew_timer_->async_wait([this](asio::error_code ec) {
    if (ec) return;
    renew_bound_leases(svc_, clock_.now_ns() / 1'000'000);
    schedule_renew();
  });
}

// Once a second: the rls-config files read again when they changed (a refused change keeps
// the rules in force), and the door's health: SERVING while the node is ready and not
// stopping.
void Node::schedule_rls() {
  if (rls_) rls_->set_serving(started_ && !stopping_ && node_not_ready(svc_).empty());
  rls_timer_->expires_after(std::chrono::seconds(1));
  rls_timer_->async_wait([this](asio::error_code ec) {
    if (ec) return;
    if (!rls_rules_->path().empty() && rls_rules_->changed()) {
      if (const Status st = rls_rules_->reload(); !st) {
        spdlog::error("rls-config changed but was refused, keeping the rules in force: {}",
                      st.error());
      } else {
        spdlog::info("rls-config reloaded: {} domain(s)", rls_rules_->get()->domains.size());
      }
    }
    schedule_rls();
  });
}

// The users, replaced whole: the aclfile's (read again), or the config file's `users`
// (`from_file`; flags stay as given). Connections of users that are gone or disabled
// close at their next command.
void Node::reload_users(const std::vector<std::string>* from_file) {
  NodeConfig u;
  u.requirepass = cfg_.requirepass;
  u.aclfile = cfg_.aclfile;
  u.users = from_file && !from_file->empty() ? *from_file : cfg_.users;
  if (const Status st = load_users(u, acl_); !st) {
    spdlog::error("SIGHUP: {}; keeping the users in force", st.error());
  } else {
    spdlog::info("users reloaded ({})", cfg_.aclfile.empty() ? "config" : cfg_.aclfile);
  }
}

void Node::apply_shares() {
  NodeCaps node;
  node.of[Accounts::kKeys] = static_cast<int64_t>(cfg_.max_keys);
  node.of[Accounts::kBytes] = cfg_.maxmemory;
  node.of[Accounts::kScripts] = static_cast<int64_t>(cfg_.script_cache_max_scripts);
  node.of[Accounts::kScriptBytes] = static_cast<int64_t>(cfg_.script_cache_max_bytes);
  node.of[Accounts::kWaiters] = cfg_.max_waiters;
  node.of[Accounts::kConnections] = static_cast<int64_t>(cfg_.maxclients);
  node.of[Accounts::kSubscriptions] = cfg_.max_subscriptions;
  std::lock_guard<std::mutex> lock(shares_mu_);
  apply_user_shares(acl_, node, cfg_.user_share, user_limits_, *accounts_);
}

struct Node::Running : RunningNode {
  explicit Running(Node& n) : node(n) {}
  Services& services() override { return node.svc_; }
  ClientRegistry& clients() override { return node.clients_; }
  ConnectionLimits& connection_limits() override { return *node.conn_limits_; }
  Accounts& accounts() override { return *node.accounts_; }
  void set_default_password(const std::string& pw) override {
    // (as Redis: the default user's passwords become this one, or none; its rules stay)
    const std::string pass = ">" + pw;
    std::vector<std::string_view> rules{"resetpass"};
    rules.push_back(pw.empty() ? std::string_view("nopass") : std::string_view(pass));
    if (const Status st = node.acl_.set_user("default", rules); !st)
      spdlog::error("CONFIG SET requirepass: {}", st.error());
  }
  void shares_changed() override { node.apply_shares(); }
  void set_replication_lag(int64_t ms) override {
    if (node.cluster_) node.cluster_->set_replication_lag(ms);
  }
  Node& node;
};

std::string Node::config_set(const std::vector<std::pair<std::string, std::string>>& pairs) {
  std::lock_guard<std::mutex> lock(set_mu_);
  NodeConfig next = cfg_;
  std::vector<const Setting*> rows;
  for (const auto& [name, value] : pairs) {
    const Setting* s = find_setting_named(name);
    if (!s) return err::config_unknown(name);
    if (std::find(rows.begin(), rows.end(), s) != rows.end())
      return err::config_set_failed(name) + " - duplicate parameter";
    if (!s->apply) return err::config_immutable(name);
    if (s->list && s->clear) s->clear(next);
    if (const Status st = s->set(next, value); !st) {
      // (in Redis's words where Redis has them)
      std::string why = st.error();
      if (why == "must be an integer") why = "argument couldn't be parsed into an integer";
      if (why.rfind("must be between ", 0) == 0) why = "argument " + why + " inclusive";
      return err::config_set_failed(name) + " - " + why;
    }
    rows.push_back(s);
  }
  // (only the fields named change: other threads read the rest of cfg_ meanwhile)
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i]->list && rows[i]->clear) rows[i]->clear(cfg_);
    (void)rows[i]->set(cfg_, pairs[i].second);
  }
  for (const Setting* s : rows)
    if (std::find(set_at_runtime_.begin(), set_at_runtime_.end(), s) == set_at_runtime_.end())
      set_at_runtime_.push_back(s);
  Running running(*this);
  for (const Setting* s : rows) {
    s->apply(running, cfg_);
    spdlog::info("CONFIG SET {} {}", s->key, s->shown ? s->get(cfg_) : "(secret)");
  }
  std::lock_guard<std::mutex> shown(shown_mu_);
  for (const Setting* s : rows) {
    // (CONFIG GET answers what is now in force)
    if (s->get && s->shown) (void)s->set(shown_, s->get(cfg_));
  }
  shown_.requirepass = cfg_.requirepass;
  return "";
}

namespace {
// A YAML double-quoted scalar: any text reads back as itself.
std::string yaml_quoted(const std::string& v) {
  std::string out = "\"";
  for (char c : v) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", static_cast<unsigned char>(c));
      out += hex;
    } else {
      out += c;
    }
  }
  return out + "\"";
}
}  // namespace

std::string Node::config_rewrite() {
  std::lock_guard<std::mutex> lock(set_mu_);
  if (cfg_.config_file.empty()) return "ERR The server is running without a config file";
  std::vector<std::string> lines;
  {
    std::ifstream in(cfg_.config_file);
    if (!in) return std::string("ERR Rewriting config file: ") + std::strerror(errno);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
  }
  for (const Setting* s : set_at_runtime_) {
    const std::string key = s->key;
    const std::string line = key + ": " + yaml_quoted(s->get(cfg_));
    bool found = false;
    for (size_t i = 0; i < lines.size() && !found; ++i) {
      const std::string& l = lines[i];
      if (l.compare(0, key.size(), key) != 0) continue;
      const size_t colon = l.find_first_not_of(' ', key.size());
      if (colon == std::string::npos || l[colon] != ':') continue;
      lines[i] = line;
      // (a value continued on indented lines goes with it)
      size_t j = i + 1;
      while (j < lines.size() && !lines[j].empty() && lines[j][0] == ' ' &&
             lines[j].find_first_not_of(' ') != std::string::npos &&
             lines[j][lines[j].find_first_not_of(' ')] != '#')
        ++j;
      lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(i + 1),
                  lines.begin() + static_cast<std::ptrdiff_t>(j));
      found = true;
    }
    if (!found) lines.push_back(line);
  }
  const std::string tmp = cfg_.config_file + ".rewrite.tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    for (const std::string& l : lines) out << l << '\n';
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      return std::string("ERR Rewriting config file: ") + std::strerror(errno);
    }
  }
  if (std::rename(tmp.c_str(), cfg_.config_file.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    return "ERR Rewriting config file: " + why;
  }
  spdlog::info("CONFIG REWRITE: {} setting(s) written to {}", set_at_runtime_.size(),
               cfg_.config_file);
  return "";
}

void Node::reload() {
  std::lock_guard<std::mutex> config_lock(set_mu_);
  if (cluster_ && !cfg_.cluster_secret_file.empty()) {  // (rotation: gossip/DESIGN-NOTES.md)
    const auto secrets = BusKey::read_file(cfg_.cluster_secret_file);
    const Status st = secrets ? bus_key_.set(*secrets) : Status(Error{secrets.error()});
    if (st) {
      spdlog::info("cluster secret reloaded from {} ({} secret(s))", cfg_.cluster_secret_file,
                   secrets->size());
    } else {
      spdlog::error("SIGHUP: {}; keeping the cluster secret in force", st.error());
    }
  }
  if (rls_ && !cfg_.rls_token_file.empty()) {  // (the gateway door's, likewise)
    if (const auto token = read_admin_token(cfg_.rls_token_file)) {
      rls_->set_token(*token);
      spdlog::info("rls-token-file reloaded");
    } else {
      spdlog::error("SIGHUP: {}; keeping the gateway door's token in force", token.error());
    }
  }
  if (admin_ && !cfg_.admin_token_file.empty()) {  // (a rotated token, in force at once)
    if (const auto token = read_admin_token(cfg_.admin_token_file)) {
      admin_->set_token(*token);
    } else {
      spdlog::error("SIGHUP: {}; keeping the admin token in force", token.error());
    }
  }
  if (svc_.tls) {  // renewed certificates: new connections take them, open ones keep theirs
    if (const Status st = tls_.load(cfg_.tls); st) {
      tls_.counters.reloads.fetch_add(1, std::memory_order_relaxed);
      spdlog::info("TLS certificate reloaded: {}", describe_certificate(cfg_.tls.cert_file));
      warn_if_expiring(tls_);
    } else {
      tls_.counters.reload_failures.fetch_add(1, std::memory_order_relaxed);
      spdlog::error("SIGHUP: {}; keeping the TLS certificates in force", st.error());
    }
  }
  if (!cfg_.aclfile.empty()) reload_users(nullptr);
  if (rls_rules_ && !rls_rules_->path().empty()) {
    if (const Status st = rls_rules_->reload(); !st) {
      spdlog::error("SIGHUP: {}; keeping the rls-config rules in force", st.error());
    } else {
      spdlog::info("rls-config reloaded from {}", rls_rules_->path());
    }
  }
  if (cfg_.config_file.empty()) {
    if (cfg_.admin_token_file.empty() && cfg_.cluster_secret_file.empty() && cfg_.aclfile.empty() &&
        cfg_.rls_token_file.empty() && !svc_.tls) {
      spdlog::warn("SIGHUP: no --config file to reload");
    }
    return;
  }
  NodeConfig fresh;
  try {
    load_config_file(cfg_.config_file, fresh);
    const size_t n = policy_store_.reload_file(policy_file(fresh));
    {
      std::vector<UserLimits> limits;
      for (const std::string& line : fresh.user_limits) {
        if (Result<UserLimits> l = parse_user_limits(line)) limits.push_back(*l);
      }
      std::lock_guard<std::mutex> lock(shares_mu_);
      user_limits_ = std::move(limits);
    }
    if (cfg_.aclfile.empty()) reload_users(&fresh.users);
    apply_shares();
    if (fresh.log_level != cfg_.log_level) {
      cfg_.log_level = fresh.log_level;
      spdlog::set_level(spdlog::level::from_str(cfg_.log_level));
      std::lock_guard<std::mutex> lock(shown_mu_);
      shown_.log_level = cfg_.log_level;
    }
    admin_counters_.reloads_ok.fetch_add(1);
    spdlog::info("config reloaded from {}: {} policy entries changed cluster-wide",
                 cfg_.config_file, n);
  } catch (const ConfigError& e) {
    admin_counters_.reloads_failed.fetch_add(1);
    spdlog::error("config reload refused, keeping the running settings: {}", e.what());
  }
}

void Node::request_stop(bool save) {
  save_on_exit_ = save;
  stopping_ = true;
}

void Node::stop() {
  if (stopped_) return;
  stopped_ = true;
  stopping_ = true;
  if (rls_) rls_->set_serving(false);  // (gateways stop sending here while it leaves)
  if (save_timer_) save_timer_->cancel();
  // A cluster node saves before it hands its slots over; a standalone one once no client can
  // change anything any more.
  auto final_save = [this] {
    if (!started_ || !snapshots_ || !save_on_exit_) return;
    if (const Status st = snapshots_->save_and_wait(); !st)
      spdlog::error("the state was not saved at shutdown: {}", st.error());
  };
  if (cluster_ && started_ && !run_.polled && !halted_) {
    final_save();
    // Hand this node's slots (and their state) to the others before going, and stay until
    // they hold it with as many copies as before (Cluster::leave: at most 30 s, but never
    // while the only copy of a slot is here — a second signal ends the process then).
    const bool clean = cluster_->leave(std::chrono::hours(24 * 365));
    if (!clean) {
      spdlog::warn("left the cluster with some slots on fewer copies than the cluster keeps");
    }
  }
  if (renew_timer_) renew_timer_->cancel();
  if (trim_timer_) trim_timer_->cancel();
  if (trimming_.valid()) trimming_.wait();
  if (rls_timer_) rls_timer_->cancel();
  if (history_timer_) history_timer_->cancel();
  if (admin_) admin_->stop();
  if (server_) server_->stop();
  if (!cluster_) final_save();
  if (cluster_) cluster_->stop();
  if (started_) pool_.reset();  // (before the cluster that points at it is destroyed)
}

void Node::halt() {
  if (stopped_) return;
  save_on_exit_ = false;
  halted_ = true;  // (no leave: nobody is told)
  stop();
}

size_t Node::poll(bool (*has_ready)(asio::io_context&)) {
  if (stopped_) return 0;
  size_t n = server_ ? server_->poll(has_ready) : 0;
  if (cluster_ && (!has_ready || has_ready(cluster_->io()))) n += cluster_->io().poll();
  return n;
}

void Node::begin_leave() {
  if (cluster_ && started_ && !stopped_)
    asio::post(cluster_->io(), [c = cluster_.get()] { c->start_leave(); });
}

bool Node::left() {
  bool clean = true;
  return !cluster_ || stopped_ || cluster_->left(clean);
}

size_t Node::leave_last_copies() const {
  return cluster_ && !halted_ ? cluster_->leave_last_copies() : 0;
}

void Node::adopt_client(
    const std::function<std::unique_ptr<ClientStream>(asio::any_io_executor)>& make, bool native) {
  if (server_) server_->adopt(make, native ? Server::DoorKind::kNative : Server::DoorKind::kResp);
}

int Node::port() const { return server_ ? server_->port() : 0; }
int Node::tls_port() const { return server_ ? server_->tls_port() : 0; }
int Node::native_port() const { return server_ ? server_->native_port() : 0; }
int Node::admin_port() const { return admin_ ? admin_->port() : 0; }
int Node::rls_port() const { return rls_ && server_ ? server_->rls_port() : 0; }

}  // namespace fg
