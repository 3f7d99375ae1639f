// Slot planning: equal shares, fewest moves, contiguous ranges.
#include "slot_table.hpp"

#include <algorithm>
#include <numeric>

namespace fg {

std::vector<uint16_t> SlotTable::replicas(uint32_t slot, size_t r) const {
  std::vector<uint16_t> out;
  const uint16_t o = owner_[slot];
  if (o == kNoOwner) return out;
  const size_t n = members_.size();
  for (size_t k = 0; k < std::min(r, n); ++k) out.push_back(static_cast<uint16_t>((o + k) % n));
  return out;
}

std::vector<SlotRange> SlotTable::ranges() const {
  std::vector<SlotRange> out;
  for (uint32_t s = 0; s < kSlots; ++s) {
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
                                std::vector<uint16_t> owners) {
  SlotTable t;
  t.epoch_ = epoch;
  t.members_ = std::move(members);
  if (owners.size() == kSlots) t.owner_ = std::move(owners);
  return t;
}

SlotTable SlotTable::plan(std::vector<std::string> members) const {
  std::sort(members.begin(), members.end());
  members.erase(std::unique(members.begin(), members.end()), members.end());
  SlotTable next;
  next.epoch_ = epoch_ + 1;
  next.members_ = members;
  const size_t n = members.size();
  if (n == 0) return next;

  // 1. Keep every slot whose owner stays; the rest are free.
  std::vector<uint16_t> remap(members_.size(), kNoOwner);
  for (size_t i = 0; i < members_.size(); ++i) {
    auto it = std::lower_bound(members.begin(), members.end(), members_[i]);
    if (it != members.end() && *it == members_[i])
      remap[i] = static_cast<uint16_t>(it - members.begin());
  }
  std::vector<size_t> load(n, 0);
  for (uint32_t s = 0; s < kSlots; ++s) {
    const uint16_t o = owner_[s] == kNoOwner ? kNoOwner : remap[owner_[s]];
    next.owner_[s] = o;
    if (o != kNoOwner) ++load[o];
  }

  // 2. Targets: an equal share; the members already holding the most get the +1s, so the
  //    fewest slots move. Ties go to the lower id.
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return load[a] > load[b]; });
  std::vector<size_t> target(n, kSlots / n);
  for (size_t k = 0; k < kSlots % n; ++k) ++target[order[k]];

  // 3. Over-target members give up slots from the high end of their ranges.
  for (uint32_t s = kSlots; s-- > 0;) {
    const uint16_t o = next.owner_[s];
    if (o != kNoOwner && load[o] > target[o]) {
      next.owner_[s] = kNoOwner;
      --load[o];
    }
  }

  // 4. Free slots go, in slot order, to under-target members in id order: each takes one
  //    contiguous run of free slots where it can.
  size_t m = 0;
  for (uint32_t s = 0; s < kSlots; ++s) {
    if (next.owner_[s] != kNoOwner) continue;
    while (m < n && load[m] >= target[m]) ++m;
    if (m == n) break;  // cannot happen: targets sum to kSlots
    next.owner_[s] = static_cast<uint16_t>(m);
    ++load[m];
  }
  return next;
}

}  // namespace fg
