// The leases of one concurrency key: permits that expire unless renewed.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fg {

struct Lease {
  uint64_t id = 0;
  int64_t expires_at_ns = 0;
  std::string holder;  // empty when the lease has no holder
};

struct AcquireResult {
  bool granted = false;
  uint64_t lease_id = 0;
  int64_t held = 0;             // live leases after the call
  int64_t retry_after_ns = -1;  // when denied: until the soonest lease expires
};

// At most `limit` live leases; expired leases are dropped before every decision.
class LeaseSet {
 public:
  AcquireResult acquire(int64_t limit, int64_t ttl_ns, std::string_view holder, uint64_t id,
                        int64_t now_ns);
  bool renew(uint64_t id, int64_t ttl_ns, int64_t now_ns);
  bool release(uint64_t id, std::string* holder_out = nullptr);
  // Renews every lease of `holder`; returns how many.
  int64_t renew_holder(std::string_view holder, int64_t ttl_ns, int64_t now_ns);
  // Releases every lease of `holder`; returns how many.
  int64_t release_holder(std::string_view holder);
  int64_t count(int64_t now_ns);
  // Drops expired leases, appending their holders (for the holder index) to `holders_out`.
  void expire(int64_t now_ns, std::vector<std::string>* holders_out = nullptr);
  bool empty() const { return leases_.empty(); }
  bool idle(int64_t now_ns) const;
  int64_t soonest_expiry_ns() const;
  const std::vector<Lease>& leases() const { return leases_; }
  // Puts back a lease exactly as it was (state moving between nodes).
  void restore(Lease l) { leases_.push_back(std::move(l)); }

 private:
  std::vector<Lease> leases_;
};

}  // namespace fg
