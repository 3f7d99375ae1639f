// Clients blocked on keys (BLPOP and its kin) and how to wake them: a node-wide registry the
// shards tell when a list or sorted set they hold gets elements (Shard::mark), from their own
// threads. A wake only says "try again": the blocked client's connection retries its pop,
// and another client may have taken the elements first. A change wakes the few clients that
// have waited longest on the key, not all of them (a push must not cost one attempt per
// waiting client); the pops it leads to change the key again while it holds elements, and
// wake the next ones.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace fg {

class KeyWaiters {
 public:
  using Wake = std::function<void()>;

  // Registers a waiter on `keys`; the ticket removes it.
  uint64_t add(const std::vector<std::string>& keys, Wake wake);
  void remove(uint64_t ticket);
  // Wakes one waiter (CLIENT UNBLOCK); false if it is gone.
  bool wake(uint64_t ticket);
  // `key` got elements: its kWakeAtOnce longest waiters are woken (outside the registry's
  // lock), and go to the back of its line; with `all`, every one (a stream's new entries
  // are for every reader: nothing is taken).
  void ready(std::string_view key, bool all = false);
  static constexpr size_t kWakeAtOnce = 2;
  // Whether anyone waits (read on every change of a list or sorted set: one relaxed load).
  bool any() const { return waiters_.load(std::memory_order_relaxed) > 0; }
  size_t blocked() const { return static_cast<size_t>(waiters_.load(std::memory_order_relaxed)); }

 private:
  struct Waiter {
    std::vector<std::string> keys;
    Wake wake;
  };
  std::mutex mu_;
  std::unordered_map<std::string, std::vector<uint64_t>> by_key_;
  std::unordered_map<uint64_t, Waiter> waiters_by_ticket_;
  uint64_t next_ticket_ = 1;
  std::atomic<int64_t> waiters_{0};
};

}  // namespace fg
