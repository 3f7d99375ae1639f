// Standing down after a stall: a node whose cluster thread did not run for a while (the
// process was paused, a VM froze, the machine starved it) may have been declared dead and
// had its slots promoted elsewhere meanwhile. It must not answer from its old state until
// it has heard, since waking, a majority of the table's members and no newer table.
#pragma once
#include <cstdint>
#include <set>
#include <string>

namespace fg {

// Shorter than the least time the others need to declare a silent node dead (a probe
// timeout plus the shortest suspicion), so a node never serves across that moment.
constexpr int64_t kStallNs = 500'000'000;

class WakeGuard {
 public:
  explicit WakeGuard(int64_t stall_ns = kStallNs) : stall_ns_(stall_ns) {}
  // Every cluster tick. True when this tick found a stall (the node starts standing down).
  bool on_tick(int64_t now_ns);
  // A fresh answer from member `id` (to a ping sent after the stall), advertising its table
  // `epoch`. Messages that may have waited out the stall in a buffer must not be passed.
  void on_heard(const std::string& id, uint64_t epoch);
  // Whether the node stands down, given its table; ends it once the condition is met.
  bool standing_down(uint64_t my_epoch, size_t table_members);
  // The node's clock moved by `delta_ns` (clock_sync.hpp): not a stall.
  void rebase(int64_t delta_ns) {
    if (last_tick_ns_ != 0) last_tick_ns_ += delta_ns;
  }

 private:
  int64_t stall_ns_;
  int64_t last_tick_ns_ = 0;
  bool down_ = false;
  std::set<std::string> heard_;
  uint64_t newest_heard_ = 0;
};

}  // namespace fg
