// How many counters each gateway domain has made on this node and may still hold: the
// gateway door needs no credentials by default, and a descriptor may carry a limit of its
// own, so every distinct set of entries would otherwise be a new key for as long as its
// window lasts (a year, for a YEAR unit). Each domain may hold `max_per_domain` of them
// (rls-max-keys-per-domain); domains no rls-config file names share one allowance; a call
// may make at most kMaxNewPerCall. Pure bookkeeping on the door's one thread: time is given.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace fg {

class RlsKeys {
 public:
  static constexpr size_t kMaxNewPerCall = 64;

  explicit RlsKeys(size_t max_per_domain) : max_(max_per_domain) {}

  // A call's counters: `keys` of `domain` ("" for one no file names), each living at most
  // its `lifetime_ns` from `now_ns`. True, and each key is known from now on, when the
  // domain has room for those it did not know and they are at most kMaxNewPerCall; false
  // (nothing noted) otherwise, `why` says which.
  struct Key {
    std::string_view key;
    int64_t lifetime_ns;
  };
  bool note(std::string_view domain, const std::vector<Key>& keys, int64_t now_ns,
            std::string& why);
  size_t held(std::string_view domain) const;  // (tests, metrics)

 private:
  struct Domain {
    std::unordered_map<uint64_t, int64_t> until_ns;  // a key's hash -> when it is gone
    int64_t swept_ns = 0;
  };
  void sweep(Domain& d, int64_t now_ns);
  size_t max_;
  std::unordered_map<std::string, Domain> domains_;
};

}  // namespace fg
