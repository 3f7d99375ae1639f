// When a starting node settles its time, and on what (clock_sync.hpp).
#include "clock_sync.hpp"

#include <algorithm>
#include <cstdlib>
#include <utility>

namespace fg {

void ClockSync::begin(const std::string& self, int64_t now_ns, bool settled) {
  if (begun_) return;
  begun_ = true;
  self_ = self;
  begun_ns_ = now_ns;
  settled_ = settled;
  samples_.clear();
}

void ClockSync::sample(const std::string& id, int64_t peer_ns, int64_t echo_ns, int64_t now_ns,
                       bool peer_settled) {
  if (settled_ || peer_ns <= 0 || echo_ns <= 0 || now_ns < echo_ns) return;
  Sample s;
  s.rtt_ns = now_ns - echo_ns;
  s.offset_ns = peer_ns - (echo_ns + s.rtt_ns / 2);
  s.settled = peer_settled;
  auto it = samples_.find(id);
  // A settled peer's word outranks an unsettled one's; between two, the tighter round trip.
  if (it == samples_.end() || (s.settled && !it->second.settled) ||
      (s.settled == it->second.settled && s.rtt_ns <= it->second.rtt_ns)) {
    samples_[id] = s;
  }
}

int64_t ClockSync::settle(int64_t offset_ns, int64_t error_ns) {
  settled_ = true;
  samples_.clear();
  // Moved only by what is more than noise and the measure's own error (half its trip): two
  // nodes on one clock (one process) never move it however slow the trip.
  if (std::llabs(offset_ns) <= cfg_.tolerance_ns + error_ns) return 0;
  taken_ns_ = offset_ns;
  return offset_ns;
}

int64_t ClockSync::settle_on_median() {
  struct Vote {
    int64_t offset, error;
    const std::string* id;
  };
  std::vector<Vote> v{{0, 0, &self_}};  // its own clock votes
  for (const auto& [id, s] : samples_) v.push_back({s.offset_ns, s.rtt_ns / 2, &id});
  std::sort(v.begin(), v.end(), [](const Vote& a, const Vote& b) {
    return a.offset != b.offset ? a.offset < b.offset : *a.id < *b.id;
  });
  const size_t n = v.size();
  // An even count: of the two clocks in the middle, the lower id's. The order of clocks is
  // the same seen from every node, so every node picks the same one (two nodes alone: both
  // take the lower id's clock, never each the other's).
  const Vote& m =
      n % 2 == 1 ? v[n / 2] : (*v[n / 2 - 1].id < *v[n / 2].id ? v[n / 2 - 1] : v[n / 2]);
  return settle(m.offset, m.error);
}

std::optional<int64_t> ClockSync::decide(int64_t now_ns,
                                         const std::vector<std::string>& live_others) {
  if (settled_) return std::nullopt;
  const Sample* best = nullptr;  // a settled peer's, the tightest round trip
  for (const auto& [id, s] : samples_)
    if (s.settled && (!best || s.rtt_ns < best->rtt_ns)) best = &s;
  if (best && best->rtt_ns <= cfg_.max_rtt_ns) return settle(best->offset_ns, best->rtt_ns / 2);
  // Otherwise once every live member answered, or the wait is over: a settled peer's word
  // even over a long trip, and with none (a cluster starting together), the median of all.
  // A member not heard yet may be settled: wait for it.
  bool all = !live_others.empty();
  for (const std::string& id : live_others) all = all && samples_.count(id) > 0;
  if (!all && now_ns - begun_ns_ < cfg_.wait_ns) return std::nullopt;
  return best ? settle(best->offset_ns, best->rtt_ns / 2) : settle_on_median();
}

}  // namespace fg
