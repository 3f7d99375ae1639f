// Lease arithmetic: grant under the limit, renew, release, reclaim on expiry.
#include "lease_set.hpp"

#include <algorithm>
#include <limits>

namespace fg {

void LeaseSet::expire(int64_t now_ns, std::vector<std::string>* holders_out) {
  auto dead = [now_ns](const Lease& l) { return l.expires_at_ns <= now_ns; };
  if (holders_out) {
    for (const auto& l : leases_)
      if (dead(l) && !l.holder.empty()) holders_out->push_back(l.holder);
  }
  leases_.erase(std::remove_if(leases_.begin(), leases_.end(), dead), leases_.end());
}

AcquireResult LeaseSet::acquire(int64_t limit, int64_t ttl_ns, std::string_view holder, uint64_t id,
                                int64_t now_ns) {
  AcquireResult r;
  if (static_cast<int64_t>(leases_.size()) >= limit) {
    r.held = static_cast<int64_t>(leases_.size());
    r.retry_after_ns = leases_.empty() ? -1 : soonest_expiry_ns() - now_ns;
    return r;
  }
  leases_.push_back(Lease{id, now_ns + ttl_ns, std::string(holder)});
  r.granted = true;
  r.lease_id = id;
  r.held = static_cast<int64_t>(leases_.size());
  return r;
}

bool LeaseSet::renew(uint64_t id, int64_t ttl_ns, int64_t now_ns) {
  for (auto& l : leases_) {
    if (l.id == id && l.expires_at_ns > now_ns) {
      l.expires_at_ns = now_ns + ttl_ns;
      return true;
    }
  }
  return false;
}

bool LeaseSet::release(uint64_t id, std::string* holder_out) {
  for (size_t i = 0; i < leases_.size(); ++i) {
    if (leases_[i].id == id) {
      if (holder_out) *holder_out = std::move(leases_[i].holder);
      leases_[i] = std::move(leases_.back());
      leases_.pop_back();
      return true;
    }
  }
  return false;
}

int64_t LeaseSet::renew_holder(std::string_view holder, int64_t ttl_ns, int64_t now_ns) {
  int64_t n = 0;
  for (auto& l : leases_) {
    if (l.holder == holder && l.expires_at_ns > now_ns) {
      l.expires_at_ns = now_ns + ttl_ns;
      ++n;
    }
  }
  return n;
}

int64_t LeaseSet::release_holder(std::string_view holder) {
  const auto before = leases_.size();
  leases_.erase(std::remove_if(leases_.begin(), leases_.end(),
                               [&](const Lease& l) { return l.holder == holder; }),
                leases_.end());
  return static_cast<int64_t>(before - leases_.size());
}

int64_t LeaseSet::count(int64_t now_ns) {
  int64_t n = 0;
  for (const auto& l : leases_) n += l.expires_at_ns > now_ns ? 1 : 0;
  return n;
}

bool LeaseSet::idle(int64_t now_ns) const {
  for (const auto& l : leases_)
    if (l.expires_at_ns > now_ns) return false;
  return true;
}

int64_t LeaseSet::soonest_expiry_ns() const {
  int64_t t = std::numeric_limits<int64_t>::max();
  for (const auto& l : leases_) t = std::min(t, l.expires_at_ns);
  return t;
}

}  // namespace fg
