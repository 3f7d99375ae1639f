// Server commands: INFO COMMAND CONFIG DBSIZE TIME.
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <utility>

#include "cluster.hpp"
#include "command_context.hpp"
#include "command_docs.hpp"
#include "command_table.hpp"
#include "encoding_thresholds.hpp"
#include "errors.hpp"
#include "handlers.hpp"
#include "key_events.hpp"
#include "policy_ids.hpp"
#include "script_engine.hpp"
#include "snapshotter.hpp"
#include "words.hpp"

namespace fg {

namespace {
int64_t rss_bytes() {
  std::ifstream f("/proc/self/statm");
  long pages_total = 0, pages_rss = 0;
  f >> pages_total >> pages_rss;
  return static_cast<int64_t>(pages_rss) * sysconf(_SC_PAGESIZE);
}

std::string human_bytes(int64_t b) {
  char buf[32];
  if (b >= (int64_t{1} << 30)) {
    snprintf(buf, sizeof buf, "%.2fG", static_cast<double>(b) / (1 << 30));
  } else if (b >= (1 << 20)) {
    snprintf(buf, sizeof buf, "%.2fM", static_cast<double>(b) / (1 << 20));
  } else {
    snprintf(buf, sizeof buf, "%.2fK", static_cast<double>(b) / 1024);
  }
  return buf;
}

using Section = std::pair<const char*, std::string>;

std::vector<Section> info_sections(CommandContext& s) {
  Services& v = s.svc();
  const NodeSettings& st = v.settings;
  const int64_t now_ms = v.clock->now_ns() / 1'000'000;
  const int64_t up_s = (now_ms - st.start_ms) / 1000;
  const int64_t keys = v.shards->keys();
  const int64_t rss = rss_bytes();
  const RequestMetrics::Counts counts = v.metrics->counts_since_reset();
  auto kv = [](std::string& out, const char* k, const std::string& val) {
    out += k;
    out += ':';
    out += val;
    out += "\r\n";
  };
  auto n = [](int64_t x) { return std::to_string(x); };
  std::vector<Section> out;
  std::string sv;
  kv(sv, "floodgate_version", st.version);
  kv(sv, "redis_version", REDIS_API_VERSION);  // the Redis API level the RESP face follows
  kv(sv, "redis_mode", v.routing ? "cluster" : "standalone");
  kv(sv, "os", "Linux");
  kv(sv, "arch_bits", "64");
  kv(sv, "process_id", n(getpid()));
  kv(sv, "run_id", st.run_id);
  // The settings in force, as CONFIG GET has them (the settings table's: node/settings.hpp).
  const auto settings =
      v.config_values ? v.config_values() : std::vector<std::pair<std::string, std::string>>{};
  auto setting = [&settings](std::string_view key) {
    for (const auto& [k, val] : settings)
      if (k == key) return val;
    return std::string("0");
  };
  kv(sv, "tcp_port",  // (as Redis: the TLS port if there is no plain one)
     st.port ? n(st.port) : setting("tls-port"));
  kv(sv, "native_port", n(st.native_port));
  kv(sv, "uptime_in_seconds", n(up_s));
  kv(sv, "uptime_in_days", n(up_s / 86400));
  kv(sv, "io_threads", setting("io-threads"));
  kv(sv, "shard_threads", setting("shard-threads"));
  kv(sv, "io_idle_poll_us", setting("io-idle-poll-us"));
  kv(sv, "config_file", st.config_file);
  out.emplace_back("server", std::move(sv));
  std::string cl;
  kv(cl, "connected_clients", n(static_cast<int64_t>(v.clients->count())));
  kv(cl, "maxclients", n(static_cast<int64_t>(v.clients->max_clients())));
  kv(cl, "blocked_clients", n(static_cast<int64_t>(v.waiters.blocked())));
  out.emplace_back("clients", std::move(cl));
  std::string mem;
  // used_memory: what the node reckons it holds (the keyspace, client buffers, Lua heaps,
  // the script cache); maxmemory is held against the keyspace's part (used_memory_dataset).
  const int64_t dataset = v.accounts ? v.accounts->total_bytes() : v.shards->bytes();
  const int64_t scripts_heap = v.scripts ? v.scripts->heap_bytes() : 0;
  const int64_t scripts_cache = v.scripts ? static_cast<int64_t>(v.scripts->cache_bytes()) : 0;
  const int64_t used = dataset + v.clients->memory() + scripts_heap + scripts_cache;
  const int64_t most = v.accounts ? v.accounts->maxmemory() : 0;
  kv(mem, "used_memory", n(used));
  kv(mem, "used_memory_human", human_bytes(used));
  kv(mem, "used_memory_rss", n(rss));
  kv(mem, "used_memory_rss_human", human_bytes(rss));
  kv(mem, "used_memory_dataset", n(dataset));
  kv(mem, "mem_clients_normal", n(v.clients->memory()));
  kv(mem, "maxmemory_clients", n(v.clients->max_memory()));
  kv(mem, "limiter_state_bytes", n(v.shards->bytes()));
  kv(mem, "maxmemory", n(most));
  kv(mem, "maxmemory_human", human_bytes(most));
  kv(mem, "maxmemory_policy", "noeviction");
  if (v.scripts) {
    kv(mem, "number_of_cached_scripts", n(static_cast<int64_t>(v.scripts->scripts())));
    kv(mem, "used_memory_scripts_eval", n(scripts_cache));
    kv(mem, "used_memory_vm_eval", n(scripts_heap));
  }
  out.emplace_back("memory", std::move(mem));
  std::string pers;
  kv(pers, "loading", "0");  // (a node loads its snapshot before it listens)
  if (v.snapshots) {
    const SnapshotStatus ss = v.snapshots->status();
    kv(pers, "rdb_bgsave_in_progress", ss.in_progress ? "1" : "0");
    kv(pers, "rdb_last_save_time", n(ss.last_save_ms / 1000));
    kv(pers, "rdb_last_bgsave_status", ss.last_ok ? "ok" : "err");
    kv(pers, "rdb_last_bgsave_time_sec",
       n(ss.last_duration_ms < 0 ? -1 : ss.last_duration_ms / 1000));
    kv(pers, "rdb_saves", n(static_cast<int64_t>(ss.saves_ok)));
    kv(pers, "snapshot_file", v.snapshots->path());
    kv(pers, "snapshot_keys", n(ss.last_keys));
    kv(pers, "snapshot_bytes", n(ss.last_bytes));
    kv(pers, "snapshot_failures", n(static_cast<int64_t>(ss.saves_failed)));
  } else {
    kv(pers, "rdb_bgsave_in_progress", "0");
    kv(pers, "rdb_last_save_time", n(st.start_ms / 1000));
    kv(pers, "snapshot_file", "");
  }
  kv(pers, "aof_enabled", "0");
  out.emplace_back("persistence", std::move(pers));
  std::string stats;
  kv(stats, "total_connections_received", n(static_cast<int64_t>(v.clients->total_accepted())));
  kv(stats, "total_commands_processed", n(static_cast<int64_t>(v.counters.commands.load())));
  kv(stats, "total_error_replies", n(static_cast<int64_t>(v.errors.total())));
  kv(stats, "rejected_connections", n(static_cast<int64_t>(v.clients->rejected())));
  kv(stats, "past_deadline_refused", n(static_cast<int64_t>(v.counters.past_deadline.load())));
  kv(stats, "evicted_clients", n(static_cast<int64_t>(v.clients->evicted())));
  if (v.acl) {
    kv(stats, "acl_access_denied_auth", n(static_cast<int64_t>(v.acl->denied_auth.load())));
    kv(stats, "acl_access_denied_cmd", n(static_cast<int64_t>(v.acl->denied_cmd.load())));
    kv(stats, "acl_access_denied_key", n(static_cast<int64_t>(v.acl->denied_key.load())));
    kv(stats, "acl_access_denied_channel", n(static_cast<int64_t>(v.acl->denied_channel.load())));
  }
  kv(stats, "pubsub_channels", n(v.pubsub.channel_count(ChannelKind::kChannel)));
  kv(stats, "pubsub_patterns", n(v.pubsub.numpat()));
  kv(stats, "pubsubshard_channels", n(v.pubsub.channel_count(ChannelKind::kShard)));
  kv(stats, "pubsub_subscriptions", n(v.pubsub.subscriptions.load()));
  kv(stats, "pubsub_bus_bytes", n(v.pubsub.bus_bytes.load()));
  kv(stats, "pubsub_bus_refused", n(static_cast<int64_t>(v.pubsub.bus_refused.load())));
  kv(stats, "keyspace_events_published",
     n(static_cast<int64_t>(key_events().published.load(std::memory_order_relaxed))));
  kv(stats, "keyspace_events_dropped",
     n(static_cast<int64_t>(key_events().dropped.load(std::memory_order_relaxed))));
  kv(stats, "expired_keys", n(v.shards->expired()));
  kv(stats, "protocol_errors", n(static_cast<int64_t>(v.counters.protocol_errors.load())));
  kv(stats, "clients_dropped_slow_reader", n(static_cast<int64_t>(v.counters.dropped_slow.load())));
  kv(stats, "clients_dropped_timeout", n(static_cast<int64_t>(v.counters.dropped_timeout.load())));
  kv(stats, "io_idle_poll_hits", n(static_cast<int64_t>(v.counters.idle_poll_hits.load())));
  kv(stats, "io_idle_poll_misses", n(static_cast<int64_t>(v.counters.idle_poll_misses.load())));
  if (v.scripts) {
    const ScriptCounters& sc = v.scripts->counters();
    kv(stats, "script_runs", n(static_cast<int64_t>(sc.runs.load())));
    kv(stats, "script_errors", n(static_cast<int64_t>(sc.errors.load())));
    kv(stats, "script_runs_over_budget", n(static_cast<int64_t>(sc.over_budget.load())));
    kv(stats, "script_evals_not_cached", n(static_cast<int64_t>(sc.not_kept.load())));
  }
  out.emplace_back("stats", std::move(stats));
  std::string es;
  for (const auto& [code, count] : v.errors.codes())
    kv(es, ("errorstat_" + code).c_str(), "count=" + n(static_cast<int64_t>(count)));
  out.emplace_back("errorstats", std::move(es));
  // Per command, since the last CONFIG RESETSTAT (not in the default sections, as Redis).
  std::string cmds;
  for (uint16_t id = 0; id < kUnknownCommandId; ++id) {
    uint64_t calls = 0;
    for (uint64_t c : counts.requests[id]) calls += c;
    if (calls == 0) continue;
    const uint64_t us = counts.latency_sum_us[id];
    char per[32];
    std::snprintf(per, sizeof per, "%.2f", static_cast<double>(us) / static_cast<double>(calls));
    kv(cmds, ("cmdstat_" + command_id_name(id)).c_str(),
       "calls=" + std::to_string(calls) + ",usec=" + std::to_string(us) + ",usec_per_call=" + per +
           ",rejected_calls=0,failed_calls=" +
           std::to_string(counts.requests[id][static_cast<size_t>(RequestResult::kError)]));
  }
  out.emplace_back("commandstats", std::move(cmds));
  std::string repl;
  kv(repl, "role", "master");
  kv(repl, "connected_slaves", "0");
  out.emplace_back("replication", std::move(repl));
  std::string fgsec;
  kv(fgsec, "shards", n(static_cast<int64_t>(v.shards->size())));
  kv(fgsec, "max_keys", n(static_cast<int64_t>(v.shards->config().max_keys)));
  {
    auto ps = v.policies->snapshot();
    char digest[17];
    std::snprintf(digest, sizeof digest, "%016llx", static_cast<unsigned long long>(ps->digest));
    kv(fgsec, "policies", n(static_cast<int64_t>(ps->policies.size())));
    kv(fgsec, "policy_patterns", n(static_cast<int64_t>(ps->patterns.size())));
    kv(fgsec, "policy_overrides", n(static_cast<int64_t>(ps->overrides.size())));
    kv(fgsec, "policy_book_digest", digest);
    // Would-be denials of shadow policies (those in shadow mode now, and any that denied in
    // shadow mode before), since the last CONFIG RESETSTAT: name=count,...
    std::string shadow;
    const auto names = PolicyIds::get().names();
    for (size_t p = 1; p < counts.policy.size() && p < names.size(); ++p) {
      const auto it = ps->policies.find(names[p]);
      if (!(it != ps->policies.end() && it->second.shadow) && !counts.policy[p][2]) continue;
      shadow += (shadow.empty() ? "" : ",") + names[p] + "=" +
                n(static_cast<int64_t>(counts.policy[p][2]));
    }
    kv(fgsec, "policy_shadow_denied", shadow);
    // Takes waiting here for their admission (FG.TAKE ... WAIT), replies held.
    kv(fgsec, "waiting_takes", n(v.wait_room.waiting()));
  }
  out.emplace_back("floodgate", std::move(fgsec));
  std::string cs;
  kv(cs, "cluster_enabled", v.routing ? "1" : "0");
  if (v.routing) {
    const Routing* rt = s.routing();
    std::shared_ptr<const Routing> hold;
    if (!rt) {
      hold = v.routing->get();
      rt = hold.get();
    }
    kv(cs, "cluster_epoch", n(static_cast<int64_t>(rt->epoch)));
    kv(cs, "cluster_slots_served", n(static_cast<int64_t>(rt->serving.count())));
    kv(cs, "cluster_slots_awaited", n(static_cast<int64_t>(rt->awaiting.count())));
    kv(cs, "forwarded_commands", n(static_cast<int64_t>(v.counters.forwarded.load())));
    kv(cs, "forward_failures", n(static_cast<int64_t>(v.counters.forward_failures.load())));
    kv(cs, "forwarded_commands_served", n(static_cast<int64_t>(v.counters.forwards_served.load())));
    kv(cs, "moved_redirections", n(static_cast<int64_t>(v.counters.moved.load())));
    kv(cs, "slices_asked", n(static_cast<int64_t>(v.slices.asked.load())));
    kv(cs, "slices_granted", n(static_cast<int64_t>(v.slices.granted_slices.load())));
    kv(cs, "slice_admitted", n(static_cast<int64_t>(v.slices.admitted.load())));
    if (v.cluster) {
      const ClusterCounters& cc = v.cluster->counters();
      kv(cs, "slot_tables_adopted", n(static_cast<int64_t>(cc.table_changes.load())));
      kv(cs, "handoffs_sent", n(static_cast<int64_t>(cc.handoffs_sent.load())));
      kv(cs, "handoff_chunks_received", n(static_cast<int64_t>(cc.handoffs_received.load())));
      kv(cs, "handoff_keys_sent", n(static_cast<int64_t>(cc.keys_sent.load())));
      kv(cs, "handoff_keys_received", n(static_cast<int64_t>(cc.keys_received.load())));
      kv(cs, "slots_started_empty", n(static_cast<int64_t>(cc.slots_started_empty.load())));
      kv(cs, "slots_promoted", n(static_cast<int64_t>(cc.slots_promoted.load())));
      kv(cs, "slots_in_grace", n(static_cast<int64_t>(rt->lost.count())));
      kv(cs, "slots_given_grace", n(static_cast<int64_t>(cc.slots_given_grace.load())));
      kv(cs, "times_fenced", n(static_cast<int64_t>(cc.fenced.load())));
      kv(cs, "keys_merged", n(static_cast<int64_t>(cc.keys_merged.load())));
      kv(cs, "keys_sent_for_merge_when_fenced", n(static_cast<int64_t>(cc.keys_fenced.load())));
      kv(cs, "restored_keys_pending", n(static_cast<int64_t>(cc.restore_pending.load())));
      kv(cs, "restored_keys_dropped", n(static_cast<int64_t>(cc.restore_dropped.load())));
      kv(cs, "restored_snapshot_superseded", n(static_cast<int64_t>(cc.restore_superseded.load())));
      kv(cs, "not_serving_episodes", n(static_cast<int64_t>(cc.not_serving.load())));
      kv(cs, "members_declared_dead", n(static_cast<int64_t>(cc.members_dead.load())));
      kv(cs, "members_suspected", n(static_cast<int64_t>(cc.members_suspected.load())));
      const ReplicationCounters& rc = v.cluster->replication();
      auto u = [&](const std::atomic<uint64_t>& x) { return n(static_cast<int64_t>(x.load())); };
      kv(cs, "cluster_replicas", n(static_cast<int64_t>(rt->replicas)));
      kv(cs, "cluster_quorum", rt->quorum ? "1" : "0");
      kv(cs, "replication_updates_sent", u(rc.updates_sent));
      kv(cs, "replication_keys_sent", u(rc.keys_sent));
      kv(cs, "replication_slots_copied", u(rc.full_copies_sent));
      kv(cs, "replication_copies_pending", u(rc.copies_pending));
      kv(cs, "replication_whole_copies_held", u(rc.whole_copies_held));
      kv(cs, "replication_failures", u(rc.update_failures));
      kv(cs, "replication_updates_received", u(rc.updates_received));
      kv(cs, "replication_keys_received", u(rc.keys_received));
      kv(cs, "replication_fenced_updates", u(rc.fenced_updates));
      kv(cs, "replication_last_round_us", n(rc.last_round_us.load()));
      kv(cs, "sync_replies", u(rc.sync_waits));
      kv(cs, "sync_replies_unacknowledged", u(rc.sync_failures));
    }
    kv(cs, "unavailable_errors", n(static_cast<int64_t>(v.counters.unavailable.load())));
    kv(cs, "fail_open_replies", n(static_cast<int64_t>(v.counters.fail_open.load())));
    kv(cs, "fail_closed_replies", n(static_cast<int64_t>(v.counters.fail_closed.load())));
  }
  out.emplace_back("cluster", std::move(cs));
  std::string ks;
  if (keys > 0) kv(ks, "db0", "keys=" + n(keys) + ",expires=" + n(keys) + ",avg_ttl=0");
  out.emplace_back("keyspace", std::move(ks));
  return out;
}

// A command's ACL categories as COMMAND INFO lists them ("@read", ...), in ACL CAT's order.
void write_categories(RespWriter& w, const AclCatalog* catalog, std::string_view full_name) {
  const int i = catalog ? catalog->find(full_name) : -1;
  const uint32_t bits = i >= 0 ? catalog->at(i).categories : 0;
  size_t n = 0;
  for (const auto& [name, bit] : acl_categories()) n += (bits & bit) ? 1 : 0;
  w.set(n);
  for (const auto& [name, bit] : acl_categories())
    if (bits & bit) w.simple(std::string("@") + name);
}

// A key spec's flags, as Redis's: RO access, OW update, or RW access update.
void write_key_flags(RespWriter& w, uint8_t access) {
  if (access == kReads) {
    w.set(2);
    w.simple("RO");
    w.simple("access");
  } else if (access == kWrites) {
    w.set(2);
    w.simple("OW");
    w.simple("update");
  } else if (access == kReadsWrites) {
    w.set(3);
    w.simple("RW");
    w.simple("access");
    w.simple("update");
  } else {
    w.set(0);
  }
}

// Redis 7's key specs for a command's key layout: its fixed keys (where the search begins,
// and the range from there), then its counted ones (EVAL's, ZUNIONSTORE's sources: the
// count's index, the keys right after it).
void write_key_specs(RespWriter& w, const CommandSpec& c) {
  const bool fixed = c.keyed(), counted = c.keys.numkeys_at > 0;
  if (c.keys.after_streams) {  // (XREAD's: the keyword STREAMS, then half of what follows)
    w.array(1);
    w.map(3);
    w.bulk("flags");
    write_key_flags(w, c.keys.access);
    w.bulk("begin_search");
    w.map(2);
    w.bulk("type");
    w.bulk("keyword");
    w.bulk("spec");
    w.map(2);
    w.bulk("keyword");
    w.bulk("STREAMS");
    w.bulk("startfrom");
    w.integer(1);
    w.bulk("find_keys");
    w.map(2);
    w.bulk("type");
    w.bulk("range");
    w.bulk("spec");
    w.map(3);
    w.bulk("lastkey");
    w.integer(-1);
    w.bulk("keystep");
    w.integer(1);
    w.bulk("limit");
    w.integer(2);
    return;
  }
  w.array((fixed ? 1 : 0) + (counted ? 1 : 0));
  // a search step: its type, then its spec's fields
  auto spec = [&](const char* type, std::initializer_list<std::pair<const char*, int64_t>> fields) {
    w.bulk(type);
    w.bulk("spec");
    w.map(fields.size());
    for (const auto& [name, value] : fields) {
      w.bulk(name);
      w.integer(value);
    }
  };
  // a spec's flags, where its search begins, and the type of its find_keys (spec follows)
  auto begin = [&](int index) {
    w.map(3);
    w.bulk("flags");
    write_key_flags(w, c.keys.access);
    w.bulk("begin_search");
    w.map(2);
    w.bulk("type");
    spec("index", {{"index", index}});
    w.bulk("find_keys");
    w.map(2);
    w.bulk("type");
  };
  if (fixed) {
    begin(c.keys.first);
    spec("range", {{"lastkey", c.keys.last < 0 ? c.keys.last : c.keys.last - c.keys.first},
                   {"keystep", c.keys.step},
                   {"limit", 0}});
  }
  if (counted) {
    begin(c.keys.numkeys_at);
    spec("keynum", {{"keynumidx", 0}, {"firstkey", 1}, {"keystep", 1}});
  }
}

// (as Redis's: "readonly" only for a command that reads keys without writing them)
void write_flags(RespWriter& w, const CommandSpec& c) {
  const uint32_t flags = c.flags;
  const bool readonly = !(flags & kWrite) && c.has_keys();
  const int n = ((flags & kWrite) || readonly ? 1 : 0) + ((flags & kFast) ? 1 : 0) +
                ((flags & kNoAuth) ? 1 : 0) + ((flags & kNoMulti) ? 1 : 0);
  w.set(static_cast<size_t>(n));
  if (flags & kWrite) w.simple("write");
  if (readonly) w.simple("readonly");
  if (flags & kFast) w.simple("fast");
  if (flags & kNoAuth) w.simple("no_auth");
  if (flags & kNoMulti) w.simple("no_multi");
}

// One command as Redis 7's COMMAND INFO has it: name, arity, flags, first key, last key,
// step, ACL categories, tips, key specs, subcommands (each in the same shape, named
// "parent|sub").
void write_command_info(RespWriter& w, const CommandSpec& c, const AclCatalog* catalog) {
  w.array(10);
  w.bulk(c.name);
  w.integer(c.arity);
  write_flags(w, c);
  w.integer(c.keys.first);
  w.integer(c.keys.last);
  w.integer(c.keyed() ? c.keys.step : 0);
  write_categories(w, catalog, c.name);
  const std::vector<std::string> tips = command_tips(c);
  w.array(tips.size());
  for (const std::string& t : tips) w.bulk(t);
  write_key_specs(w, c);
  w.array(c.subcommands.size());
  for (const SubcommandSpec& sub : c.subcommands) {
    const std::string full = std::string(c.name) + "|" + sub.name;
    w.array(10);
    w.bulk(full);
    w.integer(sub.arity != 0 ? sub.arity : -2);
    write_flags(w, c);
    w.integer(0);
    w.integer(0);
    w.integer(0);
    write_categories(w, catalog, full);
    w.array(0);
    w.array(0);
    w.array(0);
  }
}

}  // namespace

void cmd_info(CommandContext& s, Args& a) {
  auto sections = info_sections(s);
  std::string text;
  for (const auto& [name, body] : sections) {
    const bool in_default = std::string_view(name) != "commandstats";
    bool want = a.size() == 1 && in_default;
    for (size_t i = 1; i < a.size() && !want; ++i) {
      want = iequals(a[i], name) || iequals(a[i], "all") || iequals(a[i], "everything") ||
             (in_default && iequals(a[i], "default"));
    }
    if (!want) continue;
    if (!text.empty()) text += "\r\n";
    std::string title = name;
    title[0] = static_cast<char>(std::toupper(title[0]));
    text += "# " + title + "\r\n" + body;
  }
  s.local().bulk(text);
}

namespace {
// COMMAND GETKEYS / GETKEYSANDFLAGS command arg...: the keys `command` would touch, as
// Redis 7 answers (with their key-spec flags, for the second).
void command_getkeys(RespWriter& w, Args& a, bool flags) {
  if (a.size() < 4) {
    return w.error(err::wrong_arity(flags ? "command|getkeysandflags" : "command|getkeys"));
  }
  const CommandSpec* c = find_command(a[2]);
  if (!c) return w.error("ERR Invalid command specified");
  const size_t words = a.size() - 2;
  if ((c->arity > 0 && words != static_cast<size_t>(c->arity)) ||
      (c->arity < 0 && words < static_cast<size_t>(-c->arity))) {
    return w.error("ERR Invalid number of arguments specified for command");
  }
  if (!c->has_keys()) {
    return w.error("ERR The command has no key arguments");
  }
  const std::vector<std::string_view> line(a.begin() + 2, a.end());
  const std::vector<size_t> at = c->key_positions(line);
  w.array(at.size());
  for (size_t j : at) {
    const size_t i = 2 + j;  // (in a)
    if (!flags) {
      w.bulk(a[i]);
      continue;
    }
    w.array(2);
    w.bulk(a[i]);
    const uint8_t access = c->keys.access;
    const std::vector<const char*> names =
        access == kReads         ? std::vector<const char*>{"RO", "access"}
        : access == kWrites      ? std::vector<const char*>{"OW", "update"}
        : access == kReadsWrites ? std::vector<const char*>{"RW", "access", "update"}
                                 : std::vector<const char*>{};
    w.set(names.size());
    for (const char* n : names) w.simple(n);
  }
}
}  // namespace

// COMMAND | COMMAND COUNT | COMMAND INFO name... | COMMAND DOCS [name...] | COMMAND LIST |
// COMMAND GETKEYS command arg... | COMMAND GETKEYSANDFLAGS command arg...
void cmd_command(CommandContext& s, Args& a) {
  RespWriter w = s.local();
  const auto& all = all_commands();
  const AclCatalog* catalog = s.svc().acl ? &s.svc().acl->catalog() : nullptr;
  if (a.size() == 1) {
    w.array(all.size());
    for (const auto& c : all) write_command_info(w, c, catalog);
    return;
  }
  const std::string_view sub = a[1];
  if (iequals(sub, "count") && a.size() == 2) {
    w.integer(static_cast<int64_t>(all.size()));
  } else if (iequals(sub, "list")) {
    w.array(all.size());
    for (const auto& c : all) w.bulk(c.name);
  } else if (iequals(sub, "info")) {
    w.array(a.size() - 2);
    for (size_t i = 2; i < a.size(); ++i) {
      const CommandSpec* c = find_command(a[i]);
      if (c) {
        write_command_info(w, *c, catalog);
      } else {
        w.null_array();
      }
    }
  } else if (iequals(sub, "getkeys") || iequals(sub, "getkeysandflags")) {
    command_getkeys(w, a, iequals(sub, "getkeysandflags"));
  } else if (iequals(sub, "docs")) {
    std::vector<const CommandSpec*> list;
    if (a.size() == 2) {
      for (const auto& c : all) list.push_back(&c);
    } else {
      for (size_t i = 2; i < a.size(); ++i)
        if (const CommandSpec* c = find_command(a[i])) list.push_back(c);
    }
    w.map(list.size());
    for (const CommandSpec* c : list) write_command_docs(w, *c);
  } else {
    w.error(err::unknown_subcommand(sub, "COMMAND HELP"));
  }
}

// CONFIG GET pattern [pattern ...]: read-only answers for what clients and tools ask.
namespace {

// redis-server's encoding thresholds (actors/encoding_thresholds.hpp) by every name Redis 7.0
// knows them under: CONFIG SET takes them, CONFIG GET shows them.
struct Tunable {
  const char* name;
  std::atomic<int64_t> EncodingThresholds::*field;
  int64_t min;
};
constexpr Tunable kTunables[] = {
    {"hash-max-listpack-entries", &EncodingThresholds::hash_entries, 0},
    {"hash-max-ziplist-entries", &EncodingThresholds::hash_entries, 0},
    {"hash-max-listpack-value", &EncodingThresholds::hash_value, 0},
    {"hash-max-ziplist-value", &EncodingThresholds::hash_value, 0},
    {"zset-max-listpack-entries", &EncodingThresholds::zset_entries, 0},
    {"zset-max-ziplist-entries", &EncodingThresholds::zset_entries, 0},
    {"zset-max-listpack-value", &EncodingThresholds::zset_value, 0},
    {"zset-max-ziplist-value", &EncodingThresholds::zset_value, 0},
    {"set-max-intset-entries", &EncodingThresholds::set_intset, 0},
    {"list-max-listpack-size", &EncodingThresholds::list_size, INT32_MIN},
    {"list-max-ziplist-size", &EncodingThresholds::list_size, INT32_MIN},
    {"list-compress-depth", &EncodingThresholds::list_depth, 0},
    {"stream-node-max-entries", &EncodingThresholds::stream_node_entries, 0},
    {"stream-node-max-bytes", &EncodingThresholds::stream_node_bytes, 0},
};

const Tunable* find_tunable(std::string_view name) {
  for (const Tunable& t : kTunables)
    if (iequals(name, t.name)) return &t;
  return nullptr;
}

// The node's settings as the settings table has them (node/settings.hpp, with Redis's
// "save" made from dir and save-interval), and what clients and tools ask of redis-server
// that has one answer here: CONFIG GET reads them, CONFIG SET refuses to change them.
std::vector<std::pair<std::string, std::string>> own_settings(CommandContext& s) {
  std::vector<std::pair<std::string, std::string>> params =
      s.svc().config_values ? s.svc().config_values()
                            : std::vector<std::pair<std::string, std::string>>{};
  params.emplace_back("databases", "1");
  if (std::none_of(params.begin(), params.end(), [](const auto& p) { return p.first == "save"; }))
    params.emplace_back("save", "");  // (no settings table: nothing is saved)
  params.emplace_back("appendonly", "no");
  if (std::none_of(params.begin(), params.end(),
                   [](const auto& p) { return p.first == "maxmemory"; }))
    params.emplace_back("maxmemory", "0");  // (no settings table: no cap)
  params.emplace_back("maxmemory-policy", "noeviction");
  return params;
}

// CONFIG SET parameter value [parameter value ...]: all or nothing, as Redis. The node's
// own settings go to its settings table (node/settings.hpp: those a running node can take
// are put in force, the rest answer that they are immutable).
void config_set(CommandContext& s, Args& a, RespWriter& w) {
  if (a.size() < 4 || a.size() % 2 != 0) return w.error(err::wrong_arity("config|set"));
  std::vector<std::pair<const Tunable*, int64_t>> changes;
  std::vector<std::pair<std::string, std::string>> node_changes;
  const auto settings = own_settings(s);
  for (size_t j = 2; j < a.size(); j += 2) {
    const Tunable* t = find_tunable(a[j]);
    if (!t) {
      const auto ours = std::find_if(settings.begin(), settings.end(),
                                     [&](const auto& p) { return iequals(p.first, a[j]); });
      if (s.svc().config_set) {
        node_changes.emplace_back(std::string(a[j]), std::string(a[j + 1]));
        continue;
      }
      if (ours != settings.end() && ours->second == a[j + 1]) continue;  // (already so)
      return w.error(ours != settings.end() ? err::config_immutable(a[j])
                                            : err::config_unknown(a[j]));
    }
    int64_t v = 0;
    if (!parse_int(a[j + 1], v) || v < t->min || v > INT32_MAX) {
      return w.error(err::config_set_failed(a[j]));
    }
    changes.emplace_back(t, v);
  }
  if (!node_changes.empty()) {
    // (Redis's fixed answers — databases, appendonly, maxmemory-policy — are no settings
    // here: set to what they are, nothing changes; to anything else, they are immutable)
    std::vector<std::pair<std::string, std::string>> table;
    for (auto& [name, value] : node_changes) {
      const bool fixed = iequals(name, "databases") || iequals(name, "appendonly") ||
                         iequals(name, "maxmemory-policy") || iequals(name, "save");
      if (fixed) {
        const auto ours = std::find_if(settings.begin(), settings.end(),
                                       [&](const auto& p) { return iequals(p.first, name); });
        if (ours != settings.end() && ours->second == value) continue;
        return w.error(err::config_immutable(name));
      }
      table.emplace_back(std::move(name), std::move(value));
    }
    if (!table.empty()) {
      if (const std::string e = s.svc().config_set(table); !e.empty()) return w.error(e);
    }
  }
  for (const auto& [t, v] : changes) (encoding_thresholds().*(t->field)).store(v);
  w.ok();
}

}  // namespace

void cmd_config(CommandContext& s, Args& a) {
  RespWriter w = s.local();
  if (iequals(a[1], "set")) return config_set(s, a, w);
  if (iequals(a[1], "rewrite")) {
    if (a.size() != 2) return w.error(err::wrong_arity("config|rewrite"));
    if (!s.svc().config_rewrite) return w.error("ERR The server is running without a config file");
    const std::string e = s.svc().config_rewrite();
    return e.empty() ? w.ok() : w.error(e);
  }
  if (iequals(a[1], "resetstat")) {  // (the figures INFO shows; /metrics keeps counting)
    if (a.size() != 2) return w.error(err::wrong_arity("config|resetstat"));
    s.svc().errors.reset();
    s.svc().metrics->reset_view();
    s.svc().counters.commands.store(0, std::memory_order_relaxed);
    return w.ok();
  }
  if (!iequals(a[1], "get")) {
    return w.error(err::config_get_only(a[1]));
  }
  if (a.size() < 3) return w.error(err::wrong_arity("config|get"));
  std::vector<std::pair<std::string, std::string>> params = own_settings(s);
  for (const Tunable& t : kTunables)
    params.emplace_back(t.name, std::to_string((encoding_thresholds().*(t.field)).load()));
  std::vector<const std::pair<std::string, std::string>*> hits;
  for (const auto& p : params) {
    for (size_t i = 2; i < a.size(); ++i) {
      if (glob_match(a[i], p.first, true)) {
        hits.push_back(&p);
        break;
      }
    }
  }
  w.map(hits.size());
  for (const auto* p : hits) {
    w.bulk(p->first);
    w.bulk(p->second);
  }
}

// SLOWLOG GET [count] | LEN | RESET | HELP: this node's slow log (the RESP door's commands
// that took longer than slowlog-log-slower-than, from their batch's read to its replies).
void cmd_slowlog(CommandContext& s, Args& a) {
  RespWriter w = s.local();
  SlowLog& log = s.svc().slowlog;
  const std::string_view sub = a[1];
  if (iequals(sub, "help") && a.size() == 2) {
    static constexpr const char* kHelp[] = {
        "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "GET [<count>]",
        "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
        "    Entries are made of:",
        "    id, timestamp, time in microseconds, arguments array, client IP and port,",
        "    client name",
        "LEN",
        "    Return the length of the slowlog.",
        "RESET",
        "    Reset the slowlog.",
        "HELP",
        "    Print this help."};
    return w.help(kHelp);
  }
  if (iequals(sub, "reset") && a.size() == 2) {
    log.reset();
    return w.ok();
  }
  if (iequals(sub, "len") && a.size() == 2) return w.integer(static_cast<int64_t>(log.size()));
  if (iequals(sub, "get") && (a.size() == 2 || a.size() == 3)) {
    int64_t count = 10;
    if (a.size() == 3) {
      if (!parse_int(a[2], count)) return w.error(err::kNotInteger);
      if (count < -1) return w.error("ERR count should be greater than or equal to -1");
    }
    const std::vector<SlowEntry> entries = log.newest(count);
    w.array(entries.size());
    for (const SlowEntry& e : entries) {
      w.array(6);
      w.integer(e.id);
      w.integer(e.unix_s);
      w.integer(e.duration_us);
      w.array(e.words.size());
      for (const std::string& word : e.words) w.bulk(word);
      w.bulk(e.addr);
      w.bulk(e.name);
    }
    return;
  }
  for (const char* known : {"get", "len", "reset", "help"}) {
    if (iequals(sub, known)) return w.error(err::wrong_arity("slowlog|" + std::string(known)));
  }
  w.error(err::unknown_subcommand(sub, "SLOWLOG HELP"));
}

bool slowlog_words(std::string_view name, std::vector<std::string_view>& words) {
  static constexpr std::string_view kRedacted = "(redacted)";
  const size_t n = words.size();
  if (iequals(name, "exec")) return false;
  if (iequals(name, "auth")) {
    for (size_t i = 1; i < n; ++i) words[i] = kRedacted;
  } else if (iequals(name, "hello")) {
    for (size_t i = 2; i < n; ++i) {
      if (iequals(words[i], "auth")) {
        for (size_t j = i + 1; j < std::min(n, i + 3); ++j) words[j] = kRedacted;
        break;
      }
    }
  } else if (iequals(name, "acl") && n > 1 && iequals(words[1], "setuser")) {
    for (size_t i = 2; i < n; ++i) words[i] = kRedacted;
  } else if (iequals(name, "config") && n > 1 && iequals(words[1], "set")) {
    for (size_t i = 2; i + 1 < n; i += 2) {
      for (const char* secret : {"requirepass", "masterauth", "masteruser", "tls-key-file-pass",
                                 "tls-client-key-file-pass"}) {
        if (iequals(words[i], secret)) words[i + 1] = kRedacted;
      }
    }
  }
  return true;
}

void cmd_dbsize(CommandContext& s, Args& a) { s.local().integer(s.svc().shards->keys()); }

// SAVE: answers once the file is on disk. The shards keep serving meanwhile; this
// connection's I/O thread waits for the disk (BGSAVE does not).
void cmd_save(CommandContext& s, Args& a) {
  RespWriter w = s.local();
  Snapshotter* snap = s.svc().snapshots;
  if (!snap) return w.error(err::kNoDir);
  if (snap->status().in_progress) return w.error(err::kSaveInProgress);
  if (const Status st = snap->save_and_wait(); !st) return w.error("ERR " + st.error());
  w.ok();
}

void cmd_bgsave(CommandContext& s, Args& a) {
  RespWriter w = s.local();
  const bool schedule = a.size() == 2 && iequals(a[1], "schedule");
  if (a.size() > 2 || (a.size() == 2 && !schedule)) return w.error(err::kSyntax);
  Snapshotter* snap = s.svc().snapshots;
  if (!snap) return w.error(err::kNoDir);
  if (snap->save()) return w.simple("Background saving started");
  w.error(err::kSaveInProgress);
}

void cmd_lastsave(CommandContext& s, Args& a) {
  const Snapshotter* snap = s.svc().snapshots;
  s.local().integer(snap ? snap->status().last_save_ms / 1000 : s.svc().settings.start_ms / 1000);
}

// SHUTDOWN [NOSAVE | SAVE] [NOW] [FORCE] [ABORT]: as SIGTERM (a cluster node hands its slots
// over first). Saves when the node has a dir, unless NOSAVE. On success the connection closes
// without a reply, as Redis's does.
void cmd_shutdown(CommandContext& s, Args& a) {
  RespWriter w = s.local();
  bool nosave = false;
  bool save = false;
  bool abort = false;
  bool other = false;
  for (size_t i = 1; i < a.size(); ++i) {
    if (iequals(a[i], "nosave")) {
      nosave = true;
    } else if (iequals(a[i], "save")) {
      save = true;
    } else if (iequals(a[i], "now") || iequals(a[i], "force")) {
      other = true;  // (nothing to wait for or to force here)
    } else if (iequals(a[i], "abort")) {
      abort = true;
    } else {
      return w.error(err::kSyntax);
    }
  }
  if ((abort && (nosave || save || other)) || (nosave && save)) return w.error(err::kSyntax);
  if (abort) return w.error(err::kNoShutdownInProgress);
  if (save && !s.svc().snapshots) return w.error(err::kNoDir);
  if (!s.svc().shutdown) return w.error(err::kShutdownFailed);
  s.svc().shutdown(!nosave);
  s.request_close();
}

void cmd_time(CommandContext& s, Args& a) {
  const int64_t us = s.svc().clock->now_ns() / 1000;
  RespWriter w = s.local();
  w.array(2);
  w.bulk(std::to_string(us / 1'000'000));
  w.bulk(std::to_string(us % 1'000'000));
}

}  // namespace fg
