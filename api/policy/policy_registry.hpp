// The policies in force — named policies, key patterns mapped to them, per-key overrides —
// read on the request path without locks: readers take a snapshot; a change publishes a
// whole new set (built by PolicyStore from the cluster-wide book).
#pragma once
#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "limit_spec.hpp"
#include "result.hpp"

namespace fg {

using PolicyMap = std::map<std::string, LimitSpec, std::less<>>;

struct KeyPattern {
  std::string glob;    // Redis glob: * ? [abc] \x
  std::string policy;  // a policy name, looked up when used
};

struct PolicyOverride {
  std::string policy;  // a policy name, or empty: `spec` is the limit itself
  LimitSpec spec;
};

struct PolicySet {
  PolicyMap policies;
  std::vector<KeyPattern> patterns;  // most specific first (see sort_patterns)
  std::map<std::string, PolicyOverride, std::less<>> overrides;
  uint64_t digest = 0;  // the book it was built from
  // Whether some key pattern or per-key override leads to a `replication: sync` limit: only
  // then does a data command look its key up (PolicyRegistry::replace sets it).
  bool sync_keys = false;

  // Where a request's limit came from.
  enum class Source { kNamed, kOverride, kPattern };
  // The limit for `key` when the caller named `named` (empty: none). A per-key override
  // wins over the named policy; with no name and no override, the most specific matching
  // pattern decides. (An inline limit is used as given and never gets here.)
  Result<const LimitSpec*> lookup(std::string_view key, std::string_view named,
                                  Source* source = nullptr) const;
  Result<LimitSpec> resolve(std::string_view key, std::string_view named) const {
    Result<const LimitSpec*> p = lookup(key, named);
    if (!p.ok()) return Error{p.error()};
    return **p;
  }
  // Orders patterns most specific first: more literal characters, then by text.
  void sort_patterns();
  bool leads_to_sync() const;
};

class PolicyRegistry {
 public:
  std::shared_ptr<const PolicySet> snapshot() const { return std::atomic_load(&set_); }
  // Moves on with every replace(): a reader keeps its snapshot while this stays the same
  // (one atomic read per request instead of atomic_load's lock and reference count).
  uint64_t version() const { return version_.load(std::memory_order_acquire); }
  // `held` refreshed if the set changed since `held_version` (which it updates).
  void refresh(std::shared_ptr<const PolicySet>& held, uint64_t& held_version) const {
    const uint64_t v = version();
    if (held && v == held_version) return;
    held = snapshot();  // (a replace in between: newer than v, and read again next time)
    held_version = v;
  }
  void replace(PolicySet s) {
    s.sync_keys = s.leads_to_sync();
    std::atomic_store(&set_,
                      std::shared_ptr<const PolicySet>(std::make_shared<PolicySet>(std::move(s))));
    version_.fetch_add(1, std::memory_order_release);
  }
  // Only the named policies replaced (tests, and nodes without a store).
  void replace(PolicyMap m) {
    PolicySet s;
    s.policies = std::move(m);
    replace(std::move(s));
  }

 private:
  std::shared_ptr<const PolicySet> set_ = std::make_shared<PolicySet>();
  std::atomic<uint64_t> version_{0};
};

}  // namespace fg
