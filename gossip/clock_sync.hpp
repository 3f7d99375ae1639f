// A starting process takes the cluster's time. A running node's clock never jumps: it
// follows a stepped wall clock by slewing (actors/clock.hpp), so the nodes of a cluster keep
// one time however their machines' clocks are stepped. A process started again takes its
// machine's wall clock at once — seconds off the others' if that clock was stepped while the
// node ran — and would judge the state it takes back (a sliding log, a window's start, a
// lease's expiry) by it: a log a window old looks empty, and a window's worth is admitted
// again. So a process does not serve until it has taken its time from the cluster: the
// offset to a peer that has (measured over a round trip, as NTP does), or, when no peer has
// (a cluster starting, or started again whole), the median of every peer's and its own.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fg {

struct ClockSyncConfig {
  // How long a starting node waits for a peer whose time is the cluster's before it takes
  // the median of what it heard (or its own clock, having heard nobody).
  int64_t wait_ns = 1'000'000'000;
  // Offsets within this (beyond the measure's own error, half its round trip) are clock
  // noise: not worth a move.
  int64_t tolerance_ns = 50'000'000;
  // A round trip longer than this says too little about the offset (half of it is the
  // error bound) to be taken at once; it still counts when the wait ends.
  int64_t max_rtt_ns = 200'000'000;
};

class ClockSync {
 public:
  explicit ClockSync(ClockSyncConfig cfg = {}) : cfg_(cfg) {}

  // Starts waiting at `now_ns` (once; later calls change nothing); `settled`: this node's
  // clock is the cluster's already (no seed but itself: nobody to take the time from).
  // Never begun, a clock is taken as settled (a membership that does not join).
  void begin(const std::string& self, int64_t now_ns, bool settled);
  bool settled() const { return settled_; }

  // A reply from `id`: its clock when it answered, and this node's when it sent what the
  // reply answers; received at `now_ns`. `peer_settled`: its time is the cluster's.
  void sample(const std::string& id, int64_t peer_ns, int64_t echo_ns, int64_t now_ns,
              bool peer_settled);

  // Whether to settle now and by how much to move this node's clock (0: not at all), given
  // the other members it knows to be live. Nothing while still waiting (or settled).
  std::optional<int64_t> decide(int64_t now_ns, const std::vector<std::string>& live_others);

  // This node's clock moved by `delta_ns`: times kept by it move with it.
  void rebase(int64_t delta_ns) { begun_ns_ += delta_ns; }

  // The offset last taken (0: none), for the log and INFO.
  int64_t taken_ns() const { return taken_ns_; }

 private:
  struct Sample {
    int64_t offset_ns = 0;  // peer's clock minus ours, at the midpoint of the round trip
    int64_t rtt_ns = 0;
    bool settled = false;
  };
  int64_t settle(int64_t offset_ns, int64_t error_ns);
  int64_t settle_on_median();

  ClockSyncConfig cfg_;
  std::string self_;
  bool settled_ = true;
  bool begun_ = false;
  int64_t begun_ns_ = 0;
  int64_t taken_ns_ = 0;
  std::map<std::string, Sample> samples_;  // the latest per peer
};

}  // namespace fg
