// Which node owns each of the 16384 slots, and how that changes when members come and go.
// The table is planned state (like Redis Cluster's slot map with its config epochs): the
// next table is a pure function of the previous one and the new member set, chosen so
// that ownership stays in contiguous ranges, every member owns within one slot of an
// equal share, a join moves slots only to the joiner, and a leave moves only the
// leaver's slots.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace fg {

constexpr uint32_t kSlots = 16384;
constexpr uint16_t kNoOwner = 0xffff;

struct SlotRange {
  uint32_t first;
  uint32_t last;  // inclusive, as CLUSTER SLOTS reports ranges
  uint16_t owner;
};

class SlotTable {
 public:
  SlotTable() : owner_(kSlots, kNoOwner) {}

  // Members are node ids; owner indices point into members(). Sorted, unique.
  const std::vector<std::string>& members() const { return members_; }
  uint16_t owner(uint32_t slot) const { return owner_[slot]; }
  const std::string& owner_id(uint32_t slot) const { return members_[owner_[slot]]; }
  uint64_t epoch() const { return epoch_; }
  const std::string& planner() const { return planner_; }
  // Which of two tables wins: the higher epoch, then the lower planner id (the rightful
  // coordinator is the lowest live id).
  bool newer_than(uint64_t epoch, const std::string& planner) const {
    return epoch_ > epoch || (epoch_ == epoch && !planner_.empty() && planner_ < planner);
  }
  SlotTable stamped(uint64_t epoch, std::string planner) const {
    SlotTable t = *this;
    t.epoch_ = epoch;
    t.planner_ = std::move(planner);
    return t;
  }

  // The owner first, then up to r-1 distinct replicas: the next members after the owner
  // in id order, so each member replicates its neighbours and replica load is even.
  std::vector<uint16_t> replicas(uint32_t slot, size_t r) const;

  // Maximal runs of slots with the same owner, in slot order.
  std::vector<SlotRange> ranges() const;
  size_t slots_of(uint16_t member) const;

  // The next table for `members` (any order; duplicates ignored), one epoch later.
  SlotTable plan(std::vector<std::string> members) const;

  bool operator==(const SlotTable& o) const {
    return epoch_ == o.epoch_ && planner_ == o.planner_ && members_ == o.members_ &&
           owner_ == o.owner_;
  }

  // For tables received from peers.
  static SlotTable from_parts(uint64_t epoch, std::vector<std::string> members,
                              std::vector<uint16_t> owners);

 private:
  std::vector<std::string> members_;
  std::vector<uint16_t> owner_;
  uint64_t epoch_ = 0;
  std::string planner_;
};

}  // namespace fg
