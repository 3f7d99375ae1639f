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
};

class SystemClock final : public Clock {
 public:
  int64_t now_ns() const override {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
};

// A clock that only moves when told to; safe to read from several threads.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(int64_t start_ns = 1'700'000'000'000'000'000) : now_(start_ns) {}
  int64_t now_ns() const override { return now_.load(std::memory_order_relaxed); }
  void advance_ns(int64_t d) { now_.fetch_add(d, std::memory_order_relaxed); }
  void advance_ms(int64_t d) { advance_ns(d * 1'000'000); }
  void set_ns(int64_t t) { now_.store(t, std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> now_;
};

}  // namespace fg
