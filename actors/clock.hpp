// Injected time: every clock read goes through Clock so tests advance time instead of sleeping.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>

namespace fg {

class Clock {
 public:
  virtual ~Clock() = default;
  // Wall-clock nanoseconds since the Unix epoch. Wall time (not steady) because limiter state
  // is compared across requests and, later, across nodes.
  virtual int64_t now_ns() const = 0;
  // Moves this clock by `delta_ns` at once: a process just started takes the cluster's time
  // (gossip/clock_sync.hpp) before anything is judged by it. Const as reading is: every
  // reader holds the clock const, and following a reference is the clock's own business
  // (as its slewing is). After the move it follows the wall clock by slewing as before.
  virtual void shift(int64_t delta_ns) const = 0;
};

// The node's clock follows the wall clock by slewing at most this fast (NTP's own limit), so
// a wall-clock step (an operator, a VM resume, a bad NTP server) does not jump limiter state:
// a step of an hour forward would otherwise reset every window, and back, freeze them.
constexpr int64_t kMaxSlewPpm = 500;
constexpr int64_t kSlewEveryNs = 10'000'000;  // the offset is re-aimed at most this often

// Pure core of SystemClock: the next offset (node time minus steady time), moving from
// `offset_ns` toward `target_ns` (wall minus steady time now) by at most max_ppm of the
// `elapsed_ns` of steady time since the last step.
int64_t slew_offset(int64_t offset_ns, int64_t target_ns, int64_t elapsed_ns, int64_t max_ppm);

// Wall-clock time that never jumps: the monotonic clock plus an offset that starts at the
// wall clock's and then follows it only by slewing. A node restarted takes the wall clock at
// once. Safe to read from any thread.
class SystemClock final : public Clock {
 public:
  SystemClock();
  int64_t now_ns() const override;
  void shift(int64_t delta_ns) const override;
  // The one clock of this process (limiters, leases, membership, the settings book).
  static SystemClock& process();

 private:
  mutable std::atomic<int64_t> offset_ns_;
  mutable std::atomic<int64_t> aimed_at_ns_;  // steady time of the last slew step
};

// A clock that only moves when told to; safe to read from several threads.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(int64_t start_ns = 1'700'000'000'000'000'000) : now_(start_ns) {}
  int64_t now_ns() const override { return now_.load(std::memory_order_relaxed); }
  void shift(int64_t delta_ns) const override {
    now_.fetch_add(delta_ns, std::memory_order_relaxed);
  }
  void advance_ns(int64_t d) { now_.fetch_add(d, std::memory_order_relaxed); }
  void advance_ms(int64_t d) { advance_ns(d * 1'000'000); }
  void set_ns(int64_t t) { now_.store(t, std::memory_order_relaxed); }

 private:
  mutable std::atomic<int64_t> now_;
};

}  // namespace fg
