// /metrics: every counter and gauge of the node in Prometheus's text format.
#include "admin_http.hpp"
#include "cluster.hpp"
#include "command_table.hpp"
#include "history.hpp"
#include "request_metrics.hpp"
#include "rls_config.hpp"
#include "script_engine.hpp"
#include "services.hpp"
#include "snapshotter.hpp"
#include "tls_context.hpp"

namespace fg {

namespace {
class Text {
 public:
  // A metric family's HELP and TYPE lines.
  void family(const char* name, const char* type, const char* help) {
    out_ += "# HELP ";
    out_ += name;
    out_ += ' ';
    out_ += help;
    out_ += "\n# TYPE ";
    out_ += name;
    out_ += ' ';
    out_ += type;
    out_ += '\n';
  }
  void sample(const std::string& name, const std::string& labels, double v) {
    out_ += name;
    if (!labels.empty()) out_ += "{" + labels + "}";
    char buf[32];
    std::snprintf(buf, sizeof buf, " %.17g\n", v);
    out_ += buf;
  }
  void one(const char* name, const char* type, const char* help, double v) {
    family(name, type, help);
    sample(name, "", v);
  }
  std::string& str() { return out_; }

 private:
  std::string out_;
};

std::string label(const char* k, std::string_view v) {
  std::string out = k;
  out += "=\"";
  for (char c : v) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

double load(const std::atomic<uint64_t>& a) { return static_cast<double>(a.load()); }
}  // namespace

std::string AdminHttp::metrics() const {
  Text t;
  const auto counts = svc_.metrics->counts();
  t.family("floodgate_requests_total", "counter",
           "Requests by command and result, counted once by the node the client asked");
  for (uint16_t c = 0; c < kMaxCommandIds; ++c) {
    for (size_t r = 0; r < counts.requests[c].size(); ++r) {
      if (!counts.requests[c][r]) continue;
      t.sample("floodgate_requests_total",
               label("command", command_id_name(c)) + "," +
                   label("result", result_name(static_cast<RequestResult>(r))),
               static_cast<double>(counts.requests[c][r]));
    }
  }
  t.family("floodgate_request_duration_seconds", "histogram",
           "Time from a command's arrival to its reply, by command");
  for (uint16_t c = 0; c < kMaxCommandIds; ++c) {
    uint64_t total = 0;
    for (uint64_t n : counts.latency[c]) total += n;
    if (!total) continue;
    const std::string cmd = label("command", command_id_name(c));
    uint64_t cum = 0;
    for (size_t b = 0; b < kLatencyBuckets; ++b) {
      cum += counts.latency[c][b];
      char le[32];
      if (b < kLatencyBoundsUs.size()) {
        std::snprintf(le, sizeof le, "%g", static_cast<double>(kLatencyBoundsUs[b]) / 1e6);
      } else {
        std::snprintf(le, sizeof le, "+Inf");
      }
      t.sample("floodgate_request_duration_seconds_bucket", cmd + "," + label("le", le),
               static_cast<double>(cum));
    }
    t.sample("floodgate_request_duration_seconds_sum", cmd,
             static_cast<double>(counts.latency_sum_us[c]) / 1e6);
    t.sample("floodgate_request_duration_seconds_count", cmd, static_cast<double>(total));
  }
  t.family("floodgate_decisions_total", "counter",
           "Limiter decisions for this node's clients by policy ((inline): limits given in the "
           "request; (override): a per-key override's own limit)");
  const auto names = PolicyIds::get().names();
  for (size_t p = 0; p < counts.policy.size() && p < names.size(); ++p) {
    for (int k = 0; k < 2; ++k) {
      if (!counts.policy[p][k]) continue;
      t.sample("floodgate_decisions_total",
               label("policy", p == 0 ? "(inline)" : names[p]) + "," +
                   label("decision", k == 0 ? "allowed" : "denied"),
               static_cast<double>(counts.policy[p][k]));
    }
  }
  t.family("floodgate_policy_shadow_denied_total", "counter",
           "Requests a shadow policy would have denied (and allowed), by policy: every policy in "
           "shadow mode now, and any that denied in shadow mode before");
  {
    const auto snapshot = svc_.policies->snapshot();
    for (size_t p = 1; p < counts.policy.size() && p < names.size(); ++p) {
      const auto it = snapshot->policies.find(names[p]);
      const bool shadow_now = it != snapshot->policies.end() && it->second.shadow;
      if (!shadow_now && !counts.policy[p][2]) continue;
      t.sample("floodgate_policy_shadow_denied_total", label("policy", names[p]),
               static_cast<double>(counts.policy[p][2]));
    }
  }
  t.family("floodgate_shard_mailbox_depth", "gauge", "Batches waiting for each shard actor");
  for (size_t i = 0; i < svc_.shards->size(); ++i) {
    t.sample("floodgate_shard_mailbox_depth", label("shard", std::to_string(i)),
             static_cast<double>(svc_.shards->queued(i)));
  }
  t.one("floodgate_keys", "gauge", "Limiter keys held (a replica's copies included)",
        static_cast<double>(svc_.shards->keys()));
  t.one("floodgate_key_bytes", "gauge", "Memory the keys' state takes",
        static_cast<double>(svc_.shards->bytes()));
  t.one("floodgate_leases", "gauge", "Concurrency leases held (a replica's copies included)",
        static_cast<double>(svc_.shards->leases()));
  t.one("floodgate_keys_expired_total", "counter", "Idle keys reclaimed",
        static_cast<double>(svc_.shards->expired()));
  if (svc_.snapshots) {
    const SnapshotStatus ss = svc_.snapshots->status();
    t.one("floodgate_snapshot_last_save_timestamp_seconds", "gauge",
          "When the node's state was last saved to disk (Unix seconds)",
          static_cast<double>(ss.last_save_ms) / 1000);
    t.one("floodgate_snapshot_keys", "gauge", "Keys in the last snapshot saved",
          static_cast<double>(ss.last_keys));
    t.one("floodgate_snapshot_failures_total", "counter", "Saves to disk that failed",
          static_cast<double>(ss.saves_failed));
  }
  if (svc_.scripts) {
    const ScriptCounters& sc = svc_.scripts->counters();
    t.one("floodgate_scripts_cached", "gauge", "Scripts in the cluster-wide script cache",
          static_cast<double>(svc_.scripts->scripts()));
    t.one("floodgate_script_cache_bytes", "gauge", "Bytes of script bodies in the cache",
          static_cast<double>(svc_.scripts->cache_bytes()));
    t.one("floodgate_script_heap_bytes", "gauge",
          "Bytes the shards' Lua heaps hold, as of each one's last run",
          static_cast<double>(svc_.scripts->heap_bytes()));
    t.one("floodgate_script_runs_total", "counter", "Lua scripts run (EVAL, EVALSHA)",
          load(sc.runs));
    t.one("floodgate_script_errors_total", "counter", "Script runs answered with an error",
          load(sc.errors));
    t.one("floodgate_script_runs_over_budget_total", "counter",
          "Script runs aborted past script-time-limit, their writes undone", load(sc.over_budget));
    t.one("floodgate_script_evals_not_cached_total", "counter",
          "EVALs run without keeping their script: the script cache was full", load(sc.not_kept));
  }
  t.one("floodgate_connected_clients", "gauge", "Client connections (RESP and native)",
        static_cast<double>(svc_.clients->count()));
  const NodeCounters& n = svc_.counters;
  t.one("floodgate_protocol_errors_total", "counter", "Connections closed for a protocol error",
        load(n.protocol_errors));
  t.one("floodgate_admin_refused_total", "counter",
        "Admin HTTP requests refused without the bearer token", load(counters_.refused));
  t.one("floodgate_admin_overviews_gathered_total", "counter",
        "/overview gatherings from every member (requests alike within 500 ms share one)",
        load(counters_.gathered));
  t.one("floodgate_admin_dropped_total", "counter",
        "Admin HTTP connections closed past their request or reply deadline, or over the cap",
        load(counters_.dropped));
  t.one("floodgate_client_memory_bytes", "gauge",
        "Bytes all client connections' buffers hold (maxmemory-clients caps it)",
        static_cast<double>(svc_.clients->memory()));
  t.one("floodgate_client_memory_limit_bytes", "gauge",
        "maxmemory-clients: the most bytes all client connections' buffers may hold (0: no cap)",
        static_cast<double>(svc_.clients->max_memory()));
  t.family("floodgate_acl_denied_total", "counter",
           "Requests refused by the users' rights: a wrong user or password (auth), a "
           "command (command) or key (key) the user may not use");
  t.sample("floodgate_acl_denied_total", label("reason", "auth"), load(svc_.acl->denied_auth));
  t.sample("floodgate_acl_denied_total", label("reason", "command"), load(svc_.acl->denied_cmd));
  t.sample("floodgate_acl_denied_total", label("reason", "key"), load(svc_.acl->denied_key));
  t.sample("floodgate_acl_denied_total", label("reason", "channel"),
           load(svc_.acl->denied_channel));
  if (svc_.tls) {
    const TlsCounters& c = svc_.tls->counters;
    t.family("floodgate_tls_handshakes_total", "counter",
             "TLS handshakes on the client doors and peer links, completed (ok) or refused and "
             "broken off (failed)");
    t.sample("floodgate_tls_handshakes_total", label("result", "ok"), load(c.handshakes));
    t.sample("floodgate_tls_handshakes_total", label("result", "failed"),
             load(c.handshake_failures));
    t.one("floodgate_tls_certificate_expiry_timestamp_seconds", "gauge",
          "When the certificate in force stops being valid (Unix seconds): alert well before",
          static_cast<double>(svc_.tls->expires_at_s()));
    t.family("floodgate_tls_reloads_total", "counter",
             "Certificate reloads on SIGHUP, in force (ok) or refused (failed)");
    t.sample("floodgate_tls_reloads_total", label("result", "ok"), load(c.reloads));
    t.sample("floodgate_tls_reloads_total", label("result", "failed"), load(c.reload_failures));
  }
  t.family("floodgate_clients_dropped_total", "counter", "Clients dropped by a defence");
  t.sample("floodgate_clients_dropped_total", label("reason", "slow_reader"), load(n.dropped_slow));
  t.sample("floodgate_clients_dropped_total", label("reason", "timeout"), load(n.dropped_timeout));
  t.sample("floodgate_clients_dropped_total", label("reason", "evicted"),
           static_cast<double>(svc_.clients->evicted()));
  t.one("floodgate_forwards_total", "counter", "Commands forwarded to their key's owner",
        load(n.forwarded));
  t.one("floodgate_forward_failures_total", "counter", "Forwards the owner did not answer",
        load(n.forward_failures));
  t.one("floodgate_forwards_served_total", "counter", "Commands run here for other nodes",
        load(n.forwards_served));
  t.one("floodgate_moved_total", "counter", "-MOVED redirections answered", load(n.moved));
  {
    HotSlices& hs = svc_.slices;
    t.one("floodgate_slices_asked_total", "counter",
          "Quota slices of hot keys this node asked their owners for", load(hs.asked));
    t.one("floodgate_slices_granted_total", "counter", "Of those, granted",
          load(hs.granted_slices));
    t.one("floodgate_slice_tokens_total", "counter",
          "Tokens of the slices granted (counted at the owner when taken)",
          load(hs.granted_tokens));
    t.one("floodgate_slice_admitted_total", "counter",
          "Takes this node admitted from its slices, without a hop", load(hs.admitted));
    t.one("floodgate_slice_tokens_held", "gauge",
          "Tokens this node holds in live slices (its part of the stated bound)",
          static_cast<double>(hs.held(svc_.clock->now_ns())));
  }
  t.one("floodgate_past_deadline_total", "counter",
        "Limiter commands refused undecided: they waited past their deadline",
        load(n.past_deadline));
  t.family("floodgate_unavailable_total", "counter",
           "Requests whose key's state no copy could serve, by the policy's on_unavailable mode");
  t.sample("floodgate_unavailable_total", label("mode", "fail_open"), load(n.fail_open));
  t.sample("floodgate_unavailable_total", label("mode", "fail_closed"), load(n.fail_closed));
  t.sample("floodgate_unavailable_total", label("mode", "error"), load(n.unavailable));
  auto ps = svc_.policies->snapshot();
  t.one("floodgate_policies", "gauge", "Named policies in force",
        static_cast<double>(ps->policies.size()));
  t.one("floodgate_policy_patterns", "gauge", "Key patterns mapped to policies",
        static_cast<double>(ps->patterns.size()));
  t.one("floodgate_policy_overrides", "gauge", "Per-key overrides",
        static_cast<double>(ps->overrides.size()));
  t.family("floodgate_config_reloads_total", "counter", "SIGHUP reloads of the config file");
  t.sample("floodgate_config_reloads_total", label("result", "ok"), load(counters_.reloads_ok));
  t.sample("floodgate_config_reloads_total", label("result", "failed"),
           load(counters_.reloads_failed));
  t.one("floodgate_uptime_seconds", "gauge", "Seconds since the node started",
        static_cast<double>(svc_.clock->now_ns() / 1'000'000 - svc_.settings.start_ms) / 1e3);
  // The process's own, by the names every Prometheus client library gives them.
  t.one("process_cpu_seconds_total", "counter", "User and system CPU time the process spent",
        static_cast<double>(process_cpu_ns()) / 1e9);
  t.one("process_resident_memory_bytes", "gauge", "Memory the process holds in RAM",
        static_cast<double>(process_rss_bytes()));
  t.family("floodgate_build_info", "gauge", "Version of this node");
  t.sample("floodgate_build_info", label("version", svc_.settings.version), 1);
  if (svc_.rls) {
    RlsStatsBook& b = svc_.rls->stats();
    t.family("floodgate_rls_requests_total", "counter",
             "ShouldRateLimit calls the gateway door answered, by outcome");
    t.sample("floodgate_rls_requests_total", label("code", "ok"), load(b.ok));
    t.sample("floodgate_rls_requests_total", label("code", "over_limit"), load(b.over_limit));
    t.sample("floodgate_rls_requests_total", label("code", "unavailable"), load(b.unavailable));
    t.sample("floodgate_rls_requests_total", label("code", "invalid"), load(b.invalid));
    t.one("floodgate_rls_domain_not_found_total", "counter",
          "ShouldRateLimit calls naming a domain no rls-config file has (answered OK)",
          load(b.domain_not_found));
    t.one("floodgate_rls_connections", "gauge",
          "The gateway door's connections (rls-maxclients holds them)",
          static_cast<double>(b.connections.load(std::memory_order_relaxed)));
    t.one("floodgate_rlqs_streams", "gauge", "The quota service's (RLQS) streams open on this node",
          static_cast<double>(b.rlqs_streams.load(std::memory_order_relaxed)));
    t.one("floodgate_rlqs_reports_total", "counter", "RLQS usage reports read",
          load(b.rlqs_reports));
    t.one("floodgate_rlqs_slices_total", "counter",
          "New shares assigned to gateways (token buckets of a new size)", load(b.rlqs_slices));
    t.one("floodgate_rlqs_slice_tokens_total", "counter",
          "Those token buckets' bursts (max_tokens), in all", load(b.rlqs_slice_tokens));
    t.one("floodgate_rlqs_denials_total", "counter",
          "DENY_ALL assignments (a limit of none)", load(b.rlqs_denials));
    t.one("floodgate_rlqs_charged_total", "counter",
          "Requests gateways reported admitted, charged to the counters (each report within what "
          "its stream could have admitted)",
          load(b.rlqs_charged));
    t.one("floodgate_rlqs_abandoned_total", "counter",
          "Buckets abandoned: not configured, refused, or no longer configured",
          load(b.rlqs_abandoned));
    t.family("floodgate_rls_refused_total", "counter",
             "What the gateway door refused: connections past rls-maxclients, connections "
             "that did not begin within query-deadline, calls without the rls-token-file's "
             "token, calls needing more counters than rls-max-keys-per-domain leaves, "
             "connections closed for bytes that are no HTTP/2 or for a flood");
    t.sample("floodgate_rls_refused_total", label("reason", "maxclients"),
             load(b.connections_refused));
    t.sample("floodgate_rls_refused_total", label("reason", "handshake"),
             load(b.handshake_timeouts));
    t.sample("floodgate_rls_refused_total", label("reason", "token"), load(b.unauthenticated));
    t.sample("floodgate_rls_refused_total", label("reason", "keys"), load(b.keys_refused));
    t.sample("floodgate_rls_refused_total", label("reason", "protocol"), load(b.protocol_errors));
    t.one("floodgate_rls_keys_evicted_total", "counter",
          "Gateway counters forgotten (and reset) to make room in a full domain: the heaviest "
          "caller's least recently used",
          load(b.keys_evicted));
    t.family("floodgate_rls_config_loads_total", "counter",
             "rls-config loads, by result (a refused one keeps the rules in force)");
    t.sample("floodgate_rls_config_loads_total", label("result", "success"),
             load(b.config_load_success));
    t.sample("floodgate_rls_config_loads_total", label("result", "error"),
             load(b.config_load_error));
    // Upstream's five counters per descriptor (envoyproxy/ratelimit's stats, by the same names).
    static constexpr std::pair<const char*, const char*> kStats[] = {
        {"floodgate_rls_total_hits_total", "Hits each descriptor counted"},
        {"floodgate_rls_over_limit_total", "Hits past the descriptor's limit"},
        {"floodgate_rls_near_limit_total", "Hits past 80% of the descriptor's limit"},
        {"floodgate_rls_within_limit_total", "Hits within the descriptor's limit"},
        {"floodgate_rls_shadow_mode_total", "Hits past a shadow-mode limit (allowed)"}};
    std::string lines[5];
    b.each([&](const std::string& domain, const std::string& descriptor, const RlsStats& s) {
      const std::string l = label("domain", domain) + "," + label("descriptor", descriptor);
      const std::atomic<uint64_t>* v[5] = {&s.total_hits, &s.over_limit, &s.near_limit,
                                           &s.within_limit, &s.shadow_mode};
      for (int i = 0; i < 5; ++i) {
        char buf[32];
        std::snprintf(buf, sizeof buf, " %llu\n",
                      static_cast<unsigned long long>(v[i]->load(std::memory_order_relaxed)));
        lines[i] += std::string(kStats[i].first) + "{" + l + "}" + buf;
      }
    });
    for (int i = 0; i < 5; ++i) {
      t.family(kStats[i].first, "counter", kStats[i].second);
      t.str() += lines[i];
    }
  }
  if (!svc_.routing) return t.str();

  auto rt = svc_.routing->get();
  size_t by_state[4] = {0, 0, 0, 0};
  for (const RouteNode& m : rt->nodes)
    ++by_state[static_cast<int>(m.self ? MemberState::kAlive : m.state)];
  t.family("floodgate_cluster_members", "gauge", "Members this node knows of, by state");
  for (int s = 0; s < 4; ++s) {
    t.sample("floodgate_cluster_members", label("state", state_name(static_cast<MemberState>(s))),
             static_cast<double>(by_state[s]));
  }
  t.one("floodgate_cluster_epoch", "gauge", "Epoch of the slot table in force",
        static_cast<double>(rt->epoch));
  t.one("floodgate_cluster_slots_served", "gauge", "Slots this node owns and serves",
        static_cast<double>(rt->serving.count()));
  t.one("floodgate_cluster_slots_awaited", "gauge", "Slots this node owns whose state is arriving",
        static_cast<double>(rt->awaiting.count()));
  t.one("floodgate_cluster_slots_in_grace", "gauge",
        "Slots this node owns with no reachable copy of their state, answering their fail mode",
        static_cast<double>(rt->lost.count()));
  t.one("floodgate_ready", "gauge", "1 when /readyz answers 200", not_ready().empty() ? 1 : 0);
  if (!cluster_) return t.str();
  const ReplicationCounters& r = cluster_->replication();
  t.one("floodgate_replication_round_seconds", "gauge",
        "Replication lag: the last round from changes collected to every replica's ack",
        static_cast<double>(r.last_round_us.load()) / 1e6);
  t.one("floodgate_replication_lag_bound_seconds", "gauge",
        "replication-lag (Δ): what a failover may lose of a policy that is not sync is what was "
        "admitted in the last Δ, as long as rounds keep within it",
        static_cast<double>(cluster_->replication_lag_ms()) / 1e3);
  t.one("floodgate_replication_copies_pending", "gauge",
        "Slot copies held here that a replica does not yet hold whole (0: any replica can take "
        "over without loss)",
        load(r.copies_pending));
  t.one("floodgate_replication_keys_sent_total", "counter", "Key changes shipped to replicas",
        load(r.keys_sent));
  t.one("floodgate_replication_failures_total", "counter", "Updates a replica did not take",
        load(r.update_failures));
  t.one("floodgate_replication_sync_failures_total", "counter",
        "Synchronous replies whose replicas did not acknowledge in time", load(r.sync_failures));
  const ClusterCounters& c = cluster_->counters();
  t.one("floodgate_handoffs_sent_total", "counter", "Slot hand-offs completed as sender",
        load(c.handoffs_sent));
  t.one("floodgate_slots_promoted_total", "counter",
        "Slots served from this replica's copy after their owner failed", load(c.slots_promoted));
  t.one("floodgate_slot_table_changes_total", "counter", "Slot tables adopted",
        load(c.table_changes));
  t.one("floodgate_keys_merged_total", "counter",
        "Keys whose state a copy from elsewhere (a snapshot restored from disk) changed here",
        load(c.keys_merged));
  t.one("floodgate_slots_started_empty_total", "counter",
        "Slots this node began serving with no state for them", load(c.slots_started_empty));
  t.one("floodgate_policy_book_exchanges_total", "counter",
        "Policy book push-pulls with other nodes", static_cast<double>(cluster_->book_exchanges()));
  if (const BusKey* key = cluster_->config().bus_key) {
    const BusCounters& b = key->counters();
    t.family("floodgate_bus_refused_total", "counter",
             "Bus traffic refused: gossip not sealed with the cluster secret, stale, replayed or "
             "addressed to another node; peer links without a good handshake or frame tag");
    t.sample("floodgate_bus_refused_total", label("reason", "unsealed"), load(b.refused_unsealed));
    t.sample("floodgate_bus_refused_total", label("reason", "bad_mac"), load(b.refused_bad_mac));
    t.sample("floodgate_bus_refused_total", label("reason", "stale"), load(b.refused_stale));
    t.sample("floodgate_bus_refused_total", label("reason", "replay"), load(b.refused_replay));
    t.sample("floodgate_bus_refused_total", label("reason", "peer_link"), load(b.refused_peer));
    t.sample("floodgate_bus_refused_total", label("reason", "receiver"), load(b.refused_receiver));
  }
  return t.str();
}

}  // namespace fg
