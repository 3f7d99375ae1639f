// envoyproxy/ratelimit's configuration: its YAML, its checks and their words, its lookup.
#include "rls_config.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace fg {

namespace fs = std::filesystem;

int64_t rls_unit_seconds(RlsUnit u) {
  switch (u) {
    case RlsUnit::kSecond:
      return 1;
    case RlsUnit::kMinute:
      return 60;
    case RlsUnit::kHour:
      return 3600;
    case RlsUnit::kDay:
      return 86400;
    case RlsUnit::kWeek:
      return 7 * 86400;
    case RlsUnit::kMonth:
      return 30 * 86400;
    case RlsUnit::kYear:
      return 365 * 86400;
    default:
      return 0;
  }
}

std::string_view rls_unit_name(RlsUnit u) {
  switch (u) {
    case RlsUnit::kSecond:
      return "second";
    case RlsUnit::kMinute:
      return "minute";
    case RlsUnit::kHour:
      return "hour";
    case RlsUnit::kDay:
      return "day";
    case RlsUnit::kWeek:
      return "week";
    case RlsUnit::kMonth:
      return "month";
    case RlsUnit::kYear:
      return "year";
    default:
      return "unknown";
  }
}

RlsUnit rls_unit_from_name(std::string_view name) {
  std::string n(name);
  for (char& c : n) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (RlsUnit u : {RlsUnit::kSecond, RlsUnit::kMinute, RlsUnit::kHour, RlsUnit::kDay,
                    RlsUnit::kWeek, RlsUnit::kMonth, RlsUnit::kYear}) {
    if (rls_unit_name(u) == n) return u;
  }
  return RlsUnit::kUnknown;
}

RlsStats* RlsStatsBook::get(std::string_view domain, std::string_view descriptor,
                            RlsStats* fallback) {
  std::pair<std::string, std::string> key(domain, descriptor);
  std::lock_guard lock(mu_);
  auto it = stats_.find(key);
  if (it != stats_.end()) return it->second.get();
  if (stats_.size() >= kMaxKeys && fallback) return fallback;
  return stats_.emplace(std::move(key), std::make_unique<RlsStats>()).first->second.get();
}

void RlsStatsBook::each(
    const std::function<void(const std::string&, const std::string&, const RlsStats&)>& f) const {
  std::lock_guard lock(mu_);
  for (const auto& [k, s] : stats_) f(k.first, k.second, *s);
}

namespace {

// Thrown inside one file's load; becomes "<file>: <text>".
struct ConfigError {
  std::string text;
};

// Upstream's keys (its validKeys), at any level, plus this door's extensions.
const std::set<std::string, std::less<>> kValidKeys = {
    "domain", "key", "value", "descriptors", "rate_limit", "unit", "requests_per_unit", "unlimited",
    "shadow_mode", "quota_mode", "name", "replaces", "detailed_metric", "value_to_metric",
    "share_threshold", "metadata",
    // Extensions (api/rls/README.md): a Floodgate policy instead of a rate_limit; a domain's
    // answer when a counter cannot be reached; the quota service's buckets.
    "policy", "on_unavailable", "buckets", "bucket"};

// A plain scalar YAML would read as something other than a string (upstream's loader sees
// a number or a bool there).
bool non_string_scalar(const YAML::Node& n) {
  if (!n.IsScalar() || n.Tag() != "?") return false;
  const std::string& s = n.Scalar();
  if (s.empty()) return false;
  static const std::set<std::string, std::less<>> words = {
      "true", "false", "True", "False", "TRUE", "FALSE", "yes", "no",   "Yes",  "No",   "YES",
      "NO",   "on",    "off",  "On",    "Off",  "ON",    "OFF", "null", "Null", "NULL", "~"};
  if (words.count(s)) return true;
  char* end = nullptr;
  errno = 0;
  std::strtod(s.c_str(), &end);
  return end && *end == '\0';
}

void validate_keys(const YAML::Node& map) {
  for (const auto& kv : map) {
    const YAML::Node& k = kv.first;
    if (!k.IsScalar() || non_string_scalar(k)) {
      throw ConfigError{"config error, key is not of type string: " +
                        (k.IsScalar() ? k.Scalar() : std::string("(not a scalar)"))};
    }
    const std::string& key = k.Scalar();
    if (!kValidKeys.count(key)) throw ConfigError{"config error, unknown key '" + key + "'"};
    if (key == "metadata" || key == "bucket") continue;  // free-form (a bucket's: its own check)
    const YAML::Node& v = kv.second;
    if (v.IsSequence()) {
      for (const auto& e : v) {
        if (!e.IsMap()) {
          throw ConfigError{"config error, yaml file contains list of type other than map: " +
                            (e.IsScalar() ? e.Scalar() : std::string("(a list)"))};
        }
        validate_keys(e);
      }
    } else if (v.IsMap()) {
      validate_keys(v);
    }
  }
}

std::string scalar(const YAML::Node& n, const char* what) {
  if (!n || n.IsNull()) return "";
  if (!n.IsScalar()) {
    throw ConfigError{std::string("error loading config file: ") + what + " must be a string"};
  }
  return n.Scalar();
}

bool boolean(const YAML::Node& n, const char* what) {
  if (!n || n.IsNull()) return false;
  bool b = false;
  if (n.IsScalar() && YAML::convert<bool>::decode(n, b)) return b;
  throw ConfigError{std::string("error loading config file: cannot unmarshal `") +
                    (n.IsScalar() ? n.Scalar() : "") + "` into bool (" + what + ")"};
}

uint32_t uint32_of(const YAML::Node& n, const char* what) {
  if (!n || n.IsNull()) return 0;
  const std::string s = n.IsScalar() ? n.Scalar() : "";
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = s.empty() || s[0] == '-' ? 0 : std::strtoull(s.c_str(), &end, 10);
  if (s.empty() || s[0] == '-' || !end || *end != '\0' || errno != 0 || v > UINT32_MAX) {
    throw ConfigError{"error loading config file: cannot unmarshal `" + s + "` into uint32 (" +
                      what + ")"};
  }
  return static_cast<uint32_t>(v);
}

const YAML::Node* list_of_maps(const YAML::Node& n) {
  if (!n || n.IsNull()) return nullptr;
  if (!n.IsSequence()) throw ConfigError{"error loading config file: expected a list"};
  return &n;
}

// A value's parts around its '*'s.
std::vector<std::string> split_stars(const std::string& v) {
  std::vector<std::string> parts;
  size_t from = 0;
  for (size_t star; (star = v.find('*', from)) != std::string::npos; from = star + 1) {
    parts.push_back(v.substr(from, star - from));
  }
  parts.push_back(v.substr(from));
  return parts;
}

void load_descriptors(RlsNode& into, const std::string& domain, const std::string& parent_key,
                      const YAML::Node& list, RlsStatsBook& book) {
  const YAML::Node* seq = list_of_maps(list);
  if (!seq) return;
  for (const YAML::Node& d : *seq) {
    const std::string key = scalar(d["key"], "key");
    if (key.empty()) throw ConfigError{"descriptor has empty key"};
    const std::string value = scalar(d["value"], "value");
    const std::string final_key = value.empty() ? key : key + "_" + value;
    const std::string full_key = parent_key + final_key;
    if (into.children.count(final_key)) {
      throw ConfigError{"duplicate descriptor composite key '" + full_key + "'"};
    }
    auto node = std::make_unique<RlsNode>();
    const YAML::Node rl = d["rate_limit"];
    const std::string policy = scalar(d["policy"], "policy");
    if (rl && !rl.IsNull()) {
      if (!rl.IsMap()) throw ConfigError{"error loading config file: rate_limit must be a map"};
      if (!policy.empty()) {
        throw ConfigError{"descriptor '" + full_key + "' has both a rate_limit and a policy"};
      }
      auto lim = std::make_unique<RlsLimit>();
      lim->unlimited = boolean(rl["unlimited"], "unlimited");
      const std::string unit = scalar(rl["unit"], "unit");
      lim->unit = rls_unit_from_name(unit);
      if (lim->unlimited) {
        if (lim->unit != RlsUnit::kUnknown) {
          throw ConfigError{"should not specify rate limit unit when unlimited"};
        }
      } else if (lim->unit == RlsUnit::kUnknown) {
        throw ConfigError{"invalid rate limit unit '" + unit + "'"};
      }
      lim->requests_per_unit = uint32_of(rl["requests_per_unit"], "requests_per_unit");
      lim->name = scalar(rl["name"], "name");
      if (const YAML::Node* reps = list_of_maps(rl["replaces"])) {
        for (const YAML::Node& r : *reps) lim->replaces.push_back(scalar(r["name"], "name"));
      }
      for (const std::string& r : lim->replaces) {
        if (r.empty()) throw ConfigError{"should not have an empty replaces entry"};
        if (r == lim->name) {
          throw ConfigError{"replaces should not contain name of same descriptor"};
        }
      }
      node->limit = std::move(lim);
    } else if (!policy.empty()) {
      node->limit = std::make_unique<RlsLimit>();
      node->limit->policy = policy;
    }
    if (node->limit) {
      node->limit->shadow = boolean(d["shadow_mode"], "shadow_mode");
      node->limit->quota = boolean(d["quota_mode"], "quota_mode");
      node->limit->detailed_metric = boolean(d["detailed_metric"], "detailed_metric");
      node->limit->full_key = full_key;
      node->limit->stats = book.get(domain, std::string_view(full_key).substr(domain.size() + 1));
    }
    node->share_threshold = boolean(d["share_threshold"], "share_threshold");
    node->value_to_metric = boolean(d["value_to_metric"], "value_to_metric");
    const bool wild = final_key.find('*') != std::string::npos;
    if (node->share_threshold && !wild) {
      throw ConfigError{
          "share_threshold can only be used with wildcard values (containing '*'), but found "
          "key '" +
          final_key + "'"};
    }
    if (node->share_threshold) node->pattern = final_key;
    if (wild) {
      RlsNode::Wildcard w;
      w.key = final_key;
      w.parts = split_stars(final_key);
      into.wildcards.push_back(std::move(w));
    }
    load_descriptors(*node, domain, full_key + ".", d["descriptors"], book);
    into.children.emplace(final_key, std::move(node));
  }
}

// A domain's `buckets`: each a `bucket` (the BucketId's entries, values with '*' allowed),
// an optional `key` template, and a `policy` or a `rate_limit` (a unit and requests per
// unit, or unlimited).
void load_buckets(RlsDomain& into, const std::string& domain, const YAML::Node& list) {
  const YAML::Node* seq = list_of_maps(list);
  if (!seq) return;
  int index = 0;
  for (const YAML::Node& b : *seq) {
    const std::string where = "bucket " + std::to_string(index++);
    for (const auto& kv : b) {
      const std::string k = kv.first.Scalar();
      if (k != "bucket" && k != "key" && k != "policy" && k != "rate_limit") {
        throw ConfigError{"config error, unknown key '" + k + "' in " + where};
      }
    }
    RlqsBucketRule rule;
    const YAML::Node id = b["bucket"];
    if (!id || !id.IsMap() || id.size() == 0) {
      throw ConfigError{where + " needs a `bucket`: the BucketId entries it matches"};
    }
    for (const auto& kv : id) {
      if (!kv.first.IsScalar() || !kv.second.IsScalar() || kv.first.Scalar().empty() ||
          kv.second.Scalar().empty()) {
        throw ConfigError{where + ": a bucket's entries are names and values, not empty"};
      }
      rule.match.emplace_back(kv.first.Scalar(), split_stars(kv.second.Scalar()));
    }
    std::sort(rule.match.begin(), rule.match.end(),
              [](const auto& x, const auto& y) { return x.first < y.first; });
    for (size_t i = 1; i < rule.match.size(); ++i) {
      if (rule.match[i].first == rule.match[i - 1].first) {
        throw ConfigError{where + ": entry '" + rule.match[i].first + "' twice"};
      }
    }
    rule.key = scalar(b["key"], "key");
    for (size_t at = rule.key.find('{'); at != std::string::npos; at = rule.key.find('{', at + 1)) {
      const size_t end = rule.key.find('}', at);
      const std::string name =
          end == std::string::npos ? "" : rule.key.substr(at + 1, end - at - 1);
      if (std::none_of(rule.match.begin(), rule.match.end(),
                       [&](const auto& m) { return m.first == name; })) {
        throw ConfigError{where + ": key '" + rule.key + "' names no entry of its bucket" +
                          (name.empty() ? std::string() : " ('" + name + "')")};
      }
    }
    const YAML::Node rl = b["rate_limit"];
    rule.limit.policy = scalar(b["policy"], "policy");
    if (rl && !rl.IsNull()) {
      if (!rl.IsMap()) throw ConfigError{"error loading config file: rate_limit must be a map"};
      if (!rule.limit.policy.empty()) {
        throw ConfigError{where + " has both a rate_limit and a policy"};
      }
      rule.limit.unlimited = boolean(rl["unlimited"], "unlimited");
      const std::string unit = scalar(rl["unit"], "unit");
      rule.limit.unit = rls_unit_from_name(unit);
      if (rule.limit.unlimited) {
        if (rule.limit.unit != RlsUnit::kUnknown) {
          throw ConfigError{"should not specify rate limit unit when unlimited"};
        }
      } else if (rule.limit.unit == RlsUnit::kUnknown) {
        throw ConfigError{"invalid rate limit unit '" + unit + "'"};
      }
      rule.limit.requests_per_unit = uint32_of(rl["requests_per_unit"], "requests_per_unit");
    } else if (rule.limit.policy.empty()) {
      throw ConfigError{where + " needs a policy or a rate_limit"};
    }
    std::string text = domain + " bucket {";
    for (size_t i = 0; i < rule.match.size(); ++i) {
      text += (i ? ", " : "") + rule.match[i].first + ": " + id[rule.match[i].first].Scalar();
    }
    text += "}";
    if (!rule.key.empty()) text += " key=" + rule.key;
    if (!rule.limit.policy.empty()) {
      text += " policy=" + rule.limit.policy;
    } else if (rule.limit.unlimited) {
      text += " unlimited";
    } else {
      text += " unit=" + std::string(rls_unit_name(rule.limit.unit)) +
              " requests_per_unit=" + std::to_string(rule.limit.requests_per_unit);
    }
    rule.limit.full_key = text;
    rule.text = std::move(text);
    into.buckets.push_back(std::move(rule));
  }
}

// Upstream's wildcard match: each '*' stands for any run of characters.
bool wildcard_match(const std::vector<std::string>& parts, std::string_view v) {
  if (parts.size() == 1) return parts[0] == v;
  const std::string& first = parts.front();
  const std::string& last = parts.back();
  if (v.substr(0, first.size()) != first) return false;
  if (v.size() < last.size() || v.substr(v.size() - last.size()) != last) return false;
  size_t fixed = 0;
  for (const std::string& p : parts) fixed += p.size();
  if (v.size() < fixed) return false;
  std::string_view rest = v.substr(first.size(), v.size() - first.size() - last.size());
  for (size_t i = 1; i + 1 < parts.size(); ++i) {
    const size_t at = rest.find(parts[i]);
    if (at == std::string_view::npos) return false;
    rest.remove_prefix(at + parts[i].size());
  }
  return true;
}

void describe_node(const RlsNode& n, std::vector<std::string>& out) {
  if (const RlsLimit* l = n.limit.get()) {
    std::string s = l->full_key + ": ";
    if (!l->policy.empty()) {
      s += "policy=" + l->policy;
    } else if (l->unlimited) {
      s += "unlimited";
    } else {
      s += "unit=" + std::string(rls_unit_name(l->unit)) +
           " requests_per_unit=" + std::to_string(l->requests_per_unit);
    }
    if (!l->name.empty()) s += " name=" + l->name;
    for (const std::string& r : l->replaces) s += " replaces=" + r;
    if (l->shadow) s += " shadow_mode";
    if (l->quota) s += " quota_mode";
    if (l->detailed_metric) s += " detailed_metric";
    out.push_back(std::move(s));
  }
  for (const auto& [k, c] : n.children) describe_node(*c, out);
}

}  // namespace

Status load_rls_yaml(RlsConfig& cfg, const std::string& name, const std::string& text,
                     RlsStatsBook& book) {
  try {
    YAML::Node root;
    try {
      root = YAML::Load(text);
    } catch (const YAML::Exception& e) {
      throw ConfigError{"error loading config file: " + e.msg};
    }
    if (root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
    if (!root.IsMap()) throw ConfigError{"error loading config file: the file is not a map"};
    validate_keys(root);
    const std::string domain = scalar(root["domain"], "domain");
    if (domain.empty()) throw ConfigError{"config file cannot have empty domain"};
    if (cfg.domains.count(domain)) {
      throw ConfigError{"duplicate domain '" + domain + "' in config file"};
    }
    RlsDomain d;
    const std::string mode = scalar(root["on_unavailable"], "on_unavailable");
    if (mode == "fail_open") {
      d.on_unavailable = FailMode::kOpen;
    } else if (!mode.empty() && mode != "error") {
      throw ConfigError{"on_unavailable must be error or fail_open, not '" + mode + "'"};
    }
    load_descriptors(d.root, domain, domain + ".", root["descriptors"], book);
    load_buckets(d, domain, root["buckets"]);
    cfg.domains.emplace(domain, std::move(d));
    cfg.files.push_back(name);
    return {};
  } catch (const ConfigError& e) {
    return Error{name + ": " + e.text};
  } catch (const YAML::Exception& e) {
    return Error{name + ": error loading config file: " + e.msg};
  }
}

namespace {

// The files `path` stands for, by name; or why there are none.
Result<std::vector<fs::path>> config_files(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(path, ec)) {
      const std::string ext = e.path().extension().string();
      const std::string base = e.path().filename().string();
      if (base.empty() || base[0] == '.') continue;
      if ((ext == ".yaml" || ext == ".yml") && e.is_regular_file(ec)) files.push_back(e.path());
    }
    if (ec) return Error{path + ": " + ec.message()};
    std::sort(files.begin(), files.end());
    return files;
  }
  if (!fs::exists(path, ec)) return Error{path + ": no such file or directory"};
  return std::vector<fs::path>{fs::path(path)};
}

}  // namespace

Result<std::shared_ptr<RlsConfig>> load_rls_config(const std::string& path, RlsStatsBook& book) {
  auto files = config_files(path);
  if (!files) return Error{files.error()};
  auto cfg = std::make_shared<RlsConfig>();
  for (const fs::path& f : *files) {
    std::ifstream in(f, std::ios::binary);
    if (!in) return Error{f.filename().string() + ": cannot be read"};
    std::ostringstream text;
    text << in.rdbuf();
    if (Status st = load_rls_yaml(*cfg, f.filename().string(), text.str(), book); !st) {
      return Error{st.error()};
    }
  }
  return cfg;
}

const RlsDomain* RlsConfig::domain(std::string_view name) const {
  auto it = domains.find(name);
  return it == domains.end() ? nullptr : &it->second;
}

RlsMatch RlsConfig::match(std::string_view domain_name, const std::vector<RlsEntry>& entries,
                          RlsStatsBook& book) const {
  RlsMatch m;
  match(domain_name, entries, book, m);
  return m;
}

void RlsConfig::match(std::string_view domain_name, const std::vector<RlsEntry>& entries,
                      RlsStatsBook& book, RlsMatch& m) const {
  m.limit = nullptr;
  m.counter.clear();
  m.stats = nullptr;
  const RlsDomain* d = domain(domain_name);
  if (!d) return;
  const RlsNode* node = &d->root;
  std::vector<std::string_view>& shared = m.shared;  // share_threshold patterns, by entry
  shared.assign(entries.size(), {});
  std::string& final_key = m.level_key;
  for (size_t i = 0; i < entries.size(); ++i) {
    const RlsEntry& e = entries[i];
    final_key.assign(e.key).append("_").append(e.value);
    const RlsNode* next = nullptr;
    if (auto it = node->children.find(final_key); it != node->children.end())
      next = it->second.get();
    bool by_wildcard = false;
    if (!next) {
      for (const RlsNode::Wildcard& w : node->wildcards) {
        if (wildcard_match(w.parts, final_key)) {
          next = node->children.find(w.key)->second.get();
          by_wildcard = true;
          break;
        }
      }
    }
    if (!next) {
      if (auto it = node->children.find(e.key); it != node->children.end()) next = it->second.get();
    }
    if (by_wildcard && next->share_threshold) {
      shared[i] =
          std::string_view(next->pattern).substr(std::min(next->pattern.size(), e.key.size() + 1));
    }
    if (next && next->limit && i + 1 == entries.size()) m.limit = next->limit.get();
    if (!next || next->children.empty()) break;
    node = next;
  }
  if (!m.limit) return;
  m.counter.assign(domain_name).append("_");
  for (size_t i = 0; i < entries.size(); ++i) {
    m.counter.append(entries[i].key).append("_");
    m.counter.append(shared[i].empty() ? entries[i].value : shared[i]).append("_");
  }
  m.stats = m.limit->stats;
  if (m.limit->detailed_metric) {
    std::string key;
    for (size_t i = 0; i < entries.size(); ++i) {
      key.append(i ? "." : "").append(entries[i].key).append("_");
      key.append(shared[i].empty() ? entries[i].value : shared[i]);
    }
    m.stats = book.get(domain_name, key, m.limit->stats);
  }
}

std::vector<std::string> RlsConfig::describe() const {
  std::vector<std::string> out;
  for (const auto& [name, d] : domains) {
    out.push_back(
        name + ": on_unavailable=" + (d.on_unavailable == FailMode::kOpen ? "fail_open" : "error"));
    describe_node(d.root, out);
    for (const RlqsBucketRule& b : d.buckets) out.push_back(b.text);
  }
  return out;
}

const RlqsBucketRule* RlsConfig::match_bucket(std::string_view domain_name,
                                              std::vector<RlsEntry>& entries,
                                              std::string& key) const {
  const RlsDomain* d = domain(domain_name);
  if (!d) return nullptr;
  std::sort(entries.begin(), entries.end(),
            [](const RlsEntry& x, const RlsEntry& y) { return x.key < y.key; });
  for (const RlqsBucketRule& rule : d->buckets) {
    if (rule.match.size() != entries.size()) continue;
    bool all = true;
    for (size_t i = 0; all && i < entries.size(); ++i) {
      all = rule.match[i].first == entries[i].key &&
            wildcard_match(rule.match[i].second, entries[i].value);
    }
    if (!all) continue;
    key.clear();
    if (rule.key.empty()) {
      key.append("rlqs:").append(domain_name).append("_");
      for (const RlsEntry& e : entries) key.append(e.key).append("_").append(e.value).append("_");
      if (!rule.limit.policy.empty()) {
        key.append("policy:").append(rule.limit.policy);
      } else {
        key.append(std::to_string(rls_unit_seconds(rule.limit.unit)));
      }
      return &rule;
    }
    for (size_t i = 0; i < rule.key.size(); ++i) {
      const size_t end = rule.key[i] == '{' ? rule.key.find('}', i) : std::string::npos;
      if (end == std::string::npos) {
        key.push_back(rule.key[i]);
        continue;
      }
      const std::string_view name = std::string_view(rule.key).substr(i + 1, end - i - 1);
      for (const RlsEntry& e : entries) {
        if (e.key == name) key.append(e.value);
      }
      i = end;
    }
    return &rule;
  }
  return nullptr;
}

std::string RlsRules::fingerprint() const {
  std::string fp;
  auto files = config_files(path_);
  if (!files) return "missing";
  for (const fs::path& f : *files) {
    std::error_code ec;
    const auto size = fs::file_size(f, ec);
    const auto mtime = fs::last_write_time(f, ec);
    fp += f.string() + ":" + std::to_string(size) + ":" +
          std::to_string(mtime.time_since_epoch().count()) + ";";
  }
  return fp;
}

bool RlsRules::changed() const {
  const std::string fp = fingerprint();
  std::lock_guard lock(mu_);
  return fp != loaded_fingerprint_;
}

Status RlsRules::reload() {
  std::lock_guard lock(mu_);
  loaded_fingerprint_ = fingerprint();  // (a refused file is not read again until it changes)
  auto cfg = load_rls_config(path_, stats_);
  if (!cfg) {
    error_ = cfg.error();
    stats_.config_load_error.fetch_add(1, std::memory_order_relaxed);
    return Error{error_};
  }
  error_.clear();
  std::atomic_store(&config_, std::shared_ptr<const RlsConfig>(std::move(cfg.value())));
  version_.fetch_add(1, std::memory_order_release);
  stats_.config_load_success.fetch_add(1, std::memory_order_relaxed);
  loaded_at_ms_.store(std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count());
  return {};
}

std::string RlsRules::last_error() const {
  std::lock_guard lock(mu_);
  return error_;
}

}  // namespace fg
