// Which limit applies to a key: override, named policy, or mapped pattern.
#include "policy_registry.hpp"

#include <algorithm>

#include "command_util.hpp"

namespace fg {

namespace {
const LimitSpec* find_policy(const PolicyMap& policies, std::string_view name, std::string& error) {
  auto it = policies.find(name);
  if (it != policies.end()) return &it->second;
  error = "ERR unknown policy '" + std::string(name.substr(0, 128)) + "'";
  return nullptr;
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

const LimitSpec* PolicySet::lookup(std::string_view key, std::string_view named, std::string& error,
                                   Source* source) const {
  if (!overrides.empty()) {
    auto it = overrides.find(key);
    if (it != overrides.end()) {
      if (source) *source = Source::kOverride;
      if (it->second.policy.empty()) return &it->second.spec;
      return find_policy(policies, it->second.policy, error);
    }
  }
  if (!named.empty()) {
    if (source) *source = Source::kNamed;
    return find_policy(policies, named, error);
  }
  for (const auto& p : patterns) {
    if (glob_match(p.glob, key, false)) {
      if (source) *source = Source::kPattern;
      return find_policy(policies, p.policy, error);
    }
  }
  error =
      "ERR no policy applies to this key: name one, or map a key pattern to one with "
      "FG.POLICY MAP";
  return nullptr;
}

void PolicySet::sort_patterns() {
  std::sort(patterns.begin(), patterns.end(), [](const KeyPattern& a, const KeyPattern& b) {
    const size_t la = literal_chars(a.glob), lb = literal_chars(b.glob);
    return la != lb ? la > lb : a.glob < b.glob;
  });
}

}  // namespace fg
