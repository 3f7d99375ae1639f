// Counters per gateway domain, bounded.
#include "rls_keys.hpp"

#include <algorithm>
#include <functional>

namespace fg {

namespace {
uint64_t hash_of(std::string_view key) {
  uint64_t h = std::hash<std::string_view>{}(key);
  return h ^ (h >> 29) * 0x9e3779b97f4a7c15ULL;
}
}  // namespace

void RlsKeys::sweep(Domain& d, int64_t now_ns) {
  for (auto it = d.until_ns.begin(); it != d.until_ns.end();) {
    it = it->second <= now_ns ? d.until_ns.erase(it) : std::next(it);
  }
  d.swept_ns = now_ns;
}

bool RlsKeys::note(std::string_view domain, const std::vector<Key>& keys, int64_t now_ns,
                   std::string& why) {
  Domain& d = domains_[std::string(domain)];
  size_t fresh = 0;
  for (const Key& k : keys) {
    const auto it = d.until_ns.find(hash_of(k.key));
    fresh += it == d.until_ns.end() || it->second <= now_ns ? 1 : 0;
  }
  if (fresh > kMaxNewPerCall) {
    why = "a call may make at most " + std::to_string(kMaxNewPerCall) + " new counters";
    return false;
  }
  if (fresh > 0 && d.until_ns.size() + fresh > max_) {
    sweep(d, now_ns);  // (those whose window ended hold nothing)
    if (d.until_ns.size() + fresh > max_) {
      why = "domain '" + std::string(domain) + "' holds " + std::to_string(d.until_ns.size()) +
            " counters on this node (rls-max-keys-per-domain)";
      return false;
    }
  }
  for (const Key& k : keys) {
    int64_t& until = d.until_ns[hash_of(k.key)];
    until = std::max(until, now_ns + k.lifetime_ns);
  }
  return true;
}

size_t RlsKeys::held(std::string_view domain) const {
  const auto it = domains_.find(std::string(domain));
  return it == domains_.end() ? 0 : it->second.until_ns.size();
}

}  // namespace fg
