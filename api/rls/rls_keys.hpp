// How many counters each gateway domain has made on this node and may still hold: the
// gateway door needs no credentials by default, and a descriptor may carry a limit of its
// own (a quota bucket, values of its own), so every distinct set of entries would otherwise
// be a new key for as long as its window lasts (a year, for a YEAR unit). Each domain may
// hold `max_per_domain` of them (rls-max-keys-per-domain); domains no rls-config file names
// share one allowance; a call may make at most kMaxNewPerCall.
//
// Who made a counter is remembered — the caller: a connection's peer address, its token or
// certificate — and when a domain is full a new counter is made room for by forgetting an
// old one: the least recently used counter of the caller that holds the most (the caller
// itself, when it holds more than its even share of the domain). One caller that makes
// counters as fast as it can then churns its own, and a new client of the domain is not
// refused for the windows an attacker's counters would have lived. A counter forgotten is
// given back to the door (`evicted`) to be reset in the keyspace.
//
// Shared by the door's threads (one lock); time is given.
#pragma once
#include <cstdint>
#include <list>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace fg {

class RlsKeys {
 public:
  static constexpr size_t kMaxNewPerCall = 64;

  explicit RlsKeys(size_t max_per_domain) : max_(max_per_domain) {}

  // A call's counters: `keys` of `domain` ("" for one no file names), made by `caller`, each
  // living at most its `lifetime_ns` from `now_ns`. True, and each key is known (and used)
  // from now on, with room made by forgetting old counters (their keys in `evicted`), when
  // at most kMaxNewPerCall of them are new; false (nothing noted) otherwise, `why` says why.
  struct Key {
    std::string_view key;
    int64_t lifetime_ns;
  };
  bool note(std::string_view domain, std::string_view caller, const std::vector<Key>& keys,
            int64_t now_ns, std::vector<std::string>& evicted, std::string& why);
  size_t held(std::string_view domain) const;                           // (tests, metrics)
  size_t held(std::string_view domain, std::string_view caller) const;  // (tests)
  uint64_t evictions() const;

 private:
  struct Counter {
    std::string key;
    uint64_t hash;
    int64_t until_ns;
    std::string caller;
  };
  using Lru = std::list<Counter>;  // a caller's counters, least recently used first
  struct Domain {
    std::unordered_map<uint64_t, Lru::iterator> by_hash;
    std::unordered_map<std::string, Lru> callers;
    int64_t swept_ns = 0;
  };
  void sweep(Domain& d, int64_t now_ns);
  void forget(Domain& d, Lru& from, std::vector<std::string>& evicted);
  Lru* largest(Domain& d);

  mutable std::mutex mu_;
  size_t max_;
  std::unordered_map<std::string, Domain> domains_;
  uint64_t evictions_ = 0;
};

}  // namespace fg
