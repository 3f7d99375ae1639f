// The routing snapshot as a pure function of what the cluster thread knows: the adopted
// table, every member heard of, the slots whose state this node holds, and whether it may
// serve at all. Cluster::publish() gathers the inputs and publishes the result.
#pragma once
#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "member.hpp"
#include "routing.hpp"
#include "slot_table.hpp"

namespace fg {

struct RoutingInputs {
  const SlotTable* table = nullptr;
  std::string self;                                      // this node's id
  const std::map<std::string, Member>* known = nullptr;  // every member heard of, self too
  SlotBits held;                                         // slots whose state this node holds
  SlotBits awaiting;                                     // ours in the table, state on its way
  SlotBits lost;                   // ours, no copy reachable, in the grace period (not in `held`)
  std::vector<std::string> alive;  // members seen alive now (no suspects)
  bool standing_down = false;      // after a stall (wake_guard.hpp)
  std::shared_ptr<const std::atomic<int64_t>> pulse_ns;
};

// Nodes: the table's members first (their index is the owner index), then other live ones.
// A node serves its slots whose state it holds, and only while it sees a majority of the
// table's members alive (tables of one or two members cannot tell; they serve) and does
// not stand down. Suspects do not count: a node that hears nobody suspects everyone within
// a few probe rounds, well before the others can have declared it dead (suspicion lasts at
// least suspicion_min), so an owner cut off even one way stops before its replica takes over.
Routing build_routing(const RoutingInputs& in);

}  // namespace fg
