// YAML configuration loading with errors that point at the offending key and line.
#include "config.hpp"

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "errors.hpp"
#include "limit_spec.hpp"
#include "policy_store.hpp"

namespace fg {

namespace {
[[noreturn]] void fail(const YAML::Node& n, const std::string& key, const std::string& what) {
  throw ConfigError(key + " (line " + std::to_string(n.Mark().line + 1) + "): " + what);
}

int64_t as_int(const YAML::Node& n, const std::string& key, int64_t min, int64_t max) {
  int64_t v;
  try {
    v = n.as<int64_t>();
  } catch (const YAML::Exception&) {
    fail(n, key, "must be an integer");
  }
  if (v < min || v > max) {
    fail(n, key, "must be between " + std::to_string(min) + " and " + std::to_string(max));
  }
  return v;
}

int64_t as_duration_ms(const YAML::Node& n, const std::string& key) {
  int64_t ms;
  if (!n.IsScalar() || !parse_duration_ms(n.Scalar(), ms) || ms <= 0) {
    fail(n, key, "must be a positive duration such as 500ms, 30s, 1m or 2h");
  }
  return ms;
}

std::string as_string(const YAML::Node& n, const std::string& key) {
  if (!n.IsScalar()) fail(n, key, "must be a string");
  return n.Scalar();
}

// A policy's settings at `at` ("policies.free", "overrides.tenant:42").
LimitSpec load_policy(const std::string& at, const YAML::Node& p) {
  if (!p.IsMap()) fail(p, at, "must be a map with a 'kind'");
  if (!p["kind"]) fail(p, at, "needs a 'kind'");
  const Kind kind = kind_from_name(as_string(p["kind"], at + ".kind"));
  if (kind == Kind::kNone) {
    fail(p["kind"], at + ".kind",
         "must be token_bucket, gcra, fixed_window, sliding_log, sliding_window or concurrency");
  }
  auto get = [&](const char* k) -> YAML::Node {
    if (!p[k])
      fail(p, at, std::string("kind ") + std::string(kind_name(kind)) + " needs '" + k + "'");
    return p[k];
  };
  const int64_t big = kMaxCount;
  int64_t a = 0, b = 0, period_ms = 0;
  std::vector<std::string> allowed = {"kind"};
  switch (kind) {
    case Kind::kTokenBucket:
      a = as_int(get("capacity"), at + ".capacity", 1, big);
      b = as_int(get("refill"), at + ".refill", 1, big);
      period_ms = as_duration_ms(get("period"), at + ".period");
      allowed.insert(allowed.end(), {"capacity", "refill", "period"});
      break;
    case Kind::kGcra:
      a = as_int(get("max_burst"), at + ".max_burst", 0, big);
      b = as_int(get("count"), at + ".count", 1, big);
      period_ms = as_duration_ms(get("period"), at + ".period");
      allowed.insert(allowed.end(), {"max_burst", "count", "period"});
      break;
    case Kind::kConcurrency:
      a = as_int(get("limit"), at + ".limit", 1, kMaxLeaseLimit);
      period_ms = as_duration_ms(get("ttl"), at + ".ttl");
      allowed.insert(allowed.end(), {"limit", "ttl"});
      break;
    default:
      a = as_int(get("limit"), at + ".limit", 1, big);
      period_ms = as_duration_ms(get("window"), at + ".window");
      allowed.insert(allowed.end(), {"limit", "window"});
      break;
  }
  // The same construction (and checks) as a limit given in a command.
  Result<LimitSpec> made = make_limit(kind, a, b, period_ms);
  if (!made.ok()) fail(p, at, std::string(err::reason(made.error())));
  LimitSpec spec = made.value();
  allowed.insert(allowed.end(), {"on_unavailable", "replication"});
  if (p["on_unavailable"]) {
    const std::string v = as_string(p["on_unavailable"], at + ".on_unavailable");
    if (v == "fail_open") {
      spec.on_unavailable = FailMode::kOpen;
    } else if (v == "fail_closed") {
      spec.on_unavailable = FailMode::kClosed;
    } else if (v != "error") {
      fail(p["on_unavailable"], at + ".on_unavailable", "must be fail_open, fail_closed or error");
    }
  }
  if (p["replication"]) {
    const std::string v = as_string(p["replication"], at + ".replication");
    if (v != "sync" && v != "async") {
      fail(p["replication"], at + ".replication", "must be async or sync");
    }
    spec.sync = v == "sync";
  }
  for (const auto& kv : p) {
    const std::string k = kv.first.Scalar();
    if (std::find(allowed.begin(), allowed.end(), k) == allowed.end()) {
      fail(kv.first, at + "." + k,
           "is not a setting of a " + std::string(kind_name(kind)) + " policy");
    }
  }
  return spec;
}
}  // namespace

namespace {
bool as_yes_no(const YAML::Node& v, const std::string& key) {
  try {
    return v.as<bool>();
  } catch (const YAML::Exception&) {
    fail(v, key, "must be yes or no");
  }
  return false;
}
}  // namespace

bool parse_duration_ms(const std::string& s, int64_t& ms) {
  size_t i = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  if (i == 0 || i > 15) return false;
  const int64_t v = std::stoll(s.substr(0, i));
  const std::string unit = s.substr(i);
  int64_t mult;
  if (unit.empty() || unit == "ms")
    mult = 1;
  else if (unit == "s")
    mult = 1000;
  else if (unit == "m")
    mult = 60'000;
  else if (unit == "h")
    mult = 3'600'000;
  else if (unit == "d")
    mult = 86'400'000;
  else
    return false;
  if (v > kMaxPeriodNs / 1'000'000 / mult) return false;
  ms = v * mult;
  return true;
}

void load_config_file(const std::string& path, NodeConfig& cfg) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw ConfigError("cannot read config file " + path);
  } catch (const YAML::Exception& e) {
    throw ConfigError(path + ": " + e.what());
  }
  cfg.config_file = path;
  if (root.IsNull()) return;
  if (!root.IsMap()) throw ConfigError(path + ": the top level must be a map of settings");
  std::vector<std::pair<std::string, YAML::Node>> named;  // policy names patterns refer to
  for (const auto& kv : root) {
    const std::string key = kv.first.Scalar();
    const YAML::Node& v = kv.second;
    if (key == "bind")
      cfg.bind = as_string(v, key);
    else if (key == "port")
      cfg.port = static_cast<int>(as_int(v, key, 0, 65535));
    else if (key == "native-port")
      cfg.native_port = static_cast<int>(as_int(v, key, 0, 65535));
    else if (key == "admin-port")
      cfg.admin_port = static_cast<int>(as_int(v, key, 0, 65535));
    else if (key == "admin-bind")
      cfg.admin_bind = as_string(v, key);
    else if (key == "admin-token-file")
      cfg.admin_token_file = as_string(v, key);
    else if (key == "requirepass")
      cfg.requirepass = as_string(v, key);
    else if (key == "tls-port")
      cfg.tls_port = static_cast<int>(as_int(v, key, 0, 65535));
    else if (key == "tls-native")
      cfg.tls_native = as_yes_no(v, key);
    else if (key == "tls-cluster")
      cfg.tls_cluster = as_yes_no(v, key);
    else if (key == "tls-cert-file")
      cfg.tls.cert_file = as_string(v, key);
    else if (key == "tls-key-file")
      cfg.tls.key_file = as_string(v, key);
    else if (key == "tls-key-file-pass")
      cfg.tls.key_file_pass = as_string(v, key);
    else if (key == "tls-client-cert-file")
      cfg.tls.client_cert_file = as_string(v, key);
    else if (key == "tls-client-key-file")
      cfg.tls.client_key_file = as_string(v, key);
    else if (key == "tls-ca-cert-file")
      cfg.tls.ca_cert_file = as_string(v, key);
    else if (key == "tls-ca-cert-dir")
      cfg.tls.ca_cert_dir = as_string(v, key);
    else if (key == "tls-auth-clients") {
      // (YAML reads a bare yes/no as a boolean: take the scalar's text)
      if (!v.IsScalar() || !parse_tls_auth_clients(v.Scalar(), cfg.tls.auth_clients))
        fail(v, key, "must be yes, no or optional");
    } else if (key == "tls-protocols")
      cfg.tls.protocols = as_string(v, key);
    else if (key == "tls-ciphers")
      cfg.tls.ciphers = as_string(v, key);
    else if (key == "tls-ciphersuites")
      cfg.tls.ciphersuites = as_string(v, key);
    else if (key == "tls-prefer-server-ciphers")
      cfg.tls.prefer_server_ciphers = as_yes_no(v, key);
    else if (key == "aclfile")
      cfg.aclfile = as_string(v, key);
    else if (key == "users") {
      if (!v.IsSequence()) fail(v, key, "must be a list of \"name rules...\" lines");
      cfg.users.clear();
      for (const auto& e : v) {
        if (!e.IsScalar()) fail(e, key, "must be a list of \"name rules...\" lines");
        cfg.users.push_back(e.Scalar());
      }
    } else if (key == "maxclients")
      cfg.maxclients = static_cast<size_t>(as_int(v, key, 1, 1'000'000));
    else if (key == "maxmemory-clients") {
      cfg.maxmemory_clients = v.IsScalar() ? parse_size(v.Scalar()) : -1;
      if (cfg.maxmemory_clients < 0) fail(v, key, "must be a size such as 64mb, or bytes");
    } else if (key == "client-output-buffer-limit") {
      if (!v.IsScalar()) fail(v, key, "must be a string such as \"normal 0 0 0\"");
      if (const std::string why = apply_output_limits(v.Scalar(), cfg.output_limits); !why.empty())
        fail(v, key, why);
    } else if (key == "timeout")
      cfg.timeout_s = as_int(v, key, 0, 1'000'000'000);
    else if (key == "query-deadline")
      cfg.query_deadline_ms = as_duration_ms(v, key);
    else if (key == "output-timeout")
      cfg.output_timeout_ms = as_duration_ms(v, key);
    else if (key == "script-time-limit")
      cfg.script_time_limit_ms = as_duration_ms(v, key);
    else if (key == "script-memory-limit")
      cfg.script_memory_limit = static_cast<size_t>(as_int(v, key, 1 << 20, int64_t{1} << 34));
    else if (key == "script-cache-max-scripts")
      cfg.script_cache_max_scripts = static_cast<size_t>(as_int(v, key, 1, 50'000));
    else if (key == "script-cache-max-bytes")
      cfg.script_cache_max_bytes = static_cast<size_t>(as_int(v, key, 1024, int64_t{16} << 20));
    else if (key == "max-query-bytes")
      cfg.max_query_bytes = static_cast<size_t>(as_int(v, key, 1024, int64_t{1} << 32));
    else if (key == "proto-max-bulk-len")
      cfg.proto_max_bulk_len = static_cast<size_t>(as_int(v, key, 1, int64_t{1} << 32));
    else if (key == "shards")
      cfg.shards = static_cast<size_t>(as_int(v, key, 1, 64));
    else if (key == "io-threads")
      cfg.io_threads = static_cast<int>(as_int(v, key, 1, 256));
    else if (key == "io-idle-poll-us")
      cfg.io_idle_poll_us = static_cast<int>(as_int(v, key, 0, 1000));
    else if (key == "shard-threads")
      cfg.shard_threads = static_cast<int>(as_int(v, key, 1, 256));
    else if (key == "max-keys")
      cfg.max_keys = static_cast<size_t>(as_int(v, key, 1, int64_t{1} << 40));
    else if (key == "log-level") {
      cfg.log_level = as_string(v, key);
      const std::string& l = cfg.log_level;
      if (l != "trace" && l != "debug" && l != "info" && l != "warn" && l != "error" && l != "off")
        fail(v, key, "must be trace, debug, info, warn, error or off");
    } else if (key == "cluster-enabled") {
      cfg.cluster_enabled = as_yes_no(v, key);
    } else if (key == "cluster-port")
      cfg.cluster_port = static_cast<int>(as_int(v, key, 1, 65535));
    else if (key == "cluster-announce-host")
      cfg.cluster_announce_host = as_string(v, key);
    else if (key == "cluster-secret-file")
      cfg.cluster_secret_file = as_string(v, key);
    else if (key == "cluster-bus-legacy")
      cfg.cluster_bus_legacy = as_yes_no(v, key);
    else if (key == "node-id") {
      cfg.node_id = as_string(v, key);
      const std::string why = check_node_id(cfg.node_id);
      if (!why.empty()) fail(v, key, why);
    } else if (key == "seeds") {
      std::vector<std::string> seeds;
      bool ok = true;
      if (v.IsSequence()) {
        for (const auto& e : v) ok = ok && e.IsScalar() && parse_seeds(e.Scalar(), seeds);
      } else {
        ok = v.IsScalar() && parse_seeds(v.Scalar(), seeds);
      }
      if (!ok) fail(v, key, "must be a list of host:port cluster addresses");
      cfg.seeds = seeds;
    } else if (key == "cluster-redirect") {
      cfg.cluster_redirect = as_string(v, key);
      if (cfg.cluster_redirect != "auto" && cfg.cluster_redirect != "moved" &&
          cfg.cluster_redirect != "forward") {
        fail(v, key, "must be auto, moved or forward");
      }
    } else if (key == "cluster-empty-grace") {
      cfg.cluster_empty_grace_ms = v.IsScalar() && v.Scalar() == "0" ? 0 : as_duration_ms(v, key);
    } else if (key == "cluster-forward-timeout")
      cfg.cluster_forward_timeout_ms = as_duration_ms(v, key);
    else if (key == "dir")
      cfg.dir = as_string(v, key);
    else if (key == "dbfilename") {
      cfg.dbfilename = as_string(v, key);
      if (const std::string why = check_dbfilename(cfg.dbfilename); !why.empty()) fail(v, key, why);
    } else if (key == "save-interval") {
      cfg.save_interval_ms =
          v.IsScalar() && (v.Scalar() == "0" || v.Scalar() == "off") ? 0 : as_duration_ms(v, key);
    } else if (key == "cluster-replicas")
      cfg.cluster_replicas = static_cast<int>(as_int(v, key, 1, 5));
    else if (key == "replication-lag") {
      cfg.replication_lag_ms = as_duration_ms(v, key);
      if (cfg.replication_lag_ms > 1000) fail(v, key, "must be at most 1s");
    } else if (key == "data-replication") {
      cfg.data_replication = as_string(v, key);
      if (cfg.data_replication != "async" && cfg.data_replication != "sync") {
        fail(v, key, "must be async or sync");
      }
    } else if (key == "replication-sync-timeout")
      cfg.replication_sync_timeout_ms = as_duration_ms(v, key);
    else if (key == "policies") {
      if (!v.IsMap()) fail(v, key, "must be a map of policy name to settings");
      for (const auto& p : v) {
        const std::string name = p.first.Scalar();
        const Status named_ok = check_policy_name(name);
        if (!named_ok.ok())
          fail(p.first, "policies." + name, std::string(err::reason(named_ok.error())));
        cfg.policies[name] = load_policy("policies." + name, p.second);
      }
    } else if (key == "patterns") {
      if (!v.IsMap()) fail(v, key, "must be a map of key pattern to policy name");
      for (const auto& p : v) {
        const std::string glob = p.first.Scalar();
        const std::string at = "patterns." + glob;
        if (glob.empty() || glob.size() > 1024) fail(p.first, at, "must be 1 to 1024 bytes");
        cfg.patterns[glob] = as_string(p.second, at);
        named.emplace_back(at, p.second);
      }
    } else if (key == "overrides") {
      if (!v.IsMap()) fail(v, key, "must be a map of key to a policy name or a limit");
      for (const auto& p : v) {
        const std::string k = p.first.Scalar();
        const std::string at = "overrides." + k;
        PolicyOverride o;
        if (p.second.IsScalar()) {
          o.policy = p.second.Scalar();
          named.emplace_back(at, p.second);
        } else {
          o.spec = load_policy(at, p.second);
        }
        cfg.overrides[k] = o;
      }
    } else {
      fail(kv.first, key, "unknown setting");
    }
  }
  if (!cfg.users.empty() && !cfg.aclfile.empty()) {
    throw ConfigError(path +
                      ": users and aclfile cannot both be set (the users come from one place)");
  }
  for (const auto& [at, n] : named) {
    if (!cfg.policies.count(n.Scalar())) {
      fail(n, at, "no policy named '" + n.Scalar() + "' in this file");
    }
  }
}

std::string load_users(const NodeConfig& cfg, AclBook& book) {
  std::vector<std::string> lines;
  std::string where = "users";
  if (!cfg.aclfile.empty()) {
    std::ifstream in(cfg.aclfile);
    if (!in) {
      return "Error loading ACLs, opening file '" + cfg.aclfile + "': " + std::strerror(errno);
    }
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    where = cfg.aclfile;
  } else {
    for (const std::string& u : cfg.users) {
      const bool prefixed = u.rfind("user ", 0) == 0;
      lines.push_back(prefixed ? u : "user " + u);
    }
  }
  return book.load(lines, cfg.requirepass, where);
}

std::string check_node_id(const std::string& id) {
  if (id.empty() || id.size() > 64) return "must be 1 to 64 characters";
  for (char c : id) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') {
      return "may hold only letters, digits, '-', '_' and '.'";
    }
  }
  return "";
}

bool parse_seeds(const std::string& s, std::vector<std::string>& out) {
  std::string cur;
  auto flush = [&] {
    if (cur.empty()) return true;
    const auto colon = cur.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == cur.size()) return false;
    for (size_t i = colon + 1; i < cur.size(); ++i)
      if (!std::isdigit(static_cast<unsigned char>(cur[i]))) return false;
    const long port = std::atol(cur.c_str() + colon + 1);
    if (port < 1 || port > 65535) return false;
    out.push_back(cur);
    cur.clear();
    return true;
  };
  for (char c : s) {
    if (c == ',' || c == ' ') {
      if (!flush()) return false;
    } else {
      cur += c;
    }
  }
  return flush();
}

std::string check_dbfilename(const std::string& name) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos) {
    return "must be a file name, without a directory (the directory is `dir`)";
  }
  return "";
}

void resolve_defaults(NodeConfig& cfg) {
  const int cores = std::max(1u, std::thread::hardware_concurrency());
  if (cfg.io_threads == 0) cfg.io_threads = std::max(1, cores / 2);
  if (cfg.shard_threads == 0) cfg.shard_threads = std::max(1, cores / 2);
  // One shard actor per thread: more would only add messages per batch, since a
  // thread runs one actor at a time.
  if (cfg.shards == 0) cfg.shards = std::min<size_t>(64, static_cast<size_t>(cfg.shard_threads));
}

std::string first_bind_address(const std::string& bind) {
  std::istringstream in(bind);
  std::string w;
  in >> w;
  return w;
}

}  // namespace fg
