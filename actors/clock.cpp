// The node's slewed wall clock: steady between samples, following the wall clock slowly.
#include "clock.hpp"

#include <algorithm>

namespace fg {
namespace {
int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
int64_t wall_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}
}  // namespace

int64_t slew_offset(int64_t offset_ns, int64_t target_ns, int64_t elapsed_ns, int64_t max_ppm) {
  if (elapsed_ns <= 0) return offset_ns;
  // elapsed is at most days in practice; the product stays far inside int64.
  const int64_t step = std::max<int64_t>(1, elapsed_ns / 1'000 * max_ppm / 1'000);
  return offset_ns + std::clamp(target_ns - offset_ns, -step, step);
}

SystemClock::SystemClock() {
  const int64_t s = steady_ns();
  offset_ns_.store(wall_ns() - s);
  aimed_at_ns_.store(s);
}

int64_t SystemClock::now_ns() const {
  const int64_t s = steady_ns();
  int64_t aimed = aimed_at_ns_.load(std::memory_order_relaxed);
  if (s - aimed >= kSlewEveryNs &&
      aimed_at_ns_.compare_exchange_strong(aimed, s, std::memory_order_relaxed)) {
    int64_t off = offset_ns_.load(std::memory_order_relaxed);
    // (a shift() in between wins: this step is skipped, the next one aims again)
    offset_ns_.compare_exchange_strong(off, slew_offset(off, wall_ns() - s, s - aimed, kMaxSlewPpm),
                                       std::memory_order_relaxed);
  }
  return s + offset_ns_.load(std::memory_order_relaxed);
}

void SystemClock::shift(int64_t delta_ns) const {
  offset_ns_.fetch_add(delta_ns, std::memory_order_relaxed);
}

SystemClock& SystemClock::process() {
  static SystemClock clock;
  return clock;
}

}  // namespace fg
