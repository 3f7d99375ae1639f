// Which node owns each of the 16384 slots, and how that changes when members come and go.
// The table is planned state (like Redis Cluster's slot map with its config epochs): the
// next table is a pure function of the previous one and the new member set, chosen so
// that ownership stays in contiguous ranges, every member owns within one slot of an
// equal share, a join moves slots only to the joiner, and a departed owner's slots go
// first to the replica that already holds their state. Each member also carries the
// epoch since which it has been a member without a break: a node that finds that epoch
// newer than the last table it knew was out of the cluster meanwhile (its state is stale).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "key_slot.hpp"

namespace fg {

constexpr uint16_t kNoOwner = 0xffff;

struct SlotRange {
  uint32_t first;
  uint32_t last;  // inclusive, as CLUSTER SLOTS reports ranges
  uint16_t owner;
};

class SlotTable {
 public:
  SlotTable() : owner_(kSlotCount, kNoOwner) {}

  // Members are node ids; owner indices point into members(). Sorted, unique.
  const std::vector<std::string>& members() const { return members_; }
  uint16_t owner(uint32_t slot) const { return owner_[slot]; }
  const std::string& owner_id(uint32_t slot) const { return members_[owner_[slot]]; }
  uint64_t epoch() const { return epoch_; }
  const std::string& planner() const { return planner_; }
  // Copies of each slot's state the cluster keeps (owner included), fixed by the planner.
  size_t replica_count() const { return r_; }
  // The epoch since which `id` has been a member without a break; 0 if it is not one.
  uint64_t member_since(const std::string& id) const;
  const std::vector<uint64_t>& since() const { return since_; }
  int index_of(const std::string& id) const;
  // Whether `live` (ids) holds a majority of this table's members, or exactly half of them
  // including the lowest id: the side of a split that may plan the next table.
  bool quorum(const std::vector<std::string>& live) const;
  // Every slot owned, and shares within one slot of each other (a failover table is not).
  bool balanced() const;
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

  // The owner first, then up to R-1 distinct replicas: the next members after the owner
  // in id order, so each member replicates its neighbours and replica load is even.
  std::vector<uint16_t> replicas(uint32_t slot) const;
  // The same for every slot member `owner` owns (one look-up for all of them).
  std::vector<uint16_t> holders_of(uint16_t owner) const;
  // Whether member index `m` keeps a copy of `slot` (as owner or replica).
  bool holds_copy(uint32_t slot, uint16_t m) const;

  // Maximal runs of slots with the same owner, in slot order.
  std::vector<SlotRange> ranges() const;
  size_t slots_of(uint16_t member) const;

  // The next table for `members` (any order; duplicates ignored), one epoch later, keeping
  // `r` copies of each slot (0: as many as this table keeps; 2 for the first table).
  SlotTable plan(std::vector<std::string> members, size_t r = 0) const;

  bool operator==(const SlotTable& o) const {
    return epoch_ == o.epoch_ && planner_ == o.planner_ && members_ == o.members_ &&
           owner_ == o.owner_ && r_ == o.r_ && since_ == o.since_;
  }

  // For tables received from peers (`since` empty: every member since `epoch`).
  static SlotTable from_parts(uint64_t epoch, std::vector<std::string> members,
                              std::vector<uint16_t> owners, size_t r = 2,
                              std::vector<uint64_t> since = {});

 private:
  std::vector<std::string> members_;
  std::vector<uint16_t> owner_;
  std::vector<uint64_t> since_;  // per member
  uint64_t epoch_ = 0;
  std::string planner_;
  size_t r_ = 2;
};

}  // namespace fg
