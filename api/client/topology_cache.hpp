// What the client knows of the cluster: the topology the nodes sent (answers to TOPOLOGY,
// pushes, MOVED), each slot's owner, and which nodes it could not reach lately. Runs on the
// client's I/O thread only.
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "call.hpp"
#include "key_slot.hpp"

namespace floodgate {

class TopologyCache {
 public:
  bool known() const { return known_; }
  bool cluster() const { return topo_.cluster; }
  const Topology& topology() const { return topo_; }

  // Adopts a topology sent by `from` (its native address); false if older than the one held.
  bool adopt(const pb::Topology& t, const std::string& from);
  // The owner of `slot` as a node index, or -1.
  int owner(uint32_t slot) const { return topo_.cluster ? owner_[slot] : 0; }
  size_t nodes() const { return addrs_.size(); }
  const std::string& addr(size_t node) const { return addrs_[node]; }
  // A MOVED answer: `slot` is `node_id`'s now (if the client knows that node).
  void moved(uint32_t slot, std::string_view node_id);

  // Native addresses of the table's members that are alive or suspect.
  std::vector<std::string> members() const;
  // Whether requests can go to `node` directly: not declared dead and not just broken.
  bool reachable(size_t node, Clock::time_point now) const;
  // A member to route through when the owner cannot be reached (round robin); "" if none.
  std::string relay(Clock::time_point now);
  // `addr` could not be reached at `now`: avoided for 100 ms, twice that after each further
  // failure (at most 1 s), until something comes from it again (mark_up).
  void mark_down(const std::string& addr, Clock::time_point now);
  void mark_up(const std::string& addr) {
    if (!down_.empty()) down_.erase(addr);
  }
  bool down(const std::string& addr, Clock::time_point now) const;

 private:
  Topology topo_;
  bool known_ = false;
  std::string standalone_addr_;
  std::vector<int> owner_ = std::vector<int>(fg::kSlotCount, -1);
  std::vector<std::string> ids_, addrs_;
  std::vector<bool> live_;  // per node: has an address and is not declared dead or left
  struct Down {
    Clock::time_point until;
    std::chrono::milliseconds backoff{0};
  };
  std::map<std::string, Down> down_;
  size_t relay_rr_ = 0;
};

}  // namespace floodgate
