// Counters per gateway domain, bounded, made room for by forgetting the heaviest caller's
// least recently used.
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

// Counters whose windows ended hold nothing: forgotten (not reset: they are gone already).
void RlsKeys::sweep(Domain& d, int64_t now_ns) {
  for (auto c = d.callers.begin(); c != d.callers.end();) {
    Lru& lru = c->second;
    for (auto it = lru.begin(); it != lru.end();) {
      if (it->until_ns > now_ns) {
        ++it;
        continue;
      }
      d.by_hash.erase(it->hash);
      it = lru.erase(it);
    }
    c = lru.empty() ? d.callers.erase(c) : std::next(c);
  }
  d.swept_ns = now_ns;
}

void RlsKeys::forget(Domain& d, Lru& from, std::vector<std::string>& evicted) {
  Counter& c = from.front();
  d.by_hash.erase(c.hash);
  evicted.push_back(std::move(c.key));
  from.pop_front();
  ++evictions_;
}

RlsKeys::Lru* RlsKeys::largest(Domain& d) {
  Lru* most = nullptr;
  for (auto& [caller, lru] : d.callers)
    if (!lru.empty() && (!most || lru.size() > most->size())) most = &lru;
  return most;
}

bool RlsKeys::note(std::string_view domain, std::string_view caller, const std::vector<Key>& keys,
                   int64_t now_ns, std::vector<std::string>& evicted, std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  Domain& d = domains_[std::string(domain)];
  size_t fresh = 0;
  for (const Key& k : keys) {
    const auto it = d.by_hash.find(hash_of(k.key));
    fresh += it == d.by_hash.end() || it->second->until_ns <= now_ns ? 1 : 0;
  }
  if (fresh > kMaxNewPerCall) {
    why = "a call may make at most " + std::to_string(kMaxNewPerCall) + " new counters";
    return false;
  }
  if (fresh > 0 && d.by_hash.size() + fresh > max_) sweep(d, now_ns);
  Lru& mine = d.callers[std::string(caller)];
  for (const Key& k : keys) {
    const uint64_t h = hash_of(k.key);
    const int64_t until = now_ns + k.lifetime_ns;
    if (auto it = d.by_hash.find(h); it != d.by_hash.end()) {
      // Known: used now (the caller that made it keeps it; its window may grow).
      Counter& c = *it->second;
      c.until_ns = std::max(c.until_ns, until);
      Lru& owner = d.callers[c.caller];
      owner.splice(owner.end(), owner, it->second);
      continue;
    }
    while (d.by_hash.size() >= max_ && max_ > 0) {
      // Full: the caller holding more than its even share gives up its oldest; else the
      // caller that holds the most does.
      const size_t even = std::max<size_t>(1, max_ / std::max<size_t>(1, d.callers.size()));
      Lru* from = mine.size() > even ? &mine : largest(d);
      if (!from || from->empty()) break;
      forget(d, *from, evicted);
    }
    if (max_ == 0) break;
    mine.push_back({std::string(k.key), h, until, std::string(caller)});
    d.by_hash[h] = std::prev(mine.end());
  }
  for (auto c = d.callers.begin(); c != d.callers.end();)
    c = c->second.empty() ? d.callers.erase(c) : std::next(c);
  return true;
}

size_t RlsKeys::held(std::string_view domain) const {
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = domains_.find(std::string(domain));
  return it == domains_.end() ? 0 : it->second.by_hash.size();
}

size_t RlsKeys::held(std::string_view domain, std::string_view caller) const {
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = domains_.find(std::string(domain));
  if (it == domains_.end()) return 0;
  const auto c = it->second.callers.find(std::string(caller));
  return c == it->second.callers.end() ? 0 : c->second.size();
}

uint64_t RlsKeys::evictions() const {
  std::lock_guard<std::mutex> lock(mu_);
  return evictions_;
}

}  // namespace fg
