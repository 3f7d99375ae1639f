// The rows of the settings table, and the readers each kind of value shares.
#include "settings.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <sstream>

#include "accounts.hpp"
#include "client_registry.hpp"
#include "client_socket.hpp"
#include "key_events.hpp"
#include "output_limits.hpp"
#include "services.hpp"
#include "shard_pool.hpp"
#include "user_shares.hpp"
#include "words.hpp"

namespace fg {

namespace {

// A setting's place in the config: a field of it, or of its TLS files.
template <class T>
struct Field {
  Field(T NodeConfig::*f) : node(f) {}  // NOLINT: rows name either bare
  Field(T TlsFiles::*f) : tls(f) {}     // NOLINT
  T& operator()(NodeConfig& c) const { return node ? c.*node : c.tls.*tls; }
  const T& operator()(const NodeConfig& c) const { return node ? c.*node : c.tls.*tls; }
  T NodeConfig::*node = nullptr;
  T TlsFiles::*tls = nullptr;
};

std::string between(int64_t lo, int64_t hi) {
  return "must be between " + std::to_string(lo) + " and " + std::to_string(hi);
}

template <class T>
Setting integer(const char* key, const char* flag, T NodeConfig::*m, int64_t lo, int64_t hi,
                const char* help) {
  const Field<T> f(m);
  Setting s{key, flag, help, "INT"};
  s.ranged = true;
  s.lo = lo;
  s.hi = hi;
  s.set = [f, lo, hi](NodeConfig& c, const std::string& v) -> Status {
    int64_t n;
    if (!parse_int(v, n)) return Error{"must be an integer"};
    if (n < lo || n > hi) return Error{between(lo, hi)};
    f(c) = static_cast<T>(n);
    return {};
  };
  s.get = [f](const NodeConfig& c) { return std::to_string(f(c)); };
  return s;
}

// Milliseconds, written "250ms", "30s", "1m", "2h", "1d" or as a bare number of ms; a
// setting whose range starts at 0 also takes "off" for 0.
Setting duration(const char* key, const char* flag, Field<int64_t> f, int64_t lo_ms, int64_t hi_ms,
                 const char* help) {
  Setting s{key, flag, help, "DURATION"};
  s.ranged = true;
  s.lo = lo_ms;
  s.hi = hi_ms;
  s.set = [f, lo_ms, hi_ms](NodeConfig& c, const std::string& v) -> Status {
    int64_t ms = 0;
    if (!(lo_ms == 0 && v == "off") && !parse_duration_ms(v, ms))
      return Error{"must be a duration such as 500ms, 30s, 1m or 2h"};
    if (ms < lo_ms || ms > hi_ms)
      return Error{"must be between " + std::to_string(lo_ms) + "ms and " + std::to_string(hi_ms) +
                   "ms"};
    f(c) = ms;
    return {};
  };
  s.get = [f](const NodeConfig& c) { return std::to_string(f(c)) + "ms"; };
  return s;
}

Setting text(const char* key, const char* flag, Field<std::string> f, const char* help,
             Status (*check)(const std::string&) = nullptr) {
  Setting s{key, flag, help, "TEXT"};
  s.set = [f, check](NodeConfig& c, const std::string& v) -> Status {
    if (check) {
      if (Status st = check(v); !st) return st;
    }
    f(c) = v;
    return {};
  };
  s.get = [f](const NodeConfig& c) { return f(c); };
  return s;
}

Setting yes_no(const char* key, const char* flag, Field<bool> f, const char* help) {
  Setting s{key, flag, help, "yes|no"};
  s.presence = true;
  s.set = [f](NodeConfig& c, const std::string& v) -> Status {
    // (YAML's words for a boolean)
    const std::string w = to_lower(v);
    if (w == "yes" || w == "true" || w == "on" || w == "y") {
      f(c) = true;
    } else if (w == "no" || w == "false" || w == "off" || w == "n") {
      f(c) = false;
    } else {
      return Error{"must be yes or no"};
    }
    return {};
  };
  s.get = [f](const NodeConfig& c) { return std::string(f(c) ? "yes" : "no"); };
  return s;
}

Setting choice(const char* key, const char* flag, Field<std::string> f,
               std::vector<std::string> words, const char* type, const char* help) {
  Setting s{key, flag, help, type};
  s.set = [f, words](NodeConfig& c, const std::string& v) -> Status {
    for (const std::string& w : words) {
      if (v == w) {
        f(c) = v;
        return {};
      }
    }
    std::string why = "must be ";
    for (size_t i = 0; i < words.size(); ++i)
      why += (i == 0 ? "" : i + 1 == words.size() ? " or " : ", ") + words[i];
    return Error{why};
  };
  s.get = [f](const NodeConfig& c) { return f(c); };
  return s;
}

// notify-keyspace-events: Redis's letters, kept as flags and written back as Redis writes
// them (CONFIG GET answers "AKE" for "KEA").
Setting notify_events(const char* key, const char* flag, const char* help) {
  Setting s{key, flag, help, "TEXT"};
  s.set = [](NodeConfig& c, const std::string& v) -> Status {
    uint32_t flags = 0;
    if (!parse_notify_flags(v, flags))
      return Error{"has a letter that is no event class; use the letters of Ag$lshzxeKEtmdn"};
    c.notify_flags = flags;
    return {};
  };
  s.get = [](const NodeConfig& c) { return notify_flags_text(c.notify_flags); };
  return s;
}

// A row a running node can change (CONFIG SET): `apply` puts the value in force.
Setting live(Setting s, std::function<void(RunningNode&, const NodeConfig&)> apply) {
  s.apply = std::move(apply);
  return s;
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (const std::string& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

std::vector<Setting> make_settings() {
  std::vector<Setting> t = {
      text("bind", "--bind", &NodeConfig::bind, "Addresses to listen on, space-separated"),
      integer("port", "--port", &NodeConfig::port, 0, 65535,
              "RESP port (0 picks a free one; with --tls-port, turns plain RESP off)"),
      integer("native-port", "--native-port", &NodeConfig::native_port, 0, 65535,
              "Native-protocol port (default: RESP port + 1000; 0 turns it off)"),
      integer("admin-port", "--admin-port", &NodeConfig::admin_port, 0, 65535,
              "Admin HTTP port: /metrics, /healthz, /readyz, /cluster, status page "
              "(default: RESP port + 2000; 0 turns it off)"),
      integer("rls-port", "--rls-port", &NodeConfig::rls_port, 0, 65535,
              "Envoy's rate-limit service (gRPC) on this port (0: off, the default)"),
      text("rls-config", "--rls-config", &NodeConfig::rls_config,
           "envoyproxy/ratelimit's YAML: a file or a directory of them; re-read on SIGHUP and "
           "when the files change"),
      yes_no("rls-response-headers", "--rls-response-headers", &NodeConfig::rls_response_headers,
             "The gateway door adds RateLimit-Limit, -Remaining and -Reset headers"),
      text("rls-user", "--rls-user", &NodeConfig::rls_user,
           "The ACL user whose rights the gateway door's requests run with (default: default)"),
      integer("rls-maxclients", "--rls-maxclients", &NodeConfig::rls_maxclients, 1, 1'000'000,
              "The gateway door's connections at once (plain or TLS); past it new ones are closed"),
      integer("rls-max-keys-per-domain", "--rls-max-keys-per-domain",
              &NodeConfig::rls_max_keys_per_domain, 1, int64_t{1} << 40,
              "Counters one gateway domain may have made on this node and still alive; past "
              "it the least recently used counter of the caller holding the most is forgotten "
              "and reset"),
      duration("rlqs-slice", "--rlqs-slice-ms", &NodeConfig::rlqs_slice_ms, 10, 3'600'000,
               "The quota service's (RLQS) period: how often each gateway bucket writes its "
               "demand to its counter's table and takes its share again"),
      duration("rls-idle-timeout", "--rls-idle-timeout-ms", &NodeConfig::rls_idle_timeout_ms, 0,
               86'400'000,
               "The gateway door closes a connection with no stream open for this long (HTTP/2's "
               "GOAWAY; 0: never)"),
      text("rls-token-file", "--rls-token-file", &NodeConfig::rls_token_file,
           "A file whose first line is a bearer token every gateway call must send "
           "(authorization: Bearer <token>); none: the door is open, as upstream's; re-read on "
           "SIGHUP"),
      yes_no("tls-rls", "--tls-rls", &NodeConfig::tls_rls,
             "The gateway door speaks TLS only, with ALPN h2 (the node's TLS settings and "
             "certificate, renewed on SIGHUP; client certificates per tls-auth-clients)"),
      text("admin-bind", "--admin-bind", &NodeConfig::admin_bind,
           "Address of the admin HTTP port (default: the first --bind address)"),
      text("admin-token-file", "--admin-token-file", &NodeConfig::admin_token_file,
           "File holding a bearer token that /cluster, /status and the status page require "
           "(/metrics, /healthz and /readyz stay open); re-read on SIGHUP"),
      integer("tls-port", "--tls-port", &NodeConfig::tls_port, 0, 65535,
              "RESP over TLS on this port (0: none); with it, --port 0 turns plain RESP off"),
      yes_no("tls-native", "--tls-native", &NodeConfig::tls_native,
             "The native port speaks TLS only"),
      yes_no("tls-cluster", "--tls-cluster", &NodeConfig::tls_cluster,
             "Peer links between nodes over mutual TLS (every node needs it)"),
      text("tls-cert-file", "--tls-cert-file", &TlsFiles::cert_file,
           "This node's certificate (PEM; a chain may follow); re-read on SIGHUP"),
      text("tls-key-file", "--tls-key-file", &TlsFiles::key_file,
           "Its private key (PEM); re-read on SIGHUP"),
      text("tls-key-file-pass", "--tls-key-file-pass", &TlsFiles::key_file_pass,
           "The key file's passphrase"),
      text("tls-client-cert-file", "--tls-client-cert-file", &TlsFiles::client_cert_file,
           "The certificate shown when connecting to peers (default: --tls-cert-file)"),
      text("tls-client-key-file", "--tls-client-key-file", &TlsFiles::client_key_file,
           "Its private key (default: --tls-key-file)"),
      text("tls-ca-cert-file", "--tls-ca-cert-file", &TlsFiles::ca_cert_file,
           "CA certificates (PEM) that sign clients' and peers' certificates"),
      text("tls-ca-cert-dir", "--tls-ca-cert-dir", &TlsFiles::ca_cert_dir,
           "A directory of CA certificates (OpenSSL's hashed names)"),
      {"tls-auth-clients", "--tls-auth-clients",
       "Clients must show a certificate: yes (default), no, or optional", "yes|no|optional",
       [](NodeConfig& c, const std::string& v) -> Status {
         return parse_tls_auth_clients(v, c.tls.auth_clients)
                    ? Status()
                    : Error{"must be yes, no or optional"};
       },
       [](const NodeConfig& c) -> std::string {
         switch (c.tls.auth_clients) {
           case TlsAuthClients::kNo:
             return "no";
           case TlsAuthClients::kOptional:
             return "optional";
           default:
             return "yes";
         }
       }},
      text("tls-protocols", "--tls-protocols", &TlsFiles::protocols,
           "TLS versions accepted, e.g. \"TLSv1.2 TLSv1.3\" (the default)"),
      text("tls-ciphers", "--tls-ciphers", &TlsFiles::ciphers,
           "TLS 1.2 ciphers (OpenSSL's list syntax)"),
      text("tls-ciphersuites", "--tls-ciphersuites", &TlsFiles::ciphersuites,
           "TLS 1.3 cipher suites"),
      yes_no("tls-prefer-server-ciphers", "--tls-prefer-server-ciphers",
             &TlsFiles::prefer_server_ciphers,
             "Choose the cipher by this node's preference, not the client's"),
      live(text("requirepass", "--requirepass", &NodeConfig::requirepass,
                "The default user's password (clients AUTH with it)"),
           [](RunningNode& n, const NodeConfig& c) { n.set_default_password(c.requirepass); }),
      {"users", "--user",
       "An ACL user, as \"name rules...\" in Redis's words (repeatable; node/OPERATIONS.md, Users)",
       "TEXT",
       [](NodeConfig& c, const std::string& v) -> Status {
         c.users.push_back(v);
         return {};
       },
       nullptr, true, [](NodeConfig& c) { c.users.clear(); }},
      text("aclfile", "--aclfile", &NodeConfig::aclfile,
           "A file of ACL users (\"user name rules...\" lines), read at start, on SIGHUP and "
           "on ACL LOAD"),
      live(integer("maxclients", "--maxclients", &NodeConfig::maxclients, 1, 1'000'000,
                   "Most simultaneous client connections"),
           [](RunningNode& n, const NodeConfig& c) {
             n.clients().set_max_clients(c.maxclients);
             n.shares_changed();
           }),
      live(Setting{"maxmemory", "--maxmemory",
                   "Most bytes the keyspace may hold (keys, values, limiter state, replicas' "
                   "copies), as "
                   "bytes or a size such as 4gb; past it commands that grow memory answer -OOM (0 "
                   "= no cap)",
                   "SIZE",
                   [](NodeConfig& c, const std::string& v) -> Status {
                     const int64_t n = parse_size(v);
                     if (n < 0) return Error{"must be a size such as 4gb, or bytes"};
                     c.maxmemory = n;
                     return {};
                   },
                   [](const NodeConfig& c) { return std::to_string(c.maxmemory); }},
           [](RunningNode& n, const NodeConfig& c) {
             n.accounts().set_maxmemory(c.maxmemory);
             n.shares_changed();
           }),
      live(Setting{
               "user-share", "--user-share",
               "What one user (not an operator: every command, key and channel) may take of each "
               "node-wide cap, as a fraction (0.5) or a percentage (50%); 1 = no share",
               "FRACTION",
               [](NodeConfig& c, const std::string& v) -> Status {
                 std::string t = v;
                 const bool pct = !t.empty() && t.back() == '%';
                 if (pct) t.pop_back();
                 long double x = 0;
                 if (!parse_long_double(t, x))
                   return Error{"must be a fraction such as 0.5, or 50%"};
                 if (pct) x /= 100;
                 if (!(x > 0 && x <= 1)) return Error{"must be above 0 and at most 1 (100%)"};
                 c.user_share = static_cast<double>(x);
                 return {};
               },
               [](const NodeConfig& c) {
                 std::ostringstream o;
                 o << c.user_share;
                 return o.str();
               }},
           [](RunningNode& n, const NodeConfig& c) { n.shares_changed(); }),
      {"user-limits", "--user-limit",
       "One user's own caps, \"name keys=N bytes=SIZE scripts=N script-bytes=SIZE waiters=N "
       "connections=N subscriptions=N\" (any of them; repeatable; read again on SIGHUP)",
       "TEXT",
       [](NodeConfig& c, const std::string& v) -> Status {
         if (Result<UserLimits> l = parse_user_limits(v); !l) return Error{l.error()};
         c.user_limits.push_back(v);
         return {};
       },
       [](const NodeConfig& c) { return join(c.user_limits, "; "); }, true,
       [](NodeConfig& c) { c.user_limits.clear(); }},
      integer("max-subscriptions", "--max-subscriptions", &NodeConfig::max_subscriptions, 0,
              int64_t{1} << 40,
              "Most channels, patterns and shard channels all clients hear at once (0 = none)"),
      live(Setting{"maxmemory-clients", "--maxmemory-clients",
                   "Most bytes all client connections' buffers may hold together, as bytes or a "
                   "size such "
                   "as 64mb; past it the biggest clients are disconnected (0 = no cap)",
                   "SIZE",
                   [](NodeConfig& c, const std::string& v) -> Status {
                     const int64_t n = parse_size(v);
                     if (n < 0) return Error{"must be a size such as 64mb, or bytes"};
                     c.maxmemory_clients = n;
                     return {};
                   },
                   [](const NodeConfig& c) { return std::to_string(c.maxmemory_clients); }},
           [](RunningNode& n, const NodeConfig& c) {
             n.clients().set_max_memory(c.maxmemory_clients);
           }),
      live(
          Setting{
              "client-output-buffer-limit", "--client-output-buffer-limit",
              "\"class hard soft seconds\" as Redis's (class normal or pubsub; sizes such as "
              "64mb): a "
              "client whose replies pass hard, or stay past soft that long, is closed (repeatable; "
              "default \"normal 0 0 0\": none)",
              "TEXT",
              [](NodeConfig& c, const std::string& v) {
                return apply_output_limits(v, c.output_limits);
              },
              [](const NodeConfig& c) { return describe_output_limits(c.output_limits); }, true},
          [](RunningNode& n, const NodeConfig& c) {
            n.services().settings.output_limits = c.output_limits;
          }),
      integer("max-waiters", "--max-waiters", &NodeConfig::max_waiters, 0, 1'000'000,
              "Most FG.TAKE ... WAIT requests waiting on this node at once (0 = WAIT refused)"),
      integer("max-waiters-per-key", "--max-waiters-per-key", &NodeConfig::max_waiters_per_key, 0,
              1'000'000, "Most of them waiting on one key"),
      live(integer("timeout", "--timeout", &NodeConfig::timeout_s, 0, 1'000'000'000,
                   "Close clients idle this many seconds (0 = never)"),
           [](RunningNode& n, const NodeConfig& c) {
             n.connection_limits().timeout_s = c.timeout_s;
           }),
      live(duration("query-deadline", "--query-deadline-ms", &NodeConfig::query_deadline_ms, 1,
                    86'400'000, "Drop a client whose half-sent command is not complete after this"),
           [](RunningNode& n, const NodeConfig& c) {
             n.connection_limits().query_deadline_ms = c.query_deadline_ms;
           }),
      live(duration("request-deadline", "--request-deadline-ms", &NodeConfig::request_deadline_ms,
                    0, 86'400'000,
                    "Refuse, undecided, a limiter command that waited this long since it arrived "
                    "(0 = off; a connection may state its own with FG.DEADLINE)"),
           [](RunningNode& n, const NodeConfig& c) {
             n.services().settings.request_deadline_ms = c.request_deadline_ms;
           }),
      live(duration("output-timeout", "--output-timeout-ms", &NodeConfig::output_timeout_ms, 1,
                    86'400'000, "Drop a client that has not read its replies after this"),
           [](RunningNode& n, const NodeConfig& c) {
             n.connection_limits().output_timeout_ms = c.output_timeout_ms;
           }),
      live(integer("slowlog-log-slower-than", "--slowlog-log-slower-than",
                   &NodeConfig::slowlog_log_slower_than, -1, INT64_MAX,
                   "SLOWLOG keeps the commands that took this many microseconds or more, from "
                   "their read to their reply (-1: none; 0: every command)"),
           [](RunningNode& n, const NodeConfig& c) {
             n.services().slowlog.slower_than_us = c.slowlog_log_slower_than;
           }),
      live(integer("slowlog-max-len", "--slowlog-max-len", &NodeConfig::slowlog_max_len, 0,
                   INT64_MAX, "SLOWLOG's entries at most (the oldest go)"),
           [](RunningNode& n, const NodeConfig& c) {
             n.services().slowlog.max_len = c.slowlog_max_len;
           }),
      duration("script-time-limit", "--script-time-limit-ms", &NodeConfig::script_time_limit_ms, 1,
               60'000, "A Lua script running longer is aborted and its writes undone"),
      integer("script-memory-limit", "--script-memory-limit", &NodeConfig::script_memory_limit,
              int64_t{1} << 20, int64_t{1} << 34, "Bytes each Lua state (one per shard) may hold"),
      integer("script-cache-max-scripts", "--script-cache-max-scripts",
              &NodeConfig::script_cache_max_scripts, 1, 50'000,
              "How many scripts the cluster-wide script cache keeps"),
      integer("script-cache-max-bytes", "--script-cache-max-bytes",
              &NodeConfig::script_cache_max_bytes, 1024, int64_t{16} << 20,
              "How many bytes of script bodies the cluster-wide script cache keeps"),
      integer("max-query-bytes", "--max-query-bytes", &NodeConfig::max_query_bytes, 1024,
              int64_t{1} << 32, "Largest single command, in bytes"),
      live(integer("proto-max-bulk-len", "--proto-max-bulk-len", &NodeConfig::proto_max_bulk_len, 1,
                   int64_t{1} << 32,
                   "Largest single argument, and longest string a command may build (SETRANGE, "
                   "APPEND, SETBIT), in bytes; a running node takes it up to max-query-bytes"),
           [](RunningNode& n, const NodeConfig& c) {
             n.services().settings.max_bulk_len = c.proto_max_bulk_len;
             if (n.services().shards)
               n.services().shards->set_max_string(
                   std::min(c.proto_max_bulk_len, c.max_query_bytes));
           }),
      live(notify_events("notify-keyspace-events", "--notify-keyspace-events",
                         "Keyspace notifications, in Redis's letters (K, E, A, g$lshzxetn...; "
                         "empty: none): published on __keyspace@0__ and __keyevent@0__ "
                         "channels to every node"),
           [](RunningNode&, const NodeConfig& c) { key_events().set_flags(c.notify_flags); }),
      integer("shards", "--shards", &NodeConfig::shards, 0, 64,
              "Shard actors (default, 0: one per shard thread, at most 64)"),
      integer("io-threads", "--io-threads", &NodeConfig::io_threads, 0, 256,
              "Network threads (default, 0: half the cores)"),
      integer("io-idle-poll-us", "--io-idle-poll-us", &NodeConfig::io_idle_poll_us, 0, 1000,
              "Microseconds an I/O thread out of work keeps polling before it sleeps (0: "
              "sleeps at once; trades CPU for wake-ups, node/README.md)"),
      integer("shard-threads", "--shard-threads", &NodeConfig::shard_threads, 0, 256,
              "Threads running shard actors (default, 0: half the cores)"),
      integer("max-keys", "--max-keys", &NodeConfig::max_keys, 1, int64_t{1} << 40,
              "Most limiter keys the node holds"),
      text("dir", "--dir", &NodeConfig::dir,
           "Directory of the state snapshot: saved every save-interval, on SAVE/BGSAVE and at "
           "shutdown, loaded at start (none: state lives in memory only)"),
      text("dbfilename", "--dbfilename", &NodeConfig::dbfilename,
           "The snapshot's file name in --dir", check_dbfilename),
      duration("save-interval", "--save-interval-ms", &NodeConfig::save_interval_ms, 0,
               int64_t{7} * 86'400'000,
               "With --dir, save the state this often (0 or off: only at shutdown and on "
               "SAVE/BGSAVE)"),
      live(choice("log-level", "--log-level", &NodeConfig::log_level,
                  {"trace", "debug", "info", "warn", "error", "off"},
                  "trace|debug|info|warn|error|off", "How much the node logs; re-read on SIGHUP"),
           [](RunningNode& n, const NodeConfig& c) {
             spdlog::set_level(spdlog::level::from_str(c.log_level));
           }),
      yes_no("cluster-enabled", "--cluster-enabled", &NodeConfig::cluster_enabled,
             "Run as a cluster member (gossip, slot table, routing)"),
      integer("cluster-port", "--cluster-port", &NodeConfig::cluster_port, 0, 65535,
              "Cluster bus port, UDP gossip and TCP peer links (default: RESP port + 10000)"),
      text("cluster-announce-host", "--cluster-announce-host", &NodeConfig::cluster_announce_host,
           "Address peers and clients use to reach this node (default: first --bind)"),
      {"seeds", "--seeds", "Cluster bus addresses to join through: host:port,...", "ADDRS",
       [](NodeConfig& c, const std::string& v) -> Status {
         return parse_seeds(v, c.seeds) ? Status()
                                        : Error{"must be a list of host:port cluster addresses"};
       },
       [](const NodeConfig& c) { return join(c.seeds, ","); }, true,
       [](NodeConfig& c) { c.seeds.clear(); }},
      text("cluster-secret-file", "--cluster-secret-file", &NodeConfig::cluster_secret_file,
           "File with the cluster secret (one line; a second while rotating): gossip is sealed "
           "with it, peer links prove it, nodes believe no others; re-read on SIGHUP"),
      yes_no("cluster-bus-legacy", "--cluster-bus-legacy", &NodeConfig::cluster_bus_legacy,
             "During a rolling upgrade from a version whose peer links do not name their "
             "receiver nor tag their frames: speak to and believe such nodes too"),
      text("node-id", "--node-id", &NodeConfig::node_id,
           "This node's id (default: 40 random hex digits)", check_node_id),
      choice("cluster-redirect", "--cluster-redirect", &NodeConfig::cluster_redirect,
             {"auto", "moved", "forward"}, "auto|moved|forward",
             "Keys owned elsewhere: auto (-MOVED for clients that asked for the topology, else "
             "forwarded), moved, or forward"),
      duration("cluster-empty-grace", "--cluster-empty-grace-ms",
               &NodeConfig::cluster_empty_grace_ms, 0, 3'600'000,
               "A slot this node gains with no reachable copy of its state answers its "
               "policies' fail mode this long before it is served from empty (0: at once)"),
      live(duration("cluster-forward-timeout", "--cluster-forward-timeout-ms",
                    &NodeConfig::cluster_forward_timeout_ms, 1, 600'000,
                    "A forwarded command's deadline; past it the client gets -TRYAGAIN"),
           [](RunningNode& n, const NodeConfig& c) {
             n.services().settings.forward_timeout_ms = c.cluster_forward_timeout_ms;
           }),
      live(integer("slice-threshold", "--slice-threshold", &NodeConfig::slice_threshold, 0,
                   1'000'000'000,
                   "Takes a second of one key this node forwards to its owner past which it "
                   "asks for a quota slice of it and admits from that (0: never)"),
           [](RunningNode& n, const NodeConfig& c) {
             n.services().slices.configure(c.slice_threshold, c.slice_ms);
           }),
      live(duration("slice", "--slice-ms", &NodeConfig::slice_ms, 1, 60'000,
                    "How long a hot key's quota slice lasts on the node that holds it (a "
                    "window's ends with its window at the latest)"),
           [](RunningNode& n, const NodeConfig& c) {
             n.services().slices.configure(c.slice_threshold, c.slice_ms);
           }),
      integer("cluster-replicas", "--cluster-replicas", &NodeConfig::cluster_replicas, 1, 5,
              "Copies of each slot's state in the cluster, the owner's included"),
      live(
          duration("replication-lag", "--replication-lag-ms", &NodeConfig::replication_lag_ms, 1,
                   1000, "Changes reach the replicas within this (at most 1s)"),
          [](RunningNode& n, const NodeConfig& c) { n.set_replication_lag(c.replication_lag_ms); }),
      duration("replication-sync-timeout", "--replication-sync-timeout-ms",
               &NodeConfig::replication_sync_timeout_ms, 1, 600'000,
               "How long a synchronous reply waits for a replica"),
      choice("data-replication", "--data-replication", &NodeConfig::data_replication,
             {"async", "sync"}, "async|sync",
             "The data commands' writes (INCR, SET, ...): async, or sync (answered once a "
             "replica holds them); a key pattern whose policy says sync makes its keys sync"),
  };
  for (Setting& s : t) {
    const std::string k = s.key;
    // (secrets are not shown; the users are ACL LIST's)
    if (k == "requirepass" || k == "tls-key-file-pass" || k == "users") s.shown = false;
    const std::string by_flag = std::string(s.flag).substr(2);
    if (by_flag != k) s.names.push_back(by_flag);
    // Redis's names for the same thing.
    if (k == "log-level") {
      s.names.push_back("loglevel");
      // (and Redis's words for the levels)
      s.set = [set = s.set](NodeConfig& c, const std::string& v) -> Status {
        static const std::pair<const char*, const char*> kRedis[] = {
            {"verbose", "debug"}, {"notice", "info"}, {"warning", "warn"}, {"nothing", "off"}};
        for (const auto& [redis, ours] : kRedis)
          if (v == redis) return set(c, ours);
        return set(c, v);
      };
    }
    if (k == "script-time-limit")
      s.names.insert(s.names.end(), {"busy-reply-threshold", "lua-time-limit"});
  }
  return t;
}

}  // namespace

const std::vector<Setting>& settings() {
  static const std::vector<Setting> t = make_settings();
  return t;
}

const Setting* find_setting(const std::string& key) {
  for (const Setting& s : settings())
    if (key == s.key) return &s;
  return nullptr;
}

const Setting* find_setting_named(std::string_view name) {
  for (const Setting& s : settings()) {
    if (iequals(name, s.key)) return &s;
    for (const std::string& n : s.names)
      if (iequals(name, n)) return &s;
  }
  return nullptr;
}

std::vector<std::pair<std::string, std::string>> config_values(const NodeConfig& cfg) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const Setting& s : settings()) {
    if (!s.shown || !s.get) continue;
    const std::string v = s.get(cfg);
    out.emplace_back(s.key, v);
    for (const std::string& n : s.names) out.emplace_back(n, v);
  }
  // Redis's "save": "seconds changes" pairs; here, a save every interval whatever changed.
  const bool saves = !cfg.dir.empty() && cfg.save_interval_ms >= 1000;
  out.emplace_back("save", saves ? std::to_string(cfg.save_interval_ms / 1000) + " 0" : "");
  return out;
}

}  // namespace fg
