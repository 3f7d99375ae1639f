// Standing down after a stall until a majority is heard from and no newer table exists.
#include "wake_guard.hpp"

namespace fg {

bool WakeGuard::on_tick(int64_t now_ns) {
  const bool stalled = last_tick_ns_ > 0 && now_ns - last_tick_ns_ > stall_ns_;
  last_tick_ns_ = now_ns;
  if (stalled) {
    down_ = true;
    heard_.clear();
    newest_heard_ = 0;
  }
  return stalled;
}

void WakeGuard::on_heard(const std::string& id, uint64_t epoch) {
  if (!down_) return;
  heard_.insert(id);
  if (epoch > newest_heard_) newest_heard_ = epoch;
}

bool WakeGuard::standing_down(uint64_t my_epoch, size_t table_members) {
  if (!down_) return false;
  // Self plus those heard make a majority, and nobody knows of a newer table (if one
  // exists, table agreement fetches it and my_epoch catches up).
  const bool majority = table_members < 3 || 2 * (heard_.size() + 1) > table_members;
  if (majority && newest_heard_ <= my_epoch) down_ = false;
  return down_;
}

}  // namespace fg
