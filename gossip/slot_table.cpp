// Slot planning: equal shares, fewest moves, contiguous ranges.
#include "slot_table.hpp"

#include <algorithm>
#include <numeric>

namespace fg {

std::vector<uint16_t> SlotTable::replicas(uint32_t slot) const {
  return owner_[slot] == kNoOwner ? std::vector<uint16_t>{} : holders_of(owner_[slot]);
}

std::vector<uint16_t> SlotTable::holders_of(uint16_t o) const {
  std::vector<uint16_t> out;
  const size_t n = members_.size();
  if (o >= n) return out;
  for (size_t k = 0; k < std::min(r_, n); ++k) out.push_back(static_cast<uint16_t>((o + k) % n));
  return out;
}

bool SlotTable::holds_copy(uint32_t slot, uint16_t m) const {
  const uint16_t o = owner_[slot];
  if (o == kNoOwner || m >= members_.size()) return false;
  const size_t n = members_.size();
  return (m + n - o) % n < std::min(r_, n);
}

int SlotTable::index_of(const std::string& id) const {
  auto it = std::lower_bound(members_.begin(), members_.end(), id);
  return it != members_.end() && *it == id ? static_cast<int>(it - members_.begin()) : -1;
}

bool SlotTable::balanced() const {
  if (members_.empty()) return true;
  std::vector<size_t> load(members_.size(), 0);
  for (uint16_t o : owner_) {
    if (o == kNoOwner) return false;
    ++load[o];
  }
  const auto [lo, hi] = std::minmax_element(load.begin(), load.end());
  return *hi - *lo <= 1;
}

bool SlotTable::quorum(const std::vector<std::string>& live) const {
  if (members_.empty()) return true;
  size_t seen = 0;
  for (const auto& id : live) seen += index_of(id) >= 0 ? 1 : 0;
  if (2 * seen != members_.size()) return 2 * seen > members_.size();
  return std::find(live.begin(), live.end(), members_.front()) != live.end();
}

uint64_t SlotTable::member_since(const std::string& id) const {
  const int i = index_of(id);
  if (i < 0) return 0;
  return static_cast<size_t>(i) < since_.size() ? since_[i] : epoch_;
}

std::vector<SlotRange> SlotTable::ranges() const {
  std::vector<SlotRange> out;
  for (uint32_t s = 0; s < kSlotCount; ++s) {
    if (!out.empty() && out.back().owner == owner_[s]) {
      out.back().last = s;
    } else {
      out.push_back({s, s, owner_[s]});
    }
  }
  return out;
}

size_t SlotTable::slots_of(uint16_t member) const {
  return static_cast<size_t>(std::count(owner_.begin(), owner_.end(), member));
}

SlotTable SlotTable::from_parts(uint64_t epoch, std::vector<std::string> members,
                                std::vector<uint16_t> owners, size_t r,
                                std::vector<uint64_t> since) {
  SlotTable t;
  t.epoch_ = epoch;
  t.members_ = std::move(members);
  if (owners.size() == kSlotCount) t.owner_ = std::move(owners);
  t.r_ = std::max<size_t>(1, r);
  if (since.size() != t.members_.size()) since.assign(t.members_.size(), epoch);
  t.since_ = std::move(since);
  return t;
}

SlotTable SlotTable::plan(std::vector<std::string> members, size_t r) const {
  std::sort(members.begin(), members.end());
  members.erase(std::unique(members.begin(), members.end()), members.end());
  SlotTable next;
  next.epoch_ = epoch_ + 1;
  next.members_ = members;
  next.r_ = r > 0 ? r : (epoch_ > 0 ? r_ : 2);
  const size_t n = members.size();
  for (const auto& id : members) {
    const uint64_t was = member_since(id);
    next.since_.push_back(was > 0 ? was : next.epoch_);
  }
  if (n == 0) return next;

  // 1. Keep every slot whose owner stays. A departed owner's slot goes to the first of its
  //    replicas that stays (it holds the slot's state already); the rest are free.
  std::vector<uint16_t> remap(members_.size(), kNoOwner);
  for (size_t i = 0; i < members_.size(); ++i) {
    auto it = std::lower_bound(members.begin(), members.end(), members_[i]);
    if (it != members.end() && *it == members_[i])
      remap[i] = static_cast<uint16_t>(it - members.begin());
  }
  std::vector<size_t> load(n, 0);
  bool inherited = false;
  for (uint32_t s = 0; s < kSlotCount; ++s) {
    uint16_t o = kNoOwner;
    if (owner_[s] != kNoOwner) {
      for (uint16_t copy : replicas(s)) {
        o = remap[copy];
        if (o != kNoOwner) break;
      }
      inherited = inherited || (o != kNoOwner && remap[owner_[s]] == kNoOwner);
    }
    next.owner_[s] = o;
    if (o != kNoOwner) ++load[o];
  }
  // A failover table only moves slots to the replicas holding them (and gives slots with
  // no surviving copy to the least loaded); evening out the load is the next table's job,
  // when every slot's owner is alive to hand its state over.
  if (inherited) {
    for (uint32_t s = 0; s < kSlotCount; ++s) {
      if (next.owner_[s] != kNoOwner) continue;
      const auto m =
          static_cast<uint16_t>(std::min_element(load.begin(), load.end()) - load.begin());
      next.owner_[s] = m;
      ++load[m];
    }
    return next;
  }

  // 2. Targets: an equal share; the members already holding the most get the +1s, so the
  //    fewest slots move. Ties go to the lower id.
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return load[a] > load[b]; });
  std::vector<size_t> target(n, kSlotCount / n);
  for (size_t k = 0; k < kSlotCount % n; ++k) ++target[order[k]];

  // 3. Over-target members give up slots from the high end of their ranges: first those
  //    they just took over from a departed owner, then their own.
  for (int pass = 0; pass < 2; ++pass) {
    for (uint32_t s = kSlotCount; s-- > 0;) {
      const uint16_t o = next.owner_[s];
      const bool inherited = owner_[s] != kNoOwner && remap[owner_[s]] != o;
      if (o != kNoOwner && load[o] > target[o] && (pass == 1 || inherited)) {
        next.owner_[s] = kNoOwner;
        --load[o];
      }
    }
  }

  // 4. Free slots go, in slot order, to under-target members in id order: each takes one
  //    contiguous run of free slots where it can.
  size_t m = 0;
  for (uint32_t s = 0; s < kSlotCount; ++s) {
    if (next.owner_[s] != kNoOwner) continue;
    while (m < n && load[m] >= target[m]) ++m;
    if (m == n) break;  // cannot happen: targets sum to kSlotCount
    next.owner_[s] = static_cast<uint16_t>(m);
    ++load[m];
  }
  return next;
}

}  // namespace fg
