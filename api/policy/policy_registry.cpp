// Which limit applies to a key: override, named policy, or mapped pattern.
#include "policy_registry.hpp"

#include <algorithm>

#include "errors.hpp"
#include "words.hpp"

namespace fg {

namespace {
Result<const LimitSpec*> find_policy(const PolicyMap& policies, std::string_view name) {
  auto it = policies.find(name);
  if (it != policies.end()) return &it->second;
  return Error{err::unknown_policy(name)};
}

size_t literal_chars(const std::string& glob) {
  size_t n = 0;
  for (size_t i = 0; i < glob.size(); ++i) {
    const char c = glob[i];
    if (c == '*' || c == '?') continue;
    if (c == '[') {  // a class matches one character: count it as half a literal
      while (i < glob.size() && glob[i] != ']') ++i;
      continue;
    }
    if (c == '\\') ++i;
    ++n;
  }
  return n;
}
}  // namespace

Result<const LimitSpec*> PolicySet::lookup(std::string_view key, std::string_view named,
                                           Source* source) const {
  if (!overrides.empty()) {
    auto it = overrides.find(key);
    if (it != overrides.end()) {
      if (source) *source = Source::kOverride;
      if (it->second.policy.empty()) return &it->second.spec;
      return find_policy(policies, it->second.policy);
    }
  }
  if (!named.empty()) {
    if (source) *source = Source::kNamed;
    return find_policy(policies, named);
  }
  for (const auto& p : patterns) {
    if (glob_match(p.glob, key, false)) {
      if (source) *source = Source::kPattern;
      return find_policy(policies, p.policy);
    }
  }
  return Error{err::kNoPolicyApplies};
}

bool PolicySet::leads_to_sync() const {
  auto sync = [&](std::string_view name) {
    Result<const LimitSpec*> p = find_policy(policies, name);
    return p.ok() && (*p)->sync;
  };
  for (const auto& p : patterns)
    if (sync(p.policy)) return true;
  for (const auto& [key, o] : overrides)
    if (o.policy.empty() ? o.spec.sync : sync(o.policy)) return true;
  return false;
}

void PolicySet::sort_patterns() {
  std::sort(patterns.begin(), patterns.end(), [](const KeyPattern& a, const KeyPattern& b) {
    const size_t la = literal_chars(a.glob), lb = literal_chars(b.glob);
    return la != lb ? la > lb : a.glob < b.glob;
  });
}

}  // namespace fg
