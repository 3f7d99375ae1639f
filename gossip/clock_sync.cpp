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

int64_t ClockSync::settle(int64_t offset_ns) {
  settled_ = true;
  samples_.clear();
  if (std::llabs(offset_ns) <= cfg_.tolerance_ns) return 0;
  taken_ns_ = offset_ns;
  return offset_ns;
}

int64_t ClockSync::median() const {
  std::vector<std::pair<int64_t, const std::string*>> v{{0, &self_}};  // its own clock votes
  for (const auto& [id, s] : samples_) v.emplace_back(s.offset_ns, &id);
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : *a.second < *b.second;
  });
  const size_t n = v.size();
  if (n % 2 == 1) return v[n / 2].first;
  // An even count: of the two clocks in the middle, the lower id's. The order of clocks is
  // the same seen from every node, so every node picks the same one (two nodes alone: both
  // take the lower id's clock, never each the other's).
  const auto& a = v[n / 2 - 1];
  const auto& b = v[n / 2];
  return *a.second < *b.second ? a.first : b.first;
}

std::optional<int64_t> ClockSync::decide(int64_t now_ns,
                                         const std::vector<std::string>& live_others) {
  if (settled_) return std::nullopt;
  const Sample* best = nullptr;  // a settled peer's, the tightest round trip
  for (const auto& [id, s] : samples_)
    if (s.settled && (!best || s.rtt_ns < best->rtt_ns)) best = &s;
  if (best && best->rtt_ns <= cfg_.max_rtt_ns) return settle(best->offset_ns);
  // Otherwise once every live member answered, or the wait is over: a settled peer's word
  // even over a long trip, and with none (a cluster starting together), the median of all.
  // A member not heard yet may be settled: wait for it.
  bool all = !live_others.empty();
  for (const std::string& id : live_others) all = all && samples_.count(id) > 0;
  if (!all && now_ns - begun_ns_ < cfg_.wait_ns) return std::nullopt;
  return settle(best ? best->offset_ns : median());
}

}  // namespace fg
