// Policy definitions as text, and the book <-> PolicySet translation.
#include "policy_store.hpp"

#include <spdlog/spdlog.h>

#include <sstream>

#include "calendar.hpp"
#include "decision.hpp"
#include "errors.hpp"
#include "policy_ids.hpp"
#include "words.hpp"

namespace fg {

namespace {
constexpr std::string_view kPolicy = "policy/";
constexpr std::string_view kPattern = "pattern/";
constexpr std::string_view kOverride = "override/";

std::vector<std::string_view> split_words(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && s[i] == ' ') ++i;
    size_t j = i;
    while (j < s.size() && s[j] != ' ') ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

std::string override_value(const PolicyOverride& o) {
  return o.policy.empty() ? policy_definition(o.spec) : o.policy;
}

// An override's value: one word is a policy name, more are a definition.
Result<PolicyOverride> parse_override(std::string_view value) {
  const auto words = split_words(value);
  PolicyOverride o;
  if (words.size() == 1 && kind_from_name(words[0]) == Kind::kNone) {
    o.policy = std::string(words[0]);
    return o;
  }
  Result<LimitSpec> spec = parse_definition(words, 0);
  if (!spec.ok()) return Error{spec.error()};
  o.spec = spec.value();
  return o;
}
}  // namespace

std::string policy_definition(const LimitSpec& spec) {
  std::ostringstream out;
  out << kind_name(spec.kind) << ' ';
  switch (spec.kind) {
    case Kind::kTokenBucket:
    case Kind::kGcra:
      out << spec.a << ' ' << spec.b << ' ' << spec.c / kNsPerMs;
      break;
    case Kind::kCalendarWindow:
      out << spec.a << ' ' << calendar_unit_name(calendar_unit_of(spec.b)) << " TZ "
          << calendar_zone_name(calendar_zone_of(spec.b));
      break;
    default:
      out << spec.a << ' ' << spec.c / kNsPerMs;
      break;
  }
  if (spec.sync) out << " REPLICATION sync";
  if (spec.on_unavailable == FailMode::kOpen) out << " ON_UNAVAILABLE fail_open";
  if (spec.on_unavailable == FailMode::kClosed) out << " ON_UNAVAILABLE fail_closed";
  if (spec.shadow) out << " SHADOW";
  if (spec.no_slices) out << " SLICES off";
  return out.str();
}

Result<LimitSpec> parse_definition(const std::vector<std::string_view>& args, size_t i) {
  Result<LimitSpec> limit = parse_limit_words(args, i);
  if (!limit.ok()) return limit;
  LimitSpec spec = limit.value();
  for (; i < args.size(); i += 2) {
    if (iequals(args[i], "shadow")) {  // (a flag: no value)
      spec.shadow = true;
      --i;
      continue;
    }
    if (i + 1 >= args.size()) return Error{err::kSyntax};
    const std::string_view v = args[i + 1];
    if (iequals(args[i], "replication") && (iequals(v, "sync") || iequals(v, "async"))) {
      spec.sync = iequals(v, "sync");
    } else if (iequals(args[i], "on_unavailable") && iequals(v, "fail_open")) {
      spec.on_unavailable = FailMode::kOpen;
    } else if (iequals(args[i], "on_unavailable") && iequals(v, "fail_closed")) {
      spec.on_unavailable = FailMode::kClosed;
    } else if (iequals(args[i], "on_unavailable") && iequals(v, "error")) {
      spec.on_unavailable = FailMode::kError;
    } else if (iequals(args[i], "slices") && (iequals(v, "on") || iequals(v, "off"))) {
      spec.no_slices = iequals(v, "off");
    } else {
      return Error{err::kSyntax};
    }
  }
  if (spec.shadow && spec.kind == Kind::kConcurrency) return Error{err::kShadowConcurrency};
  return spec;
}

Status check_policy_name(std::string_view name) {
  if (name.empty() || name.size() > 128) return Error{err::kPolicyNameSize};
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.' &&
        c != ':') {
      return Error{err::kPolicyNameChars};
    }
  }
  if (kind_from_name(name) != Kind::kNone) return Error{err::kPolicyNamedLikeKind};
  for (const char* w : {"cost", "holder", "bound"}) {
    if (iequals(name, w)) return Error{err::kPolicyNamedLikeWord};
  }
  return {};
}

PolicyStore::PolicyStore(Book& book, PolicyRegistry& registry, const Clock& clock)
    : book_(book), registry_(registry), clock_(clock) {
  listener_ = book_.listen([this] { rebuild(); });
  rebuild();
}

PolicyStore::~PolicyStore() { book_.unlisten(listener_); }

Status PolicyStore::put(const std::string& key, const std::string& value) {
  if (!book_.put(key, value, false, static_cast<uint64_t>(clock_.now_ns() / 1'000'000))) {
    return Error{err::book_full(Book::kMaxEntries)};
  }
  return {};
}

bool PolicyStore::del(const std::string& key) {
  const BookEntries all = book_.entries();
  auto it = all.find(key);
  if (it == all.end() || it->second.deleted) return false;
  book_.put(key, "", true, static_cast<uint64_t>(clock_.now_ns() / 1'000'000));
  return true;
}

Status PolicyStore::set_policy(const std::string& name, const LimitSpec& spec) {
  Status named = check_policy_name(name);
  if (!named.ok()) return named;
  return put(std::string(kPolicy) + name, policy_definition(spec));
}

Result<bool> PolicyStore::del_policy(const std::string& name) {
  auto set = registry_.snapshot();
  for (const auto& p : set->patterns) {
    if (p.policy == name) return Error{err::policy_in_use(name, p.glob)};
  }
  return del(std::string(kPolicy) + name);
}

Status PolicyStore::map_pattern(const std::string& glob, const std::string& policy) {
  if (glob.empty() || glob.size() > 1024) return Error{err::kPatternSize};
  auto set = registry_.snapshot();
  if (set->policies.find(policy) == set->policies.end()) return Error{err::unknown_policy(policy)};
  return put(std::string(kPattern) + glob, policy);
}

bool PolicyStore::unmap_pattern(const std::string& glob) {
  return del(std::string(kPattern) + glob);
}

Status PolicyStore::set_override(const std::string& key, const PolicyOverride& o) {
  if (key.empty()) return Error{err::kSyntax};
  if (!o.policy.empty()) {
    auto set = registry_.snapshot();
    if (set->policies.find(o.policy) == set->policies.end()) {
      return Error{err::unknown_policy(o.policy)};
    }
  }
  return put(std::string(kOverride) + key, override_value(o));
}

bool PolicyStore::del_override(const std::string& key) { return del(std::string(kOverride) + key); }

std::map<std::string, std::string> PolicyStore::to_book(const PolicyFile& f) {
  std::map<std::string, std::string> out;
  for (const auto& [name, spec] : f.policies)
    out[std::string(kPolicy) + name] = policy_definition(spec);
  for (const auto& [glob, name] : f.patterns) out[std::string(kPattern) + glob] = name;
  for (const auto& [key, o] : f.overrides) out[std::string(kOverride) + key] = override_value(o);
  return out;
}

void PolicyStore::load_file(const PolicyFile& f, uint64_t mtime_ms) {
  auto entries = to_book(f);
  BookEntries in;
  for (const auto& [k, v] : entries) {
    BookEntry e;
    e.value = v;
    e.version = mtime_ms;
    e.origin = book_.origin();
    in[k] = std::move(e);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    file_ = std::move(entries);
  }
  book_.merge(in);
}

size_t PolicyStore::reload_file(const PolicyFile& f) {
  auto now = to_book(f);
  std::map<std::string, std::string> before;
  {
    std::lock_guard<std::mutex> lock(mu_);
    before = file_;
    file_ = now;
  }
  size_t n = 0;
  for (const auto& [k, v] : now) {
    auto it = before.find(k);
    if (it == before.end() || it->second != v) n += put(k, v).ok() ? 1 : 0;
  }
  for (const auto& [k, v] : before) {
    if (!now.count(k)) n += del(k) ? 1 : 0;
  }
  return n;
}

void PolicyStore::rebuild() {
  // Whole under the lock: two rebuilds racing must not publish the older book last.
  std::lock_guard<std::mutex> lock(mu_);
  const BookEntries all = book_.entries();
  PolicySet set;
  set.digest = book_.digest();
  for (const auto& [key, e] : all) {
    if (e.deleted) continue;
    const std::string_view k = key;
    Status understood;
    if (k.substr(0, kPolicy.size()) == kPolicy) {
      Result<LimitSpec> spec = parse_definition(split_words(e.value), 0);
      if (spec.ok()) {
        const std::string name(k.substr(kPolicy.size()));
        spec.value().policy = PolicyIds::get().id_of(name);
        set.policies.emplace(name, spec.value());
      } else {
        understood = Error{spec.error()};
      }
    } else if (k.substr(0, kPattern.size()) == kPattern) {
      set.patterns.push_back(KeyPattern{std::string(k.substr(kPattern.size())), e.value});
    } else if (k.substr(0, kOverride.size()) == kOverride) {
      Result<PolicyOverride> o = parse_override(e.value);
      if (o.ok()) {
        o.value().spec.policy = PolicyIds::get().id_of("(override)");
        set.overrides.emplace(std::string(k.substr(kOverride.size())), std::move(o.value()));
      } else {
        understood = Error{o.error()};
      }
    }  // other keys: written by a newer node, not ours to read
    if (!understood.ok()) {
      spdlog::warn("policy book entry {} = '{}' is not understood here: {}", key, e.value,
                   understood.error());
    }
  }
  set.sort_patterns();
  registry_.replace(std::move(set));
}

}  // namespace fg
