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
#include "settings.hpp"

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

bool as_bool(const YAML::Node& n, const std::string& key) {
  bool v;
  try {
    v = n.as<bool>();
  } catch (const YAML::Exception&) {
    fail(n, key, "must be true or false");
  }
  return v;
}

// A policy's settings at `at` ("policies.free", "overrides.tenant:42").
LimitSpec load_policy(const std::string& at, const YAML::Node& p) {
  if (!p.IsMap()) fail(p, at, "must be a map with a 'kind'");
  if (!p["kind"]) fail(p, at, "needs a 'kind'");
  const Kind kind = kind_from_name(as_string(p["kind"], at + ".kind"));
  if (kind == Kind::kNone) {
    fail(p["kind"], at + ".kind",
         "must be token_bucket, gcra, fixed_window, sliding_log, sliding_window, "
         "calendar_window or concurrency");
  }
  auto get = [&](const char* k) -> YAML::Node {
    if (!p[k])
      fail(p, at, std::string("kind ") + std::string(kind_name(kind)) + " needs '" + k + "'");
    return p[k];
  };
  const int64_t big = kMaxCount;
  int64_t a = 0, b = 0, period_ms = 0;
  std::string period_word, zone = "UTC";
  std::vector<std::string> allowed = {"kind"};
  switch (kind) {
    case Kind::kCalendarWindow:
      a = as_int(get("limit"), at + ".limit", 1, big);
      period_word = as_string(get("period"), at + ".period");
      if (p["tz"]) zone = as_string(p["tz"], at + ".tz");
      allowed.insert(allowed.end(), {"limit", "period", "tz"});
      break;
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
  Result<LimitSpec> made = kind == Kind::kCalendarWindow ? make_calendar(a, period_word, zone)
                                                         : make_limit(kind, a, b, period_ms);
  if (!made.ok()) fail(p, at, std::string(err::reason(made.error())));
  LimitSpec spec = made.value();
  allowed.insert(allowed.end(), {"on_unavailable", "replication", "shadow", "slices"});
  // (slices: off — YAML reads `off` as false)
  if (p["slices"]) spec.no_slices = !as_bool(p["slices"], at + ".slices");
  if (p["shadow"]) {
    if (kind == Kind::kConcurrency) {
      fail(p["shadow"], at + ".shadow", std::string(err::reason(err::kShadowConcurrency)));
    }
    spec.shadow = as_bool(p["shadow"], at + ".shadow");
  }
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
// One setting of the file, read by its row of the settings table: a scalar's text, or a
// list's items (a list setting also takes one scalar).
void load_setting(const Setting& s, const YAML::Node& v, NodeConfig& cfg) {
  std::vector<YAML::Node> items;
  if (s.list && v.IsSequence()) {
    for (const auto& e : v) items.push_back(e);
  } else {
    items.push_back(v);
  }
  if (s.list && s.clear) s.clear(cfg);
  for (const YAML::Node& e : items) {
    if (!e.IsScalar()) fail(e, s.key, s.list ? "must be a list of values" : "must be one value");
    if (const Status st = s.set(cfg, e.Scalar()); !st) fail(e, s.key, st.error());
  }
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
    if (const Setting* setting = find_setting(key)) {
      load_setting(*setting, v, cfg);
      continue;
    }
    if (key == "policies") {
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

Status load_users(const NodeConfig& cfg, AclBook& book) {
  std::vector<std::string> lines;
  std::string where = "users";
  if (!cfg.aclfile.empty()) {
    std::ifstream in(cfg.aclfile);
    if (!in) {
      return Error{"Error loading ACLs, opening file '" + cfg.aclfile +
                   "': " + std::strerror(errno)};
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

Status check_node_id(const std::string& id) {
  if (id.empty() || id.size() > 64) return Error{"must be 1 to 64 characters"};
  for (char c : id) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') {
      return Error{"may hold only letters, digits, '-', '_' and '.'"};
    }
  }
  return {};
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

Status check_dbfilename(const std::string& name) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos) {
    return Error{"must be a file name, without a directory (the directory is `dir`)"};
  }
  return {};
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
